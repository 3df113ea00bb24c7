"""A CA's OCSP responder for the proxy's tests: Python's http.server in front of `openssl ocsp`,
which answers from the test CA's own database (index.txt), so a certificate the CA revokes is
answered `revoked`.

Usage: ocsp_responder.py DIR
DIR is a TestCertificates directory (ca.pem, ca.key, other-ca.*, index.txt). Listens on 127.0.0.1
on a port the system picks and prints that port on its first line.
GET /<the DER request in base64, URL-encoded> (RFC 5019 §5) answers 200 with the response,
signed by the CA, good for a day; each request appends its path to DIR/responder.log. What
DIR/responder.mode says, read at every request, changes that: "503" answers 503, "garbage" answers
200 with a body that is no OCSP response, "other-ca" signs with the other CA's key.
"""
import base64
import os
import subprocess
import sys
import tempfile
import urllib.parse
import http.server

directory = sys.argv[1]


def mode():
    try:
        with open(os.path.join(directory, "responder.mode")) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


class Responder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body, content_type="application/ocsp-response"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(os.path.join(directory, "responder.log"), "a") as log:
            log.write(self.path + "\n")
        now = mode()
        if now == "503":
            return self.answer(503, b"", "text/plain")
        if now == "garbage":
            return self.answer(200, b"not an OCSP response")
        try:
            request = base64.b64decode(urllib.parse.unquote(self.path.lstrip("/")), validate=True)
        except ValueError:
            return self.answer(400, b"", "text/plain")
        signer = "other-ca" if now == "other-ca" else "ca"
        with tempfile.TemporaryDirectory() as scratch:
            with open(os.path.join(scratch, "request.der"), "wb") as f:
                f.write(request)
            done = subprocess.run(
                ["openssl", "ocsp", "-index", "index.txt", "-CA", "ca.pem",
                 "-rsigner", signer + ".pem", "-rkey", signer + ".key", "-ndays", "1",
                 "-reqin", os.path.join(scratch, "request.der"),
                 "-respout", os.path.join(scratch, "response.der")],
                cwd=directory, capture_output=True)
            if done.returncode != 0:
                return self.answer(500, done.stderr, "text/plain")
            with open(os.path.join(scratch, "response.der"), "rb") as f:
                self.answer(200, f.read())

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Responder)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
