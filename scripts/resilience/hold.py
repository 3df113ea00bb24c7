#!/usr/bin/env python3
"""More connections than the proxy's max_connections, for scripts/resilience.sh; standard
library only.

    hold.py PORT EXTRA WAIT_SECONDS

1. Opens EXTRA connections to 127.0.0.1:PORT at once and sends a request on each. While the
   proxy has free slots it accepts them and answers; at its max_connections it stops
   accepting, and the rest wait in the kernel's listen queue (the TCP handshake is the
   kernel's, so they connect all the same). After WAIT_SECONDS it counts them:
       at_cap served=S waiting=W failed=F
   (failed: closed or reset without an answer; docs/configuration.md says none is refused). Then it keeps
   everything as it is for 1 s more, so that the shell can read the proxy's metrics at the cap.
2. Closes the S answered connections, and times how long the W waiting requests then take to
   be answered (at most 5 s):
       released answered=K of=W ms=T
Every wait is bounded; exits 1 only when the test itself could not run.
"""
import asyncio
import sys
import time


async def answer(reader):
    """Reads one answer (Content-Length bodies only) and returns its status."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return int(head.split(b" ")[1])


async def open_and_ask(port):
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
    writer.write(b"GET /extra HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return writer, asyncio.ensure_future(answer(reader))


def answered(future):
    return future.done() and not future.cancelled() and future.exception() is None


async def main():
    port, extra, wait = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    connections = await asyncio.gather(*(open_and_ask(port) for _ in range(extra)))
    await asyncio.sleep(wait)
    served = [(w, f) for w, f in connections if answered(f) and f.result() == 200]
    failed = [(w, f) for w, f in connections if f.done() and not answered(f)]
    waiting = [(w, f) for w, f in connections if not f.done()]
    print(f"at_cap served={len(served)} waiting={len(waiting)} failed={len(failed)}", flush=True)
    await asyncio.sleep(1)

    start = time.monotonic()
    for writer, _ in served:
        writer.close()
    pending = [future for _, future in waiting]
    if pending:
        await asyncio.wait(pending, timeout=5)
    elapsed = (time.monotonic() - start) * 1000
    late = sum(1 for future in pending if answered(future) and future.result() == 200)
    print(f"released answered={late} of={len(waiting)} ms={elapsed:.0f}", flush=True)
    for writer, future in connections:
        future.cancel()
        writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
