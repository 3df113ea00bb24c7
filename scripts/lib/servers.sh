# shellcheck shell=bash
# Servers: the ones the scripts start around sluice, and what they need: nginx configs (one
# worker answering 200 as the upstream, a template filled in), Redis without persistence, a
# self-signed certificate, sluice's own config check, the status of a request, the versions for
# a report. Sourced, not run; it sources scripts/lib/processes.sh. The servers write their
# configs and logs in the script's `work` directory and are stopped with the script (see
# cleanup). Where a function takes PIN, that is the name of the array holding the command prefix
# that pins the server to a CPU (load_pin, proxy_pin, no_pin: see pin_sides).
[[ -z ${sluice_lib_servers:-} ]] || return 0
sluice_lib_servers=1
# shellcheck source=scripts/lib/processes.sh
source "$(dirname "${BASH_SOURCE[0]}")/processes.sh"
servers_repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# render TEMPLATE OUT NAME=VALUE...: fills a template's @NAME@ placeholders.
render() {
  local template=$1 out=$2 pair script=()
  shift 2
  for pair in "$@"; do
    script+=(-e "s|@${pair%%=*}@|${pair#*=}|g")
  done
  sed "${script[@]}" "$template" >"$out"
  if grep -q '@[A-Z_]*@' "$out"; then die "unfilled placeholder in $out"; fi
}

# ---------------------------------------------------------------- nginx
# nginx_config NAME PORT LOCATION [HTTP]: writes $work/NAME.conf, one nginx worker in the
# foreground on 127.0.0.1:PORT whose `location /` holds LOCATION, with the directives HTTP added
# to its http block. Keep-alive without limits (300 s, a million requests), so that clients and
# a proxy's pool keep their connections; nginx_worker_connections [4096] connections at most.
nginx_config() {
  cat >"$work/$1.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/$1.pid;
error_log stderr error;
events { worker_connections ${nginx_worker_connections:-4096}; }
http {
    access_log off;
    client_body_temp_path $work/$1_body;
    proxy_temp_path $work/$1_proxy;
    fastcgi_temp_path $work/$1_fastcgi;
    uwsgi_temp_path $work/$1_uwsgi;
    scgi_temp_path $work/$1_scgi;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    ${4:-}
    server {
        listen 127.0.0.1:$2 backlog=4096${nginx_listen_options:+ $nginx_listen_options};
        location / { $3 }
    }
}
CONF
}

# launch_nginx NAME PORT PIN: checks $work/NAME.conf (nginx -t) and starts nginx on it, output
# to $work/NAME.log; waits until it accepts on PORT. Its pid in `pid`.
launch_nginx() {
  local name=$1 port=$2 log=$work/$1.log
  local -n launch_pin=$3
  nginx -t -q -p "$work/" -e stderr -c "$work/$name.conf" >"$log" 2>&1 ||
    { cat "$log" >&2; die "nginx -t refused $work/$name.conf"; }
  start "$log" "${launch_pin[@]}" nginx -p "$work/" -e stderr -c "$work/$name.conf"
  wait_port "$port" "$pid" "nginx ($name)" "$log"
}

# start_upstream_nginx: the upstream the benchmarks measure proxies in front of, an nginx worker
# answering `return 200` (bench/peers/upstream.nginx.conf) on UPSTREAM_PORT, on the load side's
# CPU (load_pin). Sets upstream_pid and upstream_log.
# shellcheck disable=SC2034 # the two are for the caller
start_upstream_nginx() {
  render "$servers_repo_root/bench/peers/upstream.nginx.conf" "$work/upstream.conf" \
    DIR="$work" UPSTREAM_PORT="$UPSTREAM_PORT"
  log "upstream nginx on 127.0.0.1:$UPSTREAM_PORT"
  launch_nginx upstream "$UPSTREAM_PORT" load_pin
  upstream_pid=$pid
  upstream_log=$work/upstream.log
}

# ---------------------------------------------------------------- Redis
# start_redis PORT LOG PIN [OPTION...]: a redis-server on 127.0.0.1:PORT without persistence,
# with more OPTIONs, output to LOG; waits until it accepts. Its pid in `pid`.
start_redis() {
  local port=$1 log=$2
  local -n redis_launch_pin=$3
  shift 3
  start "$log" "${redis_launch_pin[@]}" redis-server --port "$port" --bind 127.0.0.1 --save "" \
    --appendonly no "$@"
  wait_port "$port" "$pid" redis-server "$log"
}

# ---------------------------------------------------------------- sluice
# check_sluice CONFIG [HINT]: `sluice check` (SLUICE_BIN) of CONFIG, its output in CONFIG.check;
# ends the script with that output, and HINT, when it refuses the config.
check_sluice() {
  "$SLUICE_BIN" check -c "$1" >"$1.check" 2>&1 ||
    { cat "$1.check" >&2; die "sluice check refused $1${2:+ ($2)}"; }
}

# http_code [CURL OPTION...] URL: the HTTP status of one request ("000" when there is no answer
# within 2 s).
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" || true; }

# ---------------------------------------------------------------- TLS
# make_certificate CN [CERT KEY]: a self-signed ECDSA P-256 certificate for CN, valid for
# localhost and 127.0.0.1, and its key [$work/cert.pem, $work/key.pem]. The key is readable by
# all: by nginx's worker and by a container's user.
make_certificate() {
  local cert=${2:-$work/cert.pem} key=${3:-$work/key.pem}
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$key" -out "$cert" -subj "/CN=$1" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$work/cert.log" 2>&1 ||
    { cat "$work/cert.log" >&2; die "openssl req could not make the certificate"; }
  chmod 644 "$key"
}

# print_proxy_versions: the versions of nginx and of SLUICE_BIN, each with the OpenSSL it runs
# with (the caller adds its clients').
print_proxy_versions() {
  echo "  $(nginx -v 2>&1) ($(nginx -V 2>&1 | grep -io 'running with [^)]*' || nginx -V 2>&1 | grep -io 'built with openssl [^ ]*'))"
  if [[ -x $SLUICE_BIN ]]; then
    echo "  $("$SLUICE_BIN" version 2>&1 | head -n 1) ($(ldd "$SLUICE_BIN" 2>/dev/null |
      awk '/libssl/ {print $1 " => " $3; found = 1} END {if (!found) print "no shared libssl"}'))"
  fi
}
