#!/usr/bin/env bash
# Reading what a response cost (SPEC §9): a route that reads OpenAI's usage from its responses
# (`cost_from: {usage: openai}`, a `cost: response` token budget) against the same route without
# it (a token bucket charged at admission), for two responses an upstream nginx serves as files:
# a 1 MiB chat completion streamed as events (text/event-stream) and a 4 KiB one as JSON. sluice
# runs one configuration holding both routes; the rounds alternate the routes, and the table gives
# each one's medians and the metered route as a share of the plain one.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/cost.sh
#
# Machine: sluice alone on PROXY_CPU (one event loop); wrk and the upstream (one nginx worker)
# share LOAD_CPU. Neither limiter ever limits.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/release/sluice]  ROUNDS [3]  DURATION [4s]  WARMUP [1s]  CONNECTIONS [16]
#   UPSTREAM_PORT [18080]  SLUICE_PORT [18081]  SLUICE_ADMIN_PORT [18091]  PIN [1]
#   PROXY_CPU [1]  LOAD_CPU [0]  KEEP_WORKDIR [0]
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"

SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-16}
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLUICE_PORT=${SLUICE_PORT:-18081}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}

[[ -x $SLUICE_BIN ]] || die "no $SLUICE_BIN: cmake --build --preset release --target sluice"
for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install wrk nginx-light curl python3)"
done
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLUICE_PORT" "$SLUICE_ADMIN_PORT"
pin_sides sluice "wrk and the upstream"
cleanup_on_exit
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cost.XXXXXX")
chmod 755 "$work"

# ---------------------------------------------------------------- the responses
mkdir -p "$work/files"
python3 - "$work/files" <<'PY'
import json, sys
out = sys.argv[1]
chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
         "model": "gpt-4o-mini", "usage": None,
         "choices": [{"index": 0, "delta": {"content": "The quick brown fox jumps over the lazy dog."},
                      "finish_reason": None}]}
line = "data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n"
events = line * ((1 << 20) // len(line))
last = {"id": "chatcmpl-1", "choices": [],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20000, "total_tokens": 20050}}
events += "data: " + json.dumps(last, separators=(",", ":")) + "\n\ndata: [DONE]\n\n"
open(f"{out}/stream", "w").write(events)
content = "The quick brown fox jumps over the lazy dog. " * 85
body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 900, "total_tokens": 950}}
open(f"{out}/json", "w").write(json.dumps(body, separators=(",", ":")))
PY
nginx_config upstream "$UPSTREAM_PORT" "root $work/files; default_type application/json;
            location ~ /stream$ { default_type text/event-stream; }"
launch_nginx upstream "$UPSTREAM_PORT" load_pin

# ---------------------------------------------------------------- sluice, both routes
cat >"$work/sluice.yaml" <<EOF
listen: "127.0.0.1:$SLUICE_PORT"
admin: "127.0.0.1:$SLUICE_ADMIN_PORT"
threads: 1
upstream: "http://127.0.0.1:$UPSTREAM_PORT"
limits_headers: none
log: {level: warn, format: text, access: false}
limiters:
  tokens: {algorithm: token_bucket, rate: 4000000000/s, burst: 4000000000, cost: response}
  requests: {algorithm: token_bucket, rate: 4000000000/s, burst: 4000000000}
routes:
  - {name: metered, match: {path_prefix: /metered/}, limiters: [tokens], cost_from: {usage: openai}}
  - {name: plain, match: {path_prefix: /plain/}, limiters: [requests]}
EOF
# nginx serves /metered/stream and /plain/stream as /stream: the prefix goes upstream as it is.
ln -s . "$work/files/metered"
ln -s . "$work/files/plain"
check_sluice "$work/sluice.yaml"
start "$work/sluice.log" "${proxy_pin[@]}" "$SLUICE_BIN" run -c "$work/sluice.yaml"
sluice_pid=$pid
wait_port "$SLUICE_PORT" "$sluice_pid" sluice "$work/sluice.log"
for route in metered plain; do
  for response in stream json; do
    code=$(http_code "http://127.0.0.1:$SLUICE_PORT/$route/$response")
    [[ $code == 200 ]] || die "/$route/$response got HTTP $code, expected 200"
  done
done

# ---------------------------------------------------------------- rounds
# measure ROUND ROUTE RESPONSE
measure() {
  local url=http://127.0.0.1:$SLUICE_PORT/$2/$3 out=$work/wrk.txt ticks0 ticks1
  local rps requests p50 p99 non2xx sockerr
  run_client "$work/warmup.txt" "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" "$url" ||
    { cat "$work/warmup.txt" >&2; die "wrk failed against $url"; }
  ticks0=$(cpu_ticks "$sluice_pid")
  run_client "$out" "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency "$url" ||
    { cat "$out" >&2; die "wrk failed against $url"; }
  ticks1=$(cpu_ticks "$sluice_pid")
  read_wrk "$out" || { cat "$out" >&2; die "could not read wrk's output for $url"; }
  ((non2xx == 0)) || die "$url: $non2xx answers were not 2xx"
  results+=("$1|$2|$3|$rps|$(awk -v d=$((ticks1 - ticks0)) -v hz="$clk_tck" -v n="$requests" \
    'BEGIN {printf "%.2f", d / hz * 1e6 / n}')")
  log "round $1: /$2/$3 $rps req/s"
}
for ((round = 1; round <= ROUNDS; round++)); do
  for response in stream json; do
    if ((round % 2)); then order=(metered plain); else order=(plain metered); fi
    for route in "${order[@]}"; do
      measure "$round" "$route" "$response"
    done
  done
done
alive "$sluice_pid" || { tail -n 20 "$work/sluice.log" >&2; die "sluice exited during the run"; }
charged=$(curl -s "http://127.0.0.1:$SLUICE_ADMIN_PORT/metrics" |
  awk '/^sluice_cost_readings_total\{limiter="tokens",result="reported"\}/ {print $2}')

# ---------------------------------------------------------------- the table
collect_medians 2
echo
echo "| response | route | req/s | sluice CPU µs/request | metered / plain req/s | metered / plain CPU |"
echo "|---|---|---:|---:|---:|---:|"
for response in stream json; do
  for route in plain metered; do
    for row in "${medians[@]}"; do
      IFS='|' read -r r s rps cpu <<<"$row"
      [[ $r == "$route" && $s == "$response" ]] || continue
      if [[ $route == plain ]]; then
        plain_rps=$rps plain_cpu=$cpu
        echo "| $response | plain | $rps | $cpu | | |"
      else
        awk -v s="$response" -v rps="$rps" -v cpu="$cpu" -v pr="$plain_rps" -v pc="$plain_cpu" \
          'BEGIN {printf "| %s | metered | %s | %s | %.3f | %.3f |\n", s, rps, cpu, rps / pr, cpu / pc}'
      fi
    done
  done
done
echo
echo "$ROUNDS rounds of wrk -t1 -c$CONNECTIONS -d$DURATION per route and response (after a" \
  "$WARMUP warm-up), alternating, medians; responses read whole by the meter: $charged;" \
  "pinning: $pinning; machine: $(describe_machine)"
