#!/usr/bin/env python3
"""update-super for the power-cut VM test: downloads a super_empty.img and
sends update-super:super[:wipe] over TCP, as the AOSP client's flashall does
(the 29.0.6 client has no verb of its own for it). Prints 'ok: ...' or
'FAIL: ...' and exits non-zero.
Usage: powercut_wire.py HOST PORT SUPER_EMPTY_IMG [wipe]"""
import sys

from fastboot_wire import Tcp, expect


def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    wipe = len(sys.argv) > 4 and sys.argv[4] == "wipe"
    data = open(path, "rb").read()
    t = Tcp(host, port)
    expect(t.command("download:%08x" % len(data)) == "DATA%08x" % len(data), "download of super_empty.img")
    t.send_frame(data)
    expect(t.response() == "OKAY", "super_empty.img downloaded")
    r = t.command("update-super:super" + (":wipe" if wipe else ""))
    expect(r == "OKAY", "update-super -> %r (%s)" % (r, " ".join(t.infos)))


if __name__ == "__main__":
    main()
