#!/usr/bin/env bash
# sluice vs nginx speaking HTTP/2 to their clients, all on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/http2.sh               # or PROXIES=nginx bash bench/http2.sh for nginx alone
#
# Each proxy takes HTTP/2 from its clients and relays every stream, as an HTTP/1.1 request on a
# kept-alive connection, to the same upstream (an nginx worker answering `return 200` on
# cleartext HTTP/1.1, bench/peers/upstream.nginx.conf). The client is h2load (nghttp2-client),
# which multiplexes STREAMS requests at once on each of its CONNECTIONS connections. Three tests:
#   h2c   HTTP/2 over cleartext TCP with prior knowledge (h2load http://...: the connection
#         preface straight away, no Upgrade); req/s, mean time per request, and the proxy's CPU
#         µs per request.
#   tls   the same over TLS with ALPN h2 (h2load https://...), TLS 1.3, TLS_AES_128_GCM_SHA256,
#         X25519, with the ECDSA P-256 self-signed certificate and key made here as in
#         bench/tls.sh; the connections make their handshakes once, at the start, so this is
#         h2c plus the record layer's encryption. Before measuring a proxy the script checks what
#         h2load negotiated (its "TLS Protocol", "Cipher", "Server Temp Key" and "Application
#         protocol" lines) and stops with an error if it is not that.
#   mem   memory per connection with streams held open: on a fresh start of the proxy,
#         MEM_CONNECTIONS h2c connections each open MEM_STREAMS streams at once (h2load -c
#         MEM_CONNECTIONS -m MEM_STREAMS -n MEM_CONNECTIONS*MEM_STREAMS, one wave) on /slow,
#         which both proxies send to a slow upstream (bench/http2/slow_upstream.py, a Python
#         asyncio HTTP/1.1 server answering each request DELAY seconds after reading it, with
#         keep-alive). While the streams wait, the script asks that upstream every 0.1 s how many
#         requests it holds and reads the proxy's resident memory (VmRSS in /proc/PID/status,
#         nginx's master and worker added up); it keeps the largest reading taken while the
#         upstream held the most requests. The figure is (RSS held - RSS idle) / connections, in
#         KiB, with RSS idle read after a few requests and before the wave. It counts what each
#         held stream costs the proxy on both sides, the client's stream and the upstream
#         connection that carries its request (one per stream, HTTP/1.1 having no multiplexing),
#         as a proxy in front of slow upstreams would hold them; KiB/stream is the same divided by
#         MEM_STREAMS. "held" is the most requests the upstream had at once: it should be
#         MEM_CONNECTIONS x MEM_STREAMS, or the figure covers fewer streams than asked.
# "upstream conns/req" in the h2c and tls tests: the TCP connections opened on the machine during
# the run (the kernel's Tcp ActiveOpens, /proc/net/snmp), less h2load's own, per request: the
# connections the proxy opened to the upstream. Near 0 when the proxy reuses its kept-alive
# upstream connections, 1 when it opens one per request. The counter covers the whole machine, so
# other programs connecting at the same time add to it.
# h2load's failed, errored and timed-out requests (its "requests:" line) and its non-2xx answers
# (its "status codes:" line) are added up over the rounds and shown in the tables: anything but
# 0 means that the proxy dropped, reset or refused streams, and its figures are not comparable.
#
# Fairness: one nginx worker (worker_processes 1) and one sluice thread (threads: 1), each with
# its own config, pid and log files in a temporary directory, no access log, the same forwarded
# fields, a rate limit far above what the clients send (nginx limit_req, sluice a token bucket,
# as in bench/peers and bench/tls) and 64 kept-alive idle connections to each upstream (nginx
# `keepalive 64` with proxy_http_version 1.1; sluice keeps as many by itself). Both allow
# MAX_STREAMS streams per connection (nginx http2_max_concurrent_streams, sluice
# http2.max_concurrent_streams; 128 is the default of both). TLS as in bench/tls: TLS 1.3 only
# on both, the suite pinned in nginx (ssl_conf_command Ciphersuites) and, as sluice's
# configuration has no TLS 1.3 cipher-suite setting, on the client for both (h2load --tls13-ciphers,
# --groups X25519); session tickets on and no session cache in nginx, as sluice. In the h2c and
# tls tests, keep STREAMS x CONNECTIONS at or under 64 (the default is 8 x 8): more requests at
# once than the 64 idle upstream connections each proxy keeps would make both open and close
# upstream connections, which measures that rather than HTTP/2.
# Pinning, rounds and medians as in bench/peers.sh and bench/tls.sh: on 2 or more cores the proxy
# runs alone on PROXY_CPU, and h2load and the upstreams share LOAD_CPU (PIN=0: no pinning);
# ROUNDS rounds, each measuring every proxy once (the h2c and tls tests on one start of the
# proxy, each after a WARMUP of h2load; the mem test on a start of its own), the proxies in a
# rotated order; the tables give each figure's median over the rounds, and the sluice/nginx
# ratios count the rounds sluice won against the nginx run of the same round. Reading the
# numbers: when the proxy's core is near 100 %, req/s compares the proxies; when the load side
# is near 100 % instead, req/s is the load side's ceiling and CPU µs/req compares them.
#
# Environment (defaults in brackets; the defaults take about 2.5 minutes):
#   SLUICE_BIN [build/release/sluice]  PROXIES ["sluice nginx"]  TESTS ["h2c tls mem"]
#   ROUNDS [5]  DURATION [3s] (h2load -D)  WARMUP [1s]  CONNECTIONS [8]  STREAMS [8] (h2load -m)
#   H2LOAD_THREADS [1]  MAX_STREAMS [128]  MEM_CONNECTIONS [50]  MEM_STREAMS [100]  DELAY [3]
#   UPSTREAM_PORT [18080]  SLOW_PORT [18085]  SLUICE_PORT [18081]  NGINX_PORT [18082]
#   SLUICE_TLS_PORT [18443]  NGINX_TLS_PORT [18444]  SLUICE_ADMIN_PORT [18091]
#   PIN [1]  PROXY_CPU [1]  LOAD_CPU [0]  KEEP_WORKDIR [0]
#
# nginx, h2load (nghttp2-client), openssl, curl and python3 come from the distribution: if one is
# missing, it is installed with apt-get (as root), without letting the package start its system
# service. The script never uses the system services or port 80; it starts and stops its own
# instances. The mem test needs about 2 x MEM_CONNECTIONS x MEM_STREAMS open files in the proxy
# and in the slow upstream: the script raises its soft limit (ulimit -n) to the hard one.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"
cleanup_on_exit
templates=$repo_root/bench/http2

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-8}
STREAMS=${STREAMS:-8}
H2LOAD_THREADS=${H2LOAD_THREADS:-1}
MAX_STREAMS=${MAX_STREAMS:-128}
MEM_CONNECTIONS=${MEM_CONNECTIONS:-50}
MEM_STREAMS=${MEM_STREAMS:-100}
DELAY=${DELAY:-3}
PROXIES=${PROXIES:-sluice nginx}
TESTS=${TESTS:-h2c tls mem}
UPSTREAM_PORT=${UPSTREAM_PORT:-18080}
SLOW_PORT=${SLOW_PORT:-18085}
SLUICE_PORT=${SLUICE_PORT:-18081}
NGINX_PORT=${NGINX_PORT:-18082}
SLUICE_TLS_PORT=${SLUICE_TLS_PORT:-18443}
NGINX_TLS_PORT=${NGINX_TLS_PORT:-18444}
SLUICE_ADMIN_PORT=${SLUICE_ADMIN_PORT:-18091}
PIN=${PIN:-1}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
# A relative SLUICE_BIN is relative to the repository root, wherever the script is run from.
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN

# The proxies run with OpenSSL's own configuration, whatever the caller's environment says.
unset OPENSSL_CONF
cipher_suite=TLS_AES_128_GCM_SHA256
cert_cn=sluice-bench
# h2load's TLS settings (TLS 1.3 is its default highest version; the proxies allow no other).
tls_options=(--tls13-ciphers="$cipher_suite" --groups=X25519)

# ---------------------------------------------------------------- the proxies
# start_PROXY: starts the proxy, sets proxy_pid, proxy_port (h2c), proxy_tls_port, proxy_log.
start_sluice() {
  local config=$work/sluice.yaml
  render "$templates/sluice.yaml" "$config" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    SLOW_PORT="$SLOW_PORT" SLUICE_PORT="$SLUICE_PORT" SLUICE_TLS_PORT="$SLUICE_TLS_PORT" \
    SLUICE_ADMIN_PORT="$SLUICE_ADMIN_PORT" MAX_STREAMS="$MAX_STREAMS"
  check_sluice "$config" "was this sluice built with HTTP/2 and TLS listeners?"
  proxy_port=$SLUICE_PORT
  proxy_tls_port=$SLUICE_TLS_PORT
  proxy_log=$work/sluice.log
  start "$proxy_log" "${proxy_pin[@]}" "$SLUICE_BIN" run -c "$config"
  proxy_pid=$pid
}

start_nginx() {
  render "$templates/nginx.conf" "$work/nginx.conf" DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT" \
    SLOW_PORT="$SLOW_PORT" NGINX_PORT="$NGINX_PORT" NGINX_TLS_PORT="$NGINX_TLS_PORT" \
    MAX_STREAMS="$MAX_STREAMS" WORKER_CONNECTIONS="$worker_connections"
  proxy_port=$NGINX_PORT
  proxy_tls_port=$NGINX_TLS_PORT
  proxy_log=$work/nginx.log
  launch_nginx nginx "$proxy_port" proxy_pin
  proxy_pid=$pid
}

# start_proxy PROXY: starts it and waits until both its ports accept.
start_proxy() {
  local proxy=$1
  "start_$proxy"
  wait_port "$proxy_port" "$proxy_pid" "$proxy" "$proxy_log"
  wait_port "$proxy_tls_port" "$proxy_pid" "$proxy" "$proxy_log"
}

stop_proxy() { stop_pid "$proxy_pid"; }

# url TEST [PATH]: the URL h2load loads for that test.
url() {
  case $1 in
    tls) echo "https://127.0.0.1:$proxy_tls_port${2:-/}" ;;
    *) echo "http://127.0.0.1:$proxy_port${2:-/}" ;;
  esac
}

# active_opens: the TCP connections opened so far on the machine (Tcp ActiveOpens).
active_opens() {
  awk '$1 == "Tcp:" {
    if (!n) { for (i = 2; i <= NF; i++) if ($i == "ActiveOpens") f = i; n = 1 } else print $f }' \
    /proc/net/snmp
}

# h2load_failures OUT: failed + errored + timed-out requests in h2load's report, then its non-2xx
# answers, on one line.
h2load_failures() {
  awk '/^requests:/ {gsub(/,/, ""); f = $10 + $12 + $14}
    /^status codes:/ {gsub(/,/, ""); n = $5 + $7 + $9}
    END {print f + 0, n + 0}' "$1"
}

# h2_check PROXY TEST: one request like the test's, and what h2load says it negotiated: HTTP/2
# (h2c by prior knowledge on cleartext, h2 by ALPN on TLS), and for TLS the version, suite and
# group of bench/tls; a 200 answer. Ends the script if not.
h2_check() {
  local name=$1 test=$2 out=$work/check-$1-$2.txt want wants failed non2xx
  timeout 20 h2load -n 1 -c 1 "${tls_options[@]}" "$(url "$test")" >"$out" 2>&1 ||
    { cat "$out" >&2; die "$name: h2load could not make one request to $(url "$test")"; }
  case $test in
    tls) wants=("TLS Protocol: TLSv1.3" "Cipher: $cipher_suite" "Server Temp Key: X25519"
      "Application protocol: h2$") ;;
    *) wants=("Application protocol: h2c$") ;;
  esac
  wants+=("^requests: 1 total, 1 started, 1 done, 1 succeeded" "^status codes: 1 2xx")
  for want in "${wants[@]}"; do
    grep -q -- "$want" "$out" ||
      {
        cat "$out" >&2
        tail -n 20 "$proxy_log" >&2 || true
        die "$name on $(url "$test"): h2load did not see '$want'"
      }
  done
  read -r failed non2xx < <(h2load_failures "$out")
  ((failed == 0 && non2xx == 0)) || { cat "$out" >&2; die "$name: the check request failed"; }
}

# ---------------------------------------------------------------- the tests

# run_h2load OUT ARGS...: h2load ARGS against the proxy; its report goes to OUT and its CPU
# seconds to client_cpu.
run_h2load() {
  local out=$1
  shift
  run_client "$out" "${load_pin[@]}" h2load "$@" || { cat "$out" >&2; die "h2load $* failed"; }
}

# test_load ROUND PROXY TEST: h2load -D DURATION over h2c or TLS after a WARMUP; appends a row
# to results.
test_load() {
  local round=$1 proxy=$2 test=$3 out ticks0 ticks1 t0 t1 up0 up1 opens0 opens1 extra=()
  local rps done_requests mean failed non2xx cpu_us cpu_pct load_pct conns
  [[ $test == tls ]] && extra=("${tls_options[@]}")
  out=$work/h2load-$proxy-$test-$round.txt
  run_h2load "$work/warmup.txt" -t"$H2LOAD_THREADS" -c"$CONNECTIONS" -m"$STREAMS" \
    -D"$WARMUP" "${extra[@]}" "$(url "$test")"
  ticks0=$(cpu_ticks "$proxy_pid")
  up0=$(cpu_ticks "$upstream_pid")
  opens0=$(active_opens)
  t0=$(now_ns)
  run_h2load "$out" -t"$H2LOAD_THREADS" -c"$CONNECTIONS" -m"$STREAMS" -D"$DURATION" \
    "${extra[@]}" "$(url "$test")"
  t1=$(now_ns)
  opens1=$(active_opens)
  ticks1=$(cpu_ticks "$proxy_pid")
  up1=$(cpu_ticks "$upstream_pid")

  # "finished in 3.00s, 41504.33 req/s, 1.30MB/s"; "requests: T total, S started, D done, ...";
  # "time for request: MIN MAX MEAN SD +/-SD".
  rps=$(awk '/^finished in/ {print $4}' "$out")
  done_requests=$(awk '/^requests:/ {print $6}' "$out")
  mean=$(awk '/^time for request:/ {print $6}' "$out")
  read -r failed non2xx < <(h2load_failures "$out")
  if [[ -z $rps || -z $done_requests || -z $mean ]] || ((done_requests == 0)); then
    cat "$out" >&2
    die "could not read h2load's output for $proxy $test"
  fi
  cpu_figures $((ticks1 - ticks0)) "$done_requests" $((t1 - t0)) $((up1 - up0)) "$client_cpu"
  conns=$(awk -v o=$((opens1 - opens0 - CONNECTIONS)) -v n="$done_requests" \
    'BEGIN {if (o < 0) o = 0; printf "%.3f", o / n}')
  results+=("$round|$proxy|$test|$rps|$(to_ms "$mean")|$cpu_us|$cpu_pct|$load_pct|$failed|$non2xx|-|-|-|-|-|$conns")
}

# slow_stats [reset]: the slow upstream's "inflight N peak M" as "N M".
slow_stats() {
  curl -s --max-time 2 "http://127.0.0.1:$SLOW_PORT/stats${1:+/$1}" |
    awk '$1 == "inflight" {print $2, $4}'
}

# test_mem ROUND PROXY: on a fresh start of the proxy, MEM_CONNECTIONS h2c connections each
# holding MEM_STREAMS streams on /slow; appends a row to results.
test_mem() {
  local round=$1 proxy=$2 out pid idle held=0 most=0 inflight peak rss status=0
  local failed non2xx elapsed per_conn per_stream total=$((MEM_CONNECTIONS * MEM_STREAMS))
  out=$work/h2load-$proxy-mem-$round.txt
  start_proxy "$proxy"
  h2_check "$proxy" mem
  # A few requests first, so that what the proxy sets up on its first ones is in RSS idle.
  run_h2load "$work/mem-warmup.txt" -c1 -m10 -n100 "$(url mem)"
  sleep 0.5
  idle=$(rss_kib "$proxy_pid")
  slow_stats reset >/dev/null
  start "$out" "${load_pin[@]}" h2load -c"$MEM_CONNECTIONS" -m"$MEM_STREAMS" -n"$total" \
    "$(url mem /slow)"
  # Every 0.1 s until h2load is done: the requests the upstream holds, then the proxy's RSS; the
  # RSS kept is the largest one read while the upstream held the most requests.
  while alive "$pid"; do
    read -r inflight _ < <(slow_stats) || inflight=0
    rss=$(rss_kib "$proxy_pid")
    if ((${inflight:-0} > most)); then
      most=$inflight held=$rss
    elif ((${inflight:-0} == most && rss > held)); then
      held=$rss
    fi
    sleep 0.1
  done
  reap "$pid" || status=$?
  ((status == 0)) || { cat "$out" >&2; die "h2load failed against $proxy in the mem test"; }
  read -r _ peak < <(slow_stats)
  read -r failed non2xx < <(h2load_failures "$out")
  elapsed=$(awk '/^finished in/ {sub(/s,$/, "", $3); print $3}' "$out")
  [[ -n $elapsed ]] || { cat "$out" >&2; die "could not read h2load's output for $proxy mem"; }
  if ((most == 0 || held == 0)); then
    die "$proxy mem: no reading taken while the upstream held requests (is DELAY too short?)"
  fi
  per_conn=$(awk -v h="$held" -v i="$idle" -v c="$MEM_CONNECTIONS" 'BEGIN {printf "%.1f", (h - i) / c}')
  per_stream=$(awk -v p="$per_conn" -v s="$MEM_STREAMS" 'BEGIN {printf "%.2f", p / s}')
  log "  mem: RSS $idle KiB idle, $held KiB with $most requests held at the upstream (peak $peak of $total), h2load ${elapsed}s"
  results+=("$round|$proxy|mem|-|-|-|-|-|$failed|$non2xx|$idle|$held|$per_conn|$per_stream|${peak:-0}|-")
  alive "$proxy_pid" || { tail -n 20 "$proxy_log" >&2; die "$proxy exited during the mem test"; }
  stop_proxy
}

# measure ROUND PROXY: the h2c and tls tests on one start of the proxy, then the mem test on
# a start of its own.
measure() {
  local round=$1 proxy=$2 test started=0
  log "round $round of $ROUNDS: $proxy"
  for test in $TESTS; do
    [[ $test == mem ]] && continue
    if ((!started)); then
      start_proxy "$proxy"
      started=1
    fi
    h2_check "$proxy" "$test"
    test_load "$round" "$proxy" "$test"
    alive "$proxy_pid" || { tail -n 20 "$proxy_log" >&2; die "$proxy exited during the $test test"; }
  done
  if ((started)); then stop_proxy; fi
  if [[ " $TESTS " == *" mem "* ]]; then test_mem "$round" "$proxy"; fi
}

# ---------------------------------------------------------------- main
install_missing nginx:nginx h2load:nghttp2-client openssl:openssl curl:curl python3:python3 \
  pgrep:procps timeout:coreutils
for proxy in $PROXIES; do
  case $proxy in sluice | nginx) ;; *) die "unknown proxy '$proxy' in PROXIES" ;; esac
done
for test in $TESTS; do
  case $test in h2c | tls | mem) ;; *) die "unknown test '$test' in TESTS" ;; esac
done
for var in CONNECTIONS STREAMS H2LOAD_THREADS MAX_STREAMS MEM_CONNECTIONS MEM_STREAMS ROUNDS; do
  [[ ${!var} =~ ^[1-9][0-9]*$ ]] || die "$var must be a number ≥ 1"
done
if [[ ! $DELAY =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v d="$DELAY" 'BEGIN {exit !(d >= 1)}'; then
  die "DELAY must be a number of seconds ≥ 1"
fi
((STREAMS <= MAX_STREAMS && MEM_STREAMS <= MAX_STREAMS)) ||
  die "STREAMS and MEM_STREAMS must not exceed MAX_STREAMS ($MAX_STREAMS): the proxies would refuse the rest"
[[ -x $SLUICE_BIN ]] || [[ " $PROXIES " != *" sluice "* ]] ||
  die "no sluice binary at $SLUICE_BIN: build it (cmake --preset release && cmake --build --preset release --target sluice) or set SLUICE_BIN"

# Open files: in the mem test, a client and an upstream socket per held stream in the proxy, an
# upstream one per stream in the slow upstream.
files_needed=$((2 * MEM_CONNECTIONS * MEM_STREAMS + 1024))
worker_connections=$((2 * MEM_CONNECTIONS * MEM_STREAMS + 2 * CONNECTIONS + 1024))
((worker_connections >= 4096)) || worker_connections=4096
if [[ " $TESTS " == *" mem "* ]] && (($(ulimit -n) < files_needed)); then
  hard=$(ulimit -Hn)
  if [[ $hard != unlimited ]] && ((hard < files_needed)); then
    die "the mem test needs $files_needed open files, the hard limit is $hard: lower MEM_CONNECTIONS or MEM_STREAMS"
  fi
  ulimit -n "$files_needed"
fi

pin_sides proxy "h2load and the upstreams"
require_free_ports "see the *_PORT variables" "$UPSTREAM_PORT" "$SLOW_PORT" "$SLUICE_PORT" \
  "$NGINX_PORT" "$SLUICE_TLS_PORT" "$NGINX_TLS_PORT" "$SLUICE_ADMIN_PORT"

echo "versions:"
print_proxy_versions
echo "  $(h2load --version 2>&1 | head -n 1)"
echo "  $(python3 --version 2>&1) (the mem test's slow upstream)"

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-http2.XXXXXX")
# nginx workers run as an unprivileged user when started as root: let them reach their files.
chmod 755 "$work"

# The certificate and key both proxies serve on TLS: ECDSA P-256, self-signed, as in
# bench/tls.sh (h2load does not verify it).
make_certificate "$cert_cn"

start_upstream_nginx

if [[ " $TESTS " == *" mem "* ]]; then
  slow_log=$work/slow_upstream.log
  log "slow upstream (answers after ${DELAY}s) on 127.0.0.1:$SLOW_PORT"
  start "$slow_log" "${load_pin[@]}" python3 "$templates/slow_upstream.py" "$SLOW_PORT" "$DELAY"
  slow_pid=$pid
  wait_port "$SLOW_PORT" "$slow_pid" "slow upstream" "$slow_log"
fi

read -r -a proxy_order <<<"$PROXIES"
for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#proxy_order[@]}; i++)); do
    measure "$round" "${proxy_order[(i + round - 1) % ${#proxy_order[@]}]}"
  done
done

# Figures: 1 req/s, 2 mean ms, 3 CPU µs/req, 4 proxy CPU %, 5 load CPU %, 6 failed, 7 non-2xx,
# 8 RSS idle KiB, 9 RSS held KiB, 10 KiB/connection, 11 KiB/stream, 12 streams held,
# 13 upstream connections opened per request.
collect_medians 13

# fixed VALUE DECIMALS: VALUE with that many decimals, or "-" as it is.
fixed() { if [[ $1 == - ]]; then echo -; else printf "%.${2}f" "$1"; fi; }
# total RUN N: figure N added up over RUN's rounds (failures: one bad round must show).
total() { column "$1" "$2" | awk '{s += $1} END {print s + 0}'; }

# shellcheck disable=SC2016 # an awk program
print_rounds "h2c, tls: req/s and CPU µs/req; mem: KiB/connection" \
  'if ($2 == "mem") printf "  %s KiB", $12; else printf "  %.0f %s", $3, $5'

has_load=0 has_mem=0
for row in "${medians[@]}"; do
  case $row in *"|mem|"*) has_mem=1 ;; *) has_load=1 ;; esac
done
if ((has_load)); then
  echo
  if ((ROUNDS > 1)); then echo "medians of $ROUNDS rounds (failed and non-2xx: all rounds added up):"; fi
  echo "| proxy | test | req/s | mean ms | CPU µs/req | proxy CPU % | load CPU % | upstream conns/req | failed | non-2xx |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for row in "${medians[@]}"; do
    IFS='|' read -r proxy test rps mean cpu_us cpu_pct load_pct _ _ _ _ _ _ _ conns <<<"$row"
    [[ $test != mem ]] || continue
    printf '| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n' "$proxy" "$test" "$rps" \
      "$(fixed "$mean" 2)" "$(fixed "$cpu_us" 2)" "$(fixed "$cpu_pct" 0)" \
      "$(fixed "$load_pct" 0)" "$(fixed "$conns" 2)" "$(total "$proxy/$test" 6)" \
      "$(total "$proxy/$test" 7)"
  done
fi
if ((has_mem)); then
  echo
  echo "memory, $MEM_CONNECTIONS h2c connections x $MEM_STREAMS streams held ${DELAY}s by the upstream" \
    "(medians; failed and non-2xx: all rounds added up):"
  echo "| proxy | RSS idle MiB | RSS held MiB | KiB/connection | KiB/stream | streams held | failed | non-2xx |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for row in "${medians[@]}"; do
    IFS='|' read -r proxy test _ _ _ _ _ _ _ idle held per_conn per_stream streams _ <<<"$row"
    [[ $test == mem ]] || continue
    printf '| %s | %.1f | %.1f | %.1f | %.2f | %.0f | %s | %s |\n' "$proxy" \
      "$(awk -v k="$idle" 'BEGIN {print k / 1024}')" "$(awk -v k="$held" 'BEGIN {print k / 1024}')" \
      "$per_conn" "$per_stream" "$streams" "$(total "$proxy/mem" 6)" "$(total "$proxy/mem" 7)"
  done
fi

busy_rows="" failing_rows="" short_rows="" churn_rows=""
for row in "${medians[@]}"; do
  IFS='|' read -r proxy test _ _ _ cpu_pct load_pct _ _ _ _ _ _ _ conns <<<"$row"
  if [[ $test != mem ]] && awk -v c="$conns" 'BEGIN {exit !(c >= 0.5)}'; then
    churn_rows+=" $proxy/$test ($conns)"
  fi
  if [[ $test != mem ]] && awk -v a="$cpu_pct" -v b="$load_pct" 'BEGIN {exit !(a < 80 && b < 80)}'; then
    busy_rows+=" $proxy/$test"
  fi
  if (($(total "$proxy/$test" 6) + $(total "$proxy/$test" 7) > 0)); then
    failing_rows+=" $proxy/$test"
  fi
  if [[ $test == mem ]] &&
    column "$proxy/mem" 12 | awk -v t=$((MEM_CONNECTIONS * MEM_STREAMS)) '$1 < t {f = 1} END {exit !f}'; then
    short_rows+=" $proxy"
  fi
done
if [[ -n $busy_rows ]]; then
  echo
  echo "note: neither the proxy nor the load side used 80 % of its core in:$busy_rows;" \
    "other processes were taking CPU, so run again on a quiet machine."
fi
if [[ -n $churn_rows ]]; then
  echo
  echo "note: a new upstream connection for most requests (upstream conns/req) in:$churn_rows;" \
    "the proxy did not reuse its kept-alive upstream connections there, and its CPU µs/req" \
    "includes a connect and a close per request."
fi
if [[ -n $failing_rows ]]; then
  echo
  echo "note: h2load counted failed, errored, timed-out or non-2xx requests in:$failing_rows;" \
    "their figures are not comparable (h2load's reports are kept with KEEP_WORKDIR=1)."
fi
if [[ -n $short_rows ]]; then
  echo
  echo "note: in some mem rounds of:$short_rows the upstream never held all" \
    "$((MEM_CONNECTIONS * MEM_STREAMS)) requests at once (the proxy or the load side took longer" \
    "than DELAY to open them all); raise DELAY."
fi

# sluice/nginx, when both ran: on the medians, and round by round (sluice against the nginx run
# of the same round).
declare -A rps_of cpu_of kib_of
for row in "${medians[@]}"; do
  IFS='|' read -r proxy test rps _ cpu_us _ _ _ _ _ _ per_conn _ <<<"$row"
  rps_of[$proxy/$test]=$rps
  cpu_of[$proxy/$test]=$cpu_us
  kib_of[$proxy/$test]=$per_conn
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "?"}'; }
if [[ " $PROXIES " == *" sluice "* && " $PROXIES " == *" nginx "* ]]; then
  echo
  echo "sluice/nginx (medians; rounds in which sluice did as well or better):"
  for test in $TESTS; do
    [[ -n ${rps_of[sluice/$test]:-} && -n ${rps_of[nginx/$test]:-} ]] || continue
    if [[ $test == mem ]]; then
      echo "- mem: KiB/connection $(ratio "${kib_of[sluice/mem]}" "${kib_of[nginx/mem]}")" \
        "(lower is better; $(rounds_won 10 "<=" mem))"
    else
      echo "- $test: req/s $(ratio "${rps_of[sluice/$test]}" "${rps_of[nginx/$test]}")" \
        "(higher is better; $(rounds_won 1 ">=" "$test"))," \
        "CPU µs/req $(ratio "${cpu_of[sluice/$test]}" "${cpu_of[nginx/$test]}")" \
        "(lower is better; $(rounds_won 3 "<=" "$test"))"
    fi
  done
fi

echo
echo "$ROUNDS round(s); h2c / tls: h2load -t$H2LOAD_THREADS -c$CONNECTIONS -m$STREAMS -D$DURATION" \
  "(after a $WARMUP warm-up), prior knowledge over cleartext / ALPN h2 over TLS 1.3" \
  "$cipher_suite X25519, ECDSA P-256; mem: h2load -c$MEM_CONNECTIONS -m$MEM_STREAMS" \
  "-n$((MEM_CONNECTIONS * MEM_STREAMS)) over h2c, upstream delay ${DELAY}s; at most" \
  "$MAX_STREAMS streams per connection; pinning: $pinning; machine: $(describe_machine)"
echo "CPU µs/req = the proxy's user+system CPU during the run / requests done; proxy CPU % and" \
  "load CPU % = share of one core used by the proxy and by h2load + upstream (near 100 = the" \
  "bottleneck); KiB/connection = (RSS held - RSS idle) / connections, KiB/stream the same per" \
  "held stream."
