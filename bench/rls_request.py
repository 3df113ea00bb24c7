#!/usr/bin/python3
"""Writes one gRPC-framed RateLimitRequest (Envoy's rate-limit service) to a file, as the body of
a ShouldRateLimit call for h2load:

  bench/rls_request.py OUT DOMAIN KEY=VALUE[,KEY=VALUE...] [KEY=VALUE[,...] ...] [--hits N]
  h2load -d OUT -H 'content-type: application/grpc' -H 'te: trailers' \\
      http://127.0.0.1:PORT/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit

Each argument after DOMAIN is one descriptor, its entries separated by commas. The message is
made by the classes generated from proxy/rls/proto (tests/support/rls_grpc.py, which needs
python3-grpc-tools) and framed as gRPC's length-prefixed message: flag 0, 4-byte big-endian
length, the bytes.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "support"))
import rls_grpc  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("domain")
    parser.add_argument("descriptors", type=rls_grpc.parse_descriptor, nargs="*")
    parser.add_argument("--hits", type=int, default=0, help="hits_addend (0: one hit)")
    args = parser.parse_args()
    body = rls_grpc.framed(rls_grpc.request(args.domain, args.descriptors, args.hits))
    with open(args.out, "wb") as f:
        f.write(body)
    print(f"{args.out}: {len(body)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
