#!/usr/bin/env python3
"""A fastboot device that behaves like a bootloader (U-Boot's fastboot), for
the tests of the host side against a device flashpipe did not write. Written
from the protocol notes (AOSP fastboot README: the TCP and UDP transports,
the commands; U-Boot's observed answers), not from flashpipe's code.

Contract:
  - Transports: UDP (query/init/fastboot packets, sequence numbers, one
    answer per host packet, --packet-size bytes at most, default 1024 as
    U-Boot) and TCP ("FB01" handshake, every message framed by an 8-byte
    big-endian length). One session at a time; both transports share one
    device (one download buffer, one set of partitions).
  - Partitions: NAME=FILE:SIZE on the command line; FILE is created (zeros)
    or extended to SIZE; only its first SIZE bytes are the partition. Every
    write is bounds-checked against SIZE.
  - Commands: getvar (version, version-bootloader, product, serialno,
    max-download-size; and those of --answer: partition-size, partition-type,
    has-slot, is-logical), download:, flash:NAME (raw, or Android sparse:
    RAW/FILL/DONT_CARE/CRC32 chunks, decoded here), erase:NAME, set_active
    (OKAY, a stub as U-Boot's), reboot, continue (OKAY, then the device leaves
    fastboot: the process exits 0). Anything else, `oem digest`, `fetch:` and
    `upload` among them, is `FAILunrecognized command`, unless --fetch: then
    `fetch:NAME[:OFFSET[:SIZE]]` (as fastbootd: decimal or 0x hex, SIZE to
    the partition's end by default) answers DATA%08x, the bytes (UDP:
    packets with the continuation flag on all but the last; TCP: frames of
    64 KiB), then OKAY; a range past the partition's end FAILs, and with
    --max-fetch-size N so does one above N (getvar max-fetch-size answers
    N). --corrupt-byte OFFSET: after every flash the partition's byte at
    OFFSET is flipped (a device that stores something else than it took).
    Unknown variables:
    `FAILVariable not implemented`. An unknown partition: `FAILfailed to get
    partition info` (for flash: after the whole download, as U-Boot).
  - Like U-Boot: the sparse decoder walks the header's total_chunks through
    the download buffer, not the download: a part whose last chunk is
    missing reads stale buffer bytes (--buffer-fill) and fails with
    `FAILUnknown chunk type`, keeping what it wrote before. Chunks are
    written as they are decoded (nothing is checked first).
  - U-Boot quirks, off unless asked: --late-bind SECONDS (the port is chosen
    and printed at once, but bound only SECONDS later: the first client
    meets a closed port), --stray-info (after each flash, the next command's
    answer carries an `INFOwriting` line before its OKAY/FAIL/DATA, as
    U-Boot's never-reset 30 s INFO timer does), --pad-raw-512 (a raw image is
    written in whole 512-byte blocks: the bytes after its end up to the next
    512 come from the download buffer). --uboot turns on the last two.
  - Output: `fakeboot: listening on udp|tcp 127.0.0.1:PORT` on stdout, one
    line per transport, before any socket may be bound; one line per command
    (`fakeboot: cmd ...` and its answer) on stderr. --pid-file FILE is written
    at start and removed at exit. SIGTERM/SIGINT: exit 0. --exit-after
    SECONDS: a bound on a forgotten device's life.
"""
import argparse
import os
import signal
import socket
import struct
import sys
import threading
import time

SPARSE_MAGIC = 0xED26FF3A
CHUNK_RAW, CHUNK_FILL, CHUNK_DONT_CARE, CHUNK_CRC32 = 0xCAC1, 0xCAC2, 0xCAC3, 0xCAC4
UDP_ERROR, UDP_QUERY, UDP_INIT, UDP_FASTBOOT = 0, 1, 2, 3
UDP_CONTINUATION = 0x01
ANSWERABLE = ("partition-size", "partition-type", "has-slot", "is-logical")


def log(msg):
    print("fakeboot: " + msg, file=sys.stderr, flush=True)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip()
    if text[-1:].upper() in units:
        return int(text[:-1], 0) * units[text[-1].upper()]
    return int(text, 0)


class DataPhase(bytes):
    """An answer that is a device-to-host data phase (the bytes after DATA)."""


class Fail(Exception):
    """A command's FAIL answer (the message, at most 60 bytes)."""


class Partition:
    """A backing file; every write is checked against the partition's size."""

    def __init__(self, spec):
        name, _, rest = spec.partition("=")
        path, _, size = rest.rpartition(":")
        if not name or not path or not size:
            raise SystemExit("partition %r: want NAME=FILE:SIZE" % spec)
        self.name, self.path, self.size = name, path, parse_size(size)
        with open(path, "ab") as f:
            if f.seek(0, os.SEEK_END) < self.size:
                f.truncate(self.size)

    def write(self, f, offset, data):
        if offset + len(data) > self.size:
            raise Fail("Request would exceed partition size!")
        f.seek(offset)
        f.write(data)

    def fill(self, f, offset, length, pattern):
        if offset + length > self.size:
            raise Fail("Request would exceed partition size!")
        block = pattern * ((1 << 20) // len(pattern))
        f.seek(offset)
        while length > 0:
            n = min(length, len(block))
            f.write(block[:n])
            length -= n


class SparseWriter:
    """Writes an Android sparse image from the download buffer as U-Boot's
    lib/image-sparse.c does: chunk after chunk, total_chunks of them, read
    from the buffer (not bounded by the download's length)."""

    def __init__(self, buf, part, f):
        self.buf, self.part, self.f = buf, part, f

    def header(self):
        magic, major, _, fh_sz, ch_sz, blk_sz, total_blks, total_chunks, _ = \
            struct.unpack_from("<IHHHHIIII", self.buf, 0)
        if major != 1 or fh_sz < 28 or ch_sz < 12:
            raise Fail("unsupported sparse image")
        if blk_sz == 0 or blk_sz % 512:
            raise Fail("sparse block size %d not a multiple of 512" % blk_sz)
        if total_blks * blk_sz > self.part.size:
            raise Fail("Request would exceed partition size!")
        return fh_sz, ch_sz, blk_sz, total_blks, total_chunks

    def run(self):
        fh_sz, ch_sz, blk_sz, total_blks, total_chunks = self.header()
        off, blk, counts = fh_sz, 0, {}
        for _ in range(total_chunks):
            if off + ch_sz > len(self.buf):
                raise Fail("sparse chunk past the download buffer")
            ctype, _, chunk_sz, total_sz = struct.unpack_from("<HHII", self.buf, off)
            data = off + ch_sz
            length = chunk_sz * blk_sz
            if ctype not in (CHUNK_RAW, CHUNK_FILL, CHUNK_DONT_CARE, CHUNK_CRC32):
                raise Fail("Unknown chunk type")
            if (blk + chunk_sz) * blk_sz > self.part.size:
                raise Fail("Request would exceed partition size!")
            if ctype == CHUNK_RAW:
                if total_sz - ch_sz != length or data + length > len(self.buf):
                    raise Fail("Bogus chunk size for chunk type Raw")
                self.part.write(self.f, blk * blk_sz, self.buf[data:data + length])
            elif ctype == CHUNK_FILL:
                if total_sz - ch_sz != 4:
                    raise Fail("Bogus chunk size for chunk type FILL")
                self.part.fill(self.f, blk * blk_sz, length, bytes(self.buf[data:data + 4]))
            elif ctype == CHUNK_DONT_CARE:
                pass
            else:  # CRC32: its 4 bytes are not checked (U-Boot skips it)
                chunk_sz = 0
            counts[ctype] = counts.get(ctype, 0) + 1
            blk += chunk_sz
            off += total_sz
        if blk != total_blks:
            raise Fail("sparse image write failure: %d of %d blocks" % (blk, total_blks))
        names = {CHUNK_RAW: "raw", CHUNK_FILL: "fill", CHUNK_DONT_CARE: "dont_care", CHUNK_CRC32: "crc32"}
        return "sparse, %d blocks of %d, chunks %s" % (
            blk, blk_sz, " ".join("%s=%d" % (names[t], n) for t, n in sorted(counts.items())))


class Device:
    """The command layer: one session's state, shared by the transports
    (only one of them talks at a time: self.lock)."""

    def __init__(self, args):
        self.args = args
        self.parts = {p.name: p for p in (Partition(s) for s in args.partition)}
        self.buf = bytearray([args.buffer_fill]) * args.max_download_size
        self.downloaded = 0          # bytes of the last complete download
        self.expect = 0              # bytes still to come in the download phase
        self.received = 0
        self.stray_info = False
        self.hang_up = False         # TCP: close the connection after this answer
        self.lock = threading.Lock()
        self.leaving = threading.Event()

    # -- the download phase ------------------------------------------------
    def in_download(self):
        return self.expect > 0

    def take_data(self, data):
        """Bytes of the download phase; returns the final answer once all came."""
        n = min(len(data), self.expect)
        self.buf[self.received:self.received + n] = data[:n]
        self.received += n
        self.expect -= n
        if self.expect > 0:
            return []
        self.downloaded = self.received
        log("download complete: %d bytes" % self.downloaded)
        if len(data) > n:
            return [b"FAILdata past the end of the download"]
        return [b"OKAY"]

    def abort_download(self):
        self.expect = 0

    # -- commands ----------------------------------------------------------
    def command(self, cmd):
        """The answers (INFO..., then OKAY/FAIL/DATA) to one command."""
        text = cmd.decode("latin-1")
        table = [("getvar:", self.getvar), ("download:", self.download), ("flash:", self.flash),
                 ("fetch:", self.fetch),
                 ("erase:", self.erase), ("set_active:", self.set_active), ("reboot", self.reboot),
                 ("continue", self.cont)]
        answers = []
        self.hang_up = False
        if self.stray_info:
            answers.append(b"INFOwriting")
            self.stray_info = False
        try:
            for prefix, handler in table:
                if text.startswith(prefix) and (prefix.endswith(":") or text == prefix or
                                                text.startswith(prefix + "-")):
                    answers += handler(text[len(prefix):])
                    break
            else:
                answers.append(b"FAILunrecognized command")
        except Fail as e:
            answers.append(("FAIL" + str(e)).encode()[:64])
        log("cmd %s -> %s" % (text, " | ".join("(%d data bytes)" % len(a) if isinstance(a, DataPhase)
                                                else a.decode("latin-1") for a in answers)))
        return answers

    def variables(self, name):
        mds = self.args.max_download_size
        fixed = {"version": "0.4", "version-bootloader": "fakeboot-1.0", "product": self.args.product,
                 "serialno": self.args.serialno, "max-download-size": "0x%08x" % mds}
        if self.args.fetch and self.args.max_fetch_size:
            fixed["max-fetch-size"] = "0x%08x" % self.args.max_fetch_size
        if name in fixed:
            return fixed[name]
        key, _, part = name.partition(":")
        if key not in self.args.answer or not part:
            raise Fail("Variable not implemented")
        if key == "has-slot":
            return "no"  # U-Boot: no for any name (no _a/_b partitions here)
        if part not in self.parts:
            raise Fail("failed to get partition info")
        return {"partition-size": "0x%016x" % self.parts[part].size,
                "partition-type": "raw", "is-logical": "no"}[key]

    def getvar(self, name):
        if name == "all":
            lines = []
            for var in ("version", "version-bootloader", "product", "serialno", "max-download-size"):
                lines.append(("INFO%s: %s" % (var, self.variables(var))).encode())
            for p in sorted(self.parts):
                for key in ANSWERABLE:
                    if key in self.args.answer:
                        lines.append(("INFO%s:%s: %s" % (key, p, self.variables(key + ":" + p))).encode())
            return lines + [b"OKAY"]
        return [("OKAY" + self.variables(name)).encode()]

    def download(self, arg):
        try:
            size = int(arg, 16)
        except ValueError:
            raise Fail("bad download size %r" % arg[:20])
        if size == 0 or size > len(self.buf):
            raise Fail("data too large")
        self.expect, self.received = size, 0
        return [b"DATA%08x" % size]

    def partition(self, name):
        if name not in self.parts:
            raise Fail("failed to get partition info")
        return self.parts[name]

    def flash(self, name):
        part = self.partition(name)
        if self.downloaded == 0:
            raise Fail("no image downloaded")
        self.stray_info = self.args.stray_info
        with open(part.path, "r+b") as f:
            if self.downloaded >= 28 and struct.unpack_from("<I", self.buf, 0)[0] == SPARSE_MAGIC:
                what = SparseWriter(self.buf, part, f).run()
            else:
                what = self.flash_raw(part, f)
        log("flash %s: %s" % (name, what))
        at = self.args.corrupt_byte
        if at is not None and at < part.size:
            with open(part.path, "r+b") as f:
                f.seek(at)
                b = f.read(1)
                f.seek(at)
                f.write(bytes([b[0] ^ 0xFF]))
            log("flash %s: byte %d flipped (--corrupt-byte)" % (name, at))
        return [b"OKAY"]

    def fetch(self, arg):
        if not self.args.fetch:
            raise Fail("unrecognized command")
        fields = arg.split(":")
        if len(fields) > 3 or not fields[0]:
            raise Fail("expected PARTITION[:OFFSET[:SIZE]]")
        part = self.partition(fields[0])
        try:
            offset = int(fields[1], 0) if len(fields) > 1 else 0
            size = int(fields[2], 0) if len(fields) > 2 else part.size - offset
        except ValueError:
            raise Fail("bad offset or size")
        if offset < 0 or size <= 0 or offset + size > part.size:
            raise Fail("range past the end of the partition")
        if self.args.max_fetch_size and size > self.args.max_fetch_size:
            raise Fail("0x%x bytes > max-fetch-size" % size)
        with open(part.path, "rb") as f:
            f.seek(offset)
            data = f.read(size)
        return [b"DATA%08x" % size, DataPhase(data), b"OKAY"]

    def flash_raw(self, part, f):
        n = self.downloaded
        if self.args.pad_raw_512:
            n = (n + 511) // 512 * 512
        if n > part.size:
            raise Fail("too large for partition")
        part.write(f, 0, memoryview(self.buf)[:n])
        return "raw, %d bytes written (image %d)" % (n, self.downloaded)

    def erase(self, name):
        part = self.partition(name)
        with open(part.path, "r+b") as f:
            part.fill(f, 0, part.size, b"\0")
        return [b"OKAY"]

    def set_active(self, _slot):
        return [b"OKAY"]

    def reboot(self, target):
        flags = {"": None, "-bootloader": "Cannot set reboot flag",
                 "-recovery": "Cannot set recovery flag", "-fastboot": "Cannot set fastboot flag"}
        if target not in flags:
            raise Fail("unrecognized command")
        if flags[target]:
            raise Fail(flags[target])
        self.hang_up = True  # the device restarts (here: it only hangs up over TCP)
        return [b"OKAY"]

    def cont(self, _):
        self.leaving.set()
        self.hang_up = True
        return [b"OKAY"]


class UdpServer:
    """The fastboot UDP transport, device side: one answer per host packet,
    echoing its sequence number; a retransmitted packet gets the saved
    answer again."""

    def __init__(self, dev, sock):
        self.dev, self.sock = dev, sock
        self.seq = 0x1234  # the next sequence number expected
        self.saved = b""
        self.message = b""
        self.pending = []
        self.packet_size = dev.args.packet_size

    def run(self):
        while True:
            packet, peer = self.sock.recvfrom(65536)
            if len(packet) < 4:
                continue
            reply = self.packet(packet)
            if reply is not None:
                self.sock.sendto(reply, peer)

    def packet(self, packet):
        pid, flags, seq = packet[0], packet[1], struct.unpack_from(">H", packet, 2)[0]
        if pid == UDP_QUERY:
            return bytes([UDP_QUERY, 0]) + packet[2:4] + struct.pack(">H", self.seq)
        if seq == (self.seq - 1) & 0xFFFF:
            return self.saved or None
        if seq != self.seq:
            return None
        if pid == UDP_INIT:
            body = self.init(packet[4:])
        elif pid == UDP_FASTBOOT:
            with self.dev.lock:
                body = self.fastboot(flags, packet[4:])
        else:
            return None
        body, flags = body if isinstance(body, tuple) else (body, 0)
        self.saved = bytes([pid, flags]) + packet[2:4] + body
        self.seq = (self.seq + 1) & 0xFFFF
        return self.saved

    def init(self, body):
        if len(body) < 4:
            return b""
        host_max = struct.unpack_from(">H", body, 2)[0]
        self.message, self.pending = b"", []
        self.dev.abort_download()
        self.packet_size = min(host_max, self.dev.args.packet_size)
        return struct.pack(">HH", 1, self.packet_size)

    def queue(self, answers):
        """Answers as packets to come: a data phase cut into packets, the
        continuation flag on all but its last."""
        for a in answers:
            if not isinstance(a, DataPhase):
                self.pending.append(a)
                continue
            step = self.packet_size - 4
            for i in range(0, len(a), step):
                more = i + step < len(a)
                self.pending.append((bytes(a[i:i + step]), UDP_CONTINUATION if more else 0))

    def fastboot(self, flags, payload):
        dev = self.dev
        if payload and dev.in_download():
            self.queue(dev.take_data(payload))
            return b""
        if payload or self.message:
            self.message += payload
            if flags & UDP_CONTINUATION:
                return b""
            cmd, self.message = self.message, b""
            self.queue(dev.command(cmd))
            return b""
        # An empty packet: the host asks for the next answer.
        return self.pending.pop(0) if self.pending else b""


class TcpServer:
    """The fastboot TCP transport, device side: one connection at a time."""

    def __init__(self, dev, sock):
        self.dev, self.sock = dev, sock

    def run(self):
        while True:
            conn, _ = self.sock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.session(conn)
            except (OSError, EOFError) as e:
                log("tcp session ended: %s" % (str(e) or "connection closed"))
            finally:
                with self.dev.lock:
                    self.dev.abort_download()
                conn.close()

    @staticmethod
    def recv_exact(conn, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def send(self, conn, answers):
        # One write for all the answers to a command: a second small write
        # would wait for the host's delayed ACK (Nagle), 40 ms each time.
        # A data phase goes as frames of 64 KiB (fastbootd: one per write).
        frames = []
        for a in answers:
            pieces = [a[i:i + 65536] for i in range(0, len(a), 65536)] if isinstance(a, DataPhase) else [a]
            frames += [struct.pack(">Q", len(p)) + bytes(p) for p in pieces]
        conn.sendall(b"".join(frames))

    def session(self, conn):
        if self.recv_exact(conn, 4)[:2] != b"FB":
            return
        conn.sendall(b"FB01")
        while True:
            (n,) = struct.unpack(">Q", self.recv_exact(conn, 8))
            with self.dev.lock:
                if self.dev.in_download():
                    answers = self.data_frame(conn, n)
                else:
                    answers = self.dev.command(self.recv_exact(conn, min(n, 4096)))
            self.send(conn, answers)
            if self.dev.hang_up:
                self.dev.hang_up = False
                return

    def data_frame(self, conn, n):
        """One frame of the data phase (any slice of the download)."""
        answers = []
        while n > 0:
            chunk = conn.recv(min(n, 1 << 20))
            if not chunk:
                raise EOFError
            n -= len(chunk)
            if self.dev.in_download():
                answers += self.dev.take_data(chunk)
            elif not answers or answers[-1].startswith(b"OKAY"):
                answers.append(b"FAILdata past the end of the download")
        return answers


def reserve_port(kind, host, port):
    """A port for a transport that binds later: bound once, then released."""
    s = socket.socket(socket.AF_INET, kind)
    s.bind((host, port))
    port = s.getsockname()[1]
    s.close()
    return port


def bind(kind, host, port):
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    if kind == socket.SOCK_STREAM:
        s.listen(4)
    return s


def start_transport(dev, kind, addr, late_bind):
    host, _, port = addr.rpartition(":")
    name = "udp" if kind == socket.SOCK_DGRAM else "tcp"
    server_class = UdpServer if kind == socket.SOCK_DGRAM else TcpServer
    if late_bind > 0:
        port = reserve_port(kind, host, int(port))
        sock = None
    else:
        sock = bind(kind, host, int(port))
        port = sock.getsockname()[1]
    print("fakeboot: listening on %s %s:%d" % (name, host, port), flush=True)

    def serve(sock=sock):
        if sock is None:
            time.sleep(late_bind)
            sock = bind(kind, host, port)
            log("%s socket bound after %.1f s" % (name, late_bind))
        server_class(dev, sock).run()

    threading.Thread(target=serve, daemon=True).start()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("partition", nargs="+", help="NAME=FILE:SIZE")
    p.add_argument("--udp", metavar="HOST:PORT", help="UDP address (default 127.0.0.1:0 if no --tcp)")
    p.add_argument("--tcp", metavar="HOST:PORT", help="TCP address")
    p.add_argument("--max-download-size", type=parse_size, default=32 << 20)
    p.add_argument("--packet-size", type=int, default=1024, help="largest UDP packet (U-Boot: 1024)")
    p.add_argument("--answer", default="partition-size,partition-type",
                   help="comma list of %s, or none (default as U-Boot)" % ",".join(ANSWERABLE))
    p.add_argument("--product", default="fakeboot")
    p.add_argument("--serialno", default="fakeboot0001")
    p.add_argument("--buffer-fill", type=lambda s: int(s, 0), default=0xB5,
                   help="the download buffer's bytes before any download (default 0xb5)")
    p.add_argument("--late-bind", type=float, default=0, metavar="SECONDS")
    p.add_argument("--stray-info", action="store_true")
    p.add_argument("--pad-raw-512", action="store_true")
    p.add_argument("--uboot", action="store_true", help="--stray-info --pad-raw-512")
    p.add_argument("--fetch", action="store_true", help="answer fetch: (read-back)")
    p.add_argument("--max-fetch-size", type=parse_size, default=0, metavar="N")
    p.add_argument("--corrupt-byte", type=parse_size, default=None, metavar="OFFSET")
    p.add_argument("--pid-file")
    p.add_argument("--exit-after", type=float, default=0, metavar="SECONDS")
    args = p.parse_args(argv)
    args.answer = set() if args.answer == "none" else set(args.answer.split(","))
    unknown = args.answer - set(ANSWERABLE)
    if unknown:
        p.error("--answer: unknown %s" % ",".join(sorted(unknown)))
    if args.uboot:
        args.stray_info = args.pad_raw_512 = True
    if not args.udp and not args.tcp:
        args.udp = "127.0.0.1:0"
    if args.packet_size < 512:
        p.error("--packet-size below 512")
    return args


def main():
    args = parse_args(sys.argv[1:])
    dev = Device(args)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write("%d\n" % os.getpid())
    try:
        for kind, addr in ((socket.SOCK_DGRAM, args.udp), (socket.SOCK_STREAM, args.tcp)):
            if addr:
                start_transport(dev, kind, addr, args.late_bind)
        end = time.monotonic() + args.exit_after if args.exit_after else None
        while not stop.wait(0.1):
            if dev.leaving.is_set():
                time.sleep(0.5)  # the OKAY goes out (a UDP host polls for it)
                log("continue: leaving fastboot")
                break
            if end and time.monotonic() > end:
                log("--exit-after %.0f s: exiting" % args.exit_after)
                break
    finally:
        if args.pid_file:
            try:
                os.unlink(args.pid_file)
            except OSError:
                pass


if __name__ == "__main__":
    main()
