#!/usr/bin/env bash
# Shared limits: what keeping the limiters in Redis costs a forwarded request. sluice runs the
# same configuration with each store, one after the other in rotated order, ROUNDS times, and the
# table gives each row's medians and its req/s as a share of the memory store's.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/shared.sh
#   BEFORE_BIN=/path/to/an/older/sluice bash bench/shared.sh   # adds "redis, before" and
#                                                             # "redis, lease, before" rows
#
# The configuration: two limiters on every request, neither ever limiting, so every request is
# decided and forwarded: `per-client`, a token bucket keyed by the X-Client header (wrk sends
# 1000 clients in turn, bench/shared/clients.lua), and `per-route`, a fixed window shared by all.
# Rows:
#   memory  the memory store
#   redis   store: redis, exact: every request decided in Redis (decide.lua, batched per loop)
#   redis, before  the same with BEFORE_BIN, when given (and "redis, lease, before")
#   redis, lease  the same with `lease: LEASE` on both limiters: each replica takes LEASE permits
#           of a key at once and grants them without a round trip
#   cluster, 3 masters  store: redis with cluster: true, on a 3-master Redis Cluster on loopback
#           (no replicas). The two limiters' keys lie on different masters for about 2 requests
#           in 3 (the route's key is on one master, the clients' keys spread), so those are
#           charged in two calls, one per master. (CLUSTER=0 leaves the row out.)
#
# Machine: sluice alone on PROXY_CPU (one event loop); wrk, the upstream (one nginx worker
# answering 200) and redis-server share LOAD_CPU, since a 2-core machine has no third core. Redis
# therefore takes CPU from the load generator: on a machine where Redis has a host of its own,
# the Redis rows would come closer to the memory row. sluice's own CPU per request (µs) is the
# figure that does not depend on that.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/release/sluice]  BEFORE_BIN []  ROUNDS [3]  DURATION [4s]  WARMUP [1s]
#   CONNECTIONS [50]  UPSTREAM_PORT [18080]  SLUICE_PORT [18081]  SLUICE_ADMIN_PORT [18091]
#   REDIS_PORT [18379] (the cluster's nodes: the 3 ports after it)  CLUSTER [1]  LEASE [100]
#   PIN [1]  PROXY_CPU [1]  LOAD_CPU [0]  KEEP_WORKDIR [0] (the configs and logs are also kept
#   after a failure)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"

SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
BEFORE_BIN=${BEFORE_BIN:-}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-50}
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLUICE_PORT=${SLUICE_PORT:-18081}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
REDIS_PORT=${REDIS_PORT:-18379}
CLUSTER=${CLUSTER:-1}
LEASE=${LEASE:-100}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}

[[ -x $SLUICE_BIN ]] || die "no $SLUICE_BIN: cmake --build --preset release --target sluice"
[[ -z $BEFORE_BIN || -x $BEFORE_BIN ]] || die "BEFORE_BIN $BEFORE_BIN is not executable"
for tool in wrk nginx redis-server redis-cli curl; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install wrk nginx-light redis-server curl)"
done

cluster_ports=()
((CLUSTER == 0)) || cluster_ports=($((REDIS_PORT + 1)) $((REDIS_PORT + 2)) $((REDIS_PORT + 3)))
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLUICE_PORT" \
  "$SLUICE_ADMIN_PORT" "$REDIS_PORT" "${cluster_ports[@]}"

pin_sides sluice "wrk, upstream and redis-server"

cleanup_on_exit
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-shared.XXXXXX")
# nginx workers run as an unprivileged user when started as root: let them reach their files.
chmod 755 "$work"

# ---------------------------------------------------------------- the servers everyone shares
start_upstream_nginx
start_redis "$REDIS_PORT" "$work/redis.log" load_pin
redis_pid=$pid

cluster_pids=()
if ((CLUSTER != 0)); then
  for port in "${cluster_ports[@]}"; do
    start_redis "$port" "$work/redis-$port.log" load_pin --cluster-enabled yes \
      --cluster-config-file "$work/nodes-$port.conf"
    cluster_pids+=("$pid")
  done
  redis-cli --cluster create "${cluster_ports[@]/#/127.0.0.1:}" --cluster-yes >"$work/cluster.log" 2>&1 ||
    die "redis-cli --cluster create failed: $(tail -n 3 "$work/cluster.log")"
  for ((i = 0; ; i++)); do # at most 10 s
    redis-cli -p "${cluster_ports[0]}" cluster info | grep -q cluster_state:ok && break
    ((i < 100)) || die "the Redis cluster is not ok 10 s after its creation"
    sleep 0.1
  done
fi

# ---------------------------------------------------------------- one row
# config STORE [LIMITER_OPTIONS]: sluice's configuration with that store section, and more
# options on both limiters (", lease: 100").
config() {
  cat <<EOF
listen: "127.0.0.1:$SLUICE_PORT"
admin: "127.0.0.1:$SLUICE_ADMIN_PORT"
threads: 1
upstream: "http://127.0.0.1:$UPSTREAM_PORT"
limits_headers: none
log: {level: warn, format: text, access: false}
$1
limiters:
  per-client: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: "header:X-Client"$2}
  per-route: {algorithm: fixed_window, limit: 1000000000, window: 1h, key: route$2}
routes:
  - {name: all, match: {path_prefix: /}, limiters: [per-client, per-route]}
EOF
}

redis_store="store: {type: redis, redis: {url: \"redis://127.0.0.1:$REDIS_PORT/0\", pool: 1, timeout: 100ms, on_error: deny}}"
cluster_row="cluster, 3 masters"
declare -A binary_of=([memory]=$SLUICE_BIN [redis]=$SLUICE_BIN ["redis, lease"]=$SLUICE_BIN)
declare -A store_of=([memory]="" [redis]=$redis_store ["redis, lease"]=$redis_store)
declare -A options_of=(["redis, lease"]=", lease: $LEASE")
rows=(memory redis "redis, lease")
if [[ -n $BEFORE_BIN ]]; then
  binary_of["redis, before"]=$BEFORE_BIN
  store_of["redis, before"]=$redis_store
  binary_of["redis, lease, before"]=$BEFORE_BIN
  store_of["redis, lease, before"]=$redis_store
  options_of["redis, lease, before"]=", lease: $LEASE"
  rows=(memory "redis, before" redis "redis, lease, before" "redis, lease")
fi
if ((CLUSTER != 0)); then
  binary_of[$cluster_row]=$SLUICE_BIN
  store_of[$cluster_row]="store: {type: redis, redis: {url: \"redis://127.0.0.1:${cluster_ports[0]}\", cluster: true, pool: 1, timeout: 100ms, on_error: deny}}"
  rows+=("$cluster_row")
fi

# redis_ports ROW / redis_pids ROW: the Redis servers a row's store uses.
redis_ports() { if [[ $1 == "$cluster_row" ]]; then echo "${cluster_ports[@]}"; else echo "$REDIS_PORT"; fi; }
redis_pids() { if [[ $1 == "$cluster_row" ]]; then echo "${cluster_pids[@]}"; else echo "$redis_pid"; fi; }

# decide_calls ROW: its Redis servers' count of decide.lua calls so far, and the µs spent in them.
decide_calls() {
  local port
  for port in $(redis_ports "$1"); do
    redis-cli -p "$port" info commandstats
  done | awk -F'[=,]' '/^cmdstat_(fcall|evalsha):/ {calls += $2; usec += $4} END {print calls + 0, usec + 0}'
}

# redis_ticks ROW: the CPU ticks its Redis servers have used.
redis_ticks() {
  local pid total=0
  for pid in $(redis_pids "$1"); do
    total=$((total + $(cpu_ticks "$pid")))
  done
  echo "$total"
}

# measure ROUND ROW: starts sluice for ROW, checks, warms up, measures, stops.
measure() {
  local round=$1 row=$2 out=$work/wrk.txt sluice_pid code ticks0 ticks1 redis0 redis1
  local rps requests p50 p99 non2xx sockerr cpu_us redis_us calls0 usec0 calls1 usec1 per_call
  local in_calls url=http://127.0.0.1:$SLUICE_PORT/ clients=$repo_root/bench/shared/clients.lua
  log "round $round of $ROUNDS: $row"
  config "${store_of[$row]}" "${options_of[$row]:-}" >"$work/sluice.yaml"
  start "$work/sluice.log" "${proxy_pin[@]}" "${binary_of[$row]}" run -c "$work/sluice.yaml"
  sluice_pid=$pid
  wait_port "$SLUICE_PORT" "$sluice_pid" sluice "$work/sluice.log"
  code=$(http_code -H 'X-Client: check' "$url")
  [[ $code == 200 ]] || die "$row: a request got HTTP $code, expected 200"
  run_client "$work/warmup.txt" "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" \
    -s "$clients" "$url" || { cat "$work/warmup.txt" >&2; die "wrk failed against $url"; }
  ticks0=$(cpu_ticks "$sluice_pid")
  redis0=$(redis_ticks "$row")
  read -r calls0 usec0 < <(decide_calls "$row")
  run_client "$out" "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency \
    -s "$clients" "$url" || { cat "$out" >&2; die "wrk failed against $url"; }
  ticks1=$(cpu_ticks "$sluice_pid")
  redis1=$(redis_ticks "$row")
  read -r calls1 usec1 < <(decide_calls "$row")
  alive "$sluice_pid" || { tail -n 20 "$work/sluice.log" >&2; die "sluice exited during the run"; }
  stop_pid "$sluice_pid" 15
  while port_open "$SLUICE_PORT"; do sleep 0.05; done
  read_wrk "$out" || { cat "$out" >&2; die "could not read wrk's output for $row"; }
  ((non2xx == 0)) || die "$row: $non2xx answers were not 2xx"
  cpu_us=$(awk -v d=$((ticks1 - ticks0)) -v hz="$clk_tck" -v n="$requests" \
    'BEGIN {printf "%.2f", d / hz * 1e6 / n}')
  redis_us=$(awk -v d=$((redis1 - redis0)) -v hz="$clk_tck" -v n="$requests" \
    'BEGIN {printf "%.2f", d / hz * 1e6 / n}')
  per_call=$(awk -v c=$((calls1 - calls0)) -v n="$requests" 'BEGIN {printf "%.1f", c ? n / c : 0}')
  in_calls=$(awk -v u=$((usec1 - usec0)) -v n="$requests" 'BEGIN {printf "%.2f", u / n}')
  results+=("$row|$rps|$p99|$cpu_us|$redis_us|$per_call|$in_calls")
}

for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#rows[@]}; i++)); do
    measure "$round" "${rows[(i + round - 1) % ${#rows[@]}]}"
  done
done

# ---------------------------------------------------------------- the table
column_of() { # ROW FIELD: field 2 req/s, 3 p99, 4 sluice CPU, 5 Redis CPU, 6 requests per call,
  # 7 Redis µs in decide.lua, of ROW's results, one per line
  local result
  for result in "${results[@]}"; do
    IFS='|' read -r -a f <<<"$result"
    if [[ ${f[0]} == "$1" ]]; then echo "${f[$2 - 1]}"; fi
  done
}
# shellcheck disable=SC2046 # one word per round
memory_rps=$(median $(column_of memory 2))
echo
# shellcheck disable=SC2046 # one word per round
memory_cpu=$(median $(column_of memory 4))
echo "| store | req/s | × memory | p99 ms | sluice CPU µs/request | CPU × memory | Redis CPU µs/request | of which in decide.lua | requests per call |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
# shellcheck disable=SC2046 # one word per round
for row in "${rows[@]}"; do
  rps=$(median $(column_of "$row" 2))
  awk -v row="$row" -v rps="$rps" -v m="$memory_rps" -v p99="$(median $(column_of "$row" 3))" \
    -v cpu="$(median $(column_of "$row" 4))" -v redis="$(median $(column_of "$row" 5))" \
    -v in_calls="$(median $(column_of "$row" 7))" -v per_call="$(median $(column_of "$row" 6))" \
    -v memory_cpu="$memory_cpu" \
    'BEGIN {printf "| %s | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |\n", row, rps,
      rps / m, p99, cpu, cpu / memory_cpu, redis, in_calls, per_call}'
done
echo
echo "$ROUNDS rounds of wrk -t1 -c$CONNECTIONS -d$DURATION (after a $WARMUP warm-up), medians;" \
  "pinning: $pinning; machine: $(describe_machine)"
