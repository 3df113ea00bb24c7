#!/usr/bin/python3
"""Holds N idle keep-alive connections to 127.0.0.1:PORT, each after one request.

Usage: idle_clients.py PORT N [STEPS]
Opens N connections (a few hundred at a time), sends one GET on each and reads its whole
response (so the proxy has served a request on it and kept it alive), then prints "ready N"
and keeps every connection open, idle, until its standard input closes. With STEPS (default 1),
it opens them in that many equal steps, prints "ready K" after each with the K open so far,
and waits for a line on its standard input before the next step. Exits 1 if a connection
fails or an answer is not a 200.
"""
import asyncio
import resource
import sys

REQUEST = b"GET / HTTP/1.1\r\nHost: idle.test\r\n\r\n"


async def open_one(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(REQUEST)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head.split(b"\r\n")[0].decode())
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    return writer


async def main(port, count, steps):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1024), hard))
    loop = asyncio.get_running_loop()
    writers = []
    batch = 200
    for step in range(steps):
        if step > 0:
            await loop.run_in_executor(None, sys.stdin.readline)
        target = count * (step + 1) // steps
        while len(writers) < target:
            writers += await asyncio.gather(
                *(open_one(port) for _ in range(min(batch, target - len(writers)))))
        print(f"ready {len(writers)}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    for writer in writers:
        writer.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]),
                     int(sys.argv[3]) if len(sys.argv) > 3 else 1))
