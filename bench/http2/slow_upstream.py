#!/usr/bin/env python3
"""A slow HTTP/1.1 upstream for bench/http2.sh's memory test.

Answers every request with 200 "ok\\n" DELAY seconds after reading its head, on kept-alive
connections (HTTP/1.1 keep-alive unless the request says `Connection: close`), so that a proxy
in front of it keeps each of the client's streams, and its upstream connection, open for DELAY
seconds. GET /stats is answered at once with the requests waiting now and the most that waited
at the same time ("inflight N peak M"); GET /stats/reset does the same and starts a new peak.
The script reads them while the streams are held, to take the proxy's memory when all of them
are (and to check that the proxy really held them all at once).

Usage: slow_upstream.py PORT DELAY_SECONDS (listens on 127.0.0.1).
"""

import asyncio
import signal
import sys

ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n")
CLOSE_ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                b"Connection: close\r\n\r\nok\n")


class Counts:
    inflight = 0
    peak = 0


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            target = lines[0].split(" ")[1] if lines[0].count(" ") >= 2 else "/"
            close = False
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "connection" and "close" in value.lower():
                    close = True
                elif name == "content-length":
                    length = int(value.strip() or 0)
            if length:
                await reader.readexactly(length)
            if target in ("/stats", "/stats/reset"):
                body = f"inflight {Counts.inflight} peak {Counts.peak}\n".encode()
                if target == "/stats/reset":
                    Counts.peak = Counts.inflight
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
            else:
                Counts.inflight += 1
                Counts.peak = max(Counts.peak, Counts.inflight)
                try:
                    await asyncio.sleep(delay)
                finally:
                    Counts.inflight -= 1
                writer.write(CLOSE_ANSWER if close else ANSWER)
            await writer.drain()
            if close:
                return
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main() -> None:
    port = int(sys.argv[1])
    delay = float(sys.argv[2])
    server = await asyncio.start_server(lambda r, w: serve(r, w, delay), "127.0.0.1", port,
                                        backlog=4096, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: slow_upstream.py PORT DELAY_SECONDS")
    asyncio.run(main())
