#!/usr/bin/env python3
"""Herds of connections that never finish what they start, for scripts/resilience.sh's herd
case; standard library only.

    herd.py silent PORT N WAIT_SECONDS
        Opens N connections to 127.0.0.1:PORT at once and sends nothing. Prints "open N" once
        they are all connected, then waits until the proxy closes them (at most WAIT_SECONDS):
            closed K of=N ms=T
        (T: from "open" until the last one closed).
    herd.py tls-reset PORT N
        Opens N connections to a TLS port at once; each sends a TLS 1.3 ClientHello, waits for
        the first bytes of the server's answer (the handshake is then under way on the server)
        and resets the connection (SO_LINGER 0). Prints:
            reset K of=N
Exits 1 only when the test itself could not run.
"""
import asyncio
import socket
import ssl
import struct
import sys
import time


async def connect(port):
    return await asyncio.open_connection("127.0.0.1", port)


async def silent(port, count, wait_seconds):
    connections = await asyncio.gather(*(connect(port) for _ in range(count)))
    print(f"open {len(connections)}", flush=True)
    start = time.monotonic()

    async def closed(reader):
        try:
            return await reader.read(1) == b""
        except ConnectionError:
            return True

    done = await asyncio.wait_for(
        asyncio.gather(*(closed(reader) for reader, _ in connections)), wait_seconds)
    elapsed = int((time.monotonic() - start) * 1000)
    print(f"closed {sum(done)} of={count} ms={elapsed}", flush=True)


def client_hello():
    """A ClientHello as Python's ssl module would send it, taken from a memory BIO."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname="herd.test")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


async def reset_mid_handshake(port, hello):
    try:
        reader, writer = await connect(port)
        writer.write(hello)
        await writer.drain()
        answered = await reader.read(5) != b""
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        return answered
    except ConnectionError:
        return False


async def tls_reset(port, count):
    hello = client_hello()
    answered = await asyncio.gather(*(reset_mid_handshake(port, hello) for _ in range(count)))
    print(f"reset {sum(answered)} of={count}", flush=True)


def main():
    mode, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if mode == "silent":
        asyncio.run(silent(port, count, float(sys.argv[4])))
    elif mode == "tls-reset":
        asyncio.run(tls_reset(port, count))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
