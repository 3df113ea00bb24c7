# shellcheck shell=bash
# Processes: what every script that starts programs of its own shares (scripts/resilience.sh,
# the benchmarks in bench/, docker/test-image.sh): messages and errors, the processes it starts
# and their stopping on any exit, waiting for a port, pinning to a CPU, and installing missing
# tools. Sourced, not run; scripts/lib/measuring.sh and scripts/lib/servers.sh source it too, so a
# script sources the files it needs in any order.
#
# What the script may set:
#   log_prefix    what `log` puts before a message ["==> "]
#   script_name   the name `die` gives [the script's file name]
#   work          its temporary directory: removed on exit, kept after a failure or with
#                 KEEP_WORKDIR=1 (see cleanup)
#   exit_hooks    functions `cleanup` runs first, for what else the script has to undo
[[ -z ${sluice_lib_processes:-} ]] || return 0
sluice_lib_processes=1

# nginx, haproxy and the other servers' binaries live in /usr/sbin, which a non-root PATH may lack.
export PATH=$PATH:/usr/sbin:/sbin

# ---------------------------------------------------------------- messages
log() { printf '%s%s\n' "${log_prefix-==> }" "$*" >&2; }
die() {
  printf '%s: error: %s\n' "${script_name:-${0##*/}}" "$*" >&2
  exit 1
}

# ---------------------------------------------------------------- one process
# alive PID: whether the process is there and not a zombie. The command name in /proc/PID/stat
# is in parentheses and may hold spaces, so the state is the field after the last ')'.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# terminate PID GRACE_SECONDS: TERM, then KILL if it still runs after the grace; children it
# leaves behind (nginx's workers) are killed too. The caller reaps it (wait) as it keeps track.
terminate() {
  local pid=$1 tenths=$(($2 * 10)) children child i
  children=$(pgrep -P "$pid" 2>/dev/null || true)
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < tenths; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  for child in $children; do
    if alive "$child"; then kill -KILL "$child" 2>/dev/null || true; fi
  done
}

# port_open PORT: whether something accepts on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PORT PID NAME LOG: waits (at most 10 s) until PID accepts on PORT, or ends the script
# showing the end of LOG.
wait_port() {
  local port=$1 pid=$2 name=$3 log=$4 i
  for ((i = 0; i < 200; i++)); do
    alive "$pid" || { tail -n 20 "$log" >&2 || true; die "$name exited during start-up"; }
    port_open "$port" && return 0
    sleep 0.05
  done
  tail -n 20 "$log" >&2 || true
  die "$name does not accept on 127.0.0.1:$port after 10 s"
}

# require_free_ports HINT PORT...: ends the script when something already accepts on one of the
# PORTs of 127.0.0.1; HINT says how to choose others.
require_free_ports() {
  local hint=$1 port
  shift
  for port in "$@"; do
    if port_open "$port"; then die "127.0.0.1:$port is already in use ($hint)"; fi
  done
}

# ---------------------------------------------------------------- pinning to CPUs
# pin_prefix CPU: prints the command prefix that runs a process on CPU (taskset -c CPU), or
# nothing when PIN is 0, the machine has one core or no taskset. The benchmarks give the process
# under test a core of its own, and its load the other:
#   read -r -a proxy_pin < <(pin_prefix "$PROXY_CPU") || true   # read fails on no output
pin_prefix() {
  if ((${PIN:-1})) && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
    echo "taskset -c $1"
  fi
}

# pin_sides PROXY_SIDE LOAD_SIDE: sets the arrays proxy_pin and load_pin, the command prefixes
# that run a process on PROXY_CPU and on LOAD_CPU (empty when not pinning), and `pinning`, for
# the report: "PROXY_SIDE on CPU 1; LOAD_SIDE on CPU 0", or "none".
# shellcheck disable=SC2034 # the three are for the caller
pin_sides() {
  read -r -a proxy_pin < <(pin_prefix "$PROXY_CPU") || true
  read -r -a load_pin < <(pin_prefix "$LOAD_CPU") || true
  pinning=none
  ((${#proxy_pin[@]} == 0)) || pinning="$1 on CPU $PROXY_CPU; $2 on CPU $LOAD_CPU"
}
# The prefix of what runs on no CPU in particular; and load_pin's, until pin_sides sets it.
# shellcheck disable=SC2034 # named in calls, as PIN
no_pin=()
[[ -v load_pin ]] || load_pin=()

# ---------------------------------------------------------------- the processes a script starts
# Every process a script starts goes into started_pids; stop_all, and so cleanup on the
# script's exit, stops them newest first.
started_pids=()

# start LOG COMMAND...: runs COMMAND (with its pinning prefix, if any) in the background, its
# output to LOG (emptied first); its pid in `pid` and in started_pids.
start() {
  local out=$1
  shift
  "$@" >"$out" 2>&1 &
  pid=$!
  started_pids+=("$pid")
}

# forget_pid PID: takes PID out of started_pids.
forget_pid() {
  local kept=() p
  for p in "${started_pids[@]}"; do
    [[ $p == "$1" ]] || kept+=("$p")
  done
  started_pids=("${kept[@]}")
}

# reap PID: waits for a process the script started (until it ends) and forgets it: once reaped,
# its number may be given to someone else's process, which must never be signalled. Returns the
# process's exit status. A signal to the script cuts the wait short, and its trap runs at once.
reap() {
  local status=0
  wait "$1" 2>/dev/null || status=$?
  forget_pid "$1"
  return "$status"
}

# stop_pid PID [GRACE_SECONDS]: stops a process the script started and the children it leaves:
# TERM, then KILL after the grace [5 s]; then reaps it.
stop_pid() {
  terminate "$1" "${2:-5}"
  reap "$1" || true
}

stop_all() {
  local pids=("${started_pids[@]}") i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
}

# cleanup: the script's EXIT trap (see cleanup_on_exit). Runs exit_hooks, stops what the script
# started and removes `work`, which it keeps, and says so, with KEEP_WORKDIR=1 or after a failure
# (any exit status but 0, and 130 for a Ctrl-C); then exits with the script's status.
work=${work:-}
exit_hooks=()
cleanup() {
  local status=$? hook
  trap - EXIT INT TERM
  set +e # undo everything, whatever fails
  if ((status == 130 || status == 143)); then log "interrupted; stopping what was started"; fi
  for hook in "${exit_hooks[@]}"; do "$hook"; done
  stop_all
  if [[ -n $work && -d $work ]]; then
    if ((${KEEP_WORKDIR:-0})) || ((status != 0 && status != 130)); then
      log "work files kept in $work"
    else
      rm -rf "$work"
    fi
  fi
  exit "$status"
}

# cleanup_on_exit: makes cleanup the EXIT trap, and turns SIGINT and SIGTERM into an exit (130,
# 143) that runs it.
cleanup_on_exit() {
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# ---------------------------------------------------------------- tools
# install_missing COMMAND:PACKAGE...: installs with apt-get the packages of the commands that are
# missing; ends the script when that fails, or, not being root, says what to install.
install_missing() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  ((${#missing[@]})) || return 0
  [[ $EUID -eq 0 ]] || die "missing ${missing[*]}: install with: apt-get install -y ${missing[*]}"
  log "installing ${missing[*]} with apt-get"
  # A subshell whose exit, however it comes, removes the policy file that keeps the packages from
  # starting their system services (nginx would take port 80).
  (
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
      trap 'exit 130' INT
      trap 'exit 143' TERM
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
      chmod 755 /usr/sbin/policy-rc.d
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null; apt-get install -y -qq "${missing[@]}" >/dev/null; }
  ) || die "apt-get could not install ${missing[*]}"
}
