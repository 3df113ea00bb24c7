#!/usr/bin/env bash
# sluice vs nginx terminating TLS, all on 127.0.0.1.
#
# Run (from the repository root, after a release build with TLS listeners):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/tls.sh                 # or PROXIES=nginx bash bench/tls.sh for nginx alone
#
# Each proxy terminates TLS in front of the same upstream (an nginx worker answering
# `return 200` on cleartext HTTP, bench/peers/upstream.nginx.conf) with the same certificate and
# key (ECDSA P-256, self-signed, made here with the openssl CLI), TLS 1.3 only and one cipher
# suite, TLS_AES_128_GCM_SHA256, with X25519 for the key exchange. Three tests:
#   keepalive  wrk over https with keep-alive: every connection makes its handshake once, then
#              sends requests; req/s, p50/p99 latency, the proxy's CPU µs per request.
#   close      wrk over https with `Connection: close` on every request: each request is a new
#              connection, its full handshake (wrk does not resume sessions) and the close;
#              req/s and the proxy's CPU µs per request (= per connection). Not a default test.
#   full       new connections, each with a full TLS 1.3 handshake (certificate, ECDSA
#              signature, X25519), one request and its answer, then the close: connections
#              (= handshakes) per second and the proxy's CPU µs per handshake.
#   resumed    the same, each connection resuming the session of the one before with a session
#              ticket (TLS 1.3 PSK with X25519, no certificate or signature).
# The two handshake tests include one forwarded request each (see below why); the keepalive
# CPU µs/req is roughly what that request adds.
#
# The handshake client is `openssl s_time` (from the openssl package, present wherever nginx
# is), -new for full handshakes (a fresh SSL object, no session, for every connection) and
# -reuse for resumed ones (one SSL object whose session is offered again each time). It prints
# a character per connection, `r` when SSL_session_reused() says the connection was resumed, so
# the script counts the resumed connections and shows them (resumed %); it stops with an error
# if the resumed test resumed nothing. h2load (nghttp2-client) was not chosen: it keeps each
# client's connection for many requests, so it measures requests rather than handshakes, does
# not report resumption, and is not installed with nginx. What the script works around in
# s_time:
#   - TLS 1.3 session tickets come after the handshake, so s_time only gets a ticket, and
#     -reuse only resumes, when it reads from the connection: it must send a request (-www).
#     Without one, every "resumed" connection is in fact a full handshake. Both handshake tests
#     send the same request, so that full and resumed differ only in the handshake.
#   - -www PAGE is pasted into "GET PAGE HTTP/1.0\r\n\r\n": PAGE here holds a request line's
#     end and headers, so the request is GET / HTTP/1.1 with Host and Connection: close (and
#     a harmless "X-Pad: HTTP/1.0"). The proxy answers and closes; s_time reads to the close.
#   - s_time's "-time N" ends at a whole-second boundary (it compares time(NULL)), so a run
#     lasts N to N+1 s and its "N connections in M real seconds" line has M rounded to whole
#     seconds. The script takes the connection count from that line but times the runs itself,
#     and starts them 0.1 s after a second boundary, so that all the parallel clients stop
#     together (a run lasts about HS_SECONDS + 0.9 s).
#   - -no-CAfile -no-CApath -no-CAstore: without them s_time searches the system CA directory
#     for every connection (it does not require a valid chain, but OpenSSL still checks it),
#     which cost it about 30 % more CPU per connection.
#   - s_time makes one connection at a time, so the proxy and the client wait on each other;
#     HS_CLIENTS of them run side by side to keep the proxy busy.
# A TLS 1.3 client spends more CPU per full handshake than the server (it verifies the ECDSA
# signature, about 3 times the cost of making it, and s_time has its own per-connection
# overhead), so with one core for the load side, handshakes/s is usually the load side's
# ceiling, the same for both proxies (load CPU % near 100): CPU µs/handshake is then the figure
# that compares the proxies, as CPU µs/req does in bench/peers.sh.
#
# Fairness: one nginx worker (worker_processes 1) and one sluice thread (threads: 1), each with
# its own config, pid and log files in a temporary directory, no access log, the same upstream
# keep-alive. The cipher suite is pinned in nginx (ssl_conf_command Ciphersuites) and, because
# sluice's configuration has no TLS 1.3 cipher-suite setting, on the client side for both: wrk,
# s_time and s_client get OPENSSL_CONF=bench/tls/client-openssl.cnf (TLS 1.3, TLS_AES_128_GCM_SHA256,
# X25519 only); the proxies never see it. Before measuring a proxy, the script checks with
# `openssl s_client` what it negotiates (TLSv1.3, TLS_AES_128_GCM_SHA256, X25519, ECDSA, our
# certificate, a 200 answer) and that it refuses TLS 1.2, and stops with an error otherwise.
# Session resumption: sluice resumes by stateless session tickets only, with OpenSSL's session
# cache off; nginx has its default ssl_session_tickets on (OpenSSL's built-in ticket keys, as no
# ssl_session_ticket_key is set) and ssl_session_cache off, the same arrangement. A shared
# cache would make nginx store every new session in shared memory, work that sluice does not
# do; TLS 1.3 resumption works through the tickets alone (the resumed test checks it for both).
# The versions printed first show which OpenSSL each proxy runs.
# Pinning, rounds and medians as in bench/peers.sh: on 2 or more cores the proxy runs alone on
# PROXY_CPU and wrk, s_time and the upstream share LOAD_CPU (PIN=0: no pinning); ROUNDS rounds,
# each measuring every proxy once (all tests on one start of the proxy, after a WARMUP of wrk),
# the proxies in a rotated order; the table gives each figure's median over the rounds, and the
# sluice/nginx ratios count the rounds sluice won against the nginx run of the same round.
#
# Environment (defaults in brackets; the defaults take about 2 minutes):
#   SLUICE_BIN [build/release/sluice]  PROXIES ["sluice nginx"]  TESTS ["keepalive full resumed"]
#   SLUICE_B_BIN [SLUICE_BIN]: the proxy `sluice-b` is sluice again from this binary, for a before
#   and after in one run (PROXIES="sluice sluice-b nginx").
#   ROUNDS [5]  DURATION [3s] (wrk)  WARMUP [1s] (wrk)  CONNECTIONS [50]  WRK_THREADS [1]
#   HS_SECONDS [2] (s_time -time, whole seconds)  HS_CLIENTS [4] (parallel s_time processes)
#   UPSTREAM_PORT [18080]  SLUICE_PORT [18443]  NGINX_PORT [18444]  SLUICE_ADMIN_PORT [18091]
#   PIN [1]  PROXY_CPU [1]  LOAD_CPU [0]  KEEP_WORKDIR [0]
#
# nginx, wrk and openssl come from the distribution: if one is missing, it is installed with
# apt-get (as root), without letting the package start its system service. The script never
# uses the system services or port 80; it starts and stops its own instances.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"
cleanup_on_exit
templates=$repo_root/bench/tls

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-50}
WRK_THREADS=${WRK_THREADS:-1}
HS_SECONDS=${HS_SECONDS:-2}
HS_CLIENTS=${HS_CLIENTS:-4}
PROXIES=${PROXIES:-sluice nginx}
TESTS=${TESTS:-keepalive full resumed}
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLUICE_PORT=${SLUICE_PORT:-18443}
NGINX_PORT=${NGINX_PORT:-18444}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
# A relative SLUICE_BIN is relative to the repository root, wherever the script is run from.
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
SLUICE_B_BIN=${SLUICE_B_BIN:-$SLUICE_BIN}
[[ $SLUICE_B_BIN == /* ]] || SLUICE_B_BIN=$repo_root/$SLUICE_B_BIN

# The clients' OpenSSL settings (TLS 1.3, one suite, one group), given to each client command;
# the proxies run with OpenSSL's own configuration, whatever the caller's environment says.
unset OPENSSL_CONF
client_conf=$templates/client-openssl.cnf
cipher_suite=TLS_AES_128_GCM_SHA256
# s_time's -www PAGE, pasted into "GET PAGE HTTP/1.0\r\n\r\n" (see the top of the file).
hs_page=$'/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad:'
cert_cn=sluice-bench

# Sleeps until 0.1 s past the next whole second (or this one, if that is still ahead), so that
# s_time runs started together all see the same time(NULL) and stop at the same boundary.
align_to_second() {
  local ns
  ns=$(now_ns)
  ns=$(((1100000000 - ns % 1000000000) % 1000000000))
  sleep "$(awk -v n="$ns" 'BEGIN {printf "%.3f", n / 1e9}')"
}

# ---------------------------------------------------------------- the proxies
# start_PROXY: starts the proxy and waits until it accepts; sets proxy_pid, proxy_port, proxy_log.
start_sluice() {
  start_sluice_from "$SLUICE_BIN"
}
start_sluice-b() {
  start_sluice_from "$SLUICE_B_BIN"
}

# start_sluice_from BINARY: start_sluice's work, for either sluice.
start_sluice_from() {
  local binary=$1 config=$work/sluice.yaml
  render "$templates/sluice.yaml" "$config" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    SLUICE_PORT="$SLUICE_PORT" SLUICE_ADMIN_PORT="$SLUICE_ADMIN_PORT"
  check_sluice "$config" "was this sluice built with TLS listeners?"
  proxy_port=$SLUICE_PORT
  proxy_log=$work/sluice.log
  start "$proxy_log" "${proxy_pin[@]}" "$binary" run -c "$config"
  proxy_pid=$pid
  wait_port "$proxy_port" "$proxy_pid" sluice "$proxy_log"
}

start_nginx() {
  render "$templates/nginx.conf" "$work/nginx.conf" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    NGINX_PORT="$NGINX_PORT"
  proxy_port=$NGINX_PORT
  proxy_log=$work/nginx.log
  launch_nginx nginx "$proxy_port" proxy_pin
  proxy_pid=$pid
}

# tls_check PROXY: what the benchmark's clients negotiate with the proxy, and an answer 200 to
# the request the handshake tests send; then that TLS 1.2 is refused. Ends the script if not.
tls_check() {
  local name=$1 out=$work/tls-check-$1.txt out12=$work/tls12-check-$1.txt want
  printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' |
    env OPENSSL_CONF="$client_conf" timeout 10 openssl s_client -connect "127.0.0.1:$proxy_port" \
      -brief -ign_eof -no-CAfile -no-CApath -no-CAstore >"$out" 2>&1 ||
    {
      cat "$out" >&2
      tail -n 20 "$proxy_log" >&2 || true
      die "$name on 127.0.0.1:$proxy_port: no TLS 1.3 handshake with openssl s_client"
    }
  for want in "Protocol version: TLSv1.3" "Ciphersuite: $cipher_suite" \
    "Server Temp Key: X25519" "Signature type: .*ECDSA" "Peer certificate: .*CN *= *$cert_cn" \
    "^HTTP/1\.[01] 200 "; do
    grep -qi -- "$want" "$out" ||
      { cat "$out" >&2; die "$name on 127.0.0.1:$proxy_port: s_client did not see '$want'"; }
  done
  # Without the clients' settings, so that the client offers TLS 1.2 and only that.
  if timeout 10 openssl s_client -connect "127.0.0.1:$proxy_port" -tls1_2 -brief \
    -no-CAfile -no-CApath -no-CAstore </dev/null >"$out12" 2>&1; then
    cat "$out12" >&2
    die "$name on 127.0.0.1:$proxy_port accepts TLS 1.2; the benchmark wants TLS 1.3 only"
  fi
}

# ---------------------------------------------------------------- the tests

# run_wrk DURATION OUT [WRK ARGUMENT...]: wrk over https against the proxy; its report goes to
# OUT and its CPU seconds to client_cpu.
run_wrk() {
  local duration=$1 out=$2
  shift 2
  run_client "$out" "${load_pin[@]}" env OPENSSL_CONF="$client_conf" wrk -t"$WRK_THREADS" \
    -c"$CONNECTIONS" -d"$duration" --latency "$@" "https://127.0.0.1:$proxy_port/" ||
    { cat "$out" >&2; die "wrk failed against 127.0.0.1:$proxy_port"; }
}

# test_wrk ROUND PROXY TEST: wrk with keep-alive (TEST keepalive), or a new connection for
# every request (TEST close: each request says Connection: close, so every one is a full
# handshake, a request and the close); appends a row to results.
test_wrk() {
  local round=$1 proxy=$2 test=$3 out ticks0 ticks1 t0 t1 up0 up1 arguments=()
  local rps requests p50 p99 non2xx sockerr cpu_us cpu_pct load_pct
  [[ $test == close ]] && arguments=(-H "Connection: close")
  out=$work/wrk-$proxy-$test-$round.txt
  ticks0=$(cpu_ticks "$proxy_pid")
  up0=$(cpu_ticks "$upstream_pid")
  t0=$(now_ns)
  run_wrk "$DURATION" "$out" "${arguments[@]}"
  t1=$(now_ns)
  ticks1=$(cpu_ticks "$proxy_pid")
  up1=$(cpu_ticks "$upstream_pid")

  read_wrk "$out" || { cat "$out" >&2; die "could not read wrk's output for $proxy"; }
  cpu_figures $((ticks1 - ticks0)) "$requests" $((t1 - t0)) $((up1 - up0)) "$client_cpu"
  results+=("$round|$proxy|$test|$rps|$p50|$p99|$cpu_us|$cpu_pct|$load_pct|-|$non2xx|$sockerr")
}

# test_handshakes ROUND PROXY TEST: HS_CLIENTS openssl s_time side by side, -new (TEST full)
# or -reuse (TEST resumed), for HS_SECONDS; appends a row to results.
test_handshakes() {
  local round=$1 proxy=$2 test=$3 mode out pids=() pid i status=0 failed=0
  local ticks0 ticks1 t0 t1 up0 up1 load_cpu counts conns=0 chars=0 reused=0 bytes=0 n c r b
  local rate cpu_us cpu_pct load_pct resumed
  case $test in
    full) mode=-new ;;
    resumed) mode=-reuse ;;
  esac
  out=$work/s_time-$proxy-$test-$round
  align_to_second
  ticks0=$(cpu_ticks "$proxy_pid")
  up0=$(cpu_ticks "$upstream_pid")
  t0=$(now_ns)
  # Only the s_time processes are forked between the two `times`: their difference is their CPU.
  times >"$out.times0"
  for ((i = 1; i <= HS_CLIENTS; i++)); do
    "${load_pin[@]}" env OPENSSL_CONF="$client_conf" timeout -k 2 $((HS_SECONDS + 20)) \
      openssl s_time -connect "127.0.0.1:$proxy_port" "$mode" -time "$HS_SECONDS" -tls1_3 \
      -ciphersuites "$cipher_suite" -www "$hs_page" -no-CAfile -no-CApath -no-CAstore \
      >"$out.$i" 2>"$out.$i.err" &
    pids+=("$!")
    started_pids+=("$!")
  done
  for pid in "${pids[@]}"; do
    status=0
    reap "$pid" || status=$?
    ((status == 0)) || failed=$status
  done
  times >"$out.times1"
  t1=$(now_ns)
  ticks1=$(cpu_ticks "$proxy_pid")
  up1=$(cpu_ticks "$upstream_pid")
  if ((failed)); then
    tail -n 5 "$out".*.err "$out".1 >&2 || true
    tail -n 20 "$proxy_log" >&2 || true
    if ((failed == 124 || failed == 137)); then
      die "openssl s_time $mode against $proxy did not finish: does $proxy close the connection after answering 'Connection: close'?"
    fi
    die "openssl s_time $mode against $proxy failed (exit status $failed)"
  fi

  for ((i = 1; i <= HS_CLIENTS; i++)); do
    # "N connections in M real seconds, B bytes read per connection", and the progress line:
    # a character per connection, r when it was resumed.
    counts=$(awk '/ connections in .* real seconds/ {n = $1; b = $7}
      /^[*rt123]+$/ {c += length($0); r += gsub(/r/, "")}
      END {print n + 0, c + 0, r + 0, b + 0}' "$out.$i")
    read -r n c r b <<<"$counts"
    ((n > 0 && c == n)) ||
      { cat "$out.$i" "$out.$i.err" >&2; die "could not read s_time's output for $proxy $test"; }
    ((b > 0)) || die "$proxy $test: s_time read no answer on its connections"
    conns=$((conns + n)) chars=$((chars + c)) reused=$((reused + r)) bytes=$b
  done
  if [[ $test == resumed ]] && ((reused == 0)); then
    die "$proxy resumed none of $conns connections: no usable session ticket"
  fi
  if [[ $test == full ]] && ((reused > 0)); then
    die "$proxy resumed $reused of $conns connections in the full-handshake test"
  fi
  load_cpu=$(awk -v a="$(children_cpu "$out.times0")" -v b="$(children_cpu "$out.times1")" \
    'BEGIN {printf "%.3f", b - a}')
  rate=$(awk -v n="$conns" -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f", n * 1e9 / ns}')
  cpu_figures $((ticks1 - ticks0)) "$conns" $((t1 - t0)) $((up1 - up0)) "$load_cpu"
  resumed=$(awk -v r="$reused" -v n="$conns" 'BEGIN {printf "%.1f", r * 100 / n}')
  log "  $test: $conns connections, $reused resumed, $bytes bytes read per connection"
  results+=("$round|$proxy|$test|$rate|-|-|$cpu_us|$cpu_pct|$load_pct|$resumed|-|-")
}

# measure ROUND PROXY: start, check, warm up, run every test, stop.
measure() {
  local round=$1 proxy=$2 test
  log "round $round of $ROUNDS: $proxy"
  "start_$proxy"
  tls_check "$proxy"
  run_wrk "$WARMUP" "$work/warmup.txt"
  for test in $TESTS; do
    case $test in
      keepalive | close) test_wrk "$round" "$proxy" "$test" ;;
      full | resumed) test_handshakes "$round" "$proxy" "$test" ;;
    esac
    alive "$proxy_pid" || { tail -n 20 "$proxy_log" >&2; die "$proxy exited during the $test test"; }
  done
  stop_pid "$proxy_pid"
}

# ---------------------------------------------------------------- main
install_missing nginx:nginx wrk:wrk openssl:openssl pgrep:procps timeout:coreutils
for proxy in $PROXIES; do
  case $proxy in sluice | sluice-b | nginx) ;; *) die "unknown proxy '$proxy' in PROXIES" ;; esac
done
for test in $TESTS; do
  case $test in keepalive | close | full | resumed) ;; *) die "unknown test '$test' in TESTS" ;; esac
done
[[ $HS_SECONDS =~ ^[1-9][0-9]*$ ]] || die "HS_SECONDS must be a whole number of seconds ≥ 1"
[[ $HS_CLIENTS =~ ^[1-9][0-9]*$ ]] || die "HS_CLIENTS must be a number ≥ 1"
[[ -x $SLUICE_BIN ]] || [[ " $PROXIES " != *" sluice "* ]] ||
  die "no sluice binary at $SLUICE_BIN: build it (cmake --preset release && cmake --build --preset release --target sluice) or set SLUICE_BIN"

pin_sides proxy "wrk, s_time and upstream"
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLUICE_PORT" "$NGINX_PORT" \
  "$SLUICE_ADMIN_PORT"

echo "versions:"
print_proxy_versions
echo "  $(wrk -v 2>&1 | head -n 1)"
echo "  openssl CLI: $(openssl version)"

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-tls.XXXXXX")
# nginx workers run as an unprivileged user when started as root: let them reach their files.
chmod 755 "$work"

# The certificate and key both proxies serve: ECDSA P-256, self-signed (the clients do not
# verify it; s_client checks its name).
make_certificate "$cert_cn"

start_upstream_nginx

read -r -a proxy_order <<<"$PROXIES"
for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#proxy_order[@]}; i++)); do
    measure "$round" "${proxy_order[(i + round - 1) % ${#proxy_order[@]}]}"
  done
done

collect_medians 9

unit() { case $1 in keepalive | close) echo req ;; *) echo hs ;; esac }
# fixed VALUE DECIMALS: VALUE with that many decimals, or "-" as it is.
fixed() { if [[ $1 == - ]]; then echo -; else printf "%.${2}f" "$1"; fi; }

# shellcheck disable=SC2016 # an awk program
print_rounds "per s, CPU µs/op" 'printf "  %.0f %s", $3, $6'

echo
if ((ROUNDS > 1)); then echo "medians of $ROUNDS rounds:"; fi
echo "| proxy | test | per s | p50 ms | p99 ms | CPU µs/op | proxy CPU % | load CPU % | resumed % | non-2xx | socket errors |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${medians[@]}"; do
  IFS='|' read -r proxy test rate p50 p99 cpu_us cpu_pct load_pct resumed non2xx sockerr <<<"$row"
  printf '| %s | %s | %.0f %s/s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$proxy" "$test" \
    "$rate" "$(unit "$test")" "$(fixed "$p50" 2)" "$(fixed "$p99" 2)" "$(fixed "$cpu_us" 2)" \
    "$(fixed "$cpu_pct" 0)" "$(fixed "$load_pct" 0)" "$(fixed "$resumed" 1)" "$non2xx" "$sockerr"
done
busy_rows=""
for row in "${medians[@]}"; do
  IFS='|' read -r proxy test _ _ _ _ cpu_pct load_pct resumed _ <<<"$row"
  if awk -v a="$cpu_pct" -v b="$load_pct" 'BEGIN {exit !(a < 80 && b < 80)}'; then
    busy_rows+=" $proxy/$test"
  fi
  if [[ $test == resumed ]] && awk -v r="$resumed" 'BEGIN {exit !(r < 100)}'; then
    echo
    echo "note: $proxy resumed only $resumed % of its connections in the resumed test;" \
      "the others were full handshakes (s_time's output is kept with KEEP_WORKDIR=1)."
  fi
done
if [[ -n $busy_rows ]]; then
  echo
  echo "note: neither the proxy nor the load side used 80 % of its core in:$busy_rows;" \
    "other processes were taking CPU, so run again on a quiet machine."
fi

# sluice/nginx, when both ran: on the medians, and round by round (sluice against the nginx run
# of the same round).
declare -A rate_of p99_of cpu_of
for row in "${medians[@]}"; do
  IFS='|' read -r proxy test rate _ p99 cpu_us _ <<<"$row"
  rate_of[$proxy/$test]=$rate
  p99_of[$proxy/$test]=$p99
  cpu_of[$proxy/$test]=$cpu_us
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "?"}'; }
if [[ " $PROXIES " == *" sluice "* && " $PROXIES " == *" nginx "* ]]; then
  echo
  echo "sluice/nginx (medians; rounds in which sluice did as well or better):"
  for test in $TESTS; do
    [[ -n ${rate_of[sluice/$test]:-} && -n ${rate_of[nginx/$test]:-} ]] || continue
    u=$(unit "$test")
    line="- $test: $u/s $(ratio "${rate_of[sluice/$test]}" "${rate_of[nginx/$test]}")"
    line+=" (higher is better; $(rounds_won 1 ">=" "$test"))"
    line+=", CPU µs/$u $(ratio "${cpu_of[sluice/$test]}" "${cpu_of[nginx/$test]}")"
    line+=" (lower is better; $(rounds_won 4 "<=" "$test"))"
    if [[ $test == keepalive ]]; then
      line+=", p99 $(ratio "${p99_of[sluice/$test]}" "${p99_of[nginx/$test]}")"
      line+=" (lower is better; $(rounds_won 3 "<=" "$test"))"
    fi
    echo "$line"
  done
fi

echo
echo "$ROUNDS round(s); keepalive (close: the same with Connection: close): wrk -t$WRK_THREADS -c$CONNECTIONS -d$DURATION --latency over https" \
  "(after a $WARMUP warm-up); full / resumed: $HS_CLIENTS x openssl s_time -new / -reuse" \
  "-time $HS_SECONDS, one request per connection; TLS 1.3 $cipher_suite X25519, ECDSA P-256;" \
  "pinning: $pinning; machine: $(describe_machine)"
echo "CPU µs/op = the proxy's user+system CPU during the run / requests (keepalive) or" \
  "connections (full, resumed); proxy CPU % and load CPU % = share of one core used by the" \
  "proxy and by the clients + upstream (near 100 = the bottleneck)."
