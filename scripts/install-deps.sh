#!/usr/bin/env bash
# Installs everything sluice needs to build, test and benchmark, from Debian 12's packages only.
# Idempotent: when every package is already present it does not touch apt at all.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git clang-format-16
  libboost1.81-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libhiredis-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev redis-server
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
