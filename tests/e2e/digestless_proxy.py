#!/usr/bin/env python3
"""A fastboot relay that hides a device's `oem digest`, so that a host
verifies by read-back (fetch:) against a device that has both, such as
`flashpipe serve`: its real fetch data phases, over TCP and UDP.

Contract:
  - --tcp or --udp: the transport; --to PORT: the device on 127.0.0.1.
    Listens on 127.0.0.1, at --port (default 0: the kernel picks) and prints
    `proxy: listening on tcp|udp 127.0.0.1:PORT` on stdout once it is.
  - Every byte goes through unchanged, both ways, except a host command that
    begins `oem digest`: it becomes `oem dignot` (the same length: TCP frame
    lengths and UDP packets stay as they were), which the device refuses as
    an unknown oem command. Each rewrite is logged on stderr
    (`proxy: rewrote oem digest ...`).
  - TCP: one connection at a time, the host's frames read by their 8-byte
    big-endian length (a data phase's frames are passed on in pieces, never
    rewritten). UDP: the first 4 bytes of a packet are its header; the
    device's answers go to the host that last sent.
  - --exit-after SECONDS bounds its life; SIGTERM: exit 0.
"""
import argparse
import select
import signal
import socket
import struct
import sys
import threading
import time

OLD, NEW = b"oem digest", b"oem dignot"


def log(msg):
    print("proxy: " + msg, file=sys.stderr, flush=True)


def rewrite(payload):
    if payload.startswith(OLD):
        log("rewrote %s" % payload[:64].decode("latin-1"))
        return NEW + payload[len(OLD):]
    return payload


def recv_exact(conn, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def tcp_up(host, dev):
    """Host to device: frames, commands rewritten."""
    try:
        dev.sendall(recv_exact(host, 4))  # FB01
        while True:
            header = recv_exact(host, 8)
            (n,) = struct.unpack(">Q", header)
            if n <= 64:
                dev.sendall(header + rewrite(recv_exact(host, n)))
                continue
            dev.sendall(header)
            while n > 0:
                chunk = host.recv(min(n, 1 << 20))
                if not chunk:
                    raise EOFError
                dev.sendall(chunk)
                n -= len(chunk)
    except (OSError, EOFError):
        pass
    finally:
        for s in (dev, host):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def tcp_down(dev, host):
    try:
        while True:
            chunk = dev.recv(1 << 20)
            if not chunk:
                break
            host.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            host.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve_tcp(listener, to):
    while True:
        host, _ = listener.accept()
        dev = socket.create_connection(("127.0.0.1", to))
        for s in (host, dev):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up = threading.Thread(target=tcp_up, args=(host, dev), daemon=True)
        down = threading.Thread(target=tcp_down, args=(dev, host), daemon=True)
        up.start()
        down.start()
        up.join()
        down.join()
        host.close()
        dev.close()


def serve_udp(sock, to):
    dev = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dev.connect(("127.0.0.1", to))
    peer = None
    while True:
        ready, _, _ = select.select([sock, dev], [], [])
        if sock in ready:
            packet, peer = sock.recvfrom(65536)
            if len(packet) > 4:
                packet = packet[:4] + rewrite(packet[4:])
            dev.send(packet)
        if dev in ready:
            try:
                packet = dev.recv(65536)
            except ConnectionRefusedError:
                continue
            if peer:
                sock.sendto(packet, peer)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--tcp", action="store_true")
    g.add_argument("--udp", action="store_true")
    p.add_argument("--to", type=int, required=True, metavar="PORT")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--exit-after", type=float, default=600, metavar="SECONDS")
    args = p.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    kind = socket.SOCK_STREAM if args.tcp else socket.SOCK_DGRAM
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", args.port))
    if args.tcp:
        s.listen(4)
    name = "tcp" if args.tcp else "udp"
    target = serve_tcp if args.tcp else serve_udp
    threading.Thread(target=target, args=(s, args.to), daemon=True).start()
    print("proxy: listening on %s 127.0.0.1:%d" % (name, s.getsockname()[1]), flush=True)
    end = time.monotonic() + args.exit_after
    while not stop.wait(0.1) and time.monotonic() < end:
        pass


if __name__ == "__main__":
    main()
