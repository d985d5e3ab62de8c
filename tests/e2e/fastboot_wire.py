#!/usr/bin/env python3
"""Speaks raw fastboot TCP/UDP to `flashpipe serve` for the fault tests:
malformed frames and packets, a client that dies mid-download, a client that
holds the session; and fetch, which the 29.0.6 client cannot send. Every check prints 'ok: ...' or exits non-zero with
'FAIL: ...'. Usage: fastboot_wire.py MODE HOST PORT [ARGS]."""
import socket
import struct
import sys
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg)


class Tcp:
    def __init__(self, host, port, hello=b"FB01"):
        self.s = socket.create_connection((host, port), timeout=10)
        self.s.sendall(hello)
        self.reply = self.recv_exact(4) if hello.startswith(b"FB") else b""

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                return buf
            buf += chunk
        return buf

    def send_frame(self, payload, length=None):
        n = len(payload) if length is None else length
        self.s.sendall(struct.pack(">Q", n) + payload)

    def response(self):
        """Next non-INFO response (INFO lines are collected in self.infos)."""
        self.infos = []
        while True:
            hdr = self.recv_exact(8)
            if len(hdr) < 8:
                return None
            (n,) = struct.unpack(">Q", hdr)
            if n > 64:
                fail("response of %d bytes > 64" % n)
            msg = self.recv_exact(n).decode()
            if msg.startswith("INFO"):
                self.infos.append(msg[4:])
                continue
            return msg

    def command(self, cmd):
        self.send_frame(cmd.encode() if isinstance(cmd, str) else cmd)
        return self.response()


def tcp_malformed(host, port):
    t = Tcp(host, port, b"XX01")
    t.s.settimeout(5)
    expect(t.recv_exact(4) == b"", "bad handshake: connection closed without a reply")
    t = Tcp(host, port)
    expect(t.reply == b"FB01", "handshake answered FB01")
    expect(t.command("x" * 65).startswith("FAILcommand of 65 bytes"), "65-byte command refused")
    expect(t.command(b"getvar:\x00\xff").startswith("FAILcommand byte 7"), "binary command refused")
    expect(t.command(b"").startswith("FAILempty command"), "empty frame refused")
    expect(t.command("getvar:version") == "OKAY0.4", "session goes on after bad frames")
    r = t.command("download:00000010")
    expect(r == "DATA00000010", "download of 16 bytes accepted")
    t.send_frame(b"A" * 20)  # 4 bytes past the download
    expect(t.response() == "OKAY", "download complete")
    r = t.response()
    expect(r is not None and r.startswith("FAILdata frame ran 4 bytes past"), "overrun frame reported")
    expect(t.command("getvar:version") == "OKAY0.4", "session goes on after overrun")
    expect(t.command("download:7fffffff").startswith("FAILdownload of 2147483647 bytes > max"),
           "download above the limit refused")
    t.send_frame(b"", length=1 << 40)
    r = t.response()
    expect(r is not None and r.startswith("FAILframe of"), "absurd frame length answered with FAIL")
    expect(t.recv_exact(1) == b"", "then the connection is closed")


def tcp_partial_download(host, port, size, sent):
    t = Tcp(host, port)
    expect(t.command("download:%08x" % size) == "DATA%08x" % size, "download started")
    t.send_frame(b"\x5a" * sent, length=size)
    t.s.close()
    print("ok: client gone after %d of %d bytes" % (sent, size))


def tcp_hold(host, port, seconds):
    t = Tcp(host, port)
    expect(t.command("getvar:version") == "OKAY0.4", "holder has the session")
    sys.stdout.flush()
    time.sleep(seconds)


def tcp_command(host, port, cmd, want_prefix):
    t = Tcp(host, port)
    r = t.command(cmd)
    expect(r is not None and r.startswith(want_prefix), "%s -> %r" % (cmd, r))


def tcp_download(host, port, size):
    """Downloads SIZE bytes of 0x5a and leaves without flashing."""
    t = Tcp(host, port)
    expect(t.command("download:%08x" % size) == "DATA%08x" % size, "download started")
    t.send_frame(b"\x5a" * size)
    expect(t.response() == "OKAY", "download of %d bytes complete" % size)


def tcp_trickle(host, port, limit):
    """Starts a 1 MiB download and sends one byte every 0.1 s: the daemon must
    end it (a FAIL or a closed connection) within LIMIT seconds."""
    t = Tcp(host, port)
    expect(t.command("download:00100000") == "DATA00100000", "download started")
    t.s.sendall(struct.pack(">Q", 1 << 20))
    start = time.time()
    t.s.settimeout(0.1)
    while time.time() - start < limit:
        try:
            t.s.sendall(b"\x5a")
        except OSError as e:
            print("ok: connection ended by the daemon after %.1f s (%s)" % (time.time() - start, e))
            return
        try:
            hdr = t.recv_exact(8)
        except socket.timeout:
            continue
        if len(hdr) < 8:
            print("ok: connection closed by the daemon after %.1f s" % (time.time() - start))
            return
        (n,) = struct.unpack(">Q", hdr)
        msg = t.recv_exact(n).decode()
        if msg.startswith("FAIL") or msg.startswith("INFO"):
            print("ok: daemon answered %r after %.1f s" % (msg, time.time() - start))
            return
        fail("unexpected response %r" % msg)
    fail("trickling download still going after %.1f s" % limit)


class Udp:
    def __init__(self, host, port):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.settimeout(1.0)
        self.addr = (host, port)
        self.seq = 0

    def exchange(self, data, tries=5):
        for _ in range(tries):
            self.s.sendto(data, self.addr)
            try:
                r, _ = self.s.recvfrom(65536)
                return r
            except socket.timeout:
                continue
        return None

    def start(self, max_packet=1024):
        r = self.exchange(b"\x01\x00\x00\x00")
        if r is None or len(r) != 6:
            fail("query unanswered")
        self.seq = struct.unpack(">H", r[4:6])[0]
        r = self.exchange(struct.pack(">BBHHH", 2, 0, self.seq, 1, max_packet))
        self.seq += 1
        return r

    def packet(self, payload, cont=False):
        r = self.exchange(struct.pack(">BBH", 3, 1 if cont else 0, self.seq & 0xFFFF) + payload)
        self.seq += 1
        return r

    def command(self, cmd):
        ack = self.packet(cmd.encode())
        if ack is None or len(ack) != 4 or ack[0] != 3:
            fail("command %r not acked: %r" % (cmd, ack))
        while True:
            r = self.packet(b"")
            if r is None:
                fail("no response to %r" % cmd)
            msg = r[4:].decode()
            if not msg.startswith("INFO"):
                return msg


def udp_malformed(host, port):
    u = Udp(host, port)
    u.s.sendto(b"\x03\x00", u.addr)
    try:
        u.s.recvfrom(100)
        fail("a 2-byte packet was answered")
    except socket.timeout:
        print("ok: 2-byte packet ignored")
    r = u.exchange(b"\x09\x00\x00\x07")
    expect(r is not None and r[0] == 0 and r[2:4] == b"\x00\x07", "unknown id answered with an error packet")
    r = u.exchange(b"\x03\x00\x00\x01getvar:version")
    expect(r is not None and r[0] == 0 and b"init" in r, "fastboot packet before init refused")
    r = u.exchange(b"\x02\x00\x00\x01\x00\x01\x00\x10")
    expect(r is not None and r[0] == 0 and b"512" in r, "init with a 16-byte packet size refused")
    r = u.exchange(b"\x02\x00\x00\x01\x00")
    expect(r is not None and r[0] == 0, "short init refused")
    r = u.start(1024)
    expect(r is not None and r[0] == 2 and r[4:8] == b"\x00\x01\x04\x00", "init: version 1, 1024-byte packets")
    expect(u.command("getvar:version") == "OKAY0.4", "getvar over udp")
    # A repeated seq gets the saved answer again.
    u.seq -= 1
    r = u.packet(b"")
    expect(r is not None and r[4:] == b"OKAY0.4", "repeated seq answered again")
    # A seq from the future is ignored.
    u.s.sendto(struct.pack(">BBH", 3, 0, (u.seq + 100) & 0xFFFF) + b"getvar:product", u.addr)
    try:
        u.s.recvfrom(100)
        fail("future seq answered")
    except socket.timeout:
        print("ok: future seq ignored")
    expect(u.command("x" * 65).startswith("FAILcommand of 65 bytes"), "65-byte command refused")
    # A command split over two packets with the continuation flag.
    u.packet(b"getvar:ver", cont=True)
    expect(u.command("sion") == "OKAY0.4", "command across a continuation packet")
    expect(u.command("download:7fffffff").startswith("FAILdownload of"), "download above the limit refused")


def udp_partial_download(host, port, size, sent):
    u = Udp(host, port)
    u.start(1024)
    expect(u.command("download:%08x" % size) == "DATA%08x" % size, "udp download started")
    done = 0
    while done < sent:
        n = min(1020, sent - done)
        u.packet(b"\x5a" * n, cont=True)
        done += n
    print("ok: udp client gone after %d of %d bytes" % (sent, size))


def udp_download(host, port, size):
    """Downloads SIZE bytes of 0x5a and leaves without flashing."""
    u = Udp(host, port)
    u.start(1024)
    expect(u.command("download:%08x" % size) == "DATA%08x" % size, "udp download started")
    done = 0
    while done < size:
        n = min(1020, size - done)
        u.packet(b"\x5a" * n, cont=done + n < size)
        done += n
    r = u.packet(b"")
    expect(r is not None and r[4:] == b"OKAY", "udp download of %d bytes complete" % size)


def udp_command(host, port, cmd, want_prefix):
    u = Udp(host, port)
    r = u.start(1024)
    if r is None or r[0] != 2:
        fail("init refused: %r" % r)
    r = u.command(cmd)
    expect(r.startswith(want_prefix), "%s -> %r" % (cmd, r))


def udp_trickle(host, port, limit):
    """As tcp_trickle over UDP: one data packet of 1 byte every 0.1 s until
    the daemon answers with an error packet (its session ended)."""
    u = Udp(host, port)
    u.start(1024)
    expect(u.command("download:00100000") == "DATA00100000", "udp download started")
    start = time.time()
    while time.time() - start < limit:
        r = u.packet(b"\x5a", cont=True)
        if r is not None and r[0] == 0:
            print("ok: daemon ended the session after %.1f s: %r" % (time.time() - start, r[4:]))
            return
        time.sleep(0.1)
    fail("trickling udp download still going after %.1f s" % limit)


def tcp_fetch(host, port, cmd, out):
    """Sends CMD (fetch:... or upload) and reads its data phase as the clients
    do: DATA%08x, then one frame of exactly that size, then OKAY. Writes the
    bytes to OUT."""
    t = Tcp(host, port)
    r = t.command(cmd)
    if r is None or not r.startswith("DATA"):
        fail("%s -> %r %r" % (cmd, r, getattr(t, "infos", [])))
    size = int(r[4:], 16)
    (n,) = struct.unpack(">Q", t.recv_exact(8))
    expect(n == size, "%s: one frame of %d bytes" % (cmd, size))
    data = t.recv_exact(size)
    expect(len(data) == size, "%s: %d bytes received" % (cmd, size))
    expect(t.response() == "OKAY", "%s: OKAY after the data" % cmd)
    with open(out, "wb") as f:
        f.write(data)


def udp_fetch(host, port, cmd, out):
    """As tcp_fetch over UDP: after DATA, polls collect one message of
    continued packets (the flag on all but the last), then OKAY."""
    u = Udp(host, port)
    u.start(8192)
    r = u.command(cmd)
    if not r.startswith("DATA"):
        fail("%s -> %r" % (cmd, r))
    size = int(r[4:], 16)
    data = b""
    while True:
        p = u.packet(b"")
        if p is None:
            fail("%s: no packet after %d bytes" % (cmd, len(data)))
        data += p[4:]
        if not p[1] & 1:
            break
    expect(len(data) == size, "%s: one message of %d bytes" % (cmd, size))
    r = u.packet(b"")
    expect(r is not None and r[4:] == b"OKAY", "%s: OKAY after the data" % cmd)
    with open(out, "wb") as f:
        f.write(data)


def udp_hold(host, port, seconds):
    u = Udp(host, port)
    u.start(1024)
    expect(u.command("download:00100000") == "DATA00100000", "holder is mid-download")
    sys.stdout.flush()
    end = time.time() + seconds
    while time.time() < end:  # keep sending data slowly: an active client
        u.packet(b"\x00" * 16, cont=True)
        time.sleep(0.2)


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    args = sys.argv[4:]
    modes = {
        "tcp-malformed": lambda: tcp_malformed(host, port),
        "tcp-partial-download": lambda: tcp_partial_download(host, port, int(args[0]), int(args[1])),
        "tcp-hold": lambda: tcp_hold(host, port, float(args[0])),
        "tcp-command": lambda: tcp_command(host, port, args[0], args[1]),
        "tcp-download": lambda: tcp_download(host, port, int(args[0])),
        "tcp-trickle": lambda: tcp_trickle(host, port, float(args[0])),
        "udp-download": lambda: udp_download(host, port, int(args[0])),
        "udp-command": lambda: udp_command(host, port, args[0], args[1]),
        "udp-trickle": lambda: udp_trickle(host, port, float(args[0])),
        "udp-malformed": lambda: udp_malformed(host, port),
        "udp-partial-download": lambda: udp_partial_download(host, port, int(args[0]), int(args[1])),
        "udp-hold": lambda: udp_hold(host, port, float(args[0])),
        "tcp-fetch": lambda: tcp_fetch(host, port, args[0], args[1]),
        "udp-fetch": lambda: udp_fetch(host, port, args[0], args[1]),
    }
    modes[mode]()


if __name__ == "__main__":
    main()
