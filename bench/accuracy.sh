#!/usr/bin/env bash
# Limiter accuracy: how far each algorithm lets a key exceed its nominal limit. One bursty trace
# (bench/accuracy/trace.py: REQUESTS requests from SOURCES client IPs, deterministic) goes through
# `sluice replay` once per algorithm, each config (bench/accuracy/*.yaml) with the same LIMIT per
# WINDOW seconds. For every key, bench/accuracy/analyse.py finds the most requests admitted in any
# span of one window, (t - WINDOW, t] at the trace's millisecond resolution. The table gives, as
# multiples of LIMIT, the worst key, the 99th percentile over keys and the median over the keys
# that had a request refused; then the share of requests admitted and how many keys went above
# LIMIT somewhere. docs/accuracy.md has the results and what they mean. `concurrency` is left
# out: it bounds requests in flight, not requests per window.
#
# Run (from the repository root, after a release build):
#   cmake --preset release && cmake --build --preset release --target sluice
#   bash bench/accuracy.sh                    # 4 M requests: 1-2 minutes on 2 cores
#   REQUESTS=400000 bash bench/accuracy.sh    # a quick run: the same traffic, a tenth as long
#
# Environment (defaults in brackets):
#   SLUICE_BIN (or SLUICE) [build/release/sluice]  REQUESTS [4000000]  SOURCES [5000]
#   LIMIT [50]  WINDOW [10] (whole seconds)  SEED [1]  KEEP_WORKDIR [0] (1 keeps the trace)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_name=accuracy.sh
SLUICE_BIN=${SLUICE_BIN:-${SLUICE:-build/release/sluice}}
[[ $SLUICE_BIN == /* ]] || SLUICE_BIN=$repo_root/$SLUICE_BIN
REQUESTS=${REQUESTS:-4000000}
SOURCES=${SOURCES:-5000}
LIMIT=${LIMIT:-50}
WINDOW=${WINDOW:-10}
SEED=${SEED:-1}
KEEP_WORKDIR=${KEEP_WORKDIR:-0}
python=/usr/bin/python3
here=$repo_root/bench/accuracy
# shellcheck source=scripts/lib/processes.sh
source "$repo_root/scripts/lib/processes.sh"
# shellcheck source=bench/lib/harness.sh
source "$repo_root/bench/lib/harness.sh"

[[ -x $SLUICE_BIN ]] || die "no sluice binary at $SLUICE_BIN (build the release preset first)"
[[ -x $python ]] || die "$python is missing (apt-get install python3)"
for number in REQUESTS SOURCES LIMIT WINDOW SEED; do
  [[ ${!number} =~ ^[1-9][0-9]*$ ]] || die "$number must be a whole number above 0"
done
# The configs read these through ${VAR}; leaky_bucket holds burst + 1.
export LIMIT WINDOW LEAKY_BURST=$((LIMIT - 1))

# config name | the table's label
algorithms=(
  "fixed_window|fixed_window, limit $LIMIT per ${WINDOW}s"
  "sliding_log|sliding_log, limit $LIMIT per ${WINDOW}s"
  "sliding_window|sliding_window, limit $LIMIT per ${WINDOW}s"
  "wheel|wheel, limit $LIMIT per ${WINDOW}s, 10 slots"
  "token_bucket|token_bucket, rate $LIMIT/${WINDOW}s, burst $LIMIT"
  "leaky_bucket|leaky_bucket, rate $LIMIT/${WINDOW}s, burst $LEAKY_BURST"
  "leaky_bucket_paced|leaky_bucket, rate $LIMIT/${WINDOW}s, burst 0"
)

work=$(mktemp -d)
started=$SECONDS
log "$("$SLUICE_BIN" version 2>&1 | head -n 1)"
"$python" "$here/trace.py" --requests "$REQUESTS" --sources "$SOURCES" --limit "$LIMIT" \
  --window "$WINDOW" --seed "$SEED" "$work/trace.jsonl" "$work/trace.index" 2>"$work/trace.log" ||
  die "trace.py failed: $(tail -n 3 "$work/trace.log")"
log "$(cat "$work/trace.log")"

rows=()
for algorithm in "${algorithms[@]}"; do
  config=${algorithm%%|*}
  log "replaying through $config"
  "$SLUICE_BIN" replay -c "$here/$config.yaml" "$work/trace.jsonl" 2>"$work/$config.log" |
    "$python" "$here/analyse.py" --limit "$LIMIT" --window "$WINDOW" "$work/trace.index" \
      >"$work/$config.figures" 2>>"$work/$config.log" ||
    die "$config: replay or analysis failed; see $work/$config.log"
  read -r worst p99 median admitted over <"$work/$config.figures"
  log "$config: $(grep '^worst:' "$work/$config.log")"
  rows+=("| ${algorithm#*|} | ${worst}× | ${p99}× | ${median}× | ${admitted}% | $over |")
done

echo
echo "$(cat "$work/trace.log"); limit $LIMIT per ${WINDOW}s per client IP; $((SECONDS - started)) s"
echo
echo "Most requests admitted in one window, as a multiple of the limit:"
echo
echo "| algorithm | worst key | 99th percentile of keys | median of limited keys" \
  "| requests admitted | keys above the limit |"
echo "|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
