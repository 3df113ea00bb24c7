# shellcheck shell=bash
# Process helpers shared by the scripts that start servers of their own (bench/peers.sh,
# bench/shared.sh, bench/redis.sh, scripts/resilience.sh). Sourced, not run.

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
# through the caller's `die`, showing the end of LOG.
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

# pin_prefix CPU: prints the command prefix that runs a process on CPU (taskset -c CPU), or
# nothing when PIN is 0, the machine has one core or no taskset. The benchmarks give the process
# under test a core of its own, and its load the other:
#   read -r -a proxy_pin < <(pin_prefix "$PROXY_CPU") || true   # read fails on no output
pin_prefix() {
  if ((${PIN:-1})) && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
    echo "taskset -c $1"
  fi
}
