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

# Builds that run while the tests before them run. Tests wait on sockets and timers most of the
# time (two at a time they keep about one core busy), so the next builds take the CPU they leave,
# at the lowest priority, so that their timing is not disturbed. The builds queued together run
# one after the other, in a session of their own (so that an early exit stops all of them: cmake,
# ninja and the compilers); each one's output goes to build/PRESET-build.log, shown when it fails,
# and its exit status to build/PRESET-build.status when it ends. A queue stops at its first
# failed build.
background_builds=""
# shellcheck disable=SC2317  # called by the trap
stop_background_builds() {
  [ -z "$background_builds" ] || kill -- "-$background_builds" 2>/dev/null || true
}
trap stop_background_builds EXIT
# Queues builds, each given as PRESET or PRESET:TARGET,TARGET,... .
start_background_builds() {
  local queue="" spec preset targets
  for spec in "$@"; do
    preset=${spec%%:*}
    targets=""
    [ "$spec" = "$preset" ] || targets="--target ${spec#*:}"
    targets=${targets//,/ }
    cmake --preset "$preset" >/dev/null
    rm -f "build/$preset-build.status"
    queue+="cmake --build --preset $preset $targets >build/$preset-build.log 2>&1; status=\$?; "
    queue+="echo \$status >build/$preset-build.status; [ \$status -eq 0 ] || exit \$status; "
    echo "== $preset build, in the background while the tests run (its log: build/$preset-build.log)"
  done
  setsid nice -n 19 bash -c "$queue" &
  background_builds=$!
}
# Waits for a queued build; a failed build ends the script, as a build in the foreground.
finish_background_build() {
  local preset=$1
  local status_file=build/$preset-build.status
  while [ ! -f "$status_file" ] && kill -0 "$background_builds" 2>/dev/null; do
    sleep 1
  done
  if [ "$(cat "$status_file" 2>/dev/null)" != 0 ]; then
    tail -n 200 "build/$preset-build.log"
    echo "the $preset build in the background failed: its log is build/$preset-build.log" >&2
    exit 1
  fi
  tail -n 1 "build/$preset-build.log"
}

status=0
echo "== test"
cmake --preset test >/dev/null
cmake --build --preset test
phase_done "test build"

start_background_builds asan
run_ctest --preset test || status=1
phase_done "test tests (asan build alongside)"
finish_background_build asan
phase_done "asan build, the rest"

# The tsan build compiles only the test files its suites are in (SLUICE_THREAD_TESTS_ONLY), so
# that the fuzz build after it starts while the asan tests still run.
start_background_builds tsan:limiter_tests,pipeline_tests,proxy_tests,integration_tests,sluice fuzz
echo "== asan"
run_ctest --preset asan || status=1
phase_done "asan tests (tsan and fuzz builds alongside)"
finish_background_build tsan
phase_done "tsan build, the rest"

# Its suites are in the test files tests/CMakeLists.txt lists first for limiter_tests,
# pipeline_tests and proxy_tests, the only ones the tsan preset builds: a suite added here must be
# in one of them.
echo "== tsan (threads on shared keys, the proxy's event loops)"
run_ctest --preset tsan --tests-regex 'ConcurrentDecisions\.|Proxy\.|AdminPort\.|ConnectionLimit\.|ConcurrencyLimit\.|SluiceBinary\.|SharedLimit\.|TlsListener\.|MutualTls\.|TlsReload\.|HttpsUpstream\.|Http2Downstream\.|Http2Upstream\.|GrpcDownstream\.|JwksRefresher\.|RuntimeControl\.|SharedControl\.|TopKeys\.|FileWatcher\.|OperatorPage\.|DecideService\.|RlsService\.|RlsReplicas\.' || status=1
phase_done "tsan tests (fuzz build alongside, if not done)"

echo "== image (docker/test-image.sh: the runtime image around the test build's binaries, run, health, 200s then 429s, SIGTERM)"
if bash docker/test-image.sh --prebuilt build/test; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  status=1
fi
phase_done "image"
finish_background_build fuzz
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
