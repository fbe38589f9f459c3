#!/usr/bin/env python3
"""One hostile client against `vdsoctl serve` on loopback, for bench-serve.sh.

Usage: serve-attack.py ADDR ATTACK SCRAPES

Starts ATTACK (none, rst, idle, pipeline, header), lets it run for a second,
then makes SCRAPES well-behaved scrapes (connect, GET /metrics, read to the
end; 20 ms apart, 10 s allowed each) while the attack goes on, and prints
one line:  ATTACK median_ms p99_ms max_ms failed WHAT-THE-ATTACK-DID  — then keeps attacking
until it is killed (the caller times serve's SIGTERM meanwhile), or for 120 s.

Attacks (each bounded in count):
  rst       connect, send a GET, close with RST (SO_LINGER 0), in a loop
  idle      2,000 connections that send nothing, held open
  pipeline  two clients that pipeline 2,000 GETs each and never read
  header    a 64 MiB header line, again and again (each refused after a
            few kB, so the attacker reconnects at once)
"""
import mmap
import os
import resource
import signal
import socket
import struct
import sys
import threading
import time

GET = b"GET /metrics HTTP/1.1\r\nHost: vdsoctl\r\n\r\n"
# What the attack got done (connections made, requests or bytes sent), in
# memory the forked attacker shares with the scraper.
DONE = mmap.mmap(-1, 8)


def done(n=1):
    DONE[0:8] = struct.pack("Q", struct.unpack("Q", DONE[0:8])[0] + n)


def done_so_far():
    return struct.unpack("Q", DONE[0:8])[0]


def connect(addr, timeout=5.0):
    host, port = addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def rst_loop(addr, stop):
    for _ in range(200_000):
        if stop.is_set():
            return
        try:
            s = connect(addr)
            s.sendall(GET)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            done()
        except OSError:
            time.sleep(0.01)


def idle(addr, stop, held):
    for _ in range(2000):
        if stop.is_set():
            return
        try:
            held.append(connect(addr))
            done()
        except OSError:
            pass


def pipeline(addr, stop, held):
    s = connect(addr)
    s.setblocking(False)
    data = GET * 2000
    sent = 0
    deadline = time.time() + 5
    while sent < len(data) and time.time() < deadline and not stop.is_set():
        try:
            k = s.send(data[sent:])
            sent += k
            done(k)
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            break
    held.append(s)


def header(addr, stop):
    chunk = b"a" * 65536
    for _ in range(1_000_000):
        if stop.is_set():
            return
        try:
            s = connect(addr)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: vdsoctl\r\nX-Huge: ")
            done()
            for _ in range(1024):  # 64 MiB
                if stop.is_set():
                    break
                s.sendall(chunk)
        except OSError:
            pass
        finally:
            try:
                s.close()
            except (OSError, UnboundLocalError):
                pass


def scrape(addr):
    t0 = time.perf_counter()
    s = connect(addr, timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: vdsoctl\r\nConnection: close\r\n\r\n")
    reply = bytearray()
    while True:
        b = s.recv(65536)
        if not b:
            break
        reply += b
    s.close()
    if not reply.startswith(b"HTTP/1.1 200"):
        raise OSError("not a 200: %r" % bytes(reply[:40]))
    return (time.perf_counter() - t0) * 1000


def main():
    addr, attack, scrapes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(8192, hard), hard))
    # The attack runs in a child process, so the scrapes' timings share no
    # interpreter lock with it; a SIGTERM to this process ends both.
    child = os.fork()
    if child == 0:
        stop, held = threading.Event(), []
        runs = {
            "none": [],
            "rst": [lambda: rst_loop(addr, stop)],
            "idle": [lambda: idle(addr, stop, held)],
            "pipeline": [lambda: pipeline(addr, stop, held)] * 2,
            "header": [lambda: header(addr, stop)],
        }[attack]
        for f in runs:
            threading.Thread(target=f, daemon=True).start()
        time.sleep(150)
        os._exit(0)

    def end(*_):
        os.kill(child, signal.SIGKILL)
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    time.sleep(1)
    lat, failed = [], 0
    t0, d0 = time.perf_counter(), done_so_far()
    for _ in range(scrapes):
        try:
            lat.append(scrape(addr))
        except OSError:
            failed += 1
        time.sleep(0.02)
    rate = (done_so_far() - d0) / (time.perf_counter() - t0)
    held = done_so_far()
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
    what = {
        "none": "-",
        "rst": f"{rate:,.0f} connect+GET+RST/s",
        "idle": f"{held:,} connections made",
        "pipeline": f"{held // len(GET):,} GETs sent",
        "header": f"{rate:,.0f} 64 MiB headers tried/s",
    }[attack]
    print(f"{attack} {pick(0.5):.2f} {pick(0.99):.2f} {lat[-1] if lat else float('nan'):.2f} {failed} {what}", flush=True)
    time.sleep(120)
    end()


main()
