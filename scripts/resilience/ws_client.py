#!/usr/bin/env python3
"""WebSocket sessions through the proxy for scripts/resilience.sh, standard library only.

    ws_client.py PORT SECONDS [CLIENTS]

CLIENTS loops (default 4) each open a connection to 127.0.0.1:PORT, upgrade /ws, send 10
masked messages of 1 to 4 KiB, check that each comes back unchanged, close with a close
frame and start again, until SECONDS have passed. Every step has a 5 s limit, so a stuck
tunnel is a failure, never a hang. Prints one line,
    ws sessions=N messages=M failures=F
and exits 1 when a session failed (the first failures are described on stderr).
"""
import asyncio
import base64
import os
import random
import sys
import time

from websocket_frames import frame, read_frame

STEP_TIMEOUT = 5.0


async def session(port):
    """One upgrade, 10 echoed messages, a clean close. Returns the messages echoed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        key = base64.b64encode(os.urandom(16))
        writer.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                     b"Sec-WebSocket-Key: " + key + b"\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError("upgrade answered " + head.split(b"\r\n")[0].decode("latin-1"))
        for _ in range(10):
            payload = os.urandom(random.randint(1024, 4096))
            writer.write(frame(2, payload, masked=True))
            opcode, echoed = await read_frame(reader)
            if opcode != 2 or echoed != payload:
                raise RuntimeError("a message came back changed")
        writer.write(frame(8, (1000).to_bytes(2, "big"), masked=True))
        opcode, _ = await read_frame(reader)
        if opcode != 8:
            raise RuntimeError("no close frame in answer to the close")
        return 10
    finally:
        writer.close()


async def client(port, deadline, totals, errors):
    while time.monotonic() < deadline:
        try:
            echoed = await asyncio.wait_for(session(port), STEP_TIMEOUT)
            totals["messages"] += echoed  # (not `+= await`: that reads the total before)
            totals["sessions"] += 1
        except Exception as error:  # noqa: BLE001 - every failure counts, whatever it is
            totals["failures"] += 1
            if len(errors) < 5:
                errors.append(f"{type(error).__name__}: {error}")
            await asyncio.sleep(0.05)


async def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    deadline = time.monotonic() + seconds
    totals = {"sessions": 0, "messages": 0, "failures": 0}
    errors = []
    await asyncio.gather(*(client(port, deadline, totals, errors) for _ in range(clients)))
    print(f"ws sessions={totals['sessions']} messages={totals['messages']} "
          f"failures={totals['failures']}")
    for error in errors:
        print("ws_client: " + error, file=sys.stderr)
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
