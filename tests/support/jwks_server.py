"""An identity provider's key endpoint for the proxy's tests: Python's http.server, in cleartext
or behind its ssl module.

Usage: jwks_server.py FILE [CERT KEY]
Listens on 127.0.0.1 on a port the system picks and prints that port on its first line.
GET /jwks.json answers 200 with FILE's text, read anew at every request (a test rotates keys by
writing the file) and appends a line to FILE.fetches;
any other path answers 404.
"""
import http.server
import ssl
import sys

path = sys.argv[1]


class Keys(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path != "/jwks.json":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as keys:
            body = keys.read()
        with open(path + ".fetches", "a") as fetches:
            fetches.write(self.headers.get("Host", "") + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/jwk-set+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    if len(sys.argv) > 3:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
