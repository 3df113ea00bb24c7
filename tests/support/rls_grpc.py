"""Envoy's rate-limit service (RLS) for the proxy's Python tests: the messages and the client stub
generated from the proxy's own .proto files (proxy/rls/proto/), and a command-line client.

As a module:
  import rls_grpc
  rls = rls_grpc.load()          # generated once per process, into a temporary directory
  request = rls_grpc.request("edge", [[("remote_address", "10.0.0.1")]], hits_addend=1)
  stub = rls.rls_pb2_grpc.RateLimitServiceStub(channel)
  response = stub.ShouldRateLimit(request, timeout=1)
  rls_grpc.response_json(response)

load() returns a namespace with the generated modules: rls_pb2 and rls_pb2_grpc
(envoy.service.ratelimit.v3), ratelimit_pb2 (envoy.extensions.common.ratelimit.v3: the
descriptor), base_pb2 (envoy.config.core.v3: HeaderValue), ratelimit_unit_pb2 (envoy.type.v3).

As a script:
  rls_grpc.py call --target 127.0.0.1:PORT --domain DOMAIN --descriptor KEY=VALUE[,KEY=VALUE...]
                   [--descriptor ...] [--hits N] [--calls K] [--timeout SECONDS]
makes K calls (1) one after another on one insecure channel and prints one JSON line:
  {"calls": [{"code": "OK", "details": "", "response": {...}, "seconds": 0.001}, ...]}
where "response" is response_json()'s (null when the call failed).
  rls_grpc.py raw --target 127.0.0.1:PORT --body-hex HEX
sends a request body as it stands (its gRPC framing included) over h2c and prints
{"status", "grpc_status", "grpc_message"}: what a broken client gets.

The stubs come from grpc_tools.protoc (Debian: python3-grpc-tools), which ships
google/protobuf/duration.proto; /usr/include is the fallback (Debian: libprotobuf-dev).
"""
import argparse
import atexit
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import types

PROTO_DIR = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proxy", "rls", "proto"))
PROTOS = (
    "envoy/config/core/v3/base.proto",
    "envoy/type/v3/ratelimit_unit.proto",
    "envoy/extensions/common/ratelimit/v3/ratelimit.proto",
    "envoy/service/ratelimit/v3/rls.proto",
)
METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"

_loaded = None


def _well_known_include():
    """The directory that holds google/protobuf/duration.proto."""
    from grpc_tools import protoc
    for candidate in (os.path.join(os.path.dirname(protoc.__file__), "_proto"), "/usr/include"):
        if os.path.isfile(os.path.join(candidate, "google", "protobuf", "duration.proto")):
            return candidate
    raise RuntimeError("google/protobuf/duration.proto not found (grpc_tools or libprotobuf-dev)")


def load():
    """The generated modules (see the module's docstring), generated on the first call."""
    global _loaded
    if _loaded is not None:
        return _loaded
    from grpc_tools import protoc
    out = tempfile.mkdtemp(prefix="sluice-rls-")
    atexit.register(shutil.rmtree, out, True)
    status = protoc.main(["grpc_tools.protoc", f"--proto_path={PROTO_DIR}",
                          f"--proto_path={_well_known_include()}", f"--python_out={out}",
                          f"--grpc_python_out={out}", *PROTOS])
    if status != 0:
        raise RuntimeError(f"grpc_tools.protoc failed ({status}) on {PROTO_DIR}")
    # The generated modules import each other by their package paths (envoy.config.core.v3...),
    # which the temporary directory holds as namespace packages.
    sys.path.insert(0, out)
    importlib.invalidate_caches()
    _loaded = types.SimpleNamespace(
        base_pb2=importlib.import_module("envoy.config.core.v3.base_pb2"),
        ratelimit_unit_pb2=importlib.import_module("envoy.type.v3.ratelimit_unit_pb2"),
        ratelimit_pb2=importlib.import_module("envoy.extensions.common.ratelimit.v3.ratelimit_pb2"),
        rls_pb2=importlib.import_module("envoy.service.ratelimit.v3.rls_pb2"),
        rls_pb2_grpc=importlib.import_module("envoy.service.ratelimit.v3.rls_pb2_grpc"),
    )
    return _loaded


def request(domain, descriptors, hits_addend=0):
    """A RateLimitRequest: `descriptors` is a list of descriptors, each a list of (key, value)."""
    rls = load()
    message = rls.rls_pb2.RateLimitRequest(domain=domain, hits_addend=hits_addend)
    for entries in descriptors:
        descriptor = message.descriptors.add()
        for key, value in entries:
            descriptor.entries.add(key=key, value=value)
    return message


def framed(message):
    """`message` as one gRPC length-prefixed message: flag 0, 4-byte big-endian length, bytes."""
    body = message.SerializeToString()
    return b"\0" + len(body).to_bytes(4, "big") + body


def response_json(response):
    """A RateLimitResponse as plain JSON-able data, enum values by name, every field present."""
    rls = load()
    code = rls.rls_pb2.RateLimitResponse.Code.Name
    unit = rls.rls_pb2.RateLimitResponse.RateLimit.Unit.Name
    return {
        "overall_code": code(response.overall_code),
        "statuses": [{
            "code": code(status.code),
            "current_limit": ({
                "requests_per_unit": status.current_limit.requests_per_unit,
                "unit": unit(status.current_limit.unit),
                "name": status.current_limit.name,
            } if status.HasField("current_limit") else None),
            "limit_remaining": status.limit_remaining,
            "duration_until_reset": ({
                "seconds": status.duration_until_reset.seconds,
                "nanos": status.duration_until_reset.nanos,
            } if status.HasField("duration_until_reset") else None),
        } for status in response.statuses],
        "response_headers_to_add": [[h.key, h.value] for h in response.response_headers_to_add],
        "request_headers_to_add": [[h.key, h.value] for h in response.request_headers_to_add],
        "raw_body": response.raw_body.decode("utf-8", "replace"),
    }


def parse_descriptor(text):
    """A descriptor's entries from "KEY=VALUE,KEY=VALUE" (for argparse)."""
    entries = []
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"not KEY=VALUE: {pair!r}")
        entries.append((key, value))
    return entries


def _call(args):
    import grpc
    rls = load()
    message = request(args.domain, args.descriptor or [], args.hits)
    calls = []
    with grpc.insecure_channel(args.target) as channel:
        stub = rls.rls_pb2_grpc.RateLimitServiceStub(channel)
        for _ in range(args.calls):
            start = time.monotonic()
            try:
                response = stub.ShouldRateLimit(message, timeout=args.timeout)
                calls.append({"code": "OK", "details": "", "response": response_json(response),
                              "seconds": time.monotonic() - start})
            except grpc.RpcError as error:
                calls.append({"code": error.code().name, "details": error.details() or "",
                              "response": None, "seconds": time.monotonic() - start})
    print(json.dumps({"calls": calls}), flush=True)
    return 0


def _call_raw(args):
    """One call whose request body is `args.body_hex` as it stands (no framing added), over
    h2c with Python's h2: what a broken client sends. Prints the answer's status and gRPC
    status, from its headers or trailers."""
    import socket
    import h2.config
    import h2.connection
    import h2.events
    host, _, port = args.target.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=args.timeout)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    connection.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", args.target),
                                (":path", METHOD), ("content-type", "application/grpc"),
                                ("te", "trailers")])
    connection.send_data(1, bytes.fromhex(args.body_hex), end_stream=True)
    sock.sendall(connection.data_to_send())
    fields = {}
    done = False
    while not done:
        data = sock.recv(65536)
        if not data:
            break
        for event in connection.receive_data(data):
            if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                fields.update({k.decode(): v.decode() for k, v in event.headers})
            if isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
        sock.sendall(connection.data_to_send())
    sock.close()
    print(json.dumps({"status": fields.get(":status"), "grpc_status": fields.get("grpc-status"),
                      "grpc_message": fields.get("grpc-message")}), flush=True)
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    call = commands.add_parser("call", help="call ShouldRateLimit and print the answers as JSON")
    call.add_argument("--target", required=True)
    call.add_argument("--domain", required=True)
    call.add_argument("--descriptor", type=parse_descriptor, action="append")
    call.add_argument("--hits", type=int, default=0)
    call.add_argument("--calls", type=int, default=1)
    call.add_argument("--timeout", type=float, default=10)
    raw = commands.add_parser("raw", help="send a request body as it stands, print the status")
    raw.add_argument("--target", required=True)
    raw.add_argument("--body-hex", required=True)
    raw.add_argument("--timeout", type=float, default=10)
    args = parser.parse_args(argv)
    return _call(args) if args.command == "call" else _call_raw(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
