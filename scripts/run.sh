#!/usr/bin/env bash
# Installs what sluice needs, builds Release and starts sluice on ./proxy.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target sluice
exec build/release/sluice run -c proxy.yaml "$@"
