# What the benchmark scripts that run proxies side by side share (bench/peers.sh, bench/tls.sh):
# logging, the processes they start and their cleanup on any exit, installing missing tools,
# templates, CPU readings and medians. Source it after scripts/lib/processes.sh, with
# `bench_name` (the script's name, for errors) and KEEP_WORKDIR set; the script sets `work` to
# its temporary directory and adds the pids it starts to `started_pids`.
# shellcheck shell=bash

log() { printf '==> %s\n' "$*" >&2; }
die() {
  printf '%s: error: %s\n' "${bench_name:-bench}" "$*" >&2
  exit 1
}

# ---------------------------------------------------------------- processes and cleanup
work=""
started_pids=()
policy_rc_created=0

# Stops one process this script started (and any children it left), TERM first, KILL after 5 s.
stop_pid() {
  terminate "$1" 5
  wait "$1" 2>/dev/null || true
}

forget_pid() {
  local pid=$1 kept=() p
  for p in "${started_pids[@]}"; do
    [[ $p == "$pid" ]] || kept+=("$p")
  done
  started_pids=("${kept[@]}")
}

cleanup() {
  local status=$? i
  trap - EXIT INT TERM
  if ((status == 130 || status == 143)); then log "interrupted; stopping what was started"; fi
  for ((i = ${#started_pids[@]} - 1; i >= 0; i--)); do
    stop_pid "${started_pids[i]}"
  done
  if ((policy_rc_created)); then rm -f /usr/sbin/policy-rc.d; fi
  if [[ -n $work && -d $work ]]; then
    # Keep the configs and logs when asked, or after a failure (not after Ctrl-C).
    if ((${KEEP_WORKDIR:-0})) || ((status == 1)); then
      log "work files kept in $work"
    else
      rm -rf "$work"
    fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools
# install_missing COMMAND:PACKAGE...: installs the packages of the commands that are missing.
install_missing() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  ((${#missing[@]})) || return 0
  [[ $EUID -eq 0 ]] || die "missing ${missing[*]}: install with: apt-get install -y ${missing[*]}"
  log "installing ${missing[*]} with apt-get"
  # Keep the packages from starting their system services (nginx would take port 80).
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    policy_rc_created=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if ((policy_rc_created)); then
    rm -f /usr/sbin/policy-rc.d
    policy_rc_created=0
  fi
}

# ---------------------------------------------------------------- helpers
# Fills a template's @NAME@ placeholders: render TEMPLATE OUT NAME=VALUE...
render() {
  local template=$1 out=$2 pair script=()
  shift 2
  for pair in "$@"; do
    script+=(-e "s|@${pair%%=*}@|${pair#*=}|g")
  done
  sed "${script[@]}" "$template" >"$out"
  if grep -q '@[A-Z_]*@' "$out"; then die "unfilled placeholder in $out"; fi
}

# Sum of utime + stime, in clock ticks, of PID and its children (nginx's master and worker).
cpu_ticks() {
  local pid total=0 stat fields
  for pid in "$1" $(pgrep -P "$1" 2>/dev/null || true); do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    # After the ')' of the name, field 3 (state) comes first: utime (14) and stime (15) are
    # the 12th and 13th words.
    read -r -a fields <<<"${stat##*) }"
    total=$((total + fields[11] + fields[12]))
  done
  echo "$total"
}

now_ns() { date +%s%N; }

# wrk prints latencies as 512.00us, 1.23ms, 2.00s, 1.00m or 1.00h; prints milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) m = 0.001; else if (v ~ /ms$/) m = 1; else if (v ~ /s$/) m = 1000;
    else if (v ~ /m$/) m = 60000; else if (v ~ /h$/) m = 3600000; else { print "?"; exit }
    sub(/[a-z]+$/, "", v); printf "%.2f", v * m }'
}

# CPU seconds (user + system) of the script's reaped children, in a file written by the `times`
# builtin. `times` must run in this shell: in a $(...) subshell it sees that subshell's children.
children_cpu() {
  awk 'NR == 2 {
    for (i = 1; i <= 2; i++) { split($i, t, "m"); sub(/s$/, "", t[2]); s += t[1] * 60 + t[2] }
    printf "%.3f", s }' "$1"
}

# median N...: the middle value (the mean of the two middle ones for an even count); "-" when
# the figure does not apply to the test.
median() {
  if [[ $1 == - ]]; then
    echo -
    return
  fi
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
    print m }'
}

# cpu_figures PROXY_TICKS OPERATIONS NS LOAD_TICKS CLIENT_CPU: sets cpu_us (the proxy's CPU µs
# per operation), cpu_pct (its share of one core over NS nanoseconds) and load_pct (the
# upstream's LOAD_TICKS plus the clients' CLIENT_CPU seconds, as a share of one core).
clk_tck=$(getconf CLK_TCK)
# shellcheck disable=SC2034 # the three figures are for the caller
cpu_figures() {
  local ticks=$1 operations=$2 ns=$3 load_ticks=$4 client_cpu=$5
  cpu_us=$(awk -v d="$ticks" -v hz="$clk_tck" -v n="$operations" \
    'BEGIN {printf "%.2f", d / hz * 1e6 / n}')
  cpu_pct=$(awk -v d="$ticks" -v hz="$clk_tck" -v ns="$ns" \
    'BEGIN {printf "%.0f", d / hz * 1e9 / ns * 100}')
  load_pct=$(awk -v d="$load_ticks" -v hz="$clk_tck" -v ns="$ns" -v c="$client_cpu" \
    'BEGIN {printf "%.0f", (d / hz + c) * 1e9 / ns * 100}')
}

# ---------------------------------------------------------------- results
# Each (proxy, test)'s figures by round, and their medians. collect_medians FIGURES reads
# `results` (rows "round|proxy|test|figure 1|...") and sets rounds_of[PROXY/TEST] (its rounds'
# rows without the round number, one per line), runs ("proxy|test", in order of first
# appearance) and medians ("proxy|test|median of figure 1|...|median of figure FIGURES").
results=()  # the script's: one row per measurement
declare -A rounds_of
runs=()
medians=()
collect_medians() {
  local figures=$1 row proxy test run n
  for row in "${results[@]}"; do
    IFS='|' read -r _ proxy test _ <<<"$row"
    if [[ -z ${rounds_of[$proxy/$test]:-} ]]; then runs+=("$proxy|$test"); fi
    rounds_of[$proxy/$test]+="${row#*|}"$'\n'
  done
  for run in "${runs[@]}"; do
    row=$run
    for ((n = 1; n <= figures; n++)); do
      # shellcheck disable=SC2046 # one word per round
      row+="|$(median $(column "${run/|//}" "$n"))"
    done
    medians+=("$row")
  done
}

# print_rounds TITLE PRINT: with more than one round, each run's figures round by round, printed
# by the awk statement PRINT from its row (fields: proxy, test, then the figures).
print_rounds() {
  local title=$1 print=$2 run proxy test
  ((ROUNDS > 1)) || return 0
  echo
  echo "rounds ($title):"
  for run in "${runs[@]}"; do
    IFS='|' read -r proxy test <<<"$run"
    printf '  %-8s %-14s' "$proxy" "$test"
    printf '%s' "${rounds_of[$proxy/$test]}" | awk -F'|' "NF {$print} END {print \"\"}"
  done
}

# column RUN N: the Nth figure (1 = the rate) of every round of RUN ("proxy/test"), one per line.
column() { printf '%s' "${rounds_of[$1]}" | awk -F'|' -v n=$(($2 + 2)) 'NF {print $n}'; }

# rounds_won N OP TEST: "K of R rounds", comparing figure N of sluice's and nginx's rounds.
rounds_won() {
  paste -d' ' <(column "sluice/$3" "$1") <(column "nginx/$3" "$1") |
    awk -v op="$2" '{ r++; if (op == ">=" ? $1 >= $2 : $1 <= $2) k++ } END {
      printf "%d of %d rounds", k, r }'
}

# The upstream every proxy is measured in front of: an nginx worker answering `return 200`
# (bench/peers/upstream.nginx.conf) on UPSTREAM_PORT, on the load side's CPU. Sets upstream_pid
# and upstream_log; needs work, load_pin and started_pids.
# shellcheck disable=SC2154  # repo_root and load_pin are the sourcing script's
start_upstream_nginx() {
  render "$repo_root/bench/peers/upstream.nginx.conf" "$work/upstream.conf" DIR="$work" \
    UPSTREAM_PORT="$UPSTREAM_PORT"
  upstream_log=$work/upstream.log
  nginx -t -q -p "$work/" -e stderr -c "$work/upstream.conf" >>"$upstream_log" 2>&1 ||
    { cat "$upstream_log" >&2; die "nginx -t refused the upstream config"; }
  log "upstream nginx on 127.0.0.1:$UPSTREAM_PORT"
  "${load_pin[@]}" nginx -p "$work/" -e stderr -c "$work/upstream.conf" \
    >>"$upstream_log" 2>&1 &
  upstream_pid=$!
  started_pids+=("$upstream_pid")
  wait_port "$UPSTREAM_PORT" "$upstream_pid" "upstream nginx" "$upstream_log"
}

# make_certificate CN: the certificate and key the proxies serve over TLS, $work/cert.pem and
# $work/key.pem: ECDSA P-256, self-signed (the clients do not verify it).
make_certificate() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$work/key.pem" -out "$work/cert.pem" -subj "/CN=$1" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$work/cert.log" 2>&1 ||
    { cat "$work/cert.log" >&2; die "openssl req could not make the certificate"; }
  chmod 644 "$work/key.pem"
}

# The versions of nginx and of SLUICE_BIN, each with the OpenSSL it runs with (the caller adds
# its clients').
print_proxy_versions() {
  echo "  $(nginx -v 2>&1) ($(nginx -V 2>&1 | grep -io 'running with [^)]*' || nginx -V 2>&1 | grep -io 'built with openssl [^ ]*'))"
  if [[ -x $SLUICE_BIN ]]; then
    echo "  $("$SLUICE_BIN" version 2>&1 | head -n 1) ($(ldd "$SLUICE_BIN" 2>/dev/null |
      awk '/libssl/ {print $1 " => " $3; found = 1} END {if (!found) print "no shared libssl"}'))"
  fi
}
