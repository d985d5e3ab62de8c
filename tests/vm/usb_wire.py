#!/usr/bin/env python3
"""Speaks raw USB (usbfs ioctls, no library) to a fastboot gadget for the bad
input checks: garbage, an over-long transfer, data after a FAIL, a download
longer than announced, a control request the function does not handle.
Every check prints 'ok: ...' or exits non-zero with 'FAIL: ...'.
Also a download that stops halfway (partial), for the unbind check, and a
fetch read back to a file (the 29.0.6 client has no fetch verb).
Usage: usb_wire.py garbage SERIAL | partial SERIAL SIZE SENT |
       fetch SERIAL PART OFFSET SIZE FILE"""
import ctypes
import errno
import fcntl
import os
import struct
import sys
import time

USBDEVFS_CONTROL = 0xC0185500      # _IOWR('U', 0, struct usbdevfs_ctrltransfer)
USBDEVFS_BULK = 0xC0185502         # _IOWR('U', 2, struct usbdevfs_bulktransfer)
USBDEVFS_CLAIMINTERFACE = 0x8004550F
USBDEVFS_RELEASEINTERFACE = 0x80045510


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg)


def read_attr(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def find(serial):
    """(devnode, interface number, OUT address, IN address) of the fastboot interface."""
    base = "/sys/bus/usb/devices"
    for dev in os.listdir(base):
        d = os.path.join(base, dev)
        if read_attr(d + "/serial") != serial:
            continue
        for intf in os.listdir(d):
            i = os.path.join(d, intf)
            if read_attr(i + "/bInterfaceClass") != "ff" or read_attr(i + "/bInterfaceSubClass") != "42":
                continue
            eps = [int(e[3:], 16) for e in os.listdir(i) if e.startswith("ep_")]
            node = "/dev/bus/usb/%03d/%03d" % (int(read_attr(d + "/busnum")), int(read_attr(d + "/devnum")))
            return node, int(read_attr(i + "/bInterfaceNumber"), 16), \
                next(e for e in eps if not e & 0x80), next(e for e in eps if e & 0x80)
    fail("no fastboot interface with serial " + serial)


class Usb:
    def __init__(self, serial):
        node, self.intf, self.ep_out, self.ep_in = find(serial)
        self.fd = os.open(node, os.O_RDWR)
        fcntl.ioctl(self.fd, USBDEVFS_CLAIMINTERFACE, struct.pack("I", self.intf))

    def close(self):
        fcntl.ioctl(self.fd, USBDEVFS_RELEASEINTERFACE, struct.pack("I", self.intf))
        os.close(self.fd)

    def bulk(self, ep, buf, timeout_ms=5000):
        req = struct.pack("IIIxxxxQ", ep, len(buf), timeout_ms, ctypes.addressof(buf))
        return fcntl.ioctl(self.fd, USBDEVFS_BULK, bytearray(req))

    def send(self, data):
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        n = self.bulk(self.ep_out, buf)
        if n != len(data):
            fail("sent %d of %d bytes" % (n, len(data)))

    def response(self):
        buf = ctypes.create_string_buffer(256)
        n = self.bulk(self.ep_in, buf)
        return buf.raw[:n].decode("latin-1")

    def final(self):
        """The OKAY/FAIL/DATA response; the INFO lines before it in self.info
        (a long FAIL reason comes whole as INFO lines, short in the FAIL)."""
        self.info = []
        while True:
            r = self.response()
            if not r.startswith("INFO"):
                return r
            self.info.append(r[4:])

    def control_in(self, request_type, request, length):
        buf = ctypes.create_string_buffer(max(length, 1))
        req = struct.pack("BBHHHIxxxxQ", request_type, request, 0, self.intf, length, 2000, ctypes.addressof(buf))
        return fcntl.ioctl(self.fd, USBDEVFS_CONTROL, bytearray(req))


def garbage(serial):
    u = Usb(serial)
    u.send(b"bogus")
    r = u.final()
    expect(r.startswith("FAILunknown command"), "not a command: " + r)
    u.send(b"x" * 1000)
    r = u.final()
    expect(r.startswith("FAIL"), "1000-byte transfer answered once: " + r)
    u.send(b"download:ffffffff")
    r = u.final()
    expect(r.startswith("FAIL") and "max-download-size" in r, "download above the limit: " + r)
    u.send(b"d" * 3000)
    r = u.final()
    expect(r.startswith("FAIL"), "data after a FAIL answered once: " + r)
    u.send(b"download:000003e8")
    r = u.final()
    expect(r == "DATA000003e8", "download of 1000 bytes: " + r)
    try:  # the controller cuts the transfer at the packet that does not fit
        u.bulk(u.ep_out, ctypes.create_string_buffer(b"e" * 1100, 1100))
    except OSError:
        pass
    r = u.final()
    expect(r.startswith("FAILdownload at byte 0 of 1000") and "the host sent more" in " ".join(u.info),
           "download longer than announced: %s (INFO: %s)" % (r, " ".join(u.info)))
    try:
        u.control_in(0xC1, 0x42, 8)  # vendor request to the interface
        fail("an unknown control request was not stalled")
    except OSError as e:
        expect(e.errno == errno.EPIPE, "unknown control request stalled (%s)" % os.strerror(e.errno))
    u.send(b"getvar:product")
    r = u.final()
    expect(r.startswith("OKAY"), "still serving after bad input: " + r)
    u.close()


def partial(serial, size, sent):
    """A download that stops after `sent` of `size` bytes; then waits to be killed."""
    u = Usb(serial)
    u.send(b"download:%08x" % size)
    r = u.final()
    expect(r == "DATA%08x" % size, "download started: " + r)
    u.send(os.urandom(sent))
    print("ok: sent %d of %d bytes" % (sent, size), flush=True)
    time.sleep(600)


def fetch(serial, part, offset, size, path):
    """fetch:PART:OFFSET:SIZE into `path`. The data phase is read in 64 KiB
    transfers; the response read right after it must be OKAY: a zero-length
    packet after data that ends on a packet boundary would be read there."""
    u = Usb(serial)
    u.send(b"fetch:%s:0x%x:0x%x" % (part.encode(), offset, size))
    r = u.final()
    expect(r == "DATA%08x" % size, "fetch started: " + r)
    data = bytearray()
    while len(data) < size:
        n = min(65536, size - len(data))
        buf = ctypes.create_string_buffer(n)
        got = u.bulk(u.ep_in, buf)
        if got == 0:
            fail("zero-length transfer at byte %d of %d" % (len(data), size))
        data += buf.raw[:got]
    r = u.response()
    expect(r == "OKAY", "fetch of %d bytes, then the response, no zero-length packet: %r" % (size, r))
    with open(path, "wb") as f:
        f.write(data)
    u.send(b"fetch:%s:0x%x:0x%x" % (part.encode(), offset, 0x7fffffff))
    r = u.final()
    expect(r.startswith("FAIL"), "fetch past the partition or max-fetch-size: " + r)
    u.close()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "garbage":
        garbage(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "partial":
        partial(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 7 and sys.argv[1] == "fetch":
        fetch(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        fail("usage: usb_wire.py garbage SERIAL | partial SERIAL SIZE SENT | fetch SERIAL PART OFFSET SIZE FILE")


if __name__ == "__main__":
    main()
