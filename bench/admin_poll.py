"""What the operators' page costs the traffic: wrk forwards through sluice while a poller asks
the admin port what the page asks every second (GET /stats?since=N and GET /top?n=10), against
the same load with no poller. Rounds alternate the two; the table gives each side's medians:
wrk's requests per second and p99, sluice's CPU time per 1000 forwarded requests, and what one
poll took.

Run (from the repository root, after a build): python3 bench/admin_poll.py [--sluice BINARY]
  [--rounds 5] [--seconds 10] [--connections 32]
The upstream is an nginx worker answering 200 (bench/peers/upstream.nginx.conf); sluice has one
thread, as bench/peers.sh runs it.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSTREAM_PORT, SLUICE_PORT, ADMIN_PORT = 18190, 18191, 18192
CONFIG = f"""\
listen: "127.0.0.1:{SLUICE_PORT}"
admin: "127.0.0.1:{ADMIN_PORT}"
threads: 1
upstream: "http://127.0.0.1:{UPSTREAM_PORT}"
limits_headers: none
log: {{level: warn, format: text, access: false}}
limiters:
  per-ip: {{algorithm: token_bucket, rate: 1000000/s, burst: 1000000, key: ip}}
routes:
  - {{name: all, match: {{path_prefix: /}}, limiters: [per-ip]}}
"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_port(url):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)
    sys.exit(f"nothing answers {url}")


class Poller:
    """GET /stats?since=N and GET /top?n=10 once a second, as the page does."""

    def __init__(self):
        self.took = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        newest = 0
        while not self.stop.wait(1.0):
            started = time.perf_counter()
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{ADMIN_PORT}/stats?since={newest}") as answer:
                body = answer.read().decode()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{ADMIN_PORT}/top?n=10").read()
            except urllib.error.HTTPError:
                pass  # a build without /top
            self.took.append(time.perf_counter() - started)
            newest = int(re.search(r'"newest":(\d+)', body).group(1))

    def finish(self):
        self.stop.set()
        self.thread.join()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", default=os.path.join(ROOT, "build", "release", "sluice"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sluice-admin-poll-") as work:
        with open(os.path.join(ROOT, "bench", "peers", "upstream.nginx.conf")) as template:
            nginx_conf = template.read().replace("@DIR@", work).replace(
                "@UPSTREAM_PORT@", str(UPSTREAM_PORT))
        with open(os.path.join(work, "upstream.conf"), "w") as out:
            out.write(nginx_conf)
        with open(os.path.join(work, "proxy.yaml"), "w") as out:
            out.write(CONFIG)
        log = open(os.path.join(work, "servers.log"), "wb")
        nginx = subprocess.Popen(["nginx", "-p", work + "/", "-e", "stderr", "-c",
                                  os.path.join(work, "upstream.conf")], stdout=log, stderr=log)
        sluice = subprocess.Popen([args.sluice, "run", "-c", os.path.join(work, "proxy.yaml")],
                                  stdout=log, stderr=log)
        try:
            wait_port(f"http://127.0.0.1:{ADMIN_PORT}/healthz")
            rows = {"off": [], "on": []}
            for round_ in range(args.rounds):
                for side in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
                    poller = Poller() if side == "on" else None
                    cpu = cpu_seconds(sluice.pid)
                    report = subprocess.run(
                        ["wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "--latency",
                         f"http://127.0.0.1:{SLUICE_PORT}/"],
                        capture_output=True, text=True, check=True).stdout
                    cpu = cpu_seconds(sluice.pid) - cpu
                    took = poller.took if poller else []
                    if poller:
                        poller.finish()
                    requests = int(re.search(r"(\d+) requests in", report).group(1))
                    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", report).group(1))
                    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", report)
                    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
                    rows[side].append((rps, p99_ms, 1000 * cpu / requests * 1000,
                                       statistics.median(took) * 1000 if took else None))
                    print(f"round {round_ + 1} poll {side}: {rps:.0f} req/s, p99 {p99_ms:.2f} ms, "
                          f"{rows[side][-1][2]:.1f} ms CPU per 1000 requests"
                          + (f", a poll took {rows[side][-1][3]:.2f} ms ({len(took)} polls)"
                             if took else ""), flush=True)
            print("\n| poll | req/s | p99 ms | sluice CPU ms / 1000 requests | one poll, ms |")
            print("|---|---|---|---|---|")
            for side in ("off", "on"):
                med = [statistics.median(v[i] for v in rows[side]) if rows[side][0][i] is not None
                       else None for i in range(4)]
                print(f"| {side} | {med[0]:.0f} | {med[1]:.2f} | {med[2]:.1f} | "
                      + (f"{med[3]:.2f}" if med[3] is not None else "-") + " |")
        finally:
            sluice.terminate()
            nginx.terminate()
            sluice.wait()
            nginx.wait()


if __name__ == "__main__":
    main()
