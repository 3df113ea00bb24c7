"""The admin port's page (SPEC §10) in a real browser: Debian's chromium, headless, driven by
npm's puppeteer-core (tests/clients/admin_page.mjs), on the sluice binary with a real upstream and
a load running.

Usage: admin_page_test.py --sluice BINARY --part page|control [--artifacts DIR] [--node NODE]
                          [--chromium CHROMIUM]

`page`: the page loads with no request leaving the admin port; it draws each route's chart and
table under the load; a route named with markup shows as text and runs nothing; it fits a phone's
width; with JavaScript off the server's tables are there. Screenshots at 1366x900 and 390x844
(and the page without JavaScript) are written to DIR.

`control`: with `admin_token` set, the page's top keys match /top while the load runs (a JWT
subject holding `<script>` shown as text, never run); a wrong token is refused on the page and
the key stays limited; a reset from the page with the right token makes it pass again. It needs
/top, the runtime control and `admin_token`: on a build without them it exits 77 and says so.

Exits 77 (ctest's SKIP_RETURN_CODE) when Node, puppeteer-core or chromium are missing:
scripts/test.sh installs the npm packages with `npm ci` in tests/clients and warns when it cannot;
scripts/install-deps.sh installs chromium.
"""
import argparse
import base64
import ctypes
import hashlib
import hmac
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "admin_page.mjs")
SKIP = 77

SECRET = "admin-page-test-hmac-secret-0123456789abcdef"
ISSUER = "https://idp.test/"
TOKEN = "admin-page-test-token"
MARKUP_ROUTE = "<img src=x onerror=window.__pwned=1>"
MARKUP_KEY = "<script>window.__pwned=1</script>"
# Subjects of the load, with their shares: distinct rates, so /top's order is steady.
SUBJECTS = [("heavy", 5), (MARKUP_KEY, 3), ("light", 1)]

CONFIG = """\
listen: "127.0.0.1:{port}"
admin: "127.0.0.1:{admin}"
threads: 2
upstream: "http://127.0.0.1:{upstream}"
log: {{level: warn, access: false}}
{token}
auth:
  jwt:
    main: {{issuer: "{issuer}", keys: [{{secret: "{secret}", alg: HS256}}], algorithms: [HS256]}}
limiters:
  per-user: {{algorithm: fixed_window, limit: 1000000, window: 1m, key: "jwt:sub"}}
  per-ip: {{algorithm: fixed_window, limit: 5, window: 1h, key: ip}}
routes:
  - {{name: api, match: {{path_prefix: /api/}}, auth: {{jwt: main, required: true}}, limiters: [per-user]}}
  - {{name: ip, match: {{path: /ip}}, limiters: [per-ip]}}
  - {{name: {markup_route}, match: {{path: /markup}}}}
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


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(subject):
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": subject, "iss": ISSUER, "exp": int(time.time()) + 3600})
                 .encode())
    signed = f"{header}.{claims}".encode()
    return f"{header}.{claims}.{b64(hmac.new(SECRET.encode(), signed, hashlib.sha256).digest())}"


class Upstream(http.server.BaseHTTPRequestHandler):
    """Answers every request with 200 and a few bytes, on keep-alive connections."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body are two writes

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args):
        pass


class Load:
    """Requests to /api with the subjects' tokens in their shares, and to /markup, until stopped."""

    def __init__(self, port):
        self.port = port
        self.sent = 0
        self.statuses = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        # Each round: the subjects' tokens in their shares, then one request on the route named
        # with markup.
        requests = [("/api/items", {"Authorization": f"Bearer {jwt(subject)}"})
                    for subject, share in SUBJECTS for _ in range(share)] + [("/markup", {})]
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        while not self.stopping.is_set():
            for path, headers in requests:
                try:
                    connection.request("GET", path, headers=headers)
                    response = connection.getresponse()
                    response.read()
                    self.statuses[response.status] = self.statuses.get(response.status, 0) + 1
                except (OSError, http.client.HTTPException):
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                self.sent += 1
                time.sleep(0.006)

    def stop(self):
        self.stopping.set()
        self.thread.join()


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:  # not listening yet
        return None


def wait_until(what, condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", required=True)
    parser.add_argument("--part", choices=("page", "control"), required=True)
    parser.add_argument("--artifacts", default=os.path.join(os.getcwd(), "admin_page"))
    parser.add_argument("--node", default=shutil.which("node") or shutil.which("nodejs"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    args.artifacts = os.path.abspath(args.artifacts)  # the driver runs in tests/clients
    if not args.node:
        print("SKIPPED: no node (Debian's nodejs; scripts/install-deps.sh installs it)")
        return SKIP
    if not os.path.isfile(os.path.join(HERE, "node_modules", "puppeteer-core", "package.json")):
        print("SKIPPED: puppeteer-core not installed in tests/clients/node_modules (`npm ci` "
              "there needs the npm registry; scripts/test.sh runs it and warns when it cannot)")
        return SKIP
    if not os.access(args.chromium, os.X_OK):
        print(f"SKIPPED: no chromium at {args.chromium} (scripts/install-deps.sh installs it)")
        return SKIP

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port, admin = free_port(), free_port()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sluice-admin-page-") as scratch:
        config = os.path.join(scratch, "proxy.yaml")
        with open(config, "w") as file:
            file.write(CONFIG.format(
                port=port, admin=admin, upstream=upstream.server_address[1], issuer=ISSUER,
                secret=SECRET, markup_route=json.dumps(MARKUP_ROUTE),
                token=f'admin_token: "{TOKEN}"' if args.part == "control" else ""))
        if args.part == "control":
            checked = subprocess.run([args.sluice, "check", "-c", config], capture_output=True,
                                     text=True)
            if checked.returncode != 0 and "admin_token" in checked.stdout + checked.stderr:
                print("SKIPPED: this build has no admin_token (the runtime control is not in "
                      "it yet)\n" + checked.stderr)
                return SKIP
        log_path = os.path.join(scratch, "sluice.log")
        with open(log_path, "wb") as log:
            sluice = subprocess.Popen([args.sluice, "run", "-c", config], stdout=log, stderr=log,
                                      stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        load = None
        try:
            wait_until("sluice's admin port", lambda: sluice.poll() is not None
                       or get(admin, "/healthz") == 200)
            if sluice.poll() is not None:
                raise Failure(f"sluice exited with {sluice.returncode}")
            if args.part == "control" and get(admin, "/top") == 404:
                print("SKIPPED: this build has no /top (the top keys are not in it yet)")
                return SKIP
            load = Load(port)
            wait_until("the load's first answers", lambda: load.statuses.get(200, 0) > 50)
            options = {"part": args.part, "admin": admin, "proxy": port, "token": TOKEN,
                       "chromium": args.chromium, "artifacts": args.artifacts,
                       "markup_route": MARKUP_ROUTE, "markup_key": MARKUP_KEY}
            driver = subprocess.run([args.node, DRIVER, json.dumps(options)], cwd=HERE,
                                    stdin=subprocess.DEVNULL, timeout=120,
                                    preexec_fn=die_with_parent)
            load.stop()
            if driver.returncode != 0:
                raise Failure(f"the browser's checks failed (exit {driver.returncode})")
            if set(load.statuses) != {200}:
                raise Failure(f"the load got other answers than 200: {load.statuses}")
        except Failure as failure:
            with open(log_path, errors="replace") as log:
                print(f"FAILED: {failure}\n--- sluice (last lines)\n"
                      + "\n".join(log.read().splitlines()[-30:]))
            return 1
        finally:
            if load:
                load.stop()
            sluice.send_signal(signal.SIGTERM)
            try:
                sluice.wait(timeout=5)
            except subprocess.TimeoutExpired:
                sluice.kill()
            upstream.shutdown()
    print(f"passed: {load.sent} requests of load, {time.monotonic() - started:.1f} s; "
          f"screenshots in {args.artifacts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
