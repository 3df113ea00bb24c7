#!/usr/bin/env bash
# Memory per idle keep-alive client connection: sluice against nginx, on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/idle.sh
#
# Each proxy (one worker / one thread) forwards to the same upstream (an nginx worker answering
# `return 200`). bench/idle_clients.py opens CONNECTIONS connections to it, sends one request on
# each and reads the answer, then leaves them all open and idle. The figure is the growth of the
# proxy's resident memory (VmRSS, the nginx worker's for nginx) from before the connections to
# when they are all idle, divided by their number. Kernel socket buffers are not in it (they are
# the kernel's, the same for every proxy). Rounds alternate the proxies; the table gives medians.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/release/sluice]  CONNECTIONS [8000]  ROUNDS [3]  PROXIES ["sluice nginx"]
#   UPSTREAM_PORT [18180]  SLUICE_PORT [18181]  NGINX_PORT [18182]  KEEP_WORKDIR [0]
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONNECTIONS=${CONNECTIONS:-8000}
ROUNDS=${ROUNDS:-3}
PROXIES=${PROXIES:-sluice nginx}
UPSTREAM_PORT=${UPSTREAM_PORT:-18180}
SLUICE_PORT=${SLUICE_PORT:-18181}
NGINX_PORT=${NGINX_PORT:-18182}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
export PATH=$PATH:/usr/sbin:/sbin

die() {
  printf 'idle.sh: error: %s\n' "$*" >&2
  exit 1
}
[ -x "$SLUICE_BIN" ] || die "no sluice binary at $SLUICE_BIN (build the release preset first)"
command -v nginx >/dev/null || die "nginx is missing (apt-get install nginx-light)"
ulimit -n $((CONNECTIONS * 2 + 1024)) 2>/dev/null || die "cannot raise the descriptor limit to $((CONNECTIONS * 2 + 1024))"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ "$KEEP_WORKDIR" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

nginx_config() {  # nginx_config NAME PORT LOCATION_BODY
  cat >"$work/$1.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/$1.pid;
error_log stderr error;
events { worker_connections $((CONNECTIONS + 1024)); }
http {
    access_log off;
    client_body_temp_path $work/$1_body;
    proxy_temp_path $work/$1_proxy;
    fastcgi_temp_path $work/$1_fastcgi;
    uwsgi_temp_path $work/$1_uwsgi;
    scgi_temp_path $work/$1_scgi;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    upstream backend { server 127.0.0.1:$UPSTREAM_PORT; keepalive 64; }
    server {
        listen 127.0.0.1:$2 backlog=4096;
        location / { $3 }
    }
}
CONF
}

wait_port() {
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  die "nothing listens on port $1"
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

nginx_config upstream "$UPSTREAM_PORT" 'default_type text/plain; return 200 "ok\n";'
nginx -p "$work/" -e stderr -c "$work/upstream.conf" &
pids+=($!)
wait_port "$UPSTREAM_PORT"

nginx_config proxy "$NGINX_PORT" "proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\";"
cat >"$work/sluice.yaml" <<CONF
listen: "127.0.0.1:$SLUICE_PORT"
admin: ""
threads: 1
max_connections: $((CONNECTIONS + 1024))
upstream: "http://127.0.0.1:$UPSTREAM_PORT"
timeouts: {idle: 300s}
log: {level: warn, access: false}
limiters:
  per-ip: {algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: ip}
routes: [{name: all, limiters: [per-ip]}]
CONF

# measure PROXY: prints the KiB per idle connection.
measure() {
  local proxy=$1 port pid
  if [ "$proxy" = sluice ]; then
    port=$SLUICE_PORT
    "$SLUICE_BIN" run -c "$work/sluice.yaml" >"$work/sluice.log" 2>&1 &
    pid=$!
  else
    port=$NGINX_PORT
    nginx -p "$work/" -e stderr -c "$work/proxy.conf" &
    pid=$!
  fi
  wait_port "$port"
  local measured=$pid
  if [ "$proxy" = nginx ]; then
    for _ in $(seq 100); do
      measured=$(pgrep -P "$pid" | head -1 || true)
      [ -n "$measured" ] && break
      sleep 0.05
    done
  fi
  # Warm up: the first requests allocate what every later one reuses.
  "$repo_root/bench/idle_clients.py" "$port" 50 </dev/null >/dev/null
  local before after
  before=$(rss_kib "$measured")
  coproc clients { "$repo_root/bench/idle_clients.py" "$port" "$CONNECTIONS"; }
  local ready
  read -r ready <&"${clients[0]}" || die "$proxy: the clients did not get their connections"
  [ "$ready" = "ready $CONNECTIONS" ] || die "$proxy: $ready"
  sleep 1  # let every connection settle into its idle state
  after=$(rss_kib "$measured")
  exec {clients[1]}>&-
  wait "$clients_PID" || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  awk -v b="$before" -v a="$after" -v n="$CONNECTIONS" 'BEGIN { printf "%.2f\n", (a - b) * 1024 / n / 1000 }'
}

declare -A results
for ((round = 1; round <= ROUNDS; round++)); do
  for proxy in $PROXIES; do
    value=$(measure "$proxy")
    printf 'round %d %-7s %s KB per idle connection\n' "$round" "$proxy" "$value" >&2
    results[$proxy]+="$value "
  done
done

printf '\n%-8s %s\n' proxy "KB per idle connection (median of $ROUNDS, $CONNECTIONS connections)"
for proxy in $PROXIES; do
  median=$(tr ' ' '\n' <<<"${results[$proxy]}" | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  printf '%-8s %s\n' "$proxy" "$median"
done
