"""A deterministic bursty trace for bench/accuracy.sh, as `sluice replay` JSON lines.

Usage: python3 trace.py --requests N --sources S --limit L --window SECONDS OUT.jsonl OUT.index

Every source is one client IP (10.x.y.z) with its own random stream (seeded from --seed and
its number), so the trace depends only on the arguments. Times are whole milliseconds from 0,
and windows are aligned to multiples of the window from 0, as the limiters align them. With
r = L / window (the nominal rate), the sources are of three kinds:

- steady (30%): Poisson at a heavy-tailed rate, r x 0.02 x Pareto(1.5), at most 5 r;
- on/off (50%): on for Exp(mean U(0.2, 3) windows), off for Exp(mean U(5, 50) windows), and
  Poisson at r x 0.3 x Pareto(1.3), at most 40 r, while on;
- boundary (20%): at each window boundary, with a probability of U(0.02, 0.12) per source, a
  burst of U(0.5, 1.5) x L requests in the last U(0.02, 0.3) windows before the boundary and
  U(0.5, 1.5) x L more in as long after it: the case where a fixed window admits up to 2 L.

The sources run side by side from time 0 until the trace holds N requests, so a smaller N is
the same traffic over a shorter time. OUT.index holds, in trace order, each request's source
number (uint32) and then each request's time in ms (int64), for the analyser.
"""

import argparse
import heapq
import random
import sys
from array import array


def poisson(rng, rate, start, end):
    """Times (s) of a Poisson process of `rate` per second in [start, end)."""
    t = start + rng.expovariate(rate)
    while t < end:
        yield t
        t += rng.expovariate(rate)


def steady(rng, r, window):
    yield from poisson(rng, r * min(0.02 * rng.paretovariate(1.5), 5.0), 0.0, float("inf"))


def on_off(rng, r, window):
    on_mean = window * rng.uniform(0.2, 3.0)
    off_mean = window * rng.uniform(5.0, 50.0)
    rate = r * min(0.3 * rng.paretovariate(1.3), 40.0)
    t = rng.uniform(0.0, off_mean)  # sources do not all start at 0
    while True:
        end = t + rng.expovariate(1.0 / on_mean)
        yield from poisson(rng, rate, t, end)
        t = end + rng.expovariate(1.0 / off_mean)


def boundary(rng, r, window):
    limit = r * window
    chance = rng.uniform(0.02, 0.12)
    k = 1
    while True:
        if rng.random() < chance:
            edge = k * window
            half = window * rng.uniform(0.02, 0.3)
            for start in (edge - half, edge):
                yield from poisson(rng, rng.uniform(0.5, 1.5) * limit / half, start, start + half)
        k += 1


KINDS = [(0.3, steady), (0.5, on_off), (0.2, boundary)]


def source(number, sources, seed, r, window):
    """Trace entries of one source, in time order: ms * sources + number."""
    rng = random.Random(seed * 1_000_003 + number)
    pick, kind = rng.random(), None
    for share, kind in KINDS:
        if pick < share:
            break
        pick -= share
    for t in kind(rng, r, window):
        yield int(t * 1000) * sources + number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4_000_000)
    parser.add_argument("--sources", type=int, default=5000)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--window", type=int, default=10, help="seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("trace")
    parser.add_argument("index")
    args = parser.parse_args()
    if args.sources > 1 << 24:
        sys.exit("trace.py: at most 16777216 sources (one 10.x.y.z address each)")

    r = args.limit / args.window
    merged = heapq.merge(*(source(n, args.sources, args.seed, r, args.window)
                           for n in range(args.sources)))
    numbers, times = array("I"), array("q")
    ips = [f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}" for n in range(args.sources)]
    with open(args.trace, "w", encoding="ascii") as out:
        lines = []
        for _, entry in zip(range(args.requests), merged):
            ms, number = divmod(entry, args.sources)
            numbers.append(number)
            times.append(ms)
            lines.append(f'{{"t":{ms // 1000}.{ms % 1000:03d},"ip":"{ips[number]}"}}\n')
            if len(lines) == 100_000:
                out.writelines(lines)
                lines.clear()
        out.writelines(lines)
    with open(args.index, "wb") as out:
        numbers.tofile(out)
        times.tofile(out)
    span = times[-1] / 1000 if times else 0.0
    print(f"trace: {len(times)} requests from {args.sources} sources over {span:.0f} s "
          f"({span / args.window:.0f} windows of {args.window} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
