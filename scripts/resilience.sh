#!/usr/bin/env bash
# The resilience suite: sluice under the failures and abuse a proxy meets in production, each
# case with a pass/fail criterion. Everything runs on 127.0.0.1, every load and every wait is
# bounded, and every process the suite starts is stopped when it ends, fails or is interrupted.
#
#   bash scripts/resilience.sh               all cases
#   bash scripts/resilience.sh CASE...       some of them: slowloris keyflood reload upstream
#                                            redis connlimit soak
#
# Cases (each a function case_NAME below, which says what it does and why):
#   slowloris  2,000 slowloris connections (slowhttptest -H) while a normal client runs:
#              its p99 < 20 ms, no failed request; the slow connections closed by timeouts.header
#   keyflood   2 million distinct client keys against max_keys 100,000: RSS grows < 32 MiB,
#              and a client limited before the flood is still limited after it
#   reload     a reload every 200 ms (SIGHUP and POST /reload, valid and invalid files) under
#              load: no failed request, every reload counted as it should be
#   upstream   the upstream killed and restarted under load: in-flight requests get 502, none
#              hangs, traffic back within 1 s of the restart
#   redis      Redis killed and restarted under load, for on_error allow, deny and local: the
#              documented answers during the outage, none hangs, the store back within 1 s
#   connlimit  max_connections 50 reached: kept-alive clients still served, new connections
#              wait in the listen queue and are served once a slot frees
#   soak       SOAK_SECONDS of mixed traffic (forward, 429, delay mode, uploads, WebSocket):
#              RSS and open descriptors back to their baseline afterwards
#   herd       4,000 connections at once, three ways: with a request each then idle, then gone
#              (RSS back within 16 MiB of its start); silent (closed by timeouts.header, RSS
#              flat); resetting mid-TLS-handshake (nothing leaks: run on the ASan build)
#
# Each case prints one line, PASS or FAIL with its figures; the suite ends with a table and
# exits 1 if any case failed. A case that fails keeps its work directory (configs, logs, wrk
# reports) and says where.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/test/sluice, else build/release/sluice]   SOAK_SECONDS [60]
#   ASAN_SLUICE_BIN [build/asan/sluice]: the herd case's TLS resets run on it when it is there.
#   BASE_PORT [18400]: sluice, its admin port, nginx, the Python upstream and Redis take
#   BASE_PORT .. BASE_PORT+4.   KEEP_WORKDIR [0]: keep every case's work directory.
#
# Tools (installed with apt-get when missing, as root): wrk, slowhttptest, nginx, redis-server,
# curl, python3 (standard library only: scripts/resilience/*.py).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"
log_prefix="resilience: "
helpers=$repo_root/scripts/resilience
SOAK_SECONDS=${SOAK_SECONDS:-60}
BASE_PORT=${BASE_PORT:-18400}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
if [[ -z ${SLUICE_BIN:-} ]]; then
  SLUICE_BIN=build/test/sluice # what scripts/test.sh builds
  [[ -x $repo_root/$SLUICE_BIN ]] || SLUICE_BIN=build/release/sluice
fi
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
SLUICE_PORT=$BASE_PORT
ADMIN_PORT=$((BASE_PORT + 1))
NGINX_PORT=$((BASE_PORT + 2))
PY_PORT=$((BASE_PORT + 3))
REDIS_PORT=$((BASE_PORT + 4))
ALL_CASES=(slowloris keyflood reload upstream redis connlimit soak herd)
ASAN_SLUICE_BIN=${ASAN_SLUICE_BIN:-build/asan/sluice}
[[ $ASAN_SLUICE_BIN == /* ]] || ASAN_SLUICE_BIN=$repo_root/$ASAN_SLUICE_BIN

# ---------------------------------------------------------------- the servers
# Every process a case starts (with `start`) is stopped by the case's EXIT trap, newest first,
# whether the case passed, failed or was interrupted.

# The ordinary upstream: one nginx worker answering 200 "ok" to everything (request bodies are
# read and dropped), keep-alive without limits so that sluice's pool keeps its connections.
start_nginx() {
  nginx_config nginx "$NGINX_PORT" 'default_type text/plain; return 200 "ok\n";' \
    'client_max_body_size 0;'
  launch_nginx nginx "$NGINX_PORT" no_pin
}

# The Python upstream (scripts/resilience/upstream.py): /slow answers after 0.3 s, WebSocket
# echo. Started with the interpreter itself, not a version manager's shim, so that a restart
# takes as little time as Python can.
start_python_upstream() {
  start "$work/upstream.log" "$PYTHON" "$helpers/upstream.py" "$PY_PORT" 0.3
  py_pid=$pid
  wait_port "$PY_PORT" "$py_pid" "the Python upstream" "$work/upstream.log"
}

# Redis for the store, without persistence.
start_redis_store() {
  start_redis "$REDIS_PORT" "$work/redis.log" no_pin
  redis_pid=$pid
}

# The start of every sluice config: loopback ports, two event loops (so that what crosses
# loops is tested), the proxy's own log at warn, no access log. The case appends the rest.
sluice_head() {
  cat <<YAML
listen: "127.0.0.1:$SLUICE_PORT"
admin: "127.0.0.1:$ADMIN_PORT"
threads: 2
log: {level: warn, format: text, access: false}
YAML
}

# forward_config FILE HEADER_TIMEOUT [LINE]: writes the config of a case that only forwards: up
# to 10,000 connections, every request to nginx through a limit that never triggers, the given
# timeouts.header, and LINE (a top-level key) added.
forward_config() {
  {
    sluice_head
    [[ -z ${3:-} ]] || echo "$3"
    cat <<YAML
max_connections: 10000
upstream: "http://127.0.0.1:$NGINX_PORT"
timeouts: {header: $2, idle: 60s}
limiters:
  per-ip: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: ip}
routes:
  - {name: all, match: {path_prefix: /}, limiters: [per-ip]}
YAML
  } >"$1"
}

# start_sluice CONFIG [BINARY]: checks the config, starts sluice (SLUICE_BIN, or BINARY) on it,
# waits for both ports.
start_sluice() {
  local config=$1 binary=${2:-$SLUICE_BIN}
  check_sluice "$config"
  start "$work/sluice.log" "$binary" run -c "$config"
  sluice_pid=$pid
  wait_port "$SLUICE_PORT" "$sluice_pid" sluice "$work/sluice.log"
  wait_port "$ADMIN_PORT" "$sluice_pid" "sluice's admin port" "$work/sluice.log"
}

# ---------------------------------------------------------------- measurements
# metric 'NAME{LABELS': the sum of the admin port's /metrics samples whose series starts so
# (e.g. 'sluice_requests_total{route="all",decision="limited"'); 0 when there is none (or no
# answer: the checks then fail, rather than the case stopping here).
metric() {
  { curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT/metrics" || true; } |
    awk -v want="$1" 'index($0, want) == 1 { sum += $NF } END { printf "%d\n", sum }'
}

fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# start_wrk OUT WRK_ARGS...: starts wrk with counts.lua (unless -s is given) in the background;
# wait_wrk PID OUT waits for it. Never wrk in the foreground: a wait is cut short by a signal, a
# foreground wrk would delay the trap.
start_wrk() {
  local out=$1 script=(-s "$helpers/counts.lua")
  shift
  [[ " $* " == *" -s "* ]] && script=()
  start "$out" wrk "${script[@]}" "$@"
}
wait_wrk() {
  reap "$1" || true
  grep -q '^result ' "$2" || { cat "$2" >&2; die "wrk did not finish ($2)"; }
}

# wrk_field OUT NAME: a figure of counts.lua's result line (requests, p99_us, timeout...).
wrk_field() { sed -n "s/^result .*\\b$2=\\([0-9]*\\).*/\\1/p" "$1"; }
# wrk_status OUT CODE: how many answers had that status.
wrk_status() { awk -v c="$2" '$1 == "status" && $2 == c {n = $3} END {print n + 0}' "$1"; }
# wrk_errors OUT: socket errors of every kind (connect, read, write, timeout).
wrk_errors() {
  echo $(($(wrk_field "$1" connect) + $(wrk_field "$1" read) + $(wrk_field "$1" write) + \
    $(wrk_field "$1" timeout)))
}
# wrk_statuses OUT: "200:N 429:M ...", for the report.
wrk_statuses() { awk '$1 == "status" {printf "%s%s:%s", sep, $2, $3; sep = " "}' "$1"; }
ms() { awk -v us="$1" 'BEGIN {printf "%.2f", us / 1000}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

# ---------------------------------------------------------------- verdicts
# check NAME CONDITION...: evaluates the arithmetic CONDITION; a false one marks the case failed
# and is listed in its line.
failures=()
check() {
  local name=$1
  shift
  if ! (("$@")); then failures+=("$name"); fi
}

# verdict CASE FIGURES...: the case's summary line, PASS unless a check failed.
verdict() {
  local name=$1 line figures="${*:2}"
  if ((${#failures[@]} == 0)); then
    line="PASS  $name  $figures"
  else
    line="FAIL  $name  $figures  [failed: ${failures[*]}]"
  fi
  printf '%s\n' "$line"
  printf '%s\n' "$line" >>"$summary"
  ((${#failures[@]} == 0))
}

# ================================================================ the cases

# Slowloris: 2,000 connections that each send a partial request head and then one more header
# line every 5 s, never finishing. The normal client (wrk, 4 keep-alive connections) must not
# notice. timeouts.header is 10 s, sluice's default and a usual production value (HAProxy's
# `timeout http-request` is often 10 s; nginx's client_header_timeout is 60 s): a deadline for
# the whole head, so a trickle of header lines does not extend it, and the slow connections are
# closed 10 s after they opened. slowhttptest's 5 s interval is under that on purpose: were the
# timeout reset by each line, the connections would live forever and the check below would fail.
case_slowloris() {
  start_nginx
  forward_config "$work/sluice.yaml" 10s
  start_sluice "$work/sluice.yaml"
  [[ $(http_code "http://127.0.0.1:$SLUICE_PORT/") == 200 ]] || die "sluice does not forward"

  # -r 1000: all 2,000 connections within about 2 s; -l 30 bounds the tool's run.
  local t0 slow_pid open=0 i
  t0=$(now_ms)
  start "$work/slowhttptest.log" slowhttptest -H -c 2000 -r 1000 -i 5 -x 24 -p 3 -l 30 \
    -u "http://127.0.0.1:$SLUICE_PORT/"
  slow_pid=$pid
  for ((i = 0; i < 200; i++)); do # at most 10 s
    open=$(metric sluice_open_connections)
    ((open >= 2000)) && break
    sleep 0.05
  done
  local attack_ms=$(($(now_ms) - t0))

  # The normal client, while the 2,000 are held open (they close at about t0 + 10 s); halfway
  # through, sluice must be holding them all and the client's 4.
  local wrk_pid during
  start_wrk "$work/wrk.txt" -t1 -c4 -d5s --timeout 2s --latency "http://127.0.0.1:$SLUICE_PORT/"
  wrk_pid=$pid
  sleep 2.5
  during=$(metric sluice_open_connections)
  wait_wrk "$wrk_pid" "$work/wrk.txt"

  # Then the header timeout must close them: wait (at most 15 s after they opened) until only
  # a handful remain.
  local closed_ms=-1
  while (($(now_ms) - t0 < 15000)); do
    open=$(metric sluice_open_connections)
    if ((open < 10)); then
      closed_ms=$(($(now_ms) - t0))
      break
    fi
    sleep 0.1
  done
  stop_pid "$slow_pid"

  local p99 non2xx errors requests
  p99=$(wrk_field "$work/wrk.txt" p99_us)
  non2xx=$(wrk_field "$work/wrk.txt" non2xx)
  errors=$(wrk_errors "$work/wrk.txt")
  requests=$(wrk_field "$work/wrk.txt" requests)
  check "p99<20ms" "$p99 < 20000"
  check "no-non2xx" "$non2xx == 0"
  check "no-socket-errors" "$errors == 0"
  check "2000-slow-held-during-load" "$during >= 2004"
  check "slow-closed-by-header-timeout" "$closed_ms > 0 && $closed_ms - $attack_ms < 13000"
  verdict slowloris "normal client p99 $(ms "$p99") ms over $requests requests, non-2xx $non2xx," \
    "socket errors $errors; open connections while it ran: $during (2,000 slow, all open" \
    "$(awk -v m="$attack_ms" 'BEGIN {printf "%.1f", m / 1000}') s after the attack began);" \
    "the slow ones closed by the 10 s header timeout, the last" \
    "$(awk -v m=$((closed_ms - attack_ms)) 'BEGIN {printf "%.1f", m / 1000}') s after all were open"
}

# Key flood: 2 million requests, each with an X-Client value no other request has, on a
# limiter keyed on that header with max_keys 100,000 (store.max_keys: the bound on the keys of
# each limiter). The limit is 3 per hour, a token bucket refilling one every 20 min, so no key
# becomes fresh by itself during the test and every new key must evict one (not a fixed window
# of 1h: its windows start on the hour, and a run across the hour finds every key fresh). Beforehand a "victim" client uses up its 3: README says a
# limited key is never evicted to make room, so after the flood it must still get 429.
case_keyflood() {
  {
    sluice_head
    cat <<YAML
store: {type: memory, max_keys: 100000}
limiters:
  flood: {algorithm: token_bucket, rate: 3/h, burst: 3, key: "header:X-Client"}
routes:
  - {name: flood, match: {path_prefix: /}, limiters: [flood], respond: {status: 200, body: "ok\n"}}
YAML
  } >"$work/sluice.yaml"
  start_sluice "$work/sluice.yaml"
  local url=http://127.0.0.1:$SLUICE_PORT/flood i codes=""
  for i in 1 2 3 4; do codes+="$(http_code -H 'X-Client: victim' "$url") "; done
  [[ $codes == "200 200 200 429 " ]] || die "the victim got $codes, expected 200 200 200 429"

  # flood KEYS OUT: KEYS distinct keys. keys.lua stops wrk's threads when they are sent, but
  # wrk's main thread sleeps out its whole -d: once sluice has counted the requests, SIGINT
  # makes wrk report at once.
  flood() {
    local keys=$1 out=$2 prefix=$3 target wrk_pid i
    target=$(($(metric 'sluice_requests_total{route="flood"') + keys))
    KEYS=$keys PREFIX=$prefix THREADS=2 BATCH=16 start_wrk "$out" -t2 -c16 -d200s --timeout 5s \
      -s "$helpers/keys.lua" "$url"
    wrk_pid=$pid
    for ((i = 0; i < 1800; i++)); do # at most 180 s
      (($(metric 'sluice_requests_total{route="flood"') >= target)) && break
      alive "$wrk_pid" || break
      sleep 0.1
    done
    kill -INT "$wrk_pid" 2>/dev/null || true
    wait_wrk "$wrk_pid" "$out"
  }
  # A short warm-up with distinct keys too, so that the baseline includes the connections'
  # buffers and the table's first growth steps; then the baseline.
  flood 20000 "$work/warmup.txt" warm
  local before hwm_before
  before=$(rss_kib "$sluice_pid")
  hwm_before=$(awk '/^VmHWM:/ {print $2}' "/proc/$sluice_pid/status")

  local t0 flood_s
  t0=$(now_ms)
  flood 2000000 "$work/wrk.txt" flood
  flood_s=$(awk -v m=$(($(now_ms) - t0)) 'BEGIN {printf "%.1f", m / 1000}')
  local after hwm_after keys distinct requests errors victim_code victim_state
  after=$(rss_kib "$sluice_pid")
  hwm_after=$(awk '/^VmHWM:/ {print $2}' "/proc/$sluice_pid/status")
  keys=$(metric 'sluice_limiter_keys{limiter="flood"')
  distinct=$(sed -n 's/^keys distinct=//p' "$work/wrk.txt")
  requests=$(wrk_field "$work/wrk.txt" requests)
  errors=$(wrk_errors "$work/wrk.txt")
  victim_code=$(http_code -H 'X-Client: victim' "$url")
  victim_state=$(curl -s --max-time 2 "http://127.0.0.1:$ADMIN_PORT/limiters/flood/victim")

  local growth=$((after - before))
  check "rss-growth<32MiB" "$growth < 32768"
  check "2M-distinct-keys" "$distinct >= 2000000"
  check "keys<=max_keys" "$keys <= 100000"
  check "victim-still-429" "$victim_code == 429"
  check "no-socket-errors" "$errors == 0"
  verdict keyflood "$distinct distinct keys ($requests requests, $flood_s s, $(wrk_statuses "$work/wrk.txt")):" \
    "RSS $(mib "$before") -> $(mib "$after") MiB (growth $(mib "$growth") MiB, peak RSS growth" \
    "$(mib $((hwm_after - hwm_before))) MiB), $keys keys held;" \
    "victim after the flood: $victim_code, $victim_state"
}

# Reloads every 200 ms under load: a cycle of four, so that both ways of asking (SIGHUP and
# POST /reload) meet both kinds of file (valid, invalid). Valid files alternate between two
# limits, so each success publishes a really new generation. Files are replaced by a rename,
# so sluice never reads half a file. wrk's 16 connections must see nothing but 200s.
case_reload() {
  start_nginx
  local variant
  for variant in 1000000 2000000; do
    {
      sluice_head
      cat <<YAML
upstream: "http://127.0.0.1:$NGINX_PORT"
limiters:
  per-ip: {algorithm: token_bucket, rate: $variant/s, burst: $variant, key: ip}
routes:
  - {name: all, match: {path_prefix: /}, limiters: [per-ip]}
YAML
    } >"$work/valid-$variant.yaml"
  done
  # Invalid: an unknown algorithm (sluice check refuses it; the reload must keep the old one).
  sed 's/token_bucket/token-bucket/' "$work/valid-1000000.yaml" >"$work/invalid.yaml"
  ! "$SLUICE_BIN" check -c "$work/invalid.yaml" >/dev/null 2>&1 || die "invalid.yaml passes sluice check"
  cp "$work/valid-1000000.yaml" "$work/sluice.yaml"
  start_sluice "$work/sluice.yaml"

  install_config() { cp "$work/$1" "$work/next.yaml" && mv "$work/next.yaml" "$work/sluice.yaml"; }
  post() { http_code --max-time 5 -X POST "http://127.0.0.1:$ADMIN_PORT/reload"; }
  local ok0 bad0 wrk_pid i answer bad_answers=0 valid=0 invalid=0
  ok0=$(metric 'sluice_config_reloads_total{result="success"')
  bad0=$(metric 'sluice_config_reloads_total{result="failure"')
  start_wrk "$work/wrk.txt" -t2 -c16 -d12s --timeout 2s --latency "http://127.0.0.1:$SLUICE_PORT/"
  wrk_pid=$pid
  sleep 0.5
  for ((i = 0; i < 52; i++)); do # 52 reloads, 200 ms apart: about 10.5 s
    case $((i % 4)) in
      0) install_config valid-2000000.yaml && kill -HUP "$sluice_pid" && valid=$((valid + 1)) ;;
      1)
        install_config invalid.yaml
        answer=$(post)
        invalid=$((invalid + 1))
        [[ $answer == 422 ]] || bad_answers=$((bad_answers + 1))
        ;;
      2)
        install_config valid-1000000.yaml
        answer=$(post)
        valid=$((valid + 1))
        [[ $answer == 200 ]] || bad_answers=$((bad_answers + 1))
        ;;
      3) install_config invalid.yaml && kill -HUP "$sluice_pid" && invalid=$((invalid + 1)) ;;
    esac
    sleep 0.2
  done
  wait_wrk "$wrk_pid" "$work/wrk.txt"
  local ok bad non2xx errors p99
  ok=$(($(metric 'sluice_config_reloads_total{result="success"') - ok0))
  bad=$(($(metric 'sluice_config_reloads_total{result="failure"') - bad0))
  non2xx=$(wrk_field "$work/wrk.txt" non2xx)
  errors=$(wrk_errors "$work/wrk.txt")
  p99=$(wrk_field "$work/wrk.txt" p99_us)
  check "no-non2xx" "$non2xx == 0"
  check "no-socket-errors" "$errors == 0"
  check "post-answers-200-or-422" "$bad_answers == 0"
  check "successes-counted" "$ok == $valid"
  check "failures-counted" "$bad == $invalid"
  check "sluice-alive" "$(alive "$sluice_pid" && echo 1 || echo 0) == 1"
  verdict reload "$((valid + invalid)) reloads ($ok succeeded, $bad refused; expected $valid and $invalid)" \
    "under $(wrk_field "$work/wrk.txt" requests) requests: $(wrk_statuses "$work/wrk.txt"), non-2xx $non2xx," \
    "socket errors $errors, p99 $(ms "$p99") ms"
}

# The upstream killed (SIGKILL) and restarted under load. The Python upstream holds /slow for
# 0.3 s, so 8 requests are in flight when it dies: each must get 502 at once (the connection
# broke), and while it is down new requests get 502 (connect refused), never a hang: wrk's
# timeout is 2 s and must count nothing. After the restart the first 200 must come within 1 s,
# timed from the moment the restart began (Python's own start-up included).
case_upstream() {
  start_python_upstream
  {
    sluice_head
    cat <<YAML
upstream: "http://127.0.0.1:$PY_PORT"
timeouts: {connect: 1s, upstream: 5s}
routes:
  - {name: all, match: {path_prefix: /}}
YAML
  } >"$work/sluice.yaml"
  start_sluice "$work/sluice.yaml"
  [[ $(http_code "http://127.0.0.1:$SLUICE_PORT/") == 200 ]] || die "sluice does not forward"
  local fast_pid slow_pid
  start_wrk "$work/wrk-fast.txt" -t1 -c4 -d7s --timeout 2s --latency "http://127.0.0.1:$SLUICE_PORT/"
  fast_pid=$pid
  start_wrk "$work/wrk-slow.txt" -t1 -c8 -d7s --timeout 2s --latency "http://127.0.0.1:$SLUICE_PORT/slow"
  slow_pid=$pid
  sleep 2
  kill -KILL "$py_pid"
  reap "$py_pid" || true
  local down_codes
  sleep 1.5
  down_codes=$(http_code "http://127.0.0.1:$SLUICE_PORT/")

  # Restart, then ask through sluice until the first 200 (at most 5 s).
  local t0 up_ms=-1 first_ms=-1
  t0=$(now_ms)
  start "$work/upstream2.log" "$PYTHON" "$helpers/upstream.py" "$PY_PORT" 0.3
  py_pid=$pid
  while (($(now_ms) - t0 < 5000)); do
    if ((up_ms < 0)) && port_open "$PY_PORT"; then up_ms=$(($(now_ms) - t0)); fi
    if [[ $(http_code "http://127.0.0.1:$SLUICE_PORT/") == 200 ]]; then
      first_ms=$(($(now_ms) - t0))
      ((up_ms >= 0)) || up_ms=$first_ms
      break
    fi
    sleep 0.01
  done
  wait_wrk "$fast_pid" "$work/wrk-fast.txt"
  wait_wrk "$slow_pid" "$work/wrk-slow.txt"

  local f s timeouts others broken connect max_us
  f=$work/wrk-fast.txt
  s=$work/wrk-slow.txt
  timeouts=$(($(wrk_field "$f" timeout) + $(wrk_field "$s" timeout)))
  local sockerr=$(($(wrk_errors "$f") + $(wrk_errors "$s")))
  # Statuses other than 200 and 502.
  others=$(cat "$f" "$s" | awk '$1 == "status" && $2 != 200 && $2 != 502 {n += $3} END {print n + 0}')
  broken=$(metric 'sluice_upstream_errors_total{upstream="http://127.0.0.1:'"$PY_PORT"'",kind="broken"')
  connect=$(metric 'sluice_upstream_errors_total{upstream="http://127.0.0.1:'"$PY_PORT"'",kind="connect"')
  max_us=$(($(wrk_field "$s" max_us) > $(wrk_field "$f" max_us) ? $(wrk_field "$s" max_us) : $(wrk_field "$f" max_us)))
  check "slow-in-flight-got-502" "$(wrk_status "$s" 502) >= 1"
  check "down-answers-502" "$down_codes == 502"
  check "no-timeouts" "$timeouts == 0"
  check "none-over-1s" "$max_us < 1000000"
  check "no-socket-errors" "$sockerr == 0"
  check "only-200-and-502" "$others == 0"
  check "recovered<1s" "$first_ms >= 0 && $first_ms < 1000"
  verdict upstream "fast: $(wrk_statuses "$f"); slow (in flight 0.3 s): $(wrk_statuses "$s");" \
    "timeouts $timeouts, socket errors $sockerr, longest request $(ms "$max_us") ms;" \
    "upstream errors: broken $broken, connect $connect; after the restart: port open in" \
    "$up_ms ms, first 200 through sluice in $first_ms ms"
}

# Redis killed (SIGKILL) and restarted under load, once per on_error value. README: the first
# failure opens a breaker, requests then follow on_error without waiting for Redis (allow:
# forwarded, counted nowhere; deny: 503; local: this replica's memory limiters decide), a probe
# every 250 ms and reconnection (backoff up to 400 ms) find a restarted Redis within a second.
# A generous limiter on / carries the load (wrk, 8 connections); a tight one (3 per hour,
# keyed on X-Client) on /tight shows who decides during the outage, asked 5 times for a key it
# has never seen: allow 5 x 200, deny 5 x 503, local 3 x 200 then 429 (the memory limiter,
# fresh). A key used up in Redis before the kill may also get 429 during the outage: README's
# over-limit cache keeps a refused key refused until its retry-after "whatever happens
# meanwhile", per event loop, so its answers are 429 or the on_error answer. Recovery: from
# the restart until sluice_store_available is 1 again (the request path's own view, not
# /readyz's PING), and a new key's answer carries RateLimit headers again (Redis decides).
redis_mode() {
  local mode=$1
  {
    sluice_head
    cat <<YAML
upstream: "http://127.0.0.1:$NGINX_PORT"
store:
  type: redis
  redis: {url: "redis://127.0.0.1:$REDIS_PORT/0", timeout: 20ms, on_error: $mode}
limiters:
  open: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: ip}
  tight: {algorithm: token_bucket, rate: 3/h, burst: 3, key: "header:X-Client"}
routes:
  - {name: tight, match: {path_prefix: /tight}, limiters: [tight], respond: {status: 200, body: "ok\n"}}
  - {name: all, match: {path_prefix: /}, limiters: [open]}
YAML
  } >"$work/sluice-$mode.yaml"
  start_redis_store
  start_sluice "$work/sluice-$mode.yaml"
  local tight=http://127.0.0.1:$SLUICE_PORT/tight i before="" fresh="" used=""
  for i in 1 2 3 4; do before+="$(http_code -H 'X-Client: used' "$tight") "; done
  [[ $before == "200 200 200 429 " ]] || die "$mode: the tight key got $before before the outage"

  local wrk_pid out=$work/wrk-$mode.txt
  start_wrk "$out" -t1 -c8 -d6s --timeout 2s --latency "http://127.0.0.1:$SLUICE_PORT/"
  wrk_pid=$pid
  sleep 1.5
  kill -KILL "$redis_pid"
  reap "$redis_pid" || true
  sleep 0.5
  local available_down readyz_down
  available_down=$(metric sluice_store_available)
  readyz_down=$(http_code "http://127.0.0.1:$ADMIN_PORT/readyz")
  for i in 1 2 3 4 5; do fresh+="$(http_code -H 'X-Client: fresh' "$tight") "; done
  for i in 1 2 3 4 5; do used+="$(http_code -H 'X-Client: used' "$tight") "; done
  fresh=${fresh% }
  used=${used% }
  sleep 1

  local t0 back_ms=-1
  t0=$(now_ms)
  start_redis_store
  while (($(now_ms) - t0 < 5000)); do
    if (($(metric sluice_store_available) == 1)); then
      back_ms=$(($(now_ms) - t0))
      break
    fi
    sleep 0.02
  done
  # Redis decides again: a new key's answer carries the limiter's RateLimit headers (an
  # `allow` pass-through has none). On every event loop, so asked until 1 s after the restart:
  # the loop that answered the probe may not be the one whose connection is back first (each
  # reconnects on its own backoff, up to 400 ms apart).
  local after_headers="" n=0
  while [[ -z $after_headers ]] && (($(now_ms) - t0 < 1000)); do
    n=$((n + 1))
    after_headers=$(curl -s -D - -o /dev/null --max-time 2 -H "X-Client: after-$n" "$tight" |
      tr -d '\r' | awk -F': ' 'tolower($1) == "ratelimit" {print $2}')
    [[ -n $after_headers ]] || sleep 0.05
  done
  wait_wrk "$wrk_pid" "$out"
  stop_pid "$sluice_pid"
  stop_pid "$redis_pid"

  local n503 others timeouts sockerr max_us
  n503=$(wrk_status "$out" 503)
  others=$(awk '$1 == "status" && $2 != 200 && $2 != 503 {n += $3} END {print n + 0}' "$out")
  timeouts=$(wrk_field "$out" timeout)
  sockerr=$(wrk_errors "$out")
  max_us=$(wrk_field "$out" max_us)
  # used_answers: the used-up key's answers other than 429 (a loop's cached refusal).
  local used_answers
  used_answers=$(tr ' ' '\n' <<<"$used" | grep -v 429 | sort -u | tr '\n' ' ')
  check "no-timeouts" "$timeouts == 0"
  check "no-socket-errors" "$sockerr == 0"
  check "no-request-over-1s" "$max_us < 1000000"
  check "breaker-open-during-outage" "$available_down == 0"
  check "readyz-503-during-outage" "$readyz_down == 503"
  check "recovered<1s" "$back_ms >= 0 && $back_ms < 1000"
  check "redis-decides-after" "${#after_headers} > 0"
  check "only-200-or-503-under-load" "$others == 0"
  case $mode in
    allow) # forwarded, counted nowhere
      check "allow:no-503" "$n503 == 0"
      [[ $fresh == "200 200 200 200 200" ]] || failures+=("allow:new-key-passes")
      [[ $used_answers == "" || $used_answers == "200 " ]] || failures+=("allow:used-key-200-or-cached-429") ;;
    deny) # fail closed
      check "deny:503-during-outage" "$n503 > 0"
      [[ $fresh == "503 503 503 503 503" ]] || failures+=("deny:new-key-503")
      [[ $used_answers == "" || $used_answers == "503 " ]] || failures+=("deny:used-key-503-or-cached-429") ;;
    local) # the memory limiters decide, as if this replica ran alone
      check "local:no-503" "$n503 == 0"
      [[ $fresh == "200 200 200 429 429" ]] || failures+=("local:new-key-limited-locally")
      [[ $used_answers == "" || $used_answers == "200 " ]] || failures+=("local:used-key-200-or-429") ;;
  esac
  verdict "redis-$mode" "load: $(wrk_statuses "$out"), timeouts $timeouts, socket errors $sockerr," \
    "longest $(ms "$max_us") ms; during the outage a new key got $fresh, the used-up key $used;" \
    "/readyz $readyz_down; store back $back_ms ms after the restart (RateLimit: ${after_headers:-none})"
}

case_redis() {
  start_nginx
  local mode status=0
  for mode in allow deny local; do
    failures=()
    redis_mode "$mode" || status=1
  done
  return "$status"
}

# max_connections 50: 30 wrk connections (kept alive, busy) take 30 slots; hold.py then opens
# 30 more at once, each sending a request. README: at the cap the proxy stops accepting and new
# connections wait in the listen queue, not refused. So about 20 are served and the rest wait
# (not one refused or reset) for 1.5 s, while wrk's connections keep getting 200s; then the
# served ones close and every waiting request must be answered within a second.
# A loop takes its slot once it has accepted a connection (see the README's Resilience section),
# so the cap is reached exactly: 20 served, never a connection beyond 50.
case_connlimit() {
  start_nginx
  {
    sluice_head
    cat <<YAML
max_connections: 50
upstream: "http://127.0.0.1:$NGINX_PORT"
timeouts: {idle: 60s}
routes:
  - {name: all, match: {path_prefix: /}}
YAML
  } >"$work/sluice.yaml"
  start_sluice "$work/sluice.yaml"
  local wrk_pid hold_pid i open_load=0 open_cap=0
  start_wrk "$work/wrk.txt" -t1 -c30 -d8s --timeout 2s --latency "http://127.0.0.1:$SLUICE_PORT/"
  wrk_pid=$pid
  for ((i = 0; i < 60; i++)); do
    open_load=$(metric sluice_open_connections)
    ((open_load >= 30)) && break
    sleep 0.05
  done
  start "$work/hold.txt" "$PYTHON" "$helpers/hold.py" "$SLUICE_PORT" 30 1.5
  hold_pid=$pid
  for ((i = 0; i < 100; i++)); do # hold.py keeps the cap for 1 s after this line
    grep -q '^at_cap ' "$work/hold.txt" && break
    sleep 0.05
  done
  open_cap=$(metric sluice_open_connections)
  reap "$hold_pid" || true
  wait_wrk "$wrk_pid" "$work/wrk.txt"
  local served waiting failed released release_ms non2xx errors p99
  served=$(sed -n 's/^at_cap served=\([0-9]*\).*/\1/p' "$work/hold.txt")
  waiting=$(sed -n 's/^at_cap .*waiting=\([0-9]*\).*/\1/p' "$work/hold.txt")
  failed=$(sed -n 's/^at_cap .*failed=\([0-9]*\).*/\1/p' "$work/hold.txt")
  released=$(sed -n 's/^released answered=\([0-9]*\).*/\1/p' "$work/hold.txt")
  release_ms=$(sed -n 's/^released .*ms=\([0-9]*\).*/\1/p' "$work/hold.txt")
  non2xx=$(wrk_field "$work/wrk.txt" non2xx)
  errors=$(wrk_errors "$work/wrk.txt")
  p99=$(wrk_field "$work/wrk.txt" p99_us)
  check "cap-never-exceeded" "${served:-99} + 30 <= 50 && $open_cap <= 50"
  check "cap-reached" "${served:-0} + 30 >= 50"
  check "extra-wait-not-refused" "${failed:-1} == 0 && ${waiting:-0} >= 10"
  check "waiting-served-after-release" "${released:--1} == ${waiting:-0}"
  check "release<1s" "${release_ms:-9999} < 1000"
  check "load-no-non2xx" "$non2xx == 0"
  check "load-no-socket-errors" "$errors == 0"
  verdict connlimit "kept-alive load: $(wrk_statuses "$work/wrk.txt"), socket errors $errors," \
    "p99 $(ms "$p99") ms; of 30 more connections ${served:-?} served, ${waiting:-?} waiting," \
    "${failed:-?} refused (open connections $open_load -> $open_cap of 50); after the served" \
    "ones closed, ${released:-?} of ${waiting:-?} waiting answered in ${release_ms:-?} ms"
}

# The mixed soak: forward (8 connections), 429 (4), delay mode (2; a token bucket of 400/s that
# holds requests up to 100 ms), 64 KiB uploads (2), WebSocket sessions (4 clients, through the
# tunnel to the Python upstream), all at once for SOAK_SECONDS. The baseline is taken after a
# 5 s warm-up of the same mix, once its connections are closed: what a first run allocates
# (coroutine frames, body buffers, pooled upstream connections, malloc's arenas) is in it. The
# same settling after the soak, then RSS and descriptors must be back:
#   descriptors: exactly the baseline, plus at most the upstream connections the pool may park
#     beyond the baseline's (it keeps up to 64 idle per loop; how many it holds at a given
#     moment depends on how the last requests fell on the loops, so allow the forwarding
#     concurrency, 12, per loop: 24);
#   RSS: baseline + 4 MiB. A soak of 60 s sends millions of requests: a leak of a single byte
#     per request would exceed that, while a fixed 4 MiB covers what malloc keeps of peaks
#     (freed memory it does not return) and the warm-up not having met every timing.
case_soak() {
  start_nginx
  start_python_upstream
  {
    sluice_head
    cat <<YAML
upstream: "http://127.0.0.1:$NGINX_PORT"
timeouts: {header: 10s, idle: 60s}
limiters:
  open: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: ip}
  used-up: {algorithm: token_bucket, rate: 1/h, burst: 1, key: ip}
  paced: {algorithm: token_bucket, rate: 400/s, burst: 1, key: ip, mode: delay, max_delay: 100ms}
routes:
  - {name: ws, match: {path: /ws}, upstream: "http://127.0.0.1:$PY_PORT", limiters: [open]}
  - {name: limited, match: {path_prefix: /limited}, limiters: [used-up]}
  - {name: delay, match: {path_prefix: /delay}, limiters: [paced]}
  - {name: upload, match: {path_prefix: /upload, methods: [POST]}, limiters: [open]}
  - {name: forward, match: {path_prefix: /}, limiters: [open]}
YAML
  } >"$work/sluice.yaml"
  start_sluice "$work/sluice.yaml"
  http_code "http://127.0.0.1:$SLUICE_PORT/limited" >/dev/null # uses up the limit

  # mix SECONDS TAG: the whole mix for SECONDS; reports in $work/TAG-*.txt.
  mix() {
    local seconds=$1 tag=$2 pids=() p u=http://127.0.0.1:$SLUICE_PORT
    start_wrk "$work/$tag-forward.txt" -t1 -c8 "-d${seconds}s" --timeout 2s --latency "$u/"
    pids+=("$pid")
    start_wrk "$work/$tag-limited.txt" -t1 -c4 "-d${seconds}s" --timeout 2s "$u/limited"
    pids+=("$pid")
    start_wrk "$work/$tag-delay.txt" -t1 -c2 "-d${seconds}s" --timeout 2s "$u/delay"
    pids+=("$pid")
    WRK_METHOD=POST WRK_BODY_BYTES=65536 start_wrk "$work/$tag-upload.txt" -t1 -c2 \
      "-d${seconds}s" --timeout 2s "$u/upload"
    pids+=("$pid")
    start "$work/$tag-ws.txt" "$PYTHON" "$helpers/ws_client.py" "$SLUICE_PORT" "$seconds" 4
    local ws_pid=$pid
    for p in "${pids[@]}"; do reap "$p" || true; done
    reap "$ws_pid" || true
  }
  # settle: until no client connection is open (at most 5 s), then 1 s more for the loops to
  # finish closing.
  settle() {
    local i
    for ((i = 0; i < 100; i++)); do
      (($(metric sluice_open_connections) == 0)) && break
      sleep 0.05
    done
    sleep 1
  }

  mix 5 warmup
  settle
  local rss0 fd0 delayed0
  rss0=$(rss_kib "$sluice_pid")
  fd0=$(fd_count "$sluice_pid")
  delayed0=$(metric 'sluice_requests_total{route="delay",decision="delayed"')
  mix "$SOAK_SECONDS" soak
  local peak_rss
  peak_rss=$(rss_kib "$sluice_pid")
  settle
  local rss1 fd1 open1
  rss1=$(rss_kib "$sluice_pid")
  fd1=$(fd_count "$sluice_pid")
  open1=$(metric sluice_open_connections)

  local tag errors=0 timeouts=0 total=0 f
  for tag in forward limited delay upload; do
    f=$work/soak-$tag.txt
    grep -q '^result ' "$f" || die "wrk ($tag) did not finish"
    errors=$((errors + $(wrk_errors "$f")))
    timeouts=$((timeouts + $(wrk_field "$f" timeout)))
    total=$((total + $(wrk_field "$f" requests)))
  done
  local ws_line ws_failures ws_sessions delayed
  ws_line=$(grep '^ws ' "$work/soak-ws.txt" || echo "ws sessions=0 messages=0 failures=-1")
  ws_failures=$(sed -n 's/.*failures=//p' <<<"$ws_line")
  ws_sessions=$(sed -n 's/^ws sessions=\([0-9]*\).*/\1/p' <<<"$ws_line")
  delayed=$(($(metric 'sluice_requests_total{route="delay",decision="delayed"') - delayed0))
  local forward_other limited_other upload_other delay_other
  forward_other=$(awk '$1 == "status" && $2 != 200 {n += $3} END {print n + 0}' "$work/soak-forward.txt")
  upload_other=$(awk '$1 == "status" && $2 != 200 {n += $3} END {print n + 0}' "$work/soak-upload.txt")
  limited_other=$(awk '$1 == "status" && $2 != 429 {n += $3} END {print n + 0}' "$work/soak-limited.txt")
  delay_other=$(awk '$1 == "status" && $2 != 200 && $2 != 429 {n += $3} END {print n + 0}' "$work/soak-delay.txt")
  local rss_growth=$((rss1 - rss0)) fd_growth=$((fd1 - fd0))
  check "rss-back<=+4MiB" "$rss_growth <= 4096"
  check "fds-back<=+24" "$fd_growth <= 24"
  check "no-open-connections" "$open1 == 0"
  check "no-socket-errors" "$errors == 0"
  check "forward-all-200" "$forward_other == 0"
  check "upload-all-200" "$upload_other == 0 && $(wrk_status "$work/soak-upload.txt" 200) > 0"
  check "limited-all-429" "$limited_other == 0"
  check "delay-200-or-429" "$delay_other == 0 && $delayed > 0"
  check "websocket-no-failure" "$ws_failures == 0 && $ws_sessions > 0"
  verdict soak "${SOAK_SECONDS} s, $total HTTP requests (forward $(wrk_statuses "$work/soak-forward.txt");" \
    "limited $(wrk_statuses "$work/soak-limited.txt"); delay $(wrk_statuses "$work/soak-delay.txt")," \
    "$delayed held; upload $(wrk_statuses "$work/soak-upload.txt")), WebSocket ${ws_line#ws }, socket errors" \
    "$errors: RSS $(mib "$rss0") MiB -> $(mib "$peak_rss") during -> $(mib "$rss1") after" \
    "(${rss_growth} KiB), descriptors $fd0 -> $fd1"
}

# Herds: 4,000 connections at once, as clients reconnect together after a deploy or a network
# blip. sluice serves them all at once, and what that took must go back when they are idle or
# gone (docs/benchmarks.md, "Memory per idle connection": with glibc's malloc the peak stayed).
# Three herds, each opened at once:
# 1. speaking: one request each (bench/idle_clients.py), then idle, then all closed. 4,000
#    requests in flight take about 100 MiB at their peak; 3 s after the herd left, RSS must be
#    within 16 MiB of where it started (Asio keeps each socket's reactor state for reuse, a
#    few MiB for 8,000 sockets, client and upstream).
# 2. silent: they connect and never send a byte: timeouts.header (2 s here) closes them all,
#    within 5 s; RSS meanwhile grows < 8 MiB (a connection waits with no buffer or coroutine).
# 3. TLS, resetting mid-handshake: each sends a ClientHello, reads the start of the server's
#    answer and resets the connection. Then a TLS request is still served, no connection stays
#    open, and sluice stops cleanly on SIGTERM. Run on the ASan build when there is one
#    (ASAN_SLUICE_BIN), whose LeakSanitizer fails the exit on any leak.
case_herd() {
  local herd=4000
  # The upstream takes a connection from each of the herd's requests, and the 50 pooled ones
  # from the first check: more than room for the herd, so that a 502 is sluice's.
  nginx_worker_connections=8192 start_nginx
  forward_config "$work/sluice.yaml" 2s
  start_sluice "$work/sluice.yaml"
  "$repo_root/bench/idle_clients.py" "$SLUICE_PORT" 50 </dev/null >/dev/null ||
    die "sluice does not forward"

  # 1. The speaking herd.
  local rss0 rss_idle rss_gone ready clients_pid clients_in open_idle
  rss0=$(rss_kib "$sluice_pid")
  coproc herd_clients { "$repo_root/bench/idle_clients.py" "$SLUICE_PORT" "$herd" 1 0; }
  # shellcheck disable=SC2154 # coproc sets herd_clients_PID
  clients_pid=$herd_clients_PID
  started_pids+=("$clients_pid")
  read -r ready <&"${herd_clients[0]}" || ready="none"
  local left=none served_all=""
  if [[ $ready == "ready $herd" ]]; then
    sleep 1
    rss_idle=$(rss_kib "$sluice_pid")
    open_idle=$(metric sluice_open_connections)
    echo leave >&"${herd_clients[1]}"
    read -r left <&"${herd_clients[0]}" || true
    clients_in=${herd_clients[1]}
    exec {clients_in}>&-
    reap "$clients_pid" || true
  else
    # A client failed (its error is on stderr above) and the clients exited: bash has closed
    # the coprocess's pipes and unset its variables. What sluice counted tells a connect that
    # timed out from one refused or a connection the upstream broke.
    reap "$clients_pid" || true
    rss_idle=$(rss_kib "$sluice_pid")
    open_idle=$(metric sluice_open_connections)
    failures+=("speaking-herd-served")
    local errors='sluice_upstream_errors_total{upstream="http://127.0.0.1:'"$NGINX_PORT"'",kind='
    served_all=" (NOT all served: clients said '$ready'; upstream errors: connect $(metric "$errors\"connect\""),"
    served_all+=" timeout $(metric "$errors\"timeout\""), broken $(metric "$errors\"broken\""))"
  fi
  sleep 3
  rss_gone=$(rss_kib "$sluice_pid")
  check "speaking-herd-all-open" "$open_idle == $herd"
  [[ $left == left ]] || failures+=("speaking-herd-left")
  check "rss-back-within-16MiB" "$rss_gone - $rss0 < 16384"

  # 2. The silent herd.
  local silent_pid rss_silent closed closed_ms open_after i
  start "$work/silent.txt" "$PYTHON" "$helpers/herd.py" silent "$SLUICE_PORT" "$herd" 10
  silent_pid=$pid
  for ((i = 0; i < 100; i++)); do
    grep -q '^open ' "$work/silent.txt" && break
    sleep 0.05
  done
  rss_silent=$(rss_kib "$sluice_pid")
  reap "$silent_pid" || true
  closed=$(sed -n 's/^closed \([0-9]*\).*/\1/p' "$work/silent.txt")
  closed_ms=$(sed -n 's/^closed .*ms=\([0-9]*\).*/\1/p' "$work/silent.txt")
  open_after=$(metric sluice_open_connections)
  check "silent-herd-closed" "${closed:-0} == $herd && ${closed_ms:-99999} < 5000"
  check "silent-rss<8MiB" "$rss_silent - $rss_gone < 8192"
  check "silent-none-left" "$open_after == 0"
  stop_pid "$sluice_pid"

  # 3. The TLS herd that resets mid-handshake.
  local binary=$SLUICE_BIN asan=no
  if [[ -x $ASAN_SLUICE_BIN ]]; then binary=$ASAN_SLUICE_BIN asan=yes; fi
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=herd.test -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
  forward_config "$work/sluice-tls.yaml" 2s "tls: {cert: \"$work/tls.crt\", key: \"$work/tls.key\"}"
  start_sluice "$work/sluice-tls.yaml" "$binary"
  local resets=2000 reset tls_code open_tls exit_status=0
  "$PYTHON" "$helpers/herd.py" tls-reset "$SLUICE_PORT" "$resets" >"$work/tls-reset.txt" 2>&1 || true
  reset=$(sed -n 's/^reset \([0-9]*\).*/\1/p' "$work/tls-reset.txt")
  tls_code=$(http_code -k "https://127.0.0.1:$SLUICE_PORT/")
  for ((i = 0; i < 50; i++)); do
    open_tls=$(metric sluice_open_connections)
    ((open_tls == 0)) && break
    sleep 0.1
  done
  terminate "$sluice_pid" 20
  reap "$sluice_pid" || exit_status=$?
  check "tls-resets-reached-the-handshake" "${reset:-0} >= $resets * 9 / 10"
  check "tls-still-served" "$tls_code == 200"
  check "tls-none-left" "$open_tls == 0"
  check "clean-exit-no-leak" "$exit_status == 0"
  if grep -q 'Sanitizer' "$work/sluice.log"; then failures+=("sanitizer-report"); fi

  verdict herd "$herd at once with a request$served_all: RSS $(mib "$rss0") -> $(mib "$rss_idle") MiB idle" \
    "($(((rss_idle - rss0) * 1024 / herd)) B each) -> $(mib "$rss_gone") MiB after they left;" \
    "$herd silent: ${closed:-?} closed in ${closed_ms:-?} ms, RSS +$(mib $((rss_silent - rss_gone))) MiB;" \
    "${reset:-?} of $resets TLS handshakes reset (ASan build: $asan), then HTTPS $tls_code," \
    "$open_tls left open, exit $exit_status"
}

# ================================================================ running the cases
# run_case NAME: the case in a subshell of its own, with its own work directory and an EXIT
# trap (cleanup) that stops what it started and keeps the directory if the case failed. The
# subshell runs in the background and is waited for, so that a signal to the suite is handled at
# once (its trap stops the case), and a watchdog stops a case that overruns its time (a hang
# must fail the suite, not stall CI).
case_pid=""
watchdog_pid=""
run_case() {
  local name=$1 limit=120 status=0 t0
  t0=$(date +%s)
  [[ $name == soak ]] && limit=$((SOAK_SECONDS + 90))
  [[ $name == keyflood ]] && limit=240
  echo "== $name"
  (
    work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-resilience-$name.XXXXXX")
    chmod 755 "$work" # nginx's worker may run as another user
    cleanup_on_exit
    "case_$name"
  ) &
  case_pid=$!
  # The watchdog: a bounded sleep in the background, stopped when the case ends.
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep "$limit" &
    sleeper=$!
    wait "$sleeper"
    log "$name ran over ${limit} s; stopping it"
    kill -TERM "$case_pid" 2>/dev/null
  ) &
  watchdog_pid=$!
  wait "$case_pid" || status=$?
  case_pid=""
  kill -TERM "$watchdog_pid" 2>/dev/null || true
  wait "$watchdog_pid" 2>/dev/null || true
  watchdog_pid=""
  if ((status != 0)) && ! grep -q "^[A-Z]*  $name" "$summary"; then
    # The case stopped before its verdict (a start-up failed, or the watchdog).
    echo "FAIL  $name  did not complete (exit $status)" | tee -a "$summary"
  fi
  echo "   ($name took $(($(date +%s) - t0)) s)"
  return "$status"
}

# On an interruption: the running case (its trap stops what it started) and its watchdog.
stop_case() {
  local p
  for p in $case_pid $watchdog_pid; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}

main() {
  local cases=("$@") name
  ((${#cases[@]})) || cases=("${ALL_CASES[@]}")
  for name in "${cases[@]}"; do
    [[ " ${ALL_CASES[*]} " == *" $name "* ]] || die "unknown case '$name' (cases: ${ALL_CASES[*]})"
  done
  install_missing wrk:wrk slowhttptest:slowhttptest nginx:nginx redis-server:redis-server \
    curl:curl pgrep:procps python3:python3
  [[ -x $SLUICE_BIN ]] ||
    die "no sluice binary at $SLUICE_BIN: build it (cmake --preset test && cmake --build --preset test --target sluice) or set SLUICE_BIN"
  PYTHON=$(python3 -c 'import sys; print(sys.executable)')
  require_free_ports "set BASE_PORT" "$SLUICE_PORT" "$ADMIN_PORT" "$NGINX_PORT" "$PY_PORT" \
    "$REDIS_PORT"
  # 2,000 slowloris connections, plus the rest, in sluice and in slowhttptest.
  ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"

  summary=$(mktemp)
  trap 'stop_case; rm -f "$summary"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local t0 failed=0
  t0=$(date +%s)
  for name in "${cases[@]}"; do
    run_case "$name" || failed=$((failed + 1))
  done
  local elapsed=$(($(date +%s) - t0))
  echo
  echo "resilience summary ($("$SLUICE_BIN" version 2>&1 | head -n 1); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
  cat "$summary"
  local total
  total=$(grep -c . "$summary")
  echo "resilience: $((total - $(grep -c '^FAIL' "$summary"))) passed, $(grep -c '^FAIL' "$summary") failed, in $((elapsed / 60))m$((elapsed % 60))s"
  ((failed == 0))
}

main "$@"
