"""An HTTPS upstream for the proxy's tests: Python's own http.server behind its ssl module.

Usage: https_upstream.py CERT KEY [CLIENT_CA]
Listens on 127.0.0.1 on a port the system picks and prints that port on its first line. With
CLIENT_CA it requires a client certificate signed by it. HTTP/1.1 with keep-alive; every answer
is 200 with a body that lists the request line, each header, the connection's number (in order
of acceptance) and the client certificate's subject, if any.
"""
import http.server
import itertools
import ssl
import sys

connections = itertools.count(1)


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection_number = next(connections)

    def do_GET(self):
        lines = [f"{self.command} {self.path}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        lines.append(f"connection {self.connection_number}")
        peer = self.connection.getpeercert()
        if peer:
            subject = ",".join(f"{k}={v}" for rdn in reversed(peer["subject"]) for k, v in rdn)
            lines.append(f"client {subject}")
        body = ("\n".join(lines) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    if len(sys.argv) > 3:
        context.load_verify_locations(sys.argv[3])
        context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
