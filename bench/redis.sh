#!/usr/bin/env bash
# Decisions per second through one Redis from one sluice event loop, with how many requests each
# call of decide.lua carried and the time Redis spent per decision. Everything on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target redis_store_bench
#   bash bench/redis.sh
#
# A redis-server without persistence is started on REDIS_CPU; the load
# (bench/redis_store_bench.cpp) runs on LOAD_CPU, so Redis has a core of its own, as it would in
# production. The decision is the forward path's: a token bucket that never limits, 1000
# clients, `in flight` requests at a time. Redis's time is its own (INFO commandstats: the time
# inside FCALL), so it leaves out reading and writing the sockets.
#
# Environment: REDIS_PORT [18379]  REDIS_CPU [0]  LOAD_CPU [1]  PIN [1]
#   BENCH_BIN [build/release/bench/redis_store_bench]   MIN_TIME [2]
#   KEEP_WORKDIR [0] (redis-server's log is also kept after a failure)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"
REDIS_PORT=${REDIS_PORT:-18379}
REDIS_CPU=${REDIS_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PIN=${PIN:-1}
MIN_TIME=${MIN_TIME:-2}
BENCH_BIN=${BENCH_BIN:-build/release/bench/redis_store_bench}
[[ $BENCH_BIN == /* ]] || BENCH_BIN=$repo_root/$BENCH_BIN
[[ -x $BENCH_BIN ]] || die "no $BENCH_BIN: cmake --build --preset release --target redis_store_bench"
command -v redis-server >/dev/null || die "needs redis-server (apt-get install redis-server)"
require_free_ports "set REDIS_PORT" "$REDIS_PORT"

read -r -a redis_pin < <(pin_prefix "$REDIS_CPU") || true
read -r -a load_pin < <(pin_prefix "$LOAD_CPU") || true
pinning="none"
((${#redis_pin[@]} == 0)) || pinning="redis-server on CPU $REDIS_CPU, load on CPU $LOAD_CPU"

cleanup_on_exit
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-redis.XXXXXX")
start_redis "$REDIS_PORT" "$work/redis.log" redis_pin
url="redis://127.0.0.1:$REDIS_PORT/0"

echo "| in flight | decisions/s | requests per call | Redis µs per decision (in its commands) |"
echo "|---:|---:|---:|---:|"
SLUICE_BENCH_REDIS_URL=$url "${load_pin[@]}" "$BENCH_BIN" --benchmark_min_time="$MIN_TIME" \
  --benchmark_format=csv 2>/dev/null |
  awk -F, '/^name,/ {for (i = 1; i <= NF; ++i) column[$i] = i}
    /^"BM_RedisDecisions/ {split($1, name, ":"); sub(/\/.*/, "", name[2])
      printf "| %s | %.0f | %.1f | %.2f |\n", name[2], $column["items_per_second"],
        $column["\"per_call\""], $column["\"redis_us\""]}'
echo
echo "pinning: $pinning; machine: $(describe_machine)"
