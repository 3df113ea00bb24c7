#!/usr/bin/env bash
# sluice vs nginx `limit_req` vs HAProxy stick-table rate limiting, all on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/peers.sh
#
# Each proxy sits in front of the same upstream (an nginx worker answering `return 200`) and is
# loaded by the same wrk command, on two paths:
#   forward  a limit that never triggers, so every request goes to the upstream and back;
#   all-429  a limit that is already used up, so every request is answered 429 by the proxy.
#   forward-redis  (sluice only) the forward path with `store: redis`: every request is decided
#            by the Redis store's script on a redis-server started here, on the load side's CPU.
#            Compared with `forward`, it shows what the Redis round trip adds.
# For each (proxy, path) it prints req/s, p50/p99 latency, the proxy's CPU time per request
# (user + system, read from /proc before and after the run), and how busy the proxy and the
# load side (wrk + upstream) were, as shares of one core.
#
# Rounds: the measurements are taken in ROUNDS rounds of DURATION each. A round measures every
# (path, proxy) once, the proxies in a rotated order (round 2 starts with the second one), so a
# slow minute of a shared machine lands on all of them rather than on whichever ran then. The
# table gives each figure's median over the rounds, and the comparisons also count the rounds
# in which sluice beat nginx against the nginx run of the same round. ROUNDS=1 is a single pass.
#
# Fairness: every proxy runs one worker process / one thread (nginx worker_processes 1,
# HAProxy nbthread 1, sluice threads: 1), with its own config, pid and log files in a temporary
# directory, no access log, and the same keep-alive to clients and to the upstream. On a machine
# with 2 or more cores the proxy under test is pinned alone to one CPU (PROXY_CPU, default 1)
# and wrk plus the upstream share another (LOAD_CPU, default 0), with taskset: the proxy always
# has a whole core and never fights its own load generator for it, the load side is the same
# for all three, and runs repeat. Reading the numbers: when the proxy's core is near 100 %, the
# proxy was the bottleneck and req/s compares the proxies; when the load side is near 100 %
# instead, req/s is the load side's ceiling and CPU µs/req is the figure that compares them
# (it also falls a little as load rises, since a busy event loop handles more per wake-up, so
# compare it at similar req/s). Shares well under 100 on both sides mean something else on the
# machine took the CPU: run again on a quiet machine. PIN=0 turns pinning off, leaving all
# processes to the scheduler on every core.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/release/sluice]   ROUNDS [5]  DURATION [4s]  WARMUP [1s]  CONNECTIONS [50]
#   WRK_THREADS [1]   PROXIES ["sluice nginx haproxy"]   BENCH_PATHS ["forward all-429"]
#   UPSTREAM_PORT [18080]  SLUICE_PORT [18081]  NGINX_PORT [18082]  HAPROXY_PORT [18083]
#   SLUICE_ADMIN_PORT [18091]   REDIS_PORT [18379]   PIN [1]  PROXY_CPU [1]  LOAD_CPU [0]   KEEP_WORKDIR [0]
#   SLUICE_ENV [] (VAR=value words for sluice's environment)
# Before and after in one run: the proxy `sluice-b` is sluice again, from SLUICE_B_BIN [SLUICE_BIN]
# with SLUICE_B_ENV [SLUICE_ENV] (e.g. PROXIES="sluice sluice-b" SLUICE_B_BIN=../before/sluice),
# measured in the same rounds as the others and on the same paths.
#
# nginx, haproxy and wrk come from the distribution: if one is missing, it is installed with
# apt-get (as root), without letting the package start its system service. The script never
# uses the system services or port 80; it starts and stops its own instances.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"
cleanup_on_exit
templates=$repo_root/bench/peers

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-50}
WRK_THREADS=${WRK_THREADS:-1}
PROXIES=${PROXIES:-sluice nginx haproxy}
BENCH_PATHS=${BENCH_PATHS:-forward all-429}
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLUICE_PORT=${SLUICE_PORT:-18081}
NGINX_PORT=${NGINX_PORT:-18082}
HAPROXY_PORT=${HAPROXY_PORT:-18083}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
REDIS_PORT=${REDIS_PORT:-18379}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
# A relative SLUICE_BIN is relative to the repository root, wherever the script is run from.
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
SLUICE_B_BIN=${SLUICE_B_BIN:-$SLUICE_BIN}
[[ $SLUICE_B_BIN == /* ]] || SLUICE_B_BIN=$repo_root/$SLUICE_B_BIN
SLUICE_ENV=${SLUICE_ENV:-}
SLUICE_B_ENV=${SLUICE_B_ENV:-$SLUICE_ENV}

# ---------------------------------------------------------------- the proxies
# start_PROXY PATH: starts the proxy for that path and waits until it accepts; sets proxy_pid,
# proxy_port, proxy_log.
start_sluice() {
  start_sluice_from "$SLUICE_BIN" "$SLUICE_ENV" "$1"
}
start_sluice-b() {
  start_sluice_from "$SLUICE_B_BIN" "$SLUICE_B_ENV" "$1"
}

# start_sluice_from BINARY ENVIRONMENT PATH: start_sluice's work, for either sluice.
start_sluice_from() {
  local binary=$1 environment=$2 path=$3 config=$work/sluice-$3.yaml template
  local -a variables
  read -r -a variables <<<"$environment"
  case $path in
    forward) template=$templates/sluice-forward.yaml ;;
    all-429) template=$templates/sluice-429.yaml ;;
    forward-redis) template=$templates/sluice-forward-redis.yaml ;;
  esac
  render "$template" "$config" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    SLUICE_PORT="$SLUICE_PORT" SLUICE_ADMIN_PORT="$SLUICE_ADMIN_PORT" REDIS_PORT="$REDIS_PORT"
  check_sluice "$config"
  proxy_port=$SLUICE_PORT
  proxy_log=$work/sluice-$path.log
  start "$proxy_log" "${proxy_pin[@]}" env "${variables[@]}" "$binary" run -c "$config"
  proxy_pid=$pid
  wait_port "$proxy_port" "$proxy_pid" sluice "$proxy_log"
}

start_nginx() {
  local path=$1 rate burst
  case $path in
    forward) rate=1000000r/s burst="burst=1000000 nodelay" ;;
    all-429) rate=1r/m burst="" ;;
  esac
  render "$templates/nginx.conf" "$work/nginx-$path.conf" DIR="$work" \
    UPSTREAM_PORT="$UPSTREAM_PORT" NGINX_PORT="$NGINX_PORT" RATE="$rate" BURST="$burst"
  proxy_port=$NGINX_PORT
  proxy_log=$work/nginx-$path.log
  launch_nginx "nginx-$path" "$proxy_port" proxy_pin
  proxy_pid=$pid
}

start_haproxy() {
  local path=$1 config=$work/haproxy-$1.cfg deny_above
  case $path in
    forward) deny_above=1000000000 ;;
    all-429) deny_above=0 ;;
  esac
  render "$templates/haproxy.cfg" "$config" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    HAPROXY_PORT="$HAPROXY_PORT" DENY_ABOVE="$deny_above"
  proxy_port=$HAPROXY_PORT
  proxy_log=$work/haproxy-$path.log
  haproxy -c -q -f "$config" >"$proxy_log" 2>&1 ||
    { cat "$proxy_log" >&2; die "haproxy -c refused $config"; }
  # -db: stay in the foreground, one process, so its pid is the process that does the work.
  start "$proxy_log" "${proxy_pin[@]}" haproxy -db -f "$config"
  proxy_pid=$pid
  wait_port "$proxy_port" "$proxy_pid" haproxy "$proxy_log"
}

# ---------------------------------------------------------------- one measurement

# run_wrk PORT DURATION OUT: wrk's report goes to OUT and its CPU seconds to client_cpu.
run_wrk() {
  local port=$1 duration=$2 out=$3
  run_client "$out" "${load_pin[@]}" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$duration" \
    --latency "http://127.0.0.1:$port/" ||
    { cat "$out" >&2; die "wrk failed against 127.0.0.1:$port"; }
}

# measure ROUND PROXY PATH: start, check, warm up, measure, stop; appends a row to results.
measure() {
  local round=$1 proxy=$2 path=$3 code expected out ticks0 ticks1 t0 t1
  local rps requests p50 p99 non2xx sockerr cpu_us cpu_pct load_pct up0 up1
  log "round $round of $ROUNDS: $proxy, $path path"
  "start_$proxy" "$path"

  # Check that the path does what it claims before loading it.
  case $path in
    forward | forward-redis) expected=200 ;;
    all-429)
      expected=429
      http_code "http://127.0.0.1:$proxy_port/" >/dev/null # uses up the limit
      ;;
  esac
  code=$(http_code "http://127.0.0.1:$proxy_port/")
  [[ $code == "$expected" ]] ||
    die "$proxy $path path: a request got HTTP ${code:-no answer}, expected $expected"

  run_wrk "$proxy_port" "$WARMUP" "$work/warmup.txt"

  out=$work/wrk-$proxy-$path-$round.txt
  ticks0=$(cpu_ticks "$proxy_pid")
  up0=$(cpu_ticks "$upstream_pid")
  t0=$(now_ns)
  run_wrk "$proxy_port" "$DURATION" "$out"
  t1=$(now_ns)
  ticks1=$(cpu_ticks "$proxy_pid")
  up1=$(cpu_ticks "$upstream_pid")
  alive "$proxy_pid" || { tail -n 20 "$proxy_log" >&2; die "$proxy exited during the run"; }

  stop_pid "$proxy_pid"

  read_wrk "$out" || { cat "$out" >&2; die "could not read wrk's output for $proxy $path"; }
  cpu_figures $((ticks1 - ticks0)) "$requests" $((t1 - t0)) $((up1 - up0)) "$client_cpu"
  results+=("$round|$proxy|$path|$rps|$p50|$p99|$cpu_us|$cpu_pct|$load_pct|$non2xx|$sockerr")
}

# ---------------------------------------------------------------- main
install_missing nginx:nginx haproxy:haproxy wrk:wrk curl:curl pgrep:procps redis-server:redis-server
[[ -x $SLUICE_BIN ]] || [[ " $PROXIES " != *" sluice "* ]] ||
  die "no sluice binary at $SLUICE_BIN: build it (cmake --preset release && cmake --build --preset release --target sluice) or set SLUICE_BIN"
for proxy in $PROXIES; do
  case $proxy in sluice | sluice-b | nginx | haproxy) ;; *) die "unknown proxy '$proxy' in PROXIES" ;; esac
done
for path in $BENCH_PATHS; do
  case $path in forward | all-429 | forward-redis) ;; *) die "unknown path '$path' in BENCH_PATHS" ;; esac
done

pin_sides proxy "wrk and upstream"
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLUICE_PORT" \
  "$SLUICE_ADMIN_PORT" "$NGINX_PORT" "$HAPROXY_PORT" "$REDIS_PORT"

echo "versions:"
echo "  $(nginx -v 2>&1)"
echo "  $(haproxy -v 2>&1 | head -n 1)"
echo "  $(wrk -v 2>&1 | head -n 1)"
if [[ -x $SLUICE_BIN ]]; then echo "  $("$SLUICE_BIN" version 2>&1 | head -n 1)"; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-peers.XXXXXX")
# nginx workers run as an unprivileged user when started as root: let them reach their files.
chmod 755 "$work"

start_upstream_nginx
[[ $(http_code "http://127.0.0.1:$UPSTREAM_PORT/") == 200 ]] || die "the upstream does not answer 200"

if [[ " $BENCH_PATHS " == *" forward-redis "* && " $PROXIES " == *" sluice "* ]]; then
  log "redis-server on 127.0.0.1:$REDIS_PORT"
  start_redis "$REDIS_PORT" "$work/redis.log" load_pin
fi

read -r -a proxy_order <<<"$PROXIES"
for ((round = 1; round <= ROUNDS; round++)); do
  for path in $BENCH_PATHS; do
    for ((i = 0; i < ${#proxy_order[@]}; i++)); do
      proxy=${proxy_order[(i + round - 1) % ${#proxy_order[@]}]}
      # Only sluice has a Redis store.
      if [[ $path == forward-redis && $proxy != sluice* ]]; then continue; fi
      measure "$round" "$proxy" "$path"
    done
  done
done

collect_medians 8

# shellcheck disable=SC2016 # an awk program
print_rounds "req/s, p99 ms, CPU µs/req" 'printf "  %.0f %s %s", $3, $5, $6'

echo
if ((ROUNDS > 1)); then echo "medians of $ROUNDS rounds:"; fi
echo "| proxy | path | req/s | p50 ms | p99 ms | CPU µs/req | proxy CPU % | load CPU % | non-2xx | socket errors |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${medians[@]}"; do
  IFS='|' read -r proxy path rps p50 p99 cpu_us cpu_pct load_pct non2xx sockerr <<<"$row"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$proxy" "$path" "$rps" \
    "$p50" "$p99" "$cpu_us" "$cpu_pct" "$load_pct" "$non2xx" "$sockerr"
done
busy_rows=""
for row in "${medians[@]}"; do
  IFS='|' read -r proxy path _ _ _ _ cpu_pct load_pct _ <<<"$row"
  if awk -v a="$cpu_pct" -v b="$load_pct" 'BEGIN {exit !(a < 80 && b < 80)}'; then
    busy_rows+=" $proxy/$path"
  fi
done
if [[ -n $busy_rows ]]; then
  echo
  echo "note: neither the proxy nor the load side used 80 % of its core in:$busy_rows;" \
    "other processes were taking CPU, so run again on a quiet machine."
fi

# The comparisons the product cares about, when both sluice and nginx ran: on the medians, and
# round by round (sluice against the nginx run of the same round).
declare -A rps_of p99_of cpu_of
for row in "${medians[@]}"; do
  IFS='|' read -r proxy path rps p50 p99 cpu_us _ <<<"$row"
  rps_of[$proxy/$path]=$rps
  p99_of[$proxy/$path]=$p99
  cpu_of[$proxy/$path]=$cpu_us
done
verdict() { awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
  ok = (op == ">=") ? a >= b : a <= b; printf "%s %s %s: %s", a, op, b, ok ? "met" : "NOT met" }'; }
if [[ -n ${rps_of[sluice/forward]:-} ]]; then
  echo
  echo "- sluice forward CPU µs/req ≤ 12: $(verdict "${cpu_of[sluice/forward]}" "<=" 12)" \
    "($(column sluice/forward 4 | awk '$1 <= 12 {k++} END {printf "in %d of %d rounds", k, NR}'))"
  if [[ -n ${rps_of[nginx/forward]:-} ]]; then
    echo "- forward req/s, sluice ≥ nginx: $(verdict "${rps_of[sluice/forward]}" ">=" "${rps_of[nginx/forward]}") (in $(rounds_won 1 ">=" forward))"
    echo "- forward p99 ms, sluice ≤ nginx: $(verdict "${p99_of[sluice/forward]}" "<=" "${p99_of[nginx/forward]}") (in $(rounds_won 3 "<=" forward))"
    echo "- forward CPU µs/req, sluice ≤ nginx: $(verdict "${cpu_of[sluice/forward]}" "<=" "${cpu_of[nginx/forward]}") (in $(rounds_won 4 "<=" forward))"
  fi
fi
if [[ -n ${p99_of[sluice/forward]:-} && -n ${p99_of[sluice/forward-redis]:-} ]]; then
  added=$(awk -v a="${p99_of[sluice/forward-redis]}" -v b="${p99_of[sluice/forward]}" \
    'BEGIN {printf "%.2f", a - b}')
  echo "- p99 ms added by the Redis store ≤ 1: $(verdict "$added" "<=" 1)"
fi
if [[ -n ${rps_of[sluice/all-429]:-} && -n ${rps_of[nginx/all-429]:-} ]]; then
  echo "- all-429 req/s, sluice ≥ nginx: $(verdict "${rps_of[sluice/all-429]}" ">=" "${rps_of[nginx/all-429]}") (in $(rounds_won 1 ">=" all-429))"
fi

echo
echo "$ROUNDS round(s) of wrk -t$WRK_THREADS -c$CONNECTIONS -d$DURATION --latency (each after a $WARMUP warm-up);" \
  "pinning: $pinning; machine: $(describe_machine)"
echo "CPU µs/req = the proxy's user+system CPU during the run / requests; proxy CPU % and load" \
  "CPU % = share of one core used by the proxy and by wrk + upstream (near 100 = the bottleneck)."
