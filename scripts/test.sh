#!/usr/bin/env bash
# Installs what sluice needs, then builds and runs the whole suite: an optimised build without
# link-time optimisation (the `test` preset, benchmarks included so that they keep compiling), an
# AddressSanitizer + UndefinedBehaviorSanitizer build, the thread tests under ThreadSanitizer, the
# container image's test (run with podman; skipped when podman is missing), and every fuzz target
# for 30 s (scripts/fuzz.sh, clang-16). Before the builds, `npm ci` installs the LLM clients'
# test's npm packages (tests/clients/); when it cannot, that test is skipped with a warning. Tests
# run two at a time (the presets' `jobs`), and the next build runs alongside them at the lowest
# priority; ccache keeps compiled objects between runs. Ends with one line that counts every test
# run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/check_layering.sh
bash scripts/check_test_mirror.sh
bash scripts/format.sh --check

passed=0
failed=0
skipped=0
# How long each phase took (seconds), printed at the end: where the test command's time goes.
timings=""
phase_started=0  # the script's start
# Ends the phase named $1 and starts the next one.
phase_done() {
  timings+="${timings:+, }$1 $((SECONDS - phase_started)) s"
  phase_started=$SECONDS
}
phase_done "dependencies and checks"

# The LLM clients' test (LlmClients.*, tests/clients/) needs npm's openai and @anthropic-ai/sdk,
# and the admin page's (AdminPage.*) puppeteer-core, as tests/clients/package-lock.json pins
# them. Without the registry those tests are skipped (they exit 77 when they are missing), with
# a warning here and at the end, and nothing fails for it.
clients_warning=""
if ! (cd tests/clients && timeout 300 npm ci --no-audit --no-fund --loglevel=error); then
  rm -rf tests/clients/node_modules  # no half-installed packages: the test skips
  clients_warning="WARNING: npm ci in tests/clients failed (is the npm registry reachable?): the LLM clients' test, LlmClients.OfficialSdksThroughSluice, and the admin page's, AdminPage.*, are SKIPPED"
  echo "$clients_warning" >&2
fi
phase_done "npm packages"

# Runs ctest with the given arguments and adds its counts to the totals.
run_ctest() {
  local log
  log=$(mktemp)
  local status=0
  ctest "$@" 2>&1 | tee "$log" || status=$?
  local summary
  summary=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" || true)
  # ctest counts a skipped test (exit 77, SKIP_RETURN_CODE) as passed, and lists it.
  skipped=$((skipped + $(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)))
  rm -f "$log"
  if [ -n "$summary" ]; then
    local total failures
    failures=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
    total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$summary")
    passed=$((passed + total - failures))
    failed=$((failed + failures))
  fi
  return "$status"
}

# A build that runs while the tests before it run. Tests wait on sockets and timers most of the
# time (two at a time they keep about one core busy), so the next build takes the CPU they leave,
# at the lowest priority, so that their timing is not disturbed. Its output goes to
# build/PRESET-build.log, shown when it fails. It runs in a session of its own, so that an early
# exit stops the whole build (cmake, ninja and the compilers).
background_build=""
background_log=""
# shellcheck disable=SC2317  # called by the trap
stop_background_build() {
  [ -z "$background_build" ] || kill -- "-$background_build" 2>/dev/null || true
}
trap stop_background_build EXIT
start_background_build() {
  local preset=$1
  shift
  cmake --preset "$preset" >/dev/null
  background_log=build/$preset-build.log
  local targets=()
  [ $# -eq 0 ] || targets=(--target "$@")
  setsid nice -n 19 cmake --build --preset "$preset" "${targets[@]}" >"$background_log" 2>&1 &
  background_build=$!
  echo "== $preset build, in the background while the tests run (its log: $background_log)"
}
# Waits for the background build; a failed build ends the script, as a build in the foreground.
finish_background_build() {
  if ! wait "$background_build"; then
    tail -n 200 "$background_log"
    echo "the build in the background failed: its log is $background_log" >&2
    exit 1
  fi
  background_build=""
  tail -n 1 "$background_log"
}

status=0
echo "== test"
cmake --preset test >/dev/null
cmake --build --preset test
phase_done "test build"

start_background_build asan
run_ctest --preset test || status=1
phase_done "test tests (asan build alongside)"
finish_background_build
phase_done "asan build, the rest"

start_background_build tsan limiter_tests pipeline_tests proxy_tests integration_tests sluice
echo "== asan"
run_ctest --preset asan || status=1
phase_done "asan tests (tsan build alongside)"
finish_background_build
phase_done "tsan build, the rest"

start_background_build fuzz
echo "== tsan (threads on shared keys, the proxy's event loops)"
run_ctest --preset tsan --tests-regex 'ConcurrentDecisions\.|Proxy\.|AdminPort\.|ConnectionLimit\.|ConcurrencyLimit\.|SluiceBinary\.|SharedLimit\.|TlsListener\.|MutualTls\.|TlsReload\.|HttpsUpstream\.|Http2Downstream\.|Http2Upstream\.|GrpcDownstream\.|JwksRefresher\.|RuntimeControl\.|SharedControl\.|TopKeys\.|FileWatcher\.|OperatorPage\.|DecideService\.|RlsService\.|RlsReplicas\.' || status=1
phase_done "tsan tests (fuzz build alongside)"

echo "== image (docker/test-image.sh: the runtime image around the test build's binaries, run, health, 200s then 429s, SIGTERM)"
if bash docker/test-image.sh --prebuilt build/test; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  status=1
fi
phase_done "image"
finish_background_build
phase_done "fuzz build, the rest"

echo "== resilience (scripts/resilience.sh on the test build: slowloris, key flood, reloads, upstream and Redis restarts, connection limit, 60 s soak, herds; about 2.5 min)"
if bash scripts/resilience.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); status=1; fi
phase_done "resilience"
echo "== fuzz (scripts/fuzz.sh: every libFuzzer target for 30 s under ASan + UBSan)"
if bash scripts/fuzz.sh all 30; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  status=1
fi
phase_done "fuzz runs"

echo
echo "times: $timings"
[ -z "$clients_warning" ] || echo "$clients_warning"
echo "suite: $passed passed ($skipped of them skipped), $failed failed"
exit "$status"
