#!/usr/bin/env bash
# Every source file has a test that can fail. For each <path>/<name>.hpp and .cpp under limiter/,
# config/ and proxy/ (both count as one), either its mirror test tests/<path>/<name>_test.cpp
# exists and tests/CMakeLists.txt builds it, or the table "Which test covers which file" in
# tests/README.md has a row for `<path>/<name>` naming the test files that cover it. Rows must
# stay true too: a row for a file that is gone, or naming a test file that is not there, is an
# error. Exits 1 listing every problem.
set -euo pipefail
cd "$(dirname "$0")/.."

doc=tests/README.md
heading="## Which test covers which file"
status=0

# The table's rows: "| `path/name` | tests/…_test.cpp (Suite.*), … |".
mapfile -t rows < <(awk -v heading="$heading" '
  $0 == heading { inside = 1; next }
  inside && /^## / { exit }
  inside && /^\| *`/ { print }' "$doc")
if [ ${#rows[@]} -eq 0 ]; then
  echo "$doc: no table under \"$heading\"" >&2
  exit 1
fi

declare -A listed=()
for row in "${rows[@]}"; do
  file=$(cut -d'|' -f2 <<<"$row" | tr -d '` ')
  covered_by=$(cut -d'|' -f3- <<<"$row")
  listed[$file]=1
  if [ ! -f "$file.hpp" ] && [ ! -f "$file.cpp" ]; then
    echo "$doc: a row for $file, which has no $file.hpp or $file.cpp" >&2
    status=1
  fi
  tests=$(grep -oE 'tests/[A-Za-z0-9_/.-]+\.cpp' <<<"$covered_by" || true)
  if [ -z "$tests" ]; then
    echo "$doc: the row for $file names no test file" >&2
    status=1
  fi
  for test in $tests; do
    if [ ! -f "$test" ]; then
      echo "$doc: the row for $file names $test, which does not exist" >&2
      status=1
    fi
  done
done

mirrored=0
while IFS= read -r base; do
  mirror="tests/${base}_test.cpp"
  if [ -f "$mirror" ]; then
    mirrored=$((mirrored + 1))
    if ! grep -qwF "${base}_test.cpp" tests/CMakeLists.txt; then
      echo "$mirror: not built (add it to an executable in tests/CMakeLists.txt)" >&2
      status=1
    fi
  elif [ -z "${listed[$base]:-}" ]; then
    sources=""
    for source in "$base".hpp "$base".cpp; do
      [ -f "$source" ] && sources+="${sources:+ and }$source"
    done
    echo "$sources: no $mirror and no row for \`$base\` in $doc's table" >&2
    status=1
  fi
done < <(find limiter config proxy -type f \( -name '*.hpp' -o -name '*.cpp' \) |
  sed -E 's/\.(hpp|cpp)$//' | sort -u)

[ $status -eq 0 ] &&
  echo "test mirror: $mirrored files with their mirror test, ${#rows[@]} listed in $doc"
exit $status
