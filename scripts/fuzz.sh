#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (the `fuzz` preset: clang-16, AddressSanitizer +
# UndefinedBehaviorSanitizer, in build/fuzz) and runs them:
#
#   scripts/fuzz.sh TARGET [SECONDS]   one target for SECONDS (default 60)
#   scripts/fuzz.sh all [SECONDS]      every target for SECONDS each, FUZZ_JOBS at a time
#                                      (default: one per core)
#
# Targets: config, http, http2, jwt, pipeline, replay_combined, replay_jsonl, resp, rls, usage
# (tests/fuzz/NAME_fuzz.cpp says what each one feeds where). A run starts from the target's seeds
# (tests/fuzz/corpus/TARGET) and regression inputs (tests/fuzz/regressions/TARGET), which are all
# replayed first, and keeps the inputs it finds in build/fuzz/corpus/TARGET for the next run. A
# crash, an uncaught exception, undefined behaviour, a leak, a timeout or too much memory fails
# it: the input is written to build/fuzz/artifacts/TARGET/ and the log's end is shown. Exits 1 if
# any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every tests/fuzz/NAME_fuzz.cpp is a target.
targets=()
for source in tests/fuzz/*_fuzz.cpp; do
  name=${source##*/}
  targets+=("${name%_fuzz.cpp}")
done

usage() {
  echo "usage: scripts/fuzz.sh TARGET|all [SECONDS]  (targets: ${targets[*]})" >&2
  exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  usage
fi
seconds=${2:-60}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || usage
if [ "$1" = all ]; then
  selected=("${targets[@]}")
elif [[ " ${targets[*]} " == *" $1 "* ]]; then
  selected=("$1")
else
  usage
fi

if ! command -v clang++-16 >/dev/null ||
  [ ! -f "$(clang++-16 -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ]; then
  echo "fuzz: needs Debian's clang-16 and libclang-rt-16-dev (bash scripts/install-deps.sh)" >&2
  exit 1
fi
# Stack traces with file and line: any llvm-symbolizer will do.
for symbolizer in llvm-symbolizer-16 llvm-symbolizer llvm-symbolizer-14; do
  if command -v "$symbolizer" >/dev/null; then
    ASAN_SYMBOLIZER_PATH=$(readlink -f "$(command -v "$symbolizer")")
    export ASAN_SYMBOLIZER_PATH
    break
  fi
done
export UBSAN_OPTIONS=print_stacktrace=1

echo "== fuzz: building ${selected[*]}"
cmake --preset fuzz >/dev/null
build_targets=()
for target in "${selected[@]}"; do
  build_targets+=("${target}_fuzz")
done
cmake --build --preset fuzz --target "${build_targets[@]}"

# Runs one target; its log goes to build/fuzz/logs/TARGET.log.
run() {
  local target=$1
  local corpus=build/fuzz/corpus/$target
  local artifacts=build/fuzz/artifacts/$target
  mkdir -p "$corpus" "$artifacts" build/fuzz/logs
  local inputs=("$corpus" "tests/fuzz/corpus/$target")
  [ -d "tests/fuzz/regressions/$target" ] && inputs+=("tests/fuzz/regressions/$target")
  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix="$artifacts/")
  [ -f "tests/fuzz/$target.dict" ] && options+=(-dict="tests/fuzz/$target.dict")
  "build/fuzz/${target}_fuzz" "${options[@]}" "${inputs[@]}" >"build/fuzz/logs/$target.log" 2>&1
}

# One line per finished run; the log's end and the input when it failed.
report() {
  local target=$1 status=$2
  local log=build/fuzz/logs/$target.log
  local runs coverage
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  coverage=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
  if [ "$status" -eq 0 ]; then
    echo "fuzz: $target: ${runs:-?} runs in ${seconds} s, ${coverage:-cov: ?}: ok"
    return
  fi
  echo "fuzz: $target FAILED (exit $status); the end of $log:"
  tail -n 60 "$log" | sed 's/^/    /'
  local artifact
  artifact=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -1)
  if [ -n "$artifact" ]; then
    echo "fuzz: reproduce with build/fuzz/${target}_fuzz $artifact; once fixed, keep the input"
    echo "      as tests/fuzz/regressions/$target/<what-it-found> (the corpus test replays it)"
  fi
}

jobs=${FUZZ_JOBS:-$(nproc)}
declare -A running=()  # pid -> target
failed=()
# Waits for one run to end and reports it.
await_run() {
  local pid status=0
  wait -n -p pid "${!running[@]}" || status=$?
  report "${running[$pid]}" "$status"
  [ "$status" -eq 0 ] || failed+=("${running[$pid]}")
  unset "running[$pid]"
}

echo "== fuzz: ${selected[*]}, ${seconds} s each, $jobs at a time"
for target in "${selected[@]}"; do
  while [ ${#running[@]} -ge "$jobs" ]; do
    await_run
  done
  run "$target" &
  running[$!]=$target
done
while [ ${#running[@]} -gt 0 ]; do
  await_run
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: every target ran clean"
