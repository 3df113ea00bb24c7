"""How far a limiter let each key exceed its limit, from `sluice replay`'s decisions.

Usage: sluice replay -c CONFIG TRACE.jsonl | python3 analyse.py --limit L --window SECONDS INDEX

INDEX is the trace's side file from trace.py (each request's source and time in ms, in trace
order); the decisions come on standard input, one line per request, in the same order. For each
source, the admitted requests' times are swept with a span of one window, (t - window, t] at the
trace's millisecond resolution, and the fullest span is that source's worst. One line comes out:

    WORST P99 LIMITED_MEDIAN ADMITTED_PERCENT KEYS_OVER

as multiples of the limit: the worst over all sources, the 99th percentile over sources (nearest
rank), and the median over the sources that had a request refused (those that pushed against
the limit); then the percentage of requests admitted and the number of sources whose worst is
above the limit. Standard error gets where the worst span is, to look at in the trace.
"""

import argparse
import statistics
import sys
from array import array
from collections import deque


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--window", type=int, required=True, help="seconds")
    parser.add_argument("index")
    args = parser.parse_args()

    with open(args.index, "rb") as index:
        data = index.read()
    count = len(data) // 12
    sources, times = array("I"), array("q")
    sources.frombytes(data[: 4 * count])
    times.frombytes(data[4 * count :])
    del data

    window_ms = args.window * 1000
    spans = {}  # source -> its admitted times within the last window
    worst = {}  # source -> (most admitted in one span, the span's end in ms)
    limited = set()  # sources with a request refused
    admitted = lines = 0
    for i, line in enumerate(sys.stdin.buffer):
        lines += 1
        if not line.startswith(b'{"i":%d,' % i):
            sys.exit(f"analyse.py: decision line {i + 1} is not request {i}: {line[:60]!r}")
        if b'"decision":"allowed"' not in line:
            if b'"decision":"limited"' not in line:
                sys.exit(f"analyse.py: decision line {i + 1} is neither allowed nor limited "
                         "(the configs are for reject mode)")
            limited.add(sources[i])
            continue
        admitted += 1
        source, t = sources[i], times[i]
        span = spans.get(source)
        if span is None:
            span = spans[source] = deque()
        span.append(t)
        while span[0] <= t - window_ms:
            span.popleft()
        if len(span) > worst.get(source, (0, 0))[0]:
            worst[source] = (len(span), t)
    if lines != count:
        sys.exit(f"analyse.py: {lines} decisions for {count} requests")

    # Sources with no request admitted count as 0.
    from_sources = len(set(sources))
    ratios = sorted(n / args.limit for n, _ in worst.values())
    ratios = [0.0] * (from_sources - len(ratios)) + ratios
    p99 = ratios[-(-99 * from_sources // 100) - 1]  # nearest rank: the ceil(0.99 N)th
    pushed = [worst.get(source, (0, 0))[0] / args.limit for source in limited]
    median = statistics.median(pushed) if pushed else 0.0
    top, (n, end) = max(worst.items(), key=lambda item: item[1][0])
    print(f"{ratios[-1]:.2f} {p99:.2f} {median:.2f} {100 * admitted / count:.1f} "
          f"{sum(r > 1 for r in ratios)}")
    print(f"worst: source {top} (10.{top >> 16}.{(top >> 8) & 255}.{top & 255}), {n} admitted "
          f"in ({(end - window_ms) / 1000:.3f}, {end / 1000:.3f}]", file=sys.stderr)


if __name__ == "__main__":
    main()
