#!/usr/bin/env python3
"""A hostile fastboot device over TCP for the hostile-peer tests: every text
it sends (serial, product, INFO, FAIL) holds terminal escapes and bytes that
are not UTF-8. It accepts downloads, then fails every flash. It prints its
port on stdout once listening and exits after SECONDS or when killed.
Usage: hostile_device.py SECONDS"""
import socket
import struct
import sys
import threading
import time

EVIL = b"\x1b]0;pwned\x07\x1b[2J\xff\xfe"


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def send(s, payload):
    s.sendall(struct.pack(">Q", len(payload)) + payload)


def serve(conn):
    try:
        conn.settimeout(30)
        if recv_exact(conn, 4)[:2] != b"FB":
            return
        conn.sendall(b"FB01")
        while True:
            (n,) = struct.unpack(">Q", recv_exact(conn, 8))
            cmd = recv_exact(conn, min(n, 4096))
            if cmd.startswith(b"getvar:max-download-size"):
                send(conn, b"OKAY0x04000000")
            elif cmd.startswith(b"getvar:partition-size"):
                send(conn, b"OKAY0x01000000")
            elif cmd.startswith(b"getvar:serialno") or cmd.startswith(b"getvar:product"):
                send(conn, b"OKAY" + EVIL)
            elif cmd.startswith(b"getvar:"):
                send(conn, b"FAIL" + EVIL)
            elif cmd.startswith(b"download:"):
                size = int(cmd[9:], 16)
                send(conn, b"DATA%08x" % size)
                left = size
                while left > 0:
                    (m,) = struct.unpack(">Q", recv_exact(conn, 8))
                    recv_exact(conn, m)
                    left -= m
                send(conn, b"OKAY")
            else:
                send(conn, b"INFO" + EVIL)
                send(conn, b"FAIL" + EVIL)
    except (EOFError, OSError, ValueError):
        pass
    finally:
        conn.close()


def main():
    seconds = float(sys.argv[1])
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.5)
    print(srv.getsockname()[1], flush=True)
    end = time.time() + seconds
    while time.time() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
