#!/usr/bin/env bash
# Installs what sluice needs, then builds and runs the whole suite: a Release build (benchmarks
# included, so they keep compiling), an AddressSanitizer + UndefinedBehaviorSanitizer build, and
# the limiter's thread tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/check_layering.sh

for preset in release asan; do
  echo "== $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done

echo "== tsan (threads on shared keys)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan --target limiter_tests
ctest --preset tsan --tests-regex 'ConcurrentDecisions\.'
