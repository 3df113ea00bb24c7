#!/usr/bin/env bash
# Builds the image with podman and tests it as a user would run it: with --network=host, healthy
# by its own HEALTHCHECK, 200s then 429s through it in front of the demo API (from the same
# image), and a SIGTERM that stops it, exit 0, within the drain time. Then TLS: the CA bundle in
# the image, the shipped TLS configs checked against a throwaway certificate (openssl) mounted
# where a Kubernetes TLS Secret puts it (/etc/sluice/tls), HTTPS through sluice (curl --cacert)
# with 200s then 429s, and sluice in front of that one as the client of an https:// upstream
# verified with the image's default trust store. Skipped, with a message, when podman is not
# installed (the TLS part, when openssl or curl is not). Works without a registry: the
# debian:bookworm-slim base is made locally with debootstrap when it is missing.
#
#   bash docker/test-image.sh                    (as root, from anywhere): the image as users
#                                                build it, compiled in its build stage
#   bash docker/test-image.sh --prebuilt DIR     the Dockerfile's `prebuilt` target instead: the
#                                                same runtime image around DIR's sluice and
#                                                demo_api, already compiled (the test command)
#   bash docker/test-image.sh --help             this text
# Environment: IMAGE [localhost/sluice:test]  MAX_IMAGE_MB [40]  KEEP_WORKDIR [0] (the build
# context and logs are also kept after a failure). The image stays, under IMAGE.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
log_prefix="test-image: "

prebuilt=""
case ${1:-} in
  "") ;;
  --prebuilt) prebuilt=$(cd "${2:?--prebuilt needs the build directory}" && pwd) ;;
  -h | --help)
    awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"
    exit 0
    ;;
  *)
    echo "usage: bash docker/test-image.sh [--prebuilt DIR | --help]" >&2
    exit 2
    ;;
esac
IMAGE=${IMAGE:-localhost/sluice:test}
MAX_IMAGE_MB=${MAX_IMAGE_MB:-40}
BASE=docker.io/library/debian:bookworm-slim

fail() {
  log "FAILED: $*"
  exit 1
}

if ! command -v podman >/dev/null 2>&1; then
  log "podman is not installed: the image test is skipped (apt-get install podman buildah runc" \
    "fuse-overlayfs slirp4netns uidmap containernetworking-plugins iptables debootstrap)"
  exit 0
fi

containers=()
remove_containers() {
  local name
  # -t 0: killed at once (the demo API, pid 1 without a SIGTERM handler, would take 10 s).
  for name in "${containers[@]}"; do podman rm -f -t 0 "$name" >/dev/null 2>&1 || true; done
}
exit_hooks+=(remove_containers)
cleanup_on_exit
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-image.XXXXXX")

# Debian's podman needs these to run containers on this kind of machine (no systemd cgroups,
# a low file limit in the runtime's default).
cat >"$work/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
export CONTAINERS_CONF=$work/containers.conf

started=$(date +%s)
if [ -n "$prebuilt" ]; then
  # A context of its own: the runtime files and the config, not the sources.
  log "building $IMAGE (target prebuilt) around $prebuilt/sluice"
  context=$work/context
  mkdir -p "$context/docker/tls" "$context/bin"
  cp docker/proxy.yaml "$context/docker/"
  cp docker/tls/proxy.yaml "$context/docker/tls/"
  cp "$prebuilt/sluice" "$prebuilt/demo_api" "$context/bin/"
  strip "$context/bin/sluice" "$context/bin/demo_api"
  bash docker/collect-runtime.sh "$context/rootfs" "$context/bin/sluice" "$context/bin/demo_api"
  podman build --format docker --target prebuilt -f docker/Dockerfile -t "$IMAGE" "$context" \
    >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; fail "podman build"; }
else
  if ! podman image exists "$BASE"; then
    # No registry to pull from: make the base from Debian's mirror and give it the same name.
    mirror=$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' \
      /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    log "making $BASE with debootstrap from $mirror"
    debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
      { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
    tar -C "$work/rootfs" -c . | podman import - "$BASE" >/dev/null
    rm -rf "$work/rootfs"
  fi
  log "building $IMAGE"
  podman build --format docker --network=host -f docker/Dockerfile -t "$IMAGE" . \
    >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; fail "podman build"; }
fi
built=$(date +%s)
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
size_mb=$(awk -v b="$size" 'BEGIN {printf "%.1f", b / 1e6}')
log "image size: $size_mb MB (target ≤ $MAX_IMAGE_MB MB); built in $((built - started)) s"
awk -v s="$size_mb" -v m="$MAX_IMAGE_MB" 'BEGIN {exit !(s <= m)}' ||
  fail "the image is $size_mb MB, over $MAX_IMAGE_MB MB"

# A port nothing answers on now, distinct from the ones already picked, and below the kernel's
# ephemeral range: a port in that range can be the local end of any outgoing connection on the
# machine, and then binding it fails even though nothing listens on it.
ephemeral_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
((ephemeral_low > 11000)) || ephemeral_low=32768
picked=" "
free_port() { # VARIABLE
  local port
  while :; do
    port=$((10000 + RANDOM % (ephemeral_low - 10000)))
    [[ $picked == *" $port "* ]] && continue
    port_open "$port" || break
  done
  picked+="$port "
  printf -v "$1" '%s' "$port"
}
# (Declared for shellcheck, which does not see printf -v assign them.)
declare api_port proxy_port admin_port tls_port tls_admin_port hop_port hop_admin_port
free_port api_port
free_port proxy_port
free_port admin_port
free_port tls_port
free_port tls_admin_port
free_port hop_port
free_port hop_admin_port

# The status of one GET through 127.0.0.1:PORT ("" when nothing answers), with bash alone.
status_of() {
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 0
  printf 'GET %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n' "${2:-/}" >&3
  read -r -t 5 line <&3 || true
  exec 3<&-
  line=${line%$'\r'}
  printf '%s' "${line#HTTP/1.1 }" | cut -d' ' -f1
}

# Waits until the container's own HEALTHCHECK (sluice health, against its admin port) passes.
wait_healthy() { # NAME
  local _
  for _ in $(seq 100); do
    podman healthcheck run "$1" >/dev/null 2>&1 && return 0
    [[ $(podman inspect --format '{{.State.Running}}' "$1" 2>/dev/null) == true ]] || break
    sleep 0.2
  done
  podman logs "$1" >&2 || true
  fail "$1: not healthy within 20 s (or it exited)"
}

log "demo API on 127.0.0.1:$api_port"
containers+=(sluice-test-api)
podman run -d --rm --network=host --name sluice-test-api --entrypoint /usr/local/bin/demo_api \
  "$IMAGE" "$api_port" >/dev/null 2>>"$work/podman.log"

cat >"$work/proxy.yaml" <<YAML
listen: "127.0.0.1:$proxy_port"
admin: "127.0.0.1:$admin_port"
upstream: "http://127.0.0.1:$api_port"
timeouts: {drain: 5s}
limiters:
  per-ip: {algorithm: fixed_window, limit: 5, window: 1h}
  # The image's time zone database: a calendar window in a zone must load.
  per-day: {algorithm: fixed_window, limit: 1000, calendar: day, timezone: Europe/Berlin}
routes:
  - {name: slow, match: {path_prefix: /slow}}
  - {name: all, limiters: [per-ip, per-day]}
YAML
chmod 644 "$work/proxy.yaml"
chmod 755 "$work"
log "sluice on 127.0.0.1:$proxy_port, admin $admin_port"
containers+=(sluice-test)
# (podman's stderr goes to a log: without systemd it complains that it cannot schedule the
# periodic health checks, which this test runs itself.)
podman run -d --network=host --name sluice-test \
  -v "$work/proxy.yaml:/etc/sluice/proxy.yaml:ro" "$IMAGE" >/dev/null 2>>"$work/podman.log"

wait_healthy sluice-test
log "healthy (podman healthcheck run: sluice health against the admin port)"

codes=""
for _ in $(seq 8); do codes+="$(status_of "$proxy_port") "; done
log "8 requests: $codes"
[[ $codes == "200 200 200 200 200 429 429 429 " ]] || fail "expected five 200s, then 429s"
[[ $(status_of "$admin_port" /readyz) == 200 ]] || fail "/readyz is not 200"

# A request in flight (the demo API's /slow answers after a second) when SIGTERM comes: it must
# get its answer, and the container must exit 0 within the drain time.
status_of "$proxy_port" /slow >"$work/in-flight" &
in_flight=$!
started_pids+=("$in_flight")
sleep 0.3
stop_started=$(date +%s%N)
podman stop -t 10 sluice-test >/dev/null 2>>"$work/podman.log"
stop_ms=$((($(date +%s%N) - stop_started) / 1000000))
reap "$in_flight" || true
exit_code=$(podman inspect --format '{{.State.ExitCode}}' sluice-test)
log "SIGTERM with a request in flight: it got $(cat "$work/in-flight"); stopped in $stop_ms ms," \
  "exit code $exit_code"
[[ $exit_code == 0 ]] || { podman logs sluice-test >&2 || true; fail "exit code $exit_code"; }
((stop_ms < 5000)) || fail "took $stop_ms ms to stop, drain is 5 s"
[[ $(cat "$work/in-flight") == 200 ]] || fail "the request in flight got '$(cat "$work/in-flight")'"

# TLS. The demo API is still up.
tls_started=$(date +%s%N)
if ! command -v openssl >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  log "openssl or curl is not installed: the TLS checks are skipped"
else
  # The CA bundle collect-runtime.sh copies (from the build stage, or this machine with
  # --prebuilt), for https:// upstreams verified against the system's CAs.
  bundle=/etc/ssl/certs/ca-certificates.crt
  if [ -n "$prebuilt" ] && [ ! -f "$bundle" ]; then
    have_bundle=0
    log "no $bundle on this machine (Debian's ca-certificates), so none in the image: the" \
      "https:// upstream check is skipped"
  else
    have_bundle=1
    podman cp "sluice-test:$bundle" "$work/bundle.crt" 2>>"$work/podman.log" ||
      fail "the image has no $bundle"
    bundled=$(grep -c -- '-----BEGIN CERTIFICATE-----' "$work/bundle.crt" || true)
    ((bundled >= 50)) || fail "the image's $bundle holds $bundled certificates"
    log "the image carries $bundle: $bundled certificates"
  fi

  # A throwaway ECDSA P-256 certificate for localhost, named as a kubernetes.io/tls Secret's
  # files; the key readable by the image's user (65532).
  tls=$work/tls
  mkdir "$tls"
  make_certificate localhost "$tls/tls.crt" "$tls/tls.key"
  chmod 755 "$tls"

  # The shipped TLS configs, with that certificate where they read it.
  podman run --rm --network=none -v "$tls:/etc/sluice/tls:ro" "$IMAGE" \
    check -c /etc/sluice/proxy-tls.yaml >"$work/check.log" 2>&1 ||
    { cat "$work/check.log" >&2; fail "sluice check of the image's /etc/sluice/proxy-tls.yaml"; }
  podman run --rm --network=none -e UPSTREAM=http://api:9000 -v "$tls:/etc/sluice/tls:ro" \
    -v "$PWD/docker/compose/tls.yaml:/etc/sluice/proxy.yaml:ro" "$IMAGE" \
    check -c /etc/sluice/proxy.yaml >"$work/check.log" 2>&1 ||
    { cat "$work/check.log" >&2; fail "sluice check of docker/compose/tls.yaml"; }

  cat >"$work/proxy-tls.yaml" <<YAML
listen: "127.0.0.1:$tls_port"
tls: {cert: /etc/sluice/tls/tls.crt, key: /etc/sluice/tls/tls.key, min_version: "1.2"}
admin: "127.0.0.1:$tls_admin_port"
upstream: "http://127.0.0.1:$api_port"
limiters:
  per-ip: {algorithm: fixed_window, limit: 5, window: 1h}
routes:
  - {name: hop, match: {path_prefix: /hop}}  # the https:// upstream check below: not limited
  - {name: all, limiters: [per-ip]}
YAML
  chmod 644 "$work/proxy-tls.yaml"
  log "sluice with TLS on 127.0.0.1:$tls_port, admin $tls_admin_port"
  containers+=(sluice-test-tls)
  podman run -d --network=host --name sluice-test-tls \
    -v "$work/proxy-tls.yaml:/etc/sluice/proxy.yaml:ro" -v "$tls:/etc/sluice/tls:ro" "$IMAGE" \
    >/dev/null 2>>"$work/podman.log"
  wait_healthy sluice-test-tls

  # Eight requests on one connection, the certificate verified as localhost's.
  urls=()
  for _ in $(seq 8); do urls+=(-o /dev/null "https://localhost:$tls_port/"); done
  codes=$(curl -sS --cacert "$tls/tls.crt" --resolve "localhost:$tls_port:127.0.0.1" \
    -w '%{http_code} ' "${urls[@]}" || true)
  log "8 requests over TLS: $codes"
  [[ $codes == "200 200 200 200 200 429 429 429 " ]] || fail "expected five 200s, then 429s"

  if ((have_bundle)); then
    # sluice as an https:// client: upstream_tls names no CA, so it trusts the image's default
    # store, OpenSSL's default file linked to the bundle; the test's certificate is mounted over
    # the bundle to be that store.
    cat >"$work/proxy-hop.yaml" <<YAML
listen: "127.0.0.1:$hop_port"
admin: "127.0.0.1:$hop_admin_port"
upstream: "https://127.0.0.1:$tls_port"
upstream_tls: {server_name: localhost}
routes: [{name: all}]
YAML
    chmod 644 "$work/proxy-hop.yaml"
    containers+=(sluice-test-hop)
    podman run -d --network=host --name sluice-test-hop \
      -v "$work/proxy-hop.yaml:/etc/sluice/proxy.yaml:ro" \
      -v "$tls/tls.crt:$bundle:ro" "$IMAGE" >/dev/null 2>>"$work/podman.log"
    wait_healthy sluice-test-hop
    hop=$(status_of "$hop_port" /hop)
    log "through a cleartext sluice to the TLS one as its https:// upstream: $hop"
    [[ $hop == 200 ]] || { podman logs sluice-test-hop >&2 || true; fail "expected 200"; }
  fi
  log "TLS passed in $((($(date +%s%N) - tls_started) / 1000000)) ms"
fi

log "passed: built in $((built - started)) s, $size_mb MB, total $(($(date +%s) - started)) s"
