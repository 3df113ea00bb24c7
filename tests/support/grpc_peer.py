"""A gRPC server and client for the proxy's tests, with generic handlers: bytes in, bytes out.

Usage:
  grpc_peer.py server --port 0 [--events FILE]
  grpc_peer.py client --target 127.0.0.1:PORT --method Unary|ServerStream|ClientStream|Bidi|Slow
                      [--message TEXT] [--count N] [--timeout SECONDS] [--calls K]
                      [--metadata KEY=VALUE ...] [--cancel-after-ms M] [--authority NAME]

The server listens on 127.0.0.1 (port 0: one the system picks), prints {"port": N} as its first
line once it listens, and serves service test.Echo until SIGTERM or SIGINT, or until its standard
input closes when that is a pipe or socket (not a terminal or /dev/null, which would end it at
once or never), then exits 0. Its methods:
  Unary         returns the request; trailing metadata echo-trailer: yes, tokens-used: its size
  ServerStream  the request is an ASCII integer n: streams b"item-0" ... b"item-<n-1>"
  ClientStream  returns b"count=N" for the N messages received
  Bidi          echoes each message as it comes
  Slow          unary: waits the request's ASCII seconds (a float), checking every 10 ms whether
                the call is still alive, and returns b"done"; a call that ends before that
                (cancelled, or past its deadline) is written to --events as a line "cancelled"

The client makes K calls one after another on one insecure channel and prints one JSON line:
  {"calls": [{"code": "OK", "details": "", "responses": [...], "initial_metadata": [[k, v]],
              "trailing_metadata": [[k, v]], "seconds": 0.01}, ...], "error": null}
A unary request is --message, by default "hello", or str(--count) for ServerStream and "1" for
Slow; ClientStream and Bidi send --count (1) copies of --message. Each call's deadline is
--timeout seconds (10). --cancel-after-ms cancels each call that long after it starts (code
CANCELLED, unless it had ended before).
"""
import argparse
import json
import os
import signal
import stat
import sys
import threading
import time
from concurrent import futures

import grpc

SERVICE = "test.Echo"
METHODS = ("Unary", "ServerStream", "ClientStream", "Bidi", "Slow")


# -- server ---------------------------------------------------------------------------------------

def unary(request, context):
    # tokens-used: what an LLM-like service would say the call cost, known at its end.
    context.set_trailing_metadata((("echo-trailer", "yes"), ("tokens-used", str(len(request)))))
    return request


def server_stream(request, context):
    for i in range(int(request.decode() or 0)):
        yield f"item-{i}".encode()


def client_stream(request_iterator, context):
    return f"count={sum(1 for _ in request_iterator)}".encode()


def bidi(request_iterator, context):
    for message in request_iterator:
        yield message


def make_slow(events):
    def slow(request, context):
        end = time.monotonic() + float(request.decode() or 0)
        while time.monotonic() < end:
            if not context.is_active():
                # Whether a RST_STREAM or the deadline ended it is a race when the proxy passes
                # both on, so both are written alike.
                if events:
                    with open(events, "a") as f:
                        f.write("cancelled\n")
                return b""
            time.sleep(0.01)
        return b"done"
    return slow


def watch_stdin(stop):
    """Stops the server when its standard input closes, if that is a pipe or socket."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return

    def wait_for_eof():
        while os.read(sys.stdin.fileno(), 4096):
            pass
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()


def run_server(args):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
        "Slow": grpc.unary_unary_rpc_method_handler(make_slow(args.events)),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    try:
        port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    except RuntimeError:  # this grpc raises when it cannot bind; older ones returned 0
        port = 0
    if port == 0:
        print(json.dumps({"error": f"cannot listen on 127.0.0.1:{args.port}"}), flush=True)
        return 1
    server.start()

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    watch_stdin(stop)
    print(json.dumps({"port": port}), flush=True)
    while not stop.wait(0.2):  # a timed wait, so that the signal handlers get to run
        pass
    server.stop(grace=0.5).wait()
    return 0


# -- client ---------------------------------------------------------------------------------------

def pairs(metadata):
    def text(value):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return [[text(k), text(v)] for k, v in (metadata or ())]


def outcome(call, responses, started):
    return {"code": call.code().name, "details": call.details() or "",
            "responses": [r.decode("utf-8", "replace") for r in responses],
            "initial_metadata": pairs(call.initial_metadata()),
            "trailing_metadata": pairs(call.trailing_metadata()),
            "seconds": round(time.monotonic() - started, 3)}


def one_call(channel, args, metadata):
    path = f"/{SERVICE}/{args.method}"
    default = {"ServerStream": str(args.count), "Slow": "1"}.get(args.method, "hello")
    request = (args.message if args.message is not None else default).encode()
    stream = [(args.message if args.message is not None else "hello").encode()] * args.count
    options = {"timeout": args.timeout, "metadata": metadata}
    started = time.monotonic()
    # No serializers: the channel passes bytes through as they are.
    if args.method in ("Unary", "Slow"):
        stub = channel.unary_unary(path)
        if args.cancel_after_ms is not None:
            future = stub.future(request, **options)
            time.sleep(args.cancel_after_ms / 1000)
            future.cancel()
            try:
                responses = [future.result()]
            except (grpc.RpcError, grpc.FutureCancelledError):
                responses = []
            return outcome(future, responses, started)
        try:
            response, call = stub.with_call(request, **options)
            return outcome(call, [response], started)
        except grpc.RpcError as error:  # also a Call: code, details and metadata
            return outcome(error, [], started)
    if args.method == "ClientStream":
        stub = channel.stream_unary(path)
        try:
            response, call = stub.with_call(iter(stream), **options)
            return outcome(call, [response], started)
        except grpc.RpcError as error:
            return outcome(error, [], started)
    if args.method == "ServerStream":
        call = channel.unary_stream(path)(request, **options)
    else:
        call = channel.stream_stream(path)(iter(stream), **options)
    if args.cancel_after_ms is not None:
        timer = threading.Timer(args.cancel_after_ms / 1000, call.cancel)
        timer.daemon = True  # a call that ends first must not keep the client waiting
        timer.start()
    responses = []
    try:
        for response in call:
            responses.append(response)
    except grpc.RpcError:
        pass  # the call itself tells how it ended
    return outcome(call, responses, started)


def metadata_item(item):
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"not KEY=VALUE: {item!r}")
    return key.lower(), value  # gRPC metadata keys are lower case


def run_client(args):
    options = [
        # Environment proxies must not come between the test and the proxy under test.
        ("grpc.enable_http_proxy", 0),
        # One attempt per call, so that what the proxy counts is what the test made.
        ("grpc.enable_retries", 0),
    ]
    if args.authority:
        options.append(("grpc.default_authority", args.authority))
    result = {"calls": [], "error": None}
    try:
        with grpc.insecure_channel(args.target, options=options) as channel:
            for _ in range(args.calls):
                result["calls"].append(one_call(channel, args, args.metadata))
    except Exception as e:  # noqa: BLE001 - a local failure is reported, not raised
        result["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(result), flush=True)
    return 0


class Parser(argparse.ArgumentParser):
    """Usage errors, too, end in one JSON line, so that the caller always has one to parse."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(json.dumps({"error": f"usage: {message}"}), flush=True)
        sys.exit(2)


def main(argv):
    parser = Parser(description=__doc__.split("\n", 1)[0])
    roles = parser.add_subparsers(dest="role", required=True)
    server = roles.add_parser("server")
    server.add_argument("--port", type=int, default=0)
    server.add_argument("--events", help="file that Slow appends its cancellations to")
    client = roles.add_parser("client")
    client.add_argument("--target", required=True, help="HOST:PORT")
    client.add_argument("--method", required=True, choices=METHODS)
    client.add_argument("--message")
    client.add_argument("--count", type=int, default=1)
    client.add_argument("--timeout", type=float, default=10.0, help="each call's deadline")
    client.add_argument("--calls", type=int, default=1)
    client.add_argument("--metadata", nargs="+", action="extend", type=metadata_item, default=[],
                        metavar="KEY=VALUE")
    client.add_argument("--cancel-after-ms", type=int)
    client.add_argument("--authority", help=":authority for the calls (default: the target)")
    args = parser.parse_args(argv)
    return run_server(args) if args.role == "server" else run_client(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
