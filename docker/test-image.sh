#!/usr/bin/env bash
# Builds the image with podman and tests it as a user would run it: with --network=host, healthy
# by its own HEALTHCHECK, 200s then 429s through it in front of the demo API (from the same
# image), and a SIGTERM that stops it, exit 0, within the drain time. Skipped, with a message,
# when podman is not installed. Works without a registry: the debian:bookworm-slim base is made
# locally with debootstrap when it is missing.
#
#   bash docker/test-image.sh                    (as root, from anywhere): the image as users
#                                                build it, compiled in its build stage
#   bash docker/test-image.sh --prebuilt DIR     the Dockerfile's `prebuilt` target instead: the
#                                                same runtime image around DIR's sluice and
#                                                demo_api, already compiled (the test command)
# Environment: IMAGE [localhost/sluice:test]  MAX_IMAGE_MB [40]  KEEP_IMAGE [1]
set -euo pipefail
cd "$(dirname "$0")/.."

prebuilt=""
if [ "${1:-}" = "--prebuilt" ]; then
  prebuilt=$(cd "${2:?--prebuilt needs the build directory}" && pwd)
fi
IMAGE=${IMAGE:-localhost/sluice:test}
MAX_IMAGE_MB=${MAX_IMAGE_MB:-40}
BASE=docker.io/library/debian:bookworm-slim

log() { printf 'test-image: %s\n' "$*" >&2; }
fail() {
  log "FAILED: $*"
  exit 1
}

if ! command -v podman >/dev/null 2>&1; then
  log "podman is not installed: the image test is skipped (apt-get install podman buildah runc" \
    "fuse-overlayfs slirp4netns uidmap containernetworking-plugins iptables debootstrap)"
  exit 0
fi

work=$(mktemp -d)
containers=()
cleanup() {
  local name
  for name in "${containers[@]}"; do podman rm -f "$name" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

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
  mkdir -p "$context/docker" "$context/bin"
  cp docker/proxy.yaml "$context/docker/"
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
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  picked+="$port "
  printf -v "$1" '%s' "$port"
}
free_port api_port
free_port proxy_port
free_port admin_port

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
routes:
  - {name: slow, match: {path_prefix: /slow}}
  - {name: all, limiters: [per-ip]}
YAML
chmod 644 "$work/proxy.yaml"
chmod 755 "$work"
log "sluice on 127.0.0.1:$proxy_port, admin $admin_port"
containers+=(sluice-test)
# (podman's stderr goes to a log: without systemd it complains that it cannot schedule the
# periodic health checks, which this test runs itself.)
podman run -d --network=host --name sluice-test \
  -v "$work/proxy.yaml:/etc/sluice/proxy.yaml:ro" "$IMAGE" >/dev/null 2>>"$work/podman.log"

healthy=0
for _ in $(seq 100); do
  if podman healthcheck run sluice-test >/dev/null 2>&1; then
    healthy=1
    break
  fi
  [[ $(podman inspect --format '{{.State.Running}}' sluice-test 2>/dev/null) == true ]] || break
  sleep 0.2
done
((healthy)) || { podman logs sluice-test >&2 || true; fail "not healthy within 20 s (or it exited)"; }
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
sleep 0.3
stop_started=$(date +%s%N)
podman stop -t 10 sluice-test >/dev/null 2>>"$work/podman.log"
stop_ms=$((($(date +%s%N) - stop_started) / 1000000))
wait "$in_flight" || true
exit_code=$(podman inspect --format '{{.State.ExitCode}}' sluice-test)
log "SIGTERM with a request in flight: it got $(cat "$work/in-flight"); stopped in $stop_ms ms," \
  "exit code $exit_code"
[[ $exit_code == 0 ]] || { podman logs sluice-test >&2 || true; fail "exit code $exit_code"; }
((stop_ms < 5000)) || fail "took $stop_ms ms to stop, drain is 5 s"
[[ $(cat "$work/in-flight") == 200 ]] || fail "the request in flight got '$(cat "$work/in-flight")'"

log "passed: built in $((built - started)) s, $size_mb MB, total $(($(date +%s) - started)) s"
