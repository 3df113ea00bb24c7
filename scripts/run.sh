#!/usr/bin/env bash
# Installs what sluice needs, builds Release and starts sluice on ./proxy.yaml, in front of a
# small demo API on 127.0.0.1:9000 (the upstream proxy.yaml names), which stops with sluice.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --run
cmake --preset run >/dev/null
cmake --build --preset run --target sluice demo_api

if ! (exec 3<>/dev/tcp/127.0.0.1/9000) 2>/dev/null; then
  build/run/demo_api 9000 &
  demo=$!
  trap 'kill "$demo" 2>/dev/null || true' EXIT
fi
echo "try: curl -i localhost:8080/   and a burst: for i in \$(seq 15); do curl -s -o /dev/null -w '%{http_code} ' localhost:8080/; done"
build/run/sluice run -c proxy.yaml "$@"
