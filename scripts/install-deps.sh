#!/usr/bin/env bash
# Installs everything sluice needs to build, test and benchmark, from Debian 12's packages only.
# With --build-only, only what building the sluice binary needs (the container image's build
# stage); with --run, that and curl (scripts/run.sh: build, serve, try it). Idempotent: when every
# package is already present it does not touch apt at all.
set -euo pipefail
mode=${1:-all}

packages=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libyaml-cpp-dev libspdlog-dev
  libfmt-dev libhiredis-dev libcli11-dev libssl-dev libnghttp2-dev libhowardhinnant-date-dev
  libprotobuf-dev protobuf-compiler libjemalloc-dev
  tzdata
)
# The container image's test (docker/test-image.sh): podman, and debootstrap for its base image.
# Installed with their recommended packages, as podman is known to work here.
container_packages=()
if [ "$mode" = --run ]; then
  packages+=(curl ca-certificates)
elif [ "$mode" != --build-only ]; then
  packages+=(
    ccache git clang-format-16 clang-16 libclang-rt-16-dev
    googletest libgtest-dev libgmock-dev libbenchmark-dev redis-server openssl curl python3 ca-certificates
    nghttp2-client python3-h2 python3-grpcio python3-grpc-tools python3-jwt python3-cryptography
    nginx caddy testssl.sh
  )
  # The LLM clients' test (tests/clients/) runs npm's packages on Node: Debian's nodejs and npm,
  # unless a node and an npm are there already (NodeSource's nodejs brings its own npm, and
  # Debian's npm would conflict with it).
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
  # The admin page's browser test (tests/clients/admin_page_test.py) drives Debian's chromium.
  command -v chromium >/dev/null || packages+=(chromium)
  container_packages=(
    podman buildah runc fuse-overlayfs slirp4netns uidmap containernetworking-plugins iptables
    debootstrap
  )
fi

# The packages of the arguments that are not installed yet.
missing_of() {
  local package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      echo "$package"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_containers < <(missing_of "${container_packages[@]}")
[ ${#missing[@]} -eq 0 ] && [ ${#missing_containers[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]} ${missing_containers[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#missing_containers[@]} -gt 0 ]; then
  $sudo apt-get install -y -qq "${missing_containers[@]}" >/dev/null
fi
