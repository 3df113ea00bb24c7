#!/usr/bin/env bash
# Shared limits: what keeping the limiters in Redis costs a forwarded request. sluice runs the
# same configuration with each store, one after the other in rotated order, ROUNDS times, and the
# table gives each row's medians and its req/s as a share of the memory store's.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/shared.sh
#   BEFORE_BIN=/path/to/an/older/sluice bash bench/shared.sh   # adds a "redis, before" row
#
# The configuration: two limiters on every request, neither ever limiting, so every request is
# decided and forwarded: `per-client`, a token bucket keyed by the X-Client header (wrk sends
# 1000 clients in turn, bench/shared/clients.lua), and `per-route`, a fixed window shared by all.
# Rows:
#   memory  the memory store
#   redis   store: redis, exact: every request decided in Redis (decide.lua, batched per loop)
#   redis, before  the same with BEFORE_BIN, when given
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
#   PIN [1]
#   PROXY_CPU [1]  LOAD_CPU [0]
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/processes.sh
source "$repo_root/scripts/lib/processes.sh"

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
export PATH=$PATH:/usr/sbin:/sbin

log() { printf '==> %s\n' "$*" >&2; }
die() {
  printf 'shared.sh: error: %s\n' "$*" >&2
  exit 1
}

[[ -x $SLUICE_BIN ]] || die "no $SLUICE_BIN: cmake --build --preset release --target sluice"
[[ -z $BEFORE_BIN || -x $BEFORE_BIN ]] || die "BEFORE_BIN $BEFORE_BIN is not executable"
for tool in wrk nginx redis-server redis-cli curl; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install wrk nginx-light redis-server curl)"
done

cluster_ports=()
((CLUSTER == 0)) || cluster_ports=($((REDIS_PORT + 1)) $((REDIS_PORT + 2)) $((REDIS_PORT + 3)))
for port in "$UPSTREAM_PORT" "$SLUICE_PORT" "$SLUICE_ADMIN_PORT" "$REDIS_PORT" "${cluster_ports[@]}"; do
  ! port_open "$port" || die "127.0.0.1:$port is already in use (see the *_PORT variables)"
done

read -r -a proxy_pin < <(pin_prefix "$PROXY_CPU") || true
read -r -a load_pin < <(pin_prefix "$LOAD_CPU") || true
pinning="none"
((${#proxy_pin[@]} == 0)) ||
  pinning="sluice on CPU $PROXY_CPU; wrk, upstream and redis-server on CPU $LOAD_CPU"

work=$(mktemp -d)
started=()
cleanup() {
  local i
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    terminate "${started[i]}" 5
    wait "${started[i]}" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- the servers everyone shares
sed -e "s|@DIR@|$work|g" -e "s|@UPSTREAM_PORT@|$UPSTREAM_PORT|g" \
  "$repo_root/bench/peers/upstream.nginx.conf" >"$work/upstream.conf"
mkdir -p "$work/logs"
"${load_pin[@]}" nginx -p "$work/" -e stderr -c "$work/upstream.conf" >"$work/upstream.log" 2>&1 &
started+=($!)
wait_port "$UPSTREAM_PORT" "${started[-1]}" upstream "$work/upstream.log"

"${load_pin[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
  >"$work/redis.log" 2>&1 &
started+=($!)
redis_pid=$!
wait_port "$REDIS_PORT" "$redis_pid" redis-server "$work/redis.log"

cluster_pids=()
if ((CLUSTER != 0)); then
  for port in "${cluster_ports[@]}"; do
    "${load_pin[@]}" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --cluster-enabled yes --cluster-config-file "$work/nodes-$port.conf" >"$work/redis-$port.log" 2>&1 &
    started+=($!)
    cluster_pids+=($!)
    wait_port "$port" "$!" "redis-server (cluster)" "$work/redis-$port.log"
  done
  redis-cli --cluster create "${cluster_ports[@]/#/127.0.0.1:}" --cluster-yes >"$work/cluster.log" 2>&1 ||
    die "redis-cli --cluster create failed: $(tail -n 3 "$work/cluster.log")"
  until redis-cli -p "${cluster_ports[0]}" cluster info | grep -q cluster_state:ok; do sleep 0.1; done
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
  rows=(memory "redis, before" redis "redis, lease")
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

cpu_ticks() {
  local stat fields
  stat=$(cat "/proc/$1/stat")
  read -r -a fields <<<"${stat##*) }"
  echo $((fields[11] + fields[12]))
}

# wrk's latency (512.00us, 1.23ms, 2.00s) in milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN { m = v ~ /us$/ ? 0.001 : v ~ /ms$/ ? 1 : 1000
    sub(/[a-z]+$/, "", v); printf "%.2f", v * m }'
}

results=()
# measure ROUND ROW: starts sluice for ROW, checks, warms up, measures, stops.
measure() {
  local round=$1 row=$2 out=$work/wrk.txt pid code ticks0 ticks1 redis0 redis1 requests rps p99
  local cpu_us redis_us errors calls0 usec0 calls1 usec1 per_call in_calls
  log "round $round of $ROUNDS: $row"
  config "${store_of[$row]}" "${options_of[$row]:-}" >"$work/sluice.yaml"
  "${proxy_pin[@]}" "${binary_of[$row]}" run -c "$work/sluice.yaml" >"$work/sluice.log" 2>&1 &
  pid=$!
  started+=("$pid")
  wait_port "$SLUICE_PORT" "$pid" sluice "$work/sluice.log"
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Client: check' "http://127.0.0.1:$SLUICE_PORT/")
  [[ $code == 200 ]] || die "$row: a request got HTTP $code, expected 200"
  "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" -s "$repo_root/bench/shared/clients.lua" \
    "http://127.0.0.1:$SLUICE_PORT/" >/dev/null
  ticks0=$(cpu_ticks "$pid")
  redis0=$(redis_ticks "$row")
  read -r calls0 usec0 < <(decide_calls "$row")
  "${load_pin[@]}" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency \
    -s "$repo_root/bench/shared/clients.lua" "http://127.0.0.1:$SLUICE_PORT/" >"$out"
  ticks1=$(cpu_ticks "$pid")
  redis1=$(redis_ticks "$row")
  read -r calls1 usec1 < <(decide_calls "$row")
  alive "$pid" || { tail -n 20 "$work/sluice.log" >&2; die "sluice exited during the run"; }
  terminate "$pid" 15
  wait "$pid" 2>/dev/null || true
  unset 'started[-1]'
  while port_open "$SLUICE_PORT"; do sleep 0.05; done
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  requests=$(awk '/ requests in / {print $1}' "$out")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  errors=$(awk -F': *' '/Non-2xx or 3xx responses:/ {print $2}' "$out")
  [[ -z $errors ]] || die "$row: $errors answers were not 2xx"
  cpu_us=$(awk -v d=$((ticks1 - ticks0)) -v hz="$(getconf CLK_TCK)" -v n="$requests" \
    'BEGIN {printf "%.2f", d / hz * 1e6 / n}')
  redis_us=$(awk -v d=$((redis1 - redis0)) -v hz="$(getconf CLK_TCK)" -v n="$requests" \
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
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
column_of() { # ROW FIELD: field 2 req/s, 3 p99, 4 sluice CPU, 5 Redis CPU, 6 requests per call,
  # 7 Redis µs in decide.lua, of ROW's results, one per line
  local result
  for result in "${results[@]}"; do
    IFS='|' read -r -a f <<<"$result"
    if [[ ${f[0]} == "$1" ]]; then echo "${f[$2 - 1]}"; fi
  done
}
memory_rps=$(column_of memory 2 | median)
echo
echo "| store | req/s | × memory | p99 ms | sluice CPU µs/request | Redis CPU µs/request | of which in decide.lua | requests per call |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  rps=$(column_of "$row" 2 | median)
  awk -v row="$row" -v rps="$rps" -v m="$memory_rps" -v p99="$(column_of "$row" 3 | median)" \
    -v cpu="$(column_of "$row" 4 | median)" -v redis="$(column_of "$row" 5 | median)" \
    -v in_calls="$(column_of "$row" 7 | median)" -v per_call="$(column_of "$row" 6 | median)" \
    'BEGIN {printf "| %s | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |\n", row, rps, rps / m,
      p99, cpu, redis, in_calls, per_call}'
done
echo
echo "$ROUNDS rounds of wrk -t1 -c$CONNECTIONS -d$DURATION (after a $WARMUP warm-up), medians;" \
  "pinning: $pinning; machine: $(nproc) cores, $(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
