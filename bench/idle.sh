#!/usr/bin/env bash
# Memory per idle keep-alive client connection: sluice against nginx, on 127.0.0.1.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/idle.sh
#
# Each proxy (one worker / one thread) forwards to the same upstream (an nginx worker answering
# `return 200`). bench/idle_clients.py opens CONNECTIONS connections to it, sends one request on
# each and reads the answer, then leaves them all open and idle, and at last closes them all.
# Two patterns (PATTERNS), each measured from the proxy's resident memory (VmRSS, the nginx
# worker's for nginx), read before the connections, when all are idle and after they left:
# - stepped: 200 connections at a time, in two equal steps, with the RSS read between them too.
#   Per connection: the growth from before to all, divided by CONNECTIONS (it includes what the
#   proxy keeps after serving the 200-connection bursts, which does not grow with their number);
#   per added connection: the growth from half to all, divided by CONNECTIONS/2, what each more
#   idle connection costs, the bursts' high-water mark already reached.
# - herd: all CONNECTIONS opened at once, each with its request, as clients reconnect after a
#   deploy: per connection as above, and the high-water mark of serving them all at once is in it.
# After they left: the RSS SETTLE seconds after the last one closed, in % above where it started
# (what the proxy did not give back). Kernel socket buffers are in none of them (they are the
# kernel's, the same for every proxy). Rounds alternate the proxies; the table gives medians.
# TLS=1: the connections are TLS 1.3 (each proxy with the same ECDSA P-256 certificate made
# here, nginx with its default session tickets, as sluice), what an idle HTTPS client costs.
#
# Environment (defaults in brackets):
#   SLUICE_BIN [build/release/sluice]  CONNECTIONS [8000]  ROUNDS [3]  PROXIES ["sluice nginx"]
#   PATTERNS ["stepped herd"]  TLS [0]  SETTLE [2] (seconds)  SLUICE_ENV [] (VAR=value for sluice's
#   environment, e.g. LD_PRELOAD= to try another allocator)
#   UPSTREAM_PORT [18180]  SLUICE_PORT [18181]  NGINX_PORT [18182]  KEEP_WORKDIR [0]
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONNECTIONS=${CONNECTIONS:-8000}
ROUNDS=${ROUNDS:-3}
PROXIES=${PROXIES:-sluice nginx}
PATTERNS=${PATTERNS:-stepped herd}
SETTLE=${SETTLE:-2}
SLUICE_ENV=${SLUICE_ENV:-}
UPSTREAM_PORT=${UPSTREAM_PORT:-18180}
SLUICE_PORT=${SLUICE_PORT:-18181}
NGINX_PORT=${NGINX_PORT:-18182}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
TLS=${TLS:-0}
SLUICE_BIN=${SLUICE_BIN:-build/release/sluice}
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
# shellcheck source=scripts/lib/measuring.sh
source "$repo_root/scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$repo_root/scripts/lib/servers.sh"

[ -x "$SLUICE_BIN" ] || die "no sluice binary at $SLUICE_BIN (build the release preset first)"
command -v nginx >/dev/null || die "nginx is missing (apt-get install nginx-light)"
ulimit -n $((CONNECTIONS * 2 + 1024)) 2>/dev/null || die "cannot raise the descriptor limit to $((CONNECTIONS * 2 + 1024))"

cleanup_on_exit
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-idle.XXXXXX")
# nginx workers run as an unprivileged user when started as root: let them reach their files.
chmod 755 "$work"

# A herd has as many requests in flight as connections: each proxy may hold two sockets for each.
nginx_worker_connections=$((CONNECTIONS * 2 + 1024))
nginx_config upstream "$UPSTREAM_PORT" 'default_type text/plain; return 200 "ok\n";'
launch_nginx upstream "$UPSTREAM_PORT" no_pin

sluice_listen="\"127.0.0.1:$SLUICE_PORT\""
nginx_tls=""
if [ "$TLS" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=sluice-idle" -keyout "$work/key.pem" -out "$work/cert.pem" 2>"$work/cert.log" ||
    die "openssl could not make the certificate (see $work/cert.log)"
  sluice_listen="[{address: \"127.0.0.1:$SLUICE_PORT\", tls: {cert: \"$work/cert.pem\", key: \"$work/key.pem\"}}]"
  nginx_listen_options=ssl
  nginx_tls="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
  export IDLE_TLS=1
fi
nginx_config proxy "$NGINX_PORT" \
  "proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\";" \
  "upstream backend { server 127.0.0.1:$UPSTREAM_PORT; keepalive 64; } $nginx_tls"
unset nginx_listen_options
cat >"$work/sluice.yaml" <<CONF
listen: $sluice_listen
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

# measure PROXY PATTERN: sets whole, added and left: the KB per connection and per added
# connection, and the RSS once they are all gone, in % above where it started.
measure() {
  local proxy=$1 pattern=$2 port proxy_pid measured steps batch
  if [ "$pattern" = herd ]; then
    steps=1 batch=0
  else
    steps=2 batch=200
  fi
  if [ "$proxy" = sluice ]; then
    port=$SLUICE_PORT
    local -a variables
    read -r -a variables <<<"$SLUICE_ENV"
    start "$work/sluice.log" env "${variables[@]}" "$SLUICE_BIN" run -c "$work/sluice.yaml"
    wait_port "$port" "$pid" sluice "$work/sluice.log"
  else
    port=$NGINX_PORT
    launch_nginx proxy "$port" no_pin
  fi
  proxy_pid=$pid
  measured=$pid
  if [ "$proxy" = nginx ]; then
    for _ in $(seq 100); do
      measured=$(pgrep -P "$proxy_pid" | head -1 || true)
      [ -n "$measured" ] && break
      sleep 0.05
    done
  fi
  # Warm up: the first requests allocate what every later one reuses.
  "$repo_root/bench/idle_clients.py" "$port" 50 </dev/null >/dev/null
  local before half after gone ready clients_pid clients_in
  before=$(rss_kib "$measured")
  coproc clients { "$repo_root/bench/idle_clients.py" "$port" "$CONNECTIONS" "$steps" "$batch"; }
  # shellcheck disable=SC2154 # coproc sets clients_PID
  clients_pid=$clients_PID
  started_pids+=("$clients_pid")
  if [ "$steps" = 2 ]; then
    read -r ready <&"${clients[0]}" || die "$proxy: the clients did not get their connections"
    [ "$ready" = "ready $((CONNECTIONS / 2))" ] || die "$proxy: $ready"
    sleep "$SETTLE"  # let every connection settle into its idle state
    half=$(rss_kib "$measured")
    echo go >&"${clients[1]}"
  fi
  read -r ready <&"${clients[0]}" || die "$proxy: the clients did not get their connections"
  [ "$ready" = "ready $CONNECTIONS" ] || die "$proxy: $ready"
  sleep "$SETTLE"
  after=$(rss_kib "$measured")
  echo leave >&"${clients[1]}"
  read -r ready <&"${clients[0]}" || die "$proxy: the clients did not close their connections"
  [ "$ready" = left ] || die "$proxy: $ready"
  sleep "$SETTLE"
  gone=$(rss_kib "$measured")
  clients_in=${clients[1]}
  exec {clients_in}>&-
  reap "$clients_pid" || true
  stop_pid "$proxy_pid"
  read -r whole added left < <(awk -v b="$before" -v h="${half:-0}" -v a="$after" -v g="$gone" \
    -v n="$CONNECTIONS" -v s="$steps" 'BEGIN {
      printf "%.2f %s %.1f\n", (a - b) * 1024 / n / 1000,
        s == 2 ? sprintf("%.2f", (a - h) * 1024 / (n / 2) / 1000) : "-", (g - b) * 100 / b }')
}

declare -A per_connection per_added left_over
for ((round = 1; round <= ROUNDS; round++)); do
  for pattern in $PATTERNS; do
    for proxy in $PROXIES; do
      measure "$proxy" "$pattern"
      printf 'round %d %-7s %-7s %s KB per connection, %s KB per added one, %s %% left after\n' \
        "$round" "$proxy" "$pattern" "$whole" "$added" "$left" >&2
      per_connection[$proxy.$pattern]+="$whole "
      per_added[$proxy.$pattern]+="$added "
      left_over[$proxy.$pattern]+="$left "
    done
  done
done

printf '\n%-8s %-8s %-18s %-24s %s\n' proxy pattern "KB per connection" "KB per added connection" \
  "RSS after they left"
for pattern in $PATTERNS; do
  for proxy in $PROXIES; do
    read -r -a wholes <<<"${per_connection[$proxy.$pattern]}"
    read -r -a addeds <<<"${per_added[$proxy.$pattern]}"
    read -r -a lefts <<<"${left_over[$proxy.$pattern]}"
    printf '%-8s %-8s %-18.2f %-24s %+.1f %%\n' "$proxy" "$pattern" "$(median "${wholes[@]}")" \
      "$(median "${addeds[@]}")" "$(median "${lefts[@]}")"
  done
done
printf '(medians of %d rounds, %d idle %sconnections)\n' "$ROUNDS" "$CONNECTIONS" \
  "$([ "$TLS" = 1 ] && echo "TLS ")"
