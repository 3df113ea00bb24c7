#!/usr/bin/env bash
# Every layer includes only itself and the layers below it (docs/architecture.md's layout
# section draws the arrows), and only the third-party headers its layer may know: no Asio or Beast below io/,
# no Beast HTTP in io/ (TLS and HTTP/2 plug in above it), nothing but the standard library in
# limiter/. A subfolder with a rule of its own is a layer apart: http/h2/ includes http/, never
# the other way. Exits 1 listing every include that breaks a rule.
set -euo pipefail
cd "$(dirname "$0")/.."

# folder | project folders it may include (besides itself) | third-party includes it must not use
rules=(
  "limiter||boost asio yaml-cpp spdlog hiredis fmt CLI"
  "config|limiter|asio boost/asio boost/beast spdlog hiredis CLI"
  "proxy/auth||boost/asio boost/beast yaml-cpp spdlog hiredis CLI"
  "proxy/cost||boost/asio boost/beast yaml-cpp spdlog hiredis fmt CLI"
  "proxy/rls|limiter|asio boost/asio boost/beast yaml-cpp spdlog hiredis CLI"
  "proxy/pipeline|limiter config proxy/auth|boost/asio boost/beast yaml-cpp spdlog hiredis CLI"
  "proxy/replay|limiter config proxy/pipeline proxy/auth|boost/asio boost/beast yaml-cpp spdlog hiredis CLI"
  "proxy/telemetry|limiter config|boost/asio boost/beast yaml-cpp hiredis CLI"
  "proxy/io||boost/beast/http yaml-cpp spdlog hiredis CLI"
  "proxy/tls|limiter config proxy/pipeline proxy/auth proxy/io|boost/beast/http yaml-cpp spdlog hiredis CLI"
  "proxy/live|limiter config proxy/pipeline proxy/auth proxy/cost proxy/telemetry proxy/tls|boost/asio boost/beast hiredis CLI"
  "proxy/store|limiter config proxy/pipeline proxy/auth proxy/telemetry proxy/io|boost/beast/http CLI"
  "proxy/http|limiter config proxy/pipeline proxy/auth proxy/cost proxy/telemetry proxy/live proxy/io proxy/tls proxy/store|hiredis CLI"
  "proxy/http/h2|limiter config proxy/pipeline proxy/auth proxy/cost proxy/telemetry proxy/live proxy/io proxy/tls proxy/store proxy/rls proxy/http|hiredis CLI"
  "proxy/admin|limiter config proxy/pipeline proxy/auth proxy/cost proxy/telemetry proxy/live proxy/io proxy/tls proxy/store proxy/rls proxy/http|hiredis CLI"
  "proxy/server|limiter config proxy/pipeline proxy/auth proxy/cost proxy/telemetry proxy/live proxy/io proxy/tls proxy/store proxy/rls proxy/http proxy/http/h2 proxy/admin|hiredis CLI"
  "proxy/cli|limiter config proxy/pipeline proxy/auth proxy/cost proxy/replay proxy/telemetry proxy/live proxy/io proxy/tls proxy/store proxy/rls proxy/http proxy/http/h2 proxy/admin proxy/server|hiredis"
)

status=0
known_folders=()
for rule in "${rules[@]}"; do
  known_folders+=("${rule%%|*}")
done

# The layer a path belongs to: the longest folder with a rule that holds it (proxy/store/redis
# is in proxy/store; proxy/http/h2 has a rule of its own, so it is not in proxy/http).
layer_of() {
  local path=$1 best="" folder
  for folder in "${known_folders[@]}"; do
    if [[ "$path" == "$folder"/* && ${#folder} -gt ${#best} ]]; then
      best=$folder
    fi
  done
  echo "$best"
}

for rule in "${rules[@]}"; do
  IFS='|' read -r folder allowed forbidden <<<"$rule"
  mapfile -t files < <(find "$folder" -name '*.hpp' -o -name '*.cpp' -o -name '*.cpp.in')
  [ ${#files[@]} -gt 0 ] || continue
  for file in "${files[@]}"; do
    [ "$(layer_of "$file")" == "$folder" ] || continue # a sub-layer's file: its own rule
    while IFS= read -r line; do
      included=$(sed -E 's/^[^:]*:[0-9]+:\s*#\s*include\s*["<]([^">]+)[">].*/\1/' <<<"$line")
      if [[ "$line" =~ \#[[:space:]]*include[[:space:]]*\" ]]; then
        ok=0
        included_layer=$(layer_of "$included")
        for layer in "$folder" $allowed; do
          [[ "$included_layer" == "$layer" ]] && ok=1
        done
        if [ $ok -eq 0 ]; then
          echo "$line: $folder may not include \"$included\"" >&2
          status=1
        fi
      else
        for banned in $forbidden; do
          if [[ "$included" == "$banned"* ]]; then
            echo "$line: $folder may not use <$included>" >&2
            status=1
          fi
        done
      fi
    done < <(grep -nHE '^\s*#\s*include\s*["<]' "$file")
  done
done

# Every source folder has a rule: a new layer is placed in the map before it is used.
while IFS= read -r dir; do
  found=0
  for folder in "${known_folders[@]}"; do
    [[ "$dir" == "$folder" || "$dir" == "$folder"/* ]] && found=1
  done
  if [ $found -eq 0 ]; then
    echo "$dir: a source folder without a layering rule in scripts/check_layering.sh" >&2
    status=1
  fi
done < <(find limiter config proxy -type f \( -name '*.hpp' -o -name '*.cpp' \) -printf '%h\n' | sort -u)

[ $status -eq 0 ] && echo "layering: every include follows the layers"
exit $status
