# shellcheck shell=bash
# Measuring: clocks, the CPU time and memory of a process, the CPU time of a load generator,
# wrk's reports, medians, and the rounds of a benchmark that measures each run several times.
# Sourced, not run; it sources scripts/lib/processes.sh.
[[ -z ${sluice_lib_measuring:-} ]] || return 0
sluice_lib_measuring=1
# shellcheck source=scripts/lib/processes.sh
source "$(dirname "${BASH_SOURCE[0]}")/processes.sh"

# ---------------------------------------------------------------- clocks, CPU and memory
now_ns() { date +%s%N; }
now_ms() { echo $(($(now_ns) / 1000000)); }

# cpu_ticks PID: utime + stime, in clock ticks, of PID and its children (nginx's master and
# worker); a process that has ended counts 0.
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
clk_tck=$(getconf CLK_TCK)

# rss_kib PID: the resident memory (VmRSS) of PID and its children (nginx's master and worker),
# in KiB. Fails when PID is gone; a child that ends meanwhile counts 0.
rss_kib() {
  local total pid kib
  total=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null) || total=""
  [[ -n $total ]] || { echo "rss_kib: no process $1 to measure" >&2; return 1; }
  for pid in $(pgrep -P "$1" 2>/dev/null || true); do
    kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    total=$((total + ${kib:-0}))
  done
  echo "$total"
}

# children_cpu FILE: CPU seconds (user + system) of the script's reaped children, in a file
# written by the `times` builtin. `times` must run in this shell: in a $(...) subshell it sees
# that subshell's children.
children_cpu() {
  awk 'NR == 2 {
    for (i = 1; i <= 2; i++) { split($i, t, "m"); sub(/s$/, "", t[2]); s += t[1] * 60 + t[2] }
    printf "%.3f", s }' "$1"
}

# run_client OUT COMMAND...: runs COMMAND (a load generator, with its pinning prefix) in the
# background, its report to OUT, waits for it, and sets client_cpu to the CPU seconds (user +
# system) it used. In the background, because wrk catches SIGINT and exits 0, so that bash takes
# a Ctrl-C during a foreground wrk as handled and goes on; a `wait` is cut short by the signal
# instead, and the trap runs. Only COMMAND is forked between the two `times`, so their difference
# is its CPU. Returns COMMAND's exit status.
run_client() {
  local out=$1 status=0
  shift
  times >"$out.times0"
  start "$out" "$@"
  reap "$pid" || status=$?
  times >"$out.times1"
  client_cpu=$(awk -v a="$(children_cpu "$out.times0")" -v b="$(children_cpu "$out.times1")" \
    'BEGIN {printf "%.3f", b - a}')
  return "$status"
}

# cpu_figures PROXY_TICKS OPERATIONS NS LOAD_TICKS CLIENT_CPU: sets cpu_us (the proxy's CPU µs
# per operation), cpu_pct (its share of one core over NS nanoseconds) and load_pct (the
# upstream's LOAD_TICKS plus the clients' CLIENT_CPU seconds, as a share of one core).
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

# describe_machine: "N cores, CPU MODEL", for the reports.
describe_machine() {
  echo "$(nproc) cores, $(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
}

# ---------------------------------------------------------------- wrk's report
# wrk prints latencies as 512.00us, 1.23ms, 2.00s, 1.00m or 1.00h; prints milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) m = 0.001; else if (v ~ /ms$/) m = 1; else if (v ~ /s$/) m = 1000;
    else if (v ~ /m$/) m = 60000; else if (v ~ /h$/) m = 3600000; else { print "?"; exit }
    sub(/[a-z]+$/, "", v); printf "%.2f", v * m }'
}

# read_wrk OUT: reads the report of a wrk --latency run: sets rps, requests, p50 and p99 (in ms),
# non2xx and sockerr (socket errors of every kind); fails when a figure is missing.
# shellcheck disable=SC2034 # the figures are for the caller
read_wrk() {
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$1")
  requests=$(awk '/ requests in / {print $1}' "$1")
  p50=$(awk '$1 == "50%" {print $2}' "$1")
  p99=$(awk '$1 == "99%" {print $2}' "$1")
  # wrk prints these two lines only when they are not zero.
  non2xx=$(awk -F': *' '/Non-2xx or 3xx responses:/ {print $2}' "$1")
  sockerr=$(awk '/Socket errors:/ {gsub(/,/, ""); print $4 + $6 + $8 + $10}' "$1")
  non2xx=${non2xx:-0} sockerr=${sockerr:-0}
  [[ -n $rps && -n $p50 && -n $p99 && $requests =~ ^[0-9]+$ ]] && ((requests > 0)) || return 1
  p50=$(to_ms "$p50")
  p99=$(to_ms "$p99")
}

# ---------------------------------------------------------------- medians and rounds
# median N...: the middle value (the mean of the two middle ones for an even count); "-" when
# the figure does not apply to the test.
median() {
  if [[ ${1:-} == - ]]; then
    echo -
    return
  fi
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
    print m }'
}

# Each (proxy, test)'s figures by round, and their medians. collect_medians FIGURES reads
# `results` (rows "round|proxy|test|figure 1|...") and sets rounds_of[PROXY/TEST] (its rounds'
# rows without the round number, one per line), runs ("proxy|test", in order of first
# appearance) and medians ("proxy|test|median of figure 1|...|median of figure FIGURES").
results=() # the script's: one row per measurement
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

# print_rounds TITLE PRINT: with more than one round (ROUNDS), each run's figures round by round,
# printed by the awk statement PRINT from its row (fields: proxy, test, then the figures).
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
