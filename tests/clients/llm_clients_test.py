"""The official LLM API clients through sluice: `openai` (v4) and `@anthropic-ai/sdk` from npm,
run by Node against a fake OpenAI- and Anthropic-compatible upstream
(tests/support/llm_upstream.py), each call's charge checked against the upstream's own count.

Usage: llm_clients_test.py --sluice BINARY [--node NODE] [--redis-server REDIS_SERVER]

Checks, with the memory store:
- every call of both SDKs (OpenAI chat completions and the responses API, JSON and streamed;
  Anthropic messages.create, with and without stream, and messages.stream) reaches the SDK
  whole (status 200, the reply's text, the usage the upstream gave), and its limiter's
  sluice_cost_charged_total grows by exactly the upstream's count (Anthropic's cache tokens
  included), with one `reported` reading;
- a stream without usage (no stream_options.include_usage) and streams cut short before their
  usage are charged the route's estimate, read as `missing`; an Anthropic stream cut after
  message_start is charged what it said; the SDK sees the cut as an error;
- a key past its budget is in debt: both SDKs get 429 (the SDK's error, status 429) with a
  Retry-After that counts the debt, on JSON and streamed calls, and nothing more is charged.
With the Redis store (when redis-server is installed): two sluice processes on one redis-server,
each charged exactly for its own calls, and one budget: what calls through one spend, the other
refuses.

Exits 77 (ctest's SKIP_RETURN_CODE) when Node or the npm packages are missing: scripts/test.sh
installs them with `npm ci` in tests/clients and warns when it cannot.
"""
import argparse
import ctypes
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
UPSTREAM = os.path.join(SOURCE, "tests", "support", "llm_upstream.py")
DRIVER = os.path.join(HERE, "llm_clients.mjs")
SKIP = 77

BIG = "sk-test-big-budget"    # burst 1000000: never limited here
SMALL = "sk-test-small-budget"  # burst 500 (an override): one call puts it in debt
SMALL_BURST = 500
RATE_PER_SECOND = 1  # 60/m
ESTIMATES = {"chat": 50, "responses": 60, "messages": 40}
LIMITER = {"chat": "openai-tokens", "responses": "openai-tokens", "messages": "anthropic-tokens"}
SDK = {"chat": "openai", "responses": "openai", "messages": "anthropic"}
READINGS = ("reported", "missing", "invalid")  # sluice_cost_readings_total's results

CONFIG = """\
listen: "127.0.0.1:0"
admin: "127.0.0.1:{admin}"
threads: 2
upstream: "http://127.0.0.1:{upstream}"
log: {{level: warn, format: json, access: true}}
{store}
limiters:
  openai-tokens:
    {{algorithm: token_bucket, rate: 60/m, burst: 1000000, key: bearer, cost: response,
     overrides: {{"{small}": {{burst: {small_burst}}}}}}}
  anthropic-tokens:
    {{algorithm: token_bucket, rate: 60/m, burst: 1000000, key: "header:X-Api-Key",
     cost: response, overrides: {{"{small}": {{burst: {small_burst}}}}}}}
routes:
  - {{name: chat, match: {{path: /v1/chat/completions}}, limiters: [openai-tokens],
     cost_from: {{usage: openai, count: total, estimate: {chat}}}}}
  - {{name: responses, match: {{path: /v1/responses}}, limiters: [openai-tokens],
     cost_from: {{usage: openai, count: total, estimate: {responses}}}}}
  - {{name: messages, match: {{path: /v1/messages}}, limiters: [anthropic-tokens],
     cost_from: {{usage: anthropic, count: total, estimate: {messages}}}}}
"""


class Failure(Exception):
    pass


def die_with_parent():
    """In the child: SIGKILL when the test dies (a ctest timeout kills only the test)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_open(port):
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_until(what, condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


class Processes:
    """Every child the test starts, killed at the end whatever happens."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.children = []

    def start(self, name, argv, **kwargs):
        log = open(os.path.join(self.scratch, name + ".log"), "wb")
        kwargs.setdefault("stdout", log)
        child = subprocess.Popen(argv, stderr=log, stdin=kwargs.pop("stdin", subprocess.DEVNULL),
                                 preexec_fn=die_with_parent, **kwargs)
        child.name = name
        child.log_path = log.name
        self.children.append(child)
        return child

    def stop(self, child):
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def close(self):
        for child in reversed(self.children):
            if child.poll() is None:
                child.kill()
                child.wait()

    def logs(self):
        text = ""
        for child in self.children:
            with open(child.log_path, errors="replace") as log:
                lines = log.read().splitlines()
            text += f"--- {child.name} (last lines)\n" + "\n".join(lines[-30:]) + "\n"
        return text


class Upstream:
    def __init__(self, processes):
        self.ledger = os.path.join(processes.scratch, "ledger.jsonl")
        open(self.ledger, "w").close()
        self.process = processes.start("upstream", [sys.executable, UPSTREAM, self.ledger],
                                       stdout=subprocess.PIPE)
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            raise Failure(f"the upstream did not start: {line!r}")
        self.port = int(line)

    def entries(self):
        with open(self.ledger) as ledger:
            return [json.loads(line) for line in ledger if line.strip()]


class Sluice:
    def __init__(self, processes, binary, name, upstream_port, store=""):
        self.name = name
        config = os.path.join(processes.scratch, name + ".yaml")
        for attempt in range(3):
            # The admin port was free when picked; another process may take it first.
            self.admin = free_port()
            with open(config, "w") as out:
                out.write(CONFIG.format(admin=self.admin, upstream=upstream_port, store=store,
                                        small=SMALL, small_burst=SMALL_BURST, **ESTIMATES))
            self.process = processes.start(name, [binary, "run", "-c", config])
            self.log_path = self.process.log_path
            try:
                self.port = wait_until(f"{name} to listen", self.listening)
                wait_until(f"{name}'s admin port", lambda: port_open(self.admin))
                self.base = f"http://127.0.0.1:{self.port}"
                return
            except Failure:
                processes.stop(self.process)
                if attempt == 2:
                    raise

    def listening(self):
        if self.process.poll() is not None:
            raise Failure(f"{self.name} exited with {self.process.returncode}")
        with open(self.log_path, errors="replace") as log:
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
        return int(found.group(1)) if found else None

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.admin}/metrics", timeout=5) as page:
            text = page.read().decode()
        values = {}
        for line in text.splitlines():
            found = re.match(r'(sluice_cost_\w+)\{([^}]*)\} (\d+)$', line)
            if found:
                labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', found.group(2))))
                values[(found.group(1), labels)] = int(found.group(3))
        return values

    def charged(self, limiter):
        return self.metrics().get(("sluice_cost_charged_total", (("limiter", limiter),)), 0)

    def readings(self, limiter, result):
        return self.metrics().get(
            ("sluice_cost_readings_total", (("limiter", limiter), ("result", result))), 0)

    def access_log(self):
        with open(self.log_path, errors="replace") as log:
            return [json.loads(line) for line in log if line.startswith('{"time"')]


class Clients:
    """The Node script, one call at a time."""

    def __init__(self, processes, node):
        self.process = processes.start("clients", [node, DRIVER], cwd=HERE, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.buffer = b""
        self.count = 0

    def call(self, **call):
        self.count += 1
        call["id"] = self.count
        self.process.stdin.write((json.dumps(call) + "\n").encode())
        self.process.stdin.flush()
        deadline = time.monotonic() + 15
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise Failure(f"no answer from the clients within 15 s to {call}")
            piece = os.read(self.process.stdout.fileno(), 65536)
            if not piece:
                raise Failure(f"the clients' script ended (status {self.process.wait()})")
            self.buffer += piece
        line, self.buffer = self.buffer.split(b"\n", 1)
        result = json.loads(line)
        if result.get("id") != call["id"]:
            raise Failure(f"answer {result} to call {call}")
        return result


class Test:
    def __init__(self, clients, upstream):
        self.clients = clients
        self.upstream = upstream
        self.checks = 0
        self.retry_afters = []

    def check(self, condition, message):
        self.checks += 1
        if not condition:
            raise Failure(message)

    def call(self, through, api, mode, model="model-x", prompt="Say hello.", max_tokens=100,
             key=BIG):
        return self.clients.call(sdk=SDK[api], api=api, mode=mode, base=through.base, key=key,
                                 model=model, prompt=prompt, max_tokens=max_tokens)

    def charged_call(self, through, api, mode, expect="reported", **kwargs):
        """A call that must pass whole (or be cut, for a "cut" model) and be charged exactly."""
        limiter = LIMITER[api]
        before_charged = through.charged(limiter)
        before_readings = {result: through.readings(limiter, result) for result in READINGS}
        before_calls = len(self.upstream.entries())
        before_lines = len(through.access_log())
        result = self.call(through, api, mode, **kwargs)
        what = f"{through.name} {api} {mode} {kwargs}: {result}"
        entries = self.upstream.entries()
        self.check(len(entries) == before_calls + 1, f"{what}: the upstream saw no call")
        entry = entries[-1]
        if entry["cut"]:
            self.check(not result["ok"] and result["status"] is None,
                       f"{what}: the SDK did not see the stream cut short")
            self.check(entry["text"].startswith(result["text"]) and result["text"],
                       f"{what}: the text before the cut is not the upstream's")
        else:
            self.check(result["ok"] and result["status"] == 200, f"{what}: not a 200")
            self.check(result["text"] == entry["text"],
                       f"{what}: the text differs from the upstream's {entry['text']!r}")
            if entry["usage"] is not None:
                seen = result["usage"] or {}
                for field in ("input_tokens", "output_tokens", "prompt_tokens",
                              "completion_tokens", "total_tokens"):
                    if field in seen:
                        self.check(seen[field] == entry["usage"][field],
                                   f"{what}: the SDK saw {field} {seen[field]}, the upstream "
                                   f"said {entry['usage'][field]}")
        if entry["usage"] is not None:
            cost = entry["cost"]  # the upstream's own count
        elif entry["said_before_cut"] is not None:
            cost = entry["said_before_cut"]
        else:
            cost = ESTIMATES[api]
        # The charge lands when the response is over, which the client may see a moment before.
        try:
            wait_until(f"{limiter}'s charge",
                       lambda: through.charged(limiter) >= before_charged + cost, timeout=3)
        except Failure:
            pass
        time.sleep(0.02)  # a charge counted twice would show now
        charged = through.charged(limiter) - before_charged
        self.check(charged == cost, f"{what}: charged {charged}, the upstream's count is {cost}")
        readings = {result: through.readings(limiter, result) - before for result, before in
                    before_readings.items()}
        wanted = {result: int(result == expect) for result in READINGS}
        self.check(readings == wanted, f"{what}: readings {readings}, not {wanted}")
        # The access log's line says the same.
        lines = wait_until(f"{through.name}'s access log line",
                           lambda: through.access_log()[before_lines:], timeout=3)
        self.check(len(lines) == 1 and lines[0].get("route") == api and
                   lines[0].get("cost") == cost,
                   f"{what}: access log {lines}, not one line of route {api} with cost {cost}")
        return result, cost

    def refused_call(self, through, api, mode, debt, key=SMALL):
        """A call from a key in debt: a 429 to the SDK with a Retry-After, nothing charged."""
        limiter = LIMITER[api]
        before_charged = through.charged(limiter)
        before_calls = len(self.upstream.entries())
        before_lines = len(through.access_log())
        result = self.call(through, api, mode, key=key)
        what = f"{through.name} {api} {mode} with {debt} of debt: {result}"
        self.check(not result["ok"] and result["status"] == 429, f"{what}: not refused with 429")
        retry_after = result["retry_after"]
        self.check(retry_after is not None and retry_after.isdigit(),
                   f"{what}: no Retry-After in seconds")
        # At 1 token a second: the debt paid back, then the route's estimate (admission asks
        # for it); less a second or two the test took since the debt was made.
        high = (debt + ESTIMATES[api]) // RATE_PER_SECOND
        low = high - 2
        self.check(low <= int(retry_after) <= high,
                   f"{what}: Retry-After {retry_after}, not within [{low}, {high}]")
        self.check(len(self.upstream.entries()) == before_calls,
                   f"{what}: a refused call reached the upstream")
        self.check(through.charged(limiter) == before_charged, f"{what}: a refusal was charged")
        lines = wait_until(f"{through.name}'s access log line",
                           lambda: through.access_log()[before_lines:], timeout=3)
        self.check(len(lines) == 1 and lines[0].get("status") == 429 and
                   lines[0].get("decision") == "limited" and "cost" not in lines[0],
                   f"{what}: access log {lines}, not one line limited with 429 and no cost")
        self.retry_afters.append(int(retry_after))


def memory_store(test, sluice):
    exact = [
        ("chat", "json", {"max_tokens": 100}),
        ("chat", "stream", {"max_tokens": 200, "prompt": "Stream it, please."}),
        ("responses", "json", {"max_tokens": 150}),
        ("responses", "stream", {"max_tokens": 250, "prompt": "A longer prompt, streamed."}),
        ("messages", "json", {"max_tokens": 300}),
        ("messages", "json", {"max_tokens": 120, "model": "model-cached"}),
        ("messages", "stream", {"max_tokens": 90, "model": "model-cached"}),
        ("messages", "helper", {"max_tokens": 400}),
    ]
    total = {"openai-tokens": 0, "anthropic-tokens": 0}
    start = {limiter: sluice.charged(limiter) for limiter in total}
    for api, mode, kwargs in exact:
        _, cost = test.charged_call(sluice, api, mode, **kwargs)
        total[LIMITER[api]] += cost
        print(f"  {api} {mode} {kwargs}: charged {cost}, as the upstream counted")
    estimated = [
        ("chat", "stream-no-usage", {"max_tokens": 70}, "missing"),
        ("chat", "stream", {"max_tokens": 80, "model": "model-cut"}, "missing"),
        ("responses", "stream", {"max_tokens": 80, "model": "model-cut"}, "missing"),
        ("messages", "stream", {"max_tokens": 80, "model": "model-cut"}, "reported"),
        ("messages", "helper", {"max_tokens": 80, "model": "model-cut-cached"}, "reported"),
    ]
    for api, mode, kwargs, expect in estimated:
        _, cost = test.charged_call(sluice, api, mode, expect=expect, **kwargs)
        total[LIMITER[api]] += cost
        print(f"  {api} {mode} {kwargs}: charged {cost} ({expect})")
    for limiter, cost in total.items():
        test.check(sluice.charged(limiter) - start[limiter] == cost,
                   f"{limiter}: charged {sluice.charged(limiter) - start[limiter]} in all, "
                   f"the upstream counted {cost}")

    # Debt: one call puts the small key past its budget; then every call is refused, on every
    # route of its limiter (OpenAI's chat completions and responses API share one).
    for api, refusals in (("chat", [("chat", "json"), ("chat", "stream"), ("responses", "json"),
                                    ("responses", "stream")]),
                          ("messages", [("messages", "json"), ("messages", "stream"),
                                        ("messages", "helper")])):
        _, cost = test.charged_call(sluice, api, "json", max_tokens=700, key=SMALL)
        debt = cost - SMALL_BURST
        test.check(debt > 0, f"{api}: {cost} did not put a budget of {SMALL_BURST} in debt")
        for refused_api, mode in refusals:
            test.refused_call(sluice, refused_api, mode, debt)
        waits = test.retry_afters[-len(refusals):]
        print(f"  {LIMITER[api]}: {cost} charged to a budget of {SMALL_BURST}, {debt} in debt; "
              f"then 429 with Retry-After {waits} to " +
              ", ".join(f"{refused_api} {mode}" for refused_api, mode in refusals))


def redis_store(test, processes, binary, redis_binary, upstream):
    for attempt in range(3):
        port = free_port()
        redis = processes.start("redis", [redis_binary, "--port", str(port), "--bind",
                                          "127.0.0.1", "--save", "", "--appendonly", "no"])
        try:
            wait_until("redis-server", lambda: redis.poll() is not None or port_open(port))
            if redis.poll() is None:
                break
        except Failure:
            pass
        processes.stop(redis)
        if attempt == 2:
            raise Failure("redis-server did not start")
    store = f'store: {{type: redis, redis: {{url: "redis://127.0.0.1:{port}"}}}}'
    a = Sluice(processes, binary, "sluice-redis-a", upstream.port, store)
    b = Sluice(processes, binary, "sluice-redis-b", upstream.port, store)
    # Each process is charged exactly for its own calls.
    test.charged_call(a, "chat", "stream", max_tokens=123)
    test.charged_call(b, "messages", "stream", max_tokens=321, model="model-cached")
    test.check(b.charged("openai-tokens") == 0 and a.charged("anthropic-tokens") == 0,
               "a process counted the other's charges in its metrics")
    # One budget: A spends the small key's OpenAI tokens, B refuses; B spends its Anthropic
    # tokens, A refuses. The charge goes to Redis in the spending process's next batch, when it
    # is counted in its metrics; the other process is asked tens of milliseconds later.
    for spender, refuser, api in ((a, b, "chat"), (b, a, "messages")):
        _, cost = test.charged_call(spender, api, "json", max_tokens=700, key=SMALL)
        debt = cost - SMALL_BURST
        for mode in ("json", "stream"):
            test.refused_call(refuser, api, mode, debt)
        test.refused_call(spender, api, "json", debt)
        print(f"  {api}: {cost} charged through {spender.name}, 429 from {refuser.name} too "
              f"(Retry-After {test.retry_afters[-3:]})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", required=True)
    parser.add_argument("--node", default=shutil.which("node") or shutil.which("nodejs"))
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    args = parser.parse_args()
    if not args.node:
        print("SKIPPED: no node (Debian's nodejs; scripts/install-deps.sh installs it)")
        return SKIP
    missing = [package for package in ("openai", "@anthropic-ai/sdk")
               if not os.path.isfile(os.path.join(HERE, "node_modules", package,
                                                  "package.json"))]
    if missing:
        print(f"SKIPPED: {' and '.join(missing)} not installed in tests/clients/node_modules "
              "(`npm ci` there needs the npm registry; scripts/test.sh runs it and warns when it "
              "cannot)")
        return SKIP
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sluice-llm-") as scratch:
        processes = Processes(scratch)
        try:
            upstream = Upstream(processes)
            clients = Clients(processes, args.node)
            test = Test(clients, upstream)
            print("memory store:")
            memory_store(test, Sluice(processes, args.sluice, "sluice", upstream.port))
            if args.redis_server:
                print("Redis store, two sluice processes:")
                redis_store(test, processes, args.sluice, args.redis_server, upstream)
            else:
                print("Redis store: not tested (no redis-server)")
        except Failure as failure:
            print(f"FAILED: {failure}\n{processes.logs()}")
            return 1
        finally:
            processes.close()
    print(f"passed: {test.checks} checks, {clients.count} calls, "
          f"{time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
