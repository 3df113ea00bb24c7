#!/usr/bin/env bash
# sluice's decision service (SPEC §11) against its own proxy path, all on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/decide.sh
#
# One sluice (bench/decide/sluice.yaml: one thread, the proxy listener and the decide listener,
# one token bucket far above what the clients send, so everything passes) is loaded in four
# ways:
#   proxy     the baseline: wrk -c CONNECTIONS on the proxy listener, GET /api/x, forwarded to
#             an nginx upstream answering `return 200` (bench/peers/upstream.nginx.conf), as
#             bench/peers.sh's forward path.
#   auth      forward auth: the same wrk on the decide listener, each check describing that
#             request (-H 'X-Forwarded-Method: GET' -H 'X-Forwarded-Uri: /api/x'
#             -H 'X-Forwarded-Host: api.test'): decided by the same route and limiter, answered
#             200 with the RateLimit headers, nothing forwarded.
#   auth-h2c  the same checks over h2c: h2load -c H2_CONNECTIONS -m H2_STREAMS (prior knowledge),
#             GET with the three fields; the HTTP side of the rls test, without gRPC.
#   rls       Envoy's rate-limit service: h2load -c H2_CONNECTIONS -m H2_STREAMS POSTing, with
#             content-type application/grpc and te: trailers, one gRPC-framed RateLimitRequest
#             (domain bench, one descriptor remote_address=10.0.0.1, made by
#             bench/rls_request.py) to /envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit.
# For each it prints req/s (decisions/s), latency (wrk's p50 and p99, h2load's mean), sluice's
# CPU time per request or decision (user + system, read from /proc before and after the run),
# and how busy sluice and the load side (the client + the upstream) were, as shares of one core.
#
# What is checked, so that the figures are about real answers: before the rounds, one call of
# each kind (curl for proxy and auth, a status 200 and, for auth, a RateLimit-Policy field;
# h2load -n 1 for auth-h2c and rls, h2c and one 2xx; and one ShouldRateLimit call by a real gRPC
# client, tests/support/rls_grpc.py, which must come back OK with overall_code OK). In every run:
# wrk's non-2xx answers and socket errors, h2load's failed, errored and timed-out requests and
# non-2xx answers, and for rls sluice's own count of the calls it answered
# (sluice_rls_requests_total on the admin port, read before and after): as many answered OK as
# h2load counted done or more (calls still in flight when h2load stops are answered after), and
# none with another result (over_limit, invalid, unknown_domain, unavailable). A gRPC error is a
# 200 with a grpc-status trailer, which h2load would count as a success: this count is what
# catches it. The script stops with an error when any of these is not 0.
#
# Rounds, pinning and medians as in bench/peers.sh and bench/http2.sh: ROUNDS rounds, each on a
# fresh start of sluice, measuring every test once (each DURATION after a WARMUP of the same
# command), the tests in a rotated order (round 2 starts with the second one), so a slow moment
# of a shared machine lands on all of them; the table gives each figure's median over the
# rounds, and the ratios also count the rounds in which a test met its mark against the proxy
# run of the same round. On 2 or more cores sluice runs alone on PROXY_CPU, and the clients and
# the upstream share LOAD_CPU (PIN=0: no pinning). Reading the numbers: when sluice's core is
# near 100 %, req/s is what one core of sluice does; when the load side is near 100 % instead,
# req/s is the load side's ceiling, and CPU µs per decision (and 10^6 / it, the decisions one
# core of sluice would make) is the figure that says what sluice costs.
#
# Environment (defaults in brackets; the defaults take about 2 minutes):
#   SLUICE_BIN [build/release/sluice]  TESTS ["proxy auth auth-h2c rls"]  ROUNDS [5]
#   DURATION [3] (seconds)  WARMUP [1]  CONNECTIONS [50] (wrk -c)  WRK_THREADS [1]
#   H2_CONNECTIONS [50] (h2load -c)  H2_STREAMS [10] (h2load -m)  H2LOAD_THREADS [1]
#   MAX_STREAMS [128]  UPSTREAM_PORT [18080]  SLUICE_PORT [18081]  DECIDE_PORT [18086]
#   SLUICE_ADMIN_PORT [18091]  PIN [1]  PROXY_CPU [1]  LOAD_CPU [0]  KEEP_WORKDIR [0]
#
# nginx, wrk, h2load (nghttp2-client), curl and /usr/bin/python3 with grpcio and grpc-tools (for
# the request file and the gRPC check) come from the distribution: if one is missing, it is installed
# with apt-get (as root), without letting the package start its system service. The script never
# uses the system services or port 80; it starts and stops its own instances.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"
cleanup_on_exit
templates=$repo_root/bench/decide

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
WARMUP=${WARMUP:-1}
CONNECTIONS=${CONNECTIONS:-50}
WRK_THREADS=${WRK_THREADS:-1}
H2_CONNECTIONS=${H2_CONNECTIONS:-50}
H2_STREAMS=${H2_STREAMS:-10}
H2LOAD_THREADS=${H2LOAD_THREADS:-1}
MAX_STREAMS=${MAX_STREAMS:-128}
TESTS=${TESTS:-proxy auth auth-h2c rls}
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLUICE_PORT=${SLUICE_PORT:-18081}
DECIDE_PORT=${DECIDE_PORT:-18086}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
# A relative SLUICE_BIN is relative to the repository root, wherever the script is run from.
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN

# The distribution's Python, which apt-get's python3-grpcio and python3-grpc-tools are for.
python=/usr/bin/python3

# What each check describes, and the call Envoy makes.
described=(-H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "X-Forwarded-Host: api.test")
# HTTP/2 field names are lower case.
described_h2=(-H "x-forwarded-method: GET" -H "x-forwarded-uri: /api/x" -H "x-forwarded-host: api.test")
rls_path=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
rls_domain=bench
rls_descriptor=remote_address=10.0.0.1
grpc_fields=(-H "content-type: application/grpc" -H "te: trailers")

# ---------------------------------------------------------------- sluice
start_sluice() {
  local config=$work/sluice.yaml
  render "$templates/sluice.yaml" "$config" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    SLUICE_PORT="$SLUICE_PORT" DECIDE_PORT="$DECIDE_PORT" SLUICE_ADMIN_PORT="$SLUICE_ADMIN_PORT" \
    MAX_STREAMS="$MAX_STREAMS"
  check_sluice "$config" "was this sluice built with the decision service?"
  sluice_log=$work/sluice.log
  start "$sluice_log" "${proxy_pin[@]}" "$SLUICE_BIN" run -c "$config"
  sluice_pid=$pid
  wait_port "$SLUICE_PORT" "$sluice_pid" sluice "$sluice_log"
  wait_port "$DECIDE_PORT" "$sluice_pid" sluice "$sluice_log"
  wait_port "$SLUICE_ADMIN_PORT" "$sluice_pid" sluice "$sluice_log"
}

# rls_results: sluice's sluice_rls_requests_total, "ok others" (others: every other result).
rls_results() {
  curl -s --max-time 2 "http://127.0.0.1:$SLUICE_ADMIN_PORT/metrics" |
    awk '/^sluice_rls_requests_total\{/ {
      if ($1 ~ /result="ok"/) ok += $2; else others += $2; seen = 1 }
      END { if (seen) print ok + 0, others + 0 }'
}

# ---------------------------------------------------------------- the checks
# check_http: proxy and auth answer one curl request 200; the auth answer has the RateLimit
# fields. Ends the script if not.
check_http() {
  local code head=$work/auth-head.txt
  code=$(http_code "http://127.0.0.1:$SLUICE_PORT/api/x")
  [[ $code == 200 ]] || die "proxy: GET /api/x got HTTP ${code:-no answer}, expected 200"
  code=$(http_code -D "$head" "${described[@]}" "http://127.0.0.1:$DECIDE_PORT/")
  [[ $code == 200 ]] || die "auth: a check got HTTP ${code:-no answer}, expected 200"
  grep -qi '^RateLimit-Policy:' "$head" ||
    { cat "$head" >&2; die "auth: the check's answer has no RateLimit-Policy field"; }
}

# h2load_failures OUT: failed + errored + timed-out requests in h2load's report, then its non-2xx
# answers, on one line (as bench/http2.sh).
h2load_failures() {
  awk '/^requests:/ {gsub(/,/, ""); f = $10 + $12 + $14}
    /^status codes:/ {gsub(/,/, ""); n = $5 + $7 + $9}
    END {print f + 0, n + 0}' "$1"
}

# set_h2load_args TEST: sets h2load_args, what h2load sends in TEST (auth-h2c or rls): its
# fields, body and URL, without the load's options.
set_h2load_args() {
  case $1 in
    auth-h2c) h2load_args=("${described_h2[@]}" "http://127.0.0.1:$DECIDE_PORT/") ;;
    rls) h2load_args=(-d "$request_file" "${grpc_fields[@]}" "http://127.0.0.1:$DECIDE_PORT$rls_path") ;;
  esac
}

# check_h2 TEST: one h2load request of the test: h2c by prior knowledge, one 2xx.
check_h2() {
  local test=$1 out=$work/check-$1.txt want
  set_h2load_args "$test"
  timeout 20 h2load -n 1 -c 1 "${h2load_args[@]}" >"$out" 2>&1 ||
    { cat "$out" >&2; die "$test: h2load could not make one request"; }
  for want in "Application protocol: h2c$" "^requests: 1 total, 1 started, 1 done, 1 succeeded" \
    "^status codes: 1 2xx"; do
    grep -q -- "$want" "$out" ||
      { cat "$out" >&2; tail -n 20 "$sluice_log" >&2 || true; die "$test: h2load did not see '$want'"; }
  done
}

# check_grpc: one ShouldRateLimit call by a real gRPC client: OK, overall_code OK, the
# descriptor's status OK.
check_grpc() {
  local out=$work/check-grpc.json
  "$python" "$repo_root/tests/support/rls_grpc.py" call --target "127.0.0.1:$DECIDE_PORT" \
    --domain "$rls_domain" --descriptor "$rls_descriptor" >"$out" 2>&1 ||
    { cat "$out" >&2; die "rls: rls_grpc.py call failed"; }
  "$python" - "$out" <<'PY' || { cat "$out" >&2; die "rls: the gRPC call did not come back OK"; }
import json, sys
call = json.load(open(sys.argv[1]))["calls"][0]
response = call["response"] or {}
statuses = response.get("statuses") or [{}]
sys.exit(0 if call["code"] == "OK" and response.get("overall_code") == "OK"
         and statuses[0].get("code") == "OK" else 1)
PY
  log "rls: a gRPC client's ShouldRateLimit came back OK: $(cat "$out")"
}

# ---------------------------------------------------------------- one measurement
# run_wrk TEST DURATION OUT: wrk against the test's listener; its report goes to OUT and its
# CPU seconds to client_cpu.
run_wrk() {
  local test=$1 duration=$2 out=$3 target=() headers=()
  case $test in
    proxy) target=("http://127.0.0.1:$SLUICE_PORT/api/x") ;;
    auth) headers=("${described[@]}") target=("http://127.0.0.1:$DECIDE_PORT/") ;;
  esac
  run_client "$out" "${load_pin[@]}" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${duration}s" \
    --latency "${headers[@]}" "${target[@]}" ||
    { cat "$out" >&2; die "wrk failed in the $test test"; }
}

# run_h2load TEST DURATION OUT: h2load against the decide listener; its report goes to OUT and
# its CPU seconds to client_cpu.
run_h2load() {
  local test=$1 duration=$2 out=$3
  set_h2load_args "$test"
  run_client "$out" "${load_pin[@]}" h2load -t"$H2LOAD_THREADS" -c"$H2_CONNECTIONS" \
    -m"$H2_STREAMS" -D"$duration" "${h2load_args[@]}" ||
    { cat "$out" >&2; die "h2load failed in the $test test"; }
}

# measure ROUND TEST: warm up, measure; appends a row to results. Figures: req/s, p50 ms,
# p99 ms, mean ms, CPU µs/req, sluice CPU %, load CPU %, errors.
measure() {
  local round=$1 test=$2 out ticks0 ticks1 t0 t1 up0 up1 client rls0 rls1
  local rps requests p50 p99 mean=- non2xx sockerr failed errors cpu_us cpu_pct load_pct
  local ok0 others0 ok1 others1
  log "round $round of $ROUNDS: $test"
  case $test in proxy | auth) client=wrk ;; *) client=h2load ;; esac
  "run_$client" "$test" "$WARMUP" "$work/warmup.txt"

  out=$work/$client-$test-$round.txt
  if [[ $test == rls ]]; then rls0=$(rls_results); fi
  ticks0=$(cpu_ticks "$sluice_pid")
  up0=$(cpu_ticks "$upstream_pid")
  t0=$(now_ns)
  "run_$client" "$test" "$DURATION" "$out"
  t1=$(now_ns)
  ticks1=$(cpu_ticks "$sluice_pid")
  up1=$(cpu_ticks "$upstream_pid")
  alive "$sluice_pid" || { tail -n 20 "$sluice_log" >&2; die "sluice exited during the $test test"; }

  if [[ $client == wrk ]]; then
    read_wrk "$out" || { cat "$out" >&2; die "could not read wrk's output for $test"; }
    errors=$((non2xx + sockerr))
  else
    # "finished in 3.00s, 41504.33 req/s, 1.30MB/s"; "requests: T total, S started, D done,
    # K succeeded, ..."; "time for request: MIN MAX MEAN SD +/-SD".
    rps=$(awk '/^finished in/ {print $4}' "$out")
    requests=$(awk '/^requests:/ {gsub(/,/, ""); print $8}' "$out")
    mean=$(awk '/^time for request:/ {print $6}' "$out")
    if [[ -z $rps || -z $requests || -z $mean ]] || ((requests == 0)); then
      cat "$out" >&2
      die "could not read h2load's output for $test"
    fi
    mean=$(to_ms "$mean") p50=- p99=-
    read -r failed non2xx < <(h2load_failures "$out")
    errors=$((failed + non2xx))
  fi
  if [[ $test == rls ]]; then
    # Every call sluice answered during the run was OK, and it answered all h2load counted.
    sleep 0.2 # the calls still in flight when h2load stopped
    rls1=$(rls_results)
    read -r ok0 others0 <<<"$rls0"
    read -r ok1 others1 <<<"$rls1"
    ((others1 == others0)) ||
      die "rls: sluice answered $((others1 - others0)) calls other than OK during the run (sluice_rls_requests_total)"
    ((ok1 - ok0 >= requests)) ||
      die "rls: h2load counted $requests calls succeeded, sluice answered $((ok1 - ok0)) OK"
  fi
  ((errors == 0)) ||
    { cat "$out" >&2; die "$test: $errors failed, errored or non-2xx requests in round $round"; }
  cpu_figures $((ticks1 - ticks0)) "$requests" $((t1 - t0)) $((up1 - up0)) "$client_cpu"
  results+=("$round|sluice|$test|$rps|$p50|$p99|$mean|$cpu_us|$cpu_pct|$load_pct|$errors")
}

# ---------------------------------------------------------------- main
install_missing nginx:nginx wrk:wrk h2load:nghttp2-client curl:curl "$python":python3 \
  pgrep:procps timeout:coreutils
if ! "$python" -c 'import grpc, grpc_tools' 2>/dev/null; then
  [[ $EUID -eq 0 ]] ||
    die "$python lacks grpcio or grpc-tools: install with: apt-get install -y python3-grpcio python3-grpc-tools"
  log "installing python3-grpcio python3-grpc-tools with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-grpcio python3-grpc-tools \
    >/dev/null || die "apt-get could not install python3-grpcio python3-grpc-tools"
fi
for test in $TESTS; do
  case $test in proxy | auth | auth-h2c | rls) ;; *) die "unknown test '$test' in TESTS" ;; esac
done
for var in ROUNDS DURATION WARMUP CONNECTIONS WRK_THREADS H2_CONNECTIONS H2_STREAMS \
  H2LOAD_THREADS MAX_STREAMS; do
  [[ ${!var} =~ ^[1-9][0-9]*$ ]] || die "$var must be a whole number ≥ 1"
done
((H2_STREAMS <= MAX_STREAMS)) ||
  die "H2_STREAMS must not exceed MAX_STREAMS ($MAX_STREAMS): sluice would refuse the rest"
[[ -x $SLUICE_BIN ]] ||
  die "no sluice binary at $SLUICE_BIN: build it (cmake --preset release && cmake --build --preset release --target sluice) or set SLUICE_BIN"

pin_sides sluice "the clients and the upstream"
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLUICE_PORT" "$DECIDE_PORT" \
  "$SLUICE_ADMIN_PORT"

echo "versions:"
echo "  $("$SLUICE_BIN" version 2>&1 | head -n 1)"
echo "  $(nginx -v 2>&1) (the upstream)"
echo "  $(wrk -v 2>&1 | head -n 1)"
echo "  $(h2load --version 2>&1 | head -n 1)"

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-decide.XXXXXX")
# nginx workers run as an unprivileged user when started as root: let them reach their files.
chmod 755 "$work"

request_file=$work/rls-request.bin
"$python" "$repo_root/bench/rls_request.py" "$request_file" "$rls_domain" "$rls_descriptor" \
  2>"$work/rls-request.log" || { cat "$work/rls-request.log" >&2; die "bench/rls_request.py failed"; }

start_upstream_nginx
[[ $(http_code "http://127.0.0.1:$UPSTREAM_PORT/") == 200 ]] || die "the upstream does not answer 200"

read -r -a test_order <<<"$TESTS"
for ((round = 1; round <= ROUNDS; round++)); do
  start_sluice
  if ((round == 1)); then
    check_http
    check_h2 auth-h2c
    check_h2 rls
    check_grpc
  fi
  for ((i = 0; i < ${#test_order[@]}; i++)); do
    measure "$round" "${test_order[(i + round - 1) % ${#test_order[@]}]}"
  done
  stop_pid "$sluice_pid"
done

# Figures: 1 req/s, 2 p50 ms, 3 p99 ms, 4 mean ms, 5 CPU µs/req, 6 sluice CPU %, 7 load CPU %,
# 8 errors.
collect_medians 8

# shellcheck disable=SC2016 # an awk program
print_rounds "req/s, CPU µs/req" 'printf "  %.0f %s", $3, $7'

# command TEST: the load's command, for the table.
command_of() {
  case $1 in
    proxy) echo "wrk -t$WRK_THREADS -c$CONNECTIONS --latency http://127.0.0.1:PROXY/api/x" ;;
    auth) echo "wrk -t$WRK_THREADS -c$CONNECTIONS --latency -H 'X-Forwarded-Method: GET' -H 'X-Forwarded-Uri: /api/x' -H 'X-Forwarded-Host: api.test' http://127.0.0.1:DECIDE/" ;;
    auth-h2c) echo "h2load -t$H2LOAD_THREADS -c$H2_CONNECTIONS -m$H2_STREAMS -H 'x-forwarded-method: GET' -H 'x-forwarded-uri: /api/x' -H 'x-forwarded-host: api.test' http://127.0.0.1:DECIDE/" ;;
    rls) echo "h2load -t$H2LOAD_THREADS -c$H2_CONNECTIONS -m$H2_STREAMS -d rls-request.bin -H 'content-type: application/grpc' -H 'te: trailers' http://127.0.0.1:DECIDE$rls_path" ;;
  esac
}

echo
if ((ROUNDS > 1)); then echo "medians of $ROUNDS rounds (errors: all rounds added up):"; fi
echo "| test | command | req/s | p50 ms | p99 ms | mean ms | CPU µs/req | per core (10^6 / CPU µs) | sluice CPU % | load CPU % | errors |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# fixed VALUE DECIMALS: VALUE with that many decimals, or "-" as it is.
fixed() { if [[ $1 == - ]]; then echo -; else printf "%.${2}f" "$1"; fi; }
declare -A rps_of cpu_of
for row in "${medians[@]}"; do
  IFS='|' read -r _ test rps p50 p99 mean cpu_us cpu_pct load_pct _ <<<"$row"
  rps_of[$test]=$rps
  cpu_of[$test]=$cpu_us
  # shellcheck disable=SC2016 # the backquotes are markdown's
  printf '| %s | `%s` | %.0f | %s | %s | %s | %.2f | %.0f | %.0f | %.0f | %s |\n' "$test" \
    "$(command_of "$test")" "$rps" "$(fixed "$p50" 2)" "$(fixed "$p99" 2)" "$(fixed "$mean" 2)" \
    "$cpu_us" "$(awk -v c="$cpu_us" 'BEGIN {print 1e6 / c}')" "$cpu_pct" "$load_pct" \
    "$(column "sluice/$test" 8 | awk '{s += $1} END {print s + 0}')"
done
busy_rows=""
for row in "${medians[@]}"; do
  IFS='|' read -r _ test _ _ _ _ _ cpu_pct load_pct _ <<<"$row"
  if awk -v a="$cpu_pct" -v b="$load_pct" 'BEGIN {exit !(a < 80 && b < 80)}'; then
    busy_rows+=" $test"
  fi
done
if [[ -n $busy_rows ]]; then
  echo
  echo "note: neither sluice nor the load side used 80 % of its core in:$busy_rows;" \
    "other processes were taking CPU (run again on a quiet machine), or too few requests were" \
    "in flight to keep either busy (raise CONNECTIONS, H2_CONNECTIONS or H2_STREAMS)."
fi

# The targets: forward auth ≥ 1.5 x the proxy's req/s (on the medians, and round by round
# against the proxy run of the same round); RLS ≥ 100,000 decisions/s on one core.
verdict() { awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
  ok = (op == ">=") ? a >= b : a <= b; printf "%s %s %s: %s", a, op, b, ok ? "met" : "NOT met" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "?"}'; }
# rounds_over TEST N FACTOR: "K of R rounds" in which TEST's figure N was ≥ FACTOR x the proxy's.
rounds_over() {
  paste -d' ' <(column "sluice/$1" "$2") <(column sluice/proxy "$2") |
    awk -v f="$3" '{ r++; if ($1 >= f * $2) k++ } END { printf "%d of %d rounds", k, r }'
}
echo
for test in auth auth-h2c; do
  [[ -n ${rps_of[$test]:-} && -n ${rps_of[proxy]:-} ]] || continue
  echo "- $test / proxy: req/s $(ratio "${rps_of[$test]}" "${rps_of[proxy]}")" \
    "(target ≥ 1.5: $(rounds_over "$test" 1 1.5) at ≥ 1.5), CPU µs/req" \
    "$(ratio "${cpu_of[$test]}" "${cpu_of[proxy]}")"
done
if [[ -n ${rps_of[rls]:-} ]]; then
  echo "- rls decisions/s ≥ 100000 on one core: $(verdict "$(printf '%.0f' "${rps_of[rls]}")" ">=" 100000)" \
    "($(column sluice/rls 1 | awk '$1 >= 100000 {k++} END {printf "in %d of %d rounds", k, NR}'));" \
    "at $(printf '%.2f' "${cpu_of[rls]}") CPU µs per decision, one core's worth is" \
    "$(awk -v c="${cpu_of[rls]}" 'BEGIN {printf "%.0f", 1e6 / c}') decisions/s"
fi

echo
echo "$ROUNDS round(s) of ${DURATION}s (each after a ${WARMUP}s warm-up), a fresh sluice each round;" \
  "pinning: $pinning; machine: $(describe_machine)"
echo "CPU µs/req = sluice's user+system CPU during the run / requests (decisions) done; sluice CPU %" \
  "and load CPU % = share of one core used by sluice and by the client + upstream (near 100 = the" \
  "bottleneck); p50/p99 from wrk, mean from h2load."
