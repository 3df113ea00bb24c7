#!/usr/bin/env bash
# Decisions per second through one Redis from one sluice event loop, against the ceiling of
# redis-benchmark running the same EVALSHA pipelined. Everything on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target redis_store_bench
#   bash bench/redis.sh
#
# A redis-server without persistence is started on REDIS_CPU; the load (redis-benchmark, then
# bench/redis_store_bench.cpp) runs on LOAD_CPU, so Redis has a core of its own, as it would in
# production. The decision is the forward path's: a token bucket that never limits, 1000
# clients. redis-benchmark sends exactly the EVALSHA that the store sends (printed by the bench
# program), with -P 16 -c 50 and the client's key drawn from 1000 (-r 1000).
#
# Environment: REDIS_PORT [18379]  REDIS_CPU [0]  LOAD_CPU [1]  PIN [1]  REQUESTS [500000]
#   BENCH_BIN [build/release/bench/redis_store_bench]   MIN_TIME [2]
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REDIS_PORT=${REDIS_PORT:-18379}
REDIS_CPU=${REDIS_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PIN=${PIN:-1}
REQUESTS=${REQUESTS:-500000}
MIN_TIME=${MIN_TIME:-2}
BENCH_BIN=${BENCH_BIN:-build/release/bench/redis_store_bench}
[[ $BENCH_BIN == /* ]] || BENCH_BIN=$repo_root/$BENCH_BIN
[[ -x $BENCH_BIN ]] ||
  { echo "redis.sh: no $BENCH_BIN: cmake --build --preset release --target redis_store_bench" >&2; exit 1; }
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
  { echo "redis.sh: needs redis-server and redis-benchmark (apt-get install redis-server)" >&2; exit 1; }

redis_pin=()
load_pin=()
pinning="none"
if ((PIN)) && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
  redis_pin=(taskset -c "$REDIS_CPU")
  load_pin=(taskset -c "$LOAD_CPU")
  pinning="redis-server on CPU $REDIS_CPU, load on CPU $LOAD_CPU"
fi

"${redis_pin[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
  >/dev/null 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
  sleep 0.1
done
url="redis://127.0.0.1:$REDIS_PORT/0"

# The store's own EVALSHA (it loads the script), with the key spread over 1000 clients.
read -r -a call < <(SLUICE_BENCH_REDIS_URL=$url SLUICE_BENCH_PRINT_CALL=1 "$BENCH_BIN")
echo "call: ${call[*]}"

ceiling=$("${load_pin[@]}" redis-benchmark -p "$REDIS_PORT" -q -n "$REQUESTS" -P 16 -c 50 \
  -r 1000 --csv "${call[@]}" | tail -n 1 | cut -d, -f2 | tr -d '"')
bare_sha=$(redis-cli -p "$REDIS_PORT" script load "return 1")
bare=$("${load_pin[@]}" redis-benchmark -p "$REDIS_PORT" -q -n "$REQUESTS" -P 16 -c 50 \
  --csv evalsha "$bare_sha" 0 | tail -n 1 | cut -d, -f2 | tr -d '"')

# redis-benchmark on one connection at each depth the store is run at: the same pipelining.
declare -A same_depth
for depth in 1 16 64 256; do
  same_depth[$depth]=$("${load_pin[@]}" redis-benchmark -p "$REDIS_PORT" -q -n "$REQUESTS" -c 1 \
    -P "$depth" -r 1000 --csv "${call[@]}" | tail -n 1 | cut -d, -f2 | tr -d '"')
done

echo
printf 'EVALSHA floor (a `return 1` script, -P 16 -c 50): %.0f/s\n' "$bare"
printf 'ceiling (this EVALSHA, -P 16 -c 50): %.0f/s\n' "$ceiling"
echo
echo "| in flight | redis-benchmark, one connection | sluice store, one event loop | store ÷ redis-benchmark | store ÷ ceiling |"
echo "|---:|---:|---:|---:|---:|"
SLUICE_BENCH_REDIS_URL=$url "${load_pin[@]}" "$BENCH_BIN" --benchmark_min_time="$MIN_TIME" \
  --benchmark_format=csv 2>/dev/null |
  awk -F, '/^"BM_RedisDecisions/ {split($1, name, ":"); sub(/\/.*/, "", name[2]); print name[2], $7}' |
  while read -r depth store; do
    awk -v d="$depth" -v r="${same_depth[$depth]}" -v s="$store" -v c="$ceiling" \
      'BEGIN {printf "| %s | %.0f | %.0f | %.2f | %.2f |\n", d, r, s, s / r, s / c}'
  done
echo
echo "pinning: $pinning; machine: $(nproc) cores, $(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
