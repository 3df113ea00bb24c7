#!/usr/bin/env bash
# The heaviest keys (GET /top, `top_keys`): what counting every request's keys costs the
# forward and all-429 paths. sluice runs the same configuration with `top_keys: 64` (on) and
# `top_keys: 0` (off), ROUNDS times; the table gives each row's medians and, for each round's
# pair, on ÷ off. Then GET /top's answer after an all-429 run.
#
# Run (from the repository root, after a build of sluice):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/top_keys.sh
#
# The configuration: with CLIENTS=1000 (the default), two limiters on every request: `per-ip`
# (key: ip; one client address, so a key that is always found) and `per-client` (key:
# header:X-Client, a secret key; wrk sends 1000 clients in turn, bench/shared/clients.lua, so
# with 64 places each loop's summary evicts a key on nearly every request: the costliest
# path). With CLIENTS=1, `per-ip` alone, as bench/peers.sh measures. forward: no limiter ever
# limits; all-429: per-ip allows one request an hour, so every request after the first is
# answered 429.
#
# Machine: sluice alone on PROXY_CPU (one event loop); wrk and the upstream (one nginx worker
# answering 200) share LOAD_CPU.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/release/sluice]  ROUNDS [3]  DURATION [4s]  WARMUP [1s]  CONNECTIONS [50]
#   TOP_KEYS [64]  CLIENTS [1000]  UPSTREAM_PORT [18080]  SLUICE_PORT [18081]  SLUICE_ADMIN_PORT [18091]
#   PIN [1]  PROXY_CPU [1]  LOAD_CPU [0]  KEEP_WORKDIR [0]
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
CONNECTIONS=${CONNECTIONS:-50}
TOP_KEYS=${TOP_KEYS:-64}
CLIENTS=${CLIENTS:-1000}
[[ $CLIENTS == 1 || $CLIENTS == 1000 ]] || die "CLIENTS is 1 or 1000"
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLUICE_PORT=${SLUICE_PORT:-18081}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}

[[ -x $SLUICE_BIN ]] || die "no $SLUICE_BIN: cmake --build --preset release --target sluice"
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install wrk nginx-light curl)"
done
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLUICE_PORT" "$SLUICE_ADMIN_PORT"
pin_sides sluice "wrk and upstream"

cleanup_on_exit
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-top-keys.XXXXXX")
chmod 755 "$work" # nginx workers started as root run unprivileged
start_upstream_nginx

# config TOP_KEYS PER_IP_LIMIT: sluice's configuration.
config() {
  local per_client="" limiters="per-ip"
  if ((CLIENTS == 1000)); then
    per_client='  per-client: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: "header:X-Client"}'
    limiters="per-ip, per-client"
  fi
  cat <<EOF
listen: "127.0.0.1:$SLUICE_PORT"
admin: "127.0.0.1:$SLUICE_ADMIN_PORT"
threads: 1
upstream: "http://127.0.0.1:$UPSTREAM_PORT"
limits_headers: none
log: {level: warn, format: text, access: false}
top_keys: $1
limiters:
  per-ip: {algorithm: fixed_window, limit: $2, window: 1h, key: ip}
$per_client
routes:
  - {name: all, match: {path_prefix: /}, limiters: [$limiters]}
EOF
}

rows=("forward, off" "forward, on" "all-429, off" "all-429, on")
top_answer=""

# measure ROUND ROW: starts sluice for ROW, checks, warms up, measures, stops.
measure() {
  local round=$1 row=$2 out=$work/wrk.txt sluice_pid code expected ticks0 ticks1 limit top_keys
  local rps requests p50 p99 non2xx sockerr cpu_us url=http://127.0.0.1:$SLUICE_PORT/
  local clients=$repo_root/bench/shared/clients.lua
  log "round $round of $ROUNDS: $row"
  if [[ $row == forward* ]]; then limit=1000000000 expected=200; else limit=1 expected=429; fi
  if [[ $row == *on ]]; then top_keys=$TOP_KEYS; else top_keys=0; fi
  config "$top_keys" "$limit" >"$work/sluice.yaml"
  start "$work/sluice.log" "${proxy_pin[@]}" "$SLUICE_BIN" run -c "$work/sluice.yaml"
  sluice_pid=$pid
  wait_port "$SLUICE_PORT" "$sluice_pid" sluice "$work/sluice.log"
  http_code -H 'X-Client: first' "$url" >/dev/null # all-429: the hour's one request
  code=$(http_code -H 'X-Client: check' "$url")
  [[ $code == "$expected" ]] || die "$row: a request got HTTP $code, expected $expected"
  run_client "$work/warmup.txt" "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" \
    -s "$clients" "$url" || { cat "$work/warmup.txt" >&2; die "wrk failed against $url"; }
  ticks0=$(cpu_ticks "$sluice_pid")
  run_client "$out" "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency \
    -s "$clients" "$url" || { cat "$out" >&2; die "wrk failed against $url"; }
  ticks1=$(cpu_ticks "$sluice_pid")
  alive "$sluice_pid" || { tail -n 20 "$work/sluice.log" >&2; die "sluice exited during the run"; }
  if [[ $row == "all-429, on" && -z $top_answer ]]; then
    top_answer=$(curl -s --max-time 2 "http://127.0.0.1:$SLUICE_ADMIN_PORT/top?n=3")
  fi
  stop_pid "$sluice_pid" 15
  while port_open "$SLUICE_PORT"; do sleep 0.05; done
  read_wrk "$out" || { cat "$out" >&2; die "could not read wrk's output for $row"; }
  if [[ $expected == 200 ]]; then
    ((non2xx == 0)) || die "$row: $non2xx answers were not 2xx"
  else
    ((non2xx == requests)) || die "$row: $((requests - non2xx)) answers were not 429"
  fi
  cpu_us=$(awk -v d=$((ticks1 - ticks0)) -v hz="$clk_tck" -v n="$requests" \
    'BEGIN {printf "%.2f", d / hz * 1e6 / n}')
  results+=("$row|$rps|$p99|$cpu_us")
}

# Each round measures both paths, each as a pair: off then on, or on then off (alternating by
# round), back to back, so that a pair shares the machine's moment; the table also gives the
# median of the pairs' ratios.
for ((round = 1; round <= ROUNDS; round++)); do
  for path in forward all-429; do
    if ((round % 2)); then order=(off on); else order=(on off); fi
    for state in "${order[@]}"; do
      measure "$round" "$path, $state"
    done
  done
done

# ---------------------------------------------------------------- the table
column_of() { # ROW FIELD: field 2 req/s, 3 p99, 4 CPU µs/request, of ROW's results, one per line
  local result
  for result in "${results[@]}"; do
    IFS='|' read -r -a f <<<"$result"
    if [[ ${f[0]} == "$1" ]]; then echo "${f[$2 - 1]}"; fi
  done
}
# ratios PATH FIELD: on ÷ off of each round's pair, one per line.
ratios() {
  paste <(column_of "$1, on" "$2") <(column_of "$1, off" "$2") | awk '{printf "%.3f\n", $1 / $2}'
}
echo
echo "| path, top_keys | req/s (rounds) | median | on ÷ off, pairs (median) | p99 ms | sluice CPU µs/request | CPU on ÷ off, pairs (median) |"
echo "|---|---|---:|---:|---:|---:|---:|"
# shellcheck disable=SC2046 # one word per round
for row in "${rows[@]}"; do
  path=${row%,*}
  rps_ratio="" cpu_ratio=""
  if [[ $row == *on ]]; then
    rps_ratio="$(ratios "$path" 2 | tr '\n' ' ')($(median $(ratios "$path" 2)))"
    cpu_ratio="$(ratios "$path" 4 | tr '\n' ' ')($(median $(ratios "$path" 4)))"
  fi
  awk -v row="$row" -v all="$(column_of "$row" 2 | tr '\n' ' ')" -v rps="$(median $(column_of "$row" 2))" \
    -v ratio="$rps_ratio" -v p99="$(median $(column_of "$row" 3))" \
    -v cpu="$(median $(column_of "$row" 4))" -v cpu_ratio="$cpu_ratio" \
    'BEGIN {printf "| %s | %s| %.0f | %s | %.2f | %.2f | %s |\n", row, all, rps, ratio, p99, cpu, cpu_ratio}'
done
echo
echo "$ROUNDS rounds of wrk -t1 -c$CONNECTIONS -d$DURATION (after a $WARMUP warm-up), medians;" \
  "top_keys: $TOP_KEYS; clients: $CLIENTS; pinning: $pinning; machine: $(describe_machine)"
echo
echo "GET /top?n=3 after an all-429 run: $top_answer"
