#!/usr/bin/python3
"""Holds N idle keep-alive connections to 127.0.0.1:PORT, each after one request.

Usage: idle_clients.py PORT N [STEPS [BATCH]]
Opens N connections, BATCH at a time (default 200; 0: a step's all at once, a herd), sends one
GET on each and reads its whole response (so the proxy has served a request on it and kept it
alive), then prints "ready N" and keeps every connection open, idle. With STEPS (default 1), it
opens them in that many equal steps, prints "ready K" after each with the K open so far, and
waits for a line on its standard input before the next step. Once all are open, a line
"leave" closes them all (it prints "left" when they are closed); the end of its standard input
closes them too. Exits 1 if a connection fails or an answer is not a 200. With IDLE_TLS=1 in
its environment, every connection is TLS (the proxy's certificate is not checked).
"""
import asyncio
import os
import resource
import ssl
import sys

REQUEST = b"GET / HTTP/1.1\r\nHost: idle.test\r\n\r\n"


def client_tls():
    if os.environ.get("IDLE_TLS") != "1":
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


TLS = client_tls()


async def open_one(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=TLS)
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


async def close_all(writers):
    for writer in writers:
        writer.close()
    await asyncio.gather(*(writer.wait_closed() for writer in writers), return_exceptions=True)


async def main(port, count, steps, batch):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1024), hard))
    loop = asyncio.get_running_loop()
    writers = []
    for step in range(steps):
        if step > 0:
            await loop.run_in_executor(None, sys.stdin.readline)
        target = count * (step + 1) // steps
        while len(writers) < target:
            at_once = target - len(writers) if batch == 0 else min(batch, target - len(writers))
            writers += await asyncio.gather(*(open_one(port) for _ in range(at_once)))
        print(f"ready {len(writers)}", flush=True)
    line = await loop.run_in_executor(None, sys.stdin.readline)
    await close_all(writers)
    if line.strip() == "leave":
        print("left", flush=True)
        await loop.run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]),
                     int(sys.argv[3]) if len(sys.argv) > 3 else 1,
                     int(sys.argv[4]) if len(sys.argv) > 4 else 200))
