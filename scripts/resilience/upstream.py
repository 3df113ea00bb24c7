#!/usr/bin/env python3
"""A small upstream for scripts/resilience.sh, standard library only.

    upstream.py PORT [SLOW_SECONDS]

Listens on 127.0.0.1:PORT and answers, on keep-alive HTTP/1.1 connections:
  GET /slow...   200 "ok" after SLOW_SECONDS (default 0.3): requests that are in flight
                 long enough to be caught by a kill;
  an Upgrade: websocket request   101, then echoes every frame back (a close is answered
                 with a close, then the connection ends);
  anything else  200 "ok" at once (a request body of known length is read and dropped).
It exists for what nginx cannot do without extra modules: hold a request before answering,
and speak WebSocket.
"""
import asyncio
import base64
import hashlib
import sys

from websocket_frames import frame, read_frame

WEBSOCKET_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"


async def echo(reader, writer):
    while True:
        opcode, payload = await read_frame(reader)
        writer.write(frame(opcode, payload, masked=False))
        await writer.drain()
        if opcode == 8:  # close: answered with a close, then done
            return


async def serve(reader, writer, slow):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            target = lines[0].split(" ")[1]
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            remaining = int(headers.get("content-length", "0"))
            while remaining > 0:
                chunk = await reader.read(min(remaining, 65536))
                if not chunk:
                    return
                remaining -= len(chunk)
            if headers.get("upgrade", "").lower() == "websocket":
                key = headers["sec-websocket-key"].encode()
                accept = base64.b64encode(hashlib.sha1(key + WEBSOCKET_GUID).digest())
                writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                             b"\r\n\r\n")
                await writer.drain()
                await echo(reader, writer)
                return
            if target.startswith("/slow"):
                await asyncio.sleep(slow)
            writer.write(OK)
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
            IndexError, KeyError, ValueError):
        pass
    finally:
        writer.close()


async def main():
    port = int(sys.argv[1])
    slow = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    server = await asyncio.start_server(lambda r, w: serve(r, w, slow), "127.0.0.1", port,
                                        backlog=1024, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
