# shellcheck shell=bash
# Process helpers shared by the scripts that start servers of their own (bench/peers.sh,
# scripts/resilience.sh). Sourced, not run.

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
