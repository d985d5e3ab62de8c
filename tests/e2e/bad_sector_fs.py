#!/usr/bin/python3
"""A FUSE filesystem with one read-only file, /disk, whose bytes are those of
BACKING except that any read touching [BAD, BAD + LENGTH) fails with EIO: a
disk with unreadable sectors, once a loop device is put over /disk.

    bad_sector_fs.py BACKING BAD LENGTH MOUNTPOINT -f    (foreground; unmount to stop)

The kernel has no device-mapper here (no `error` target), so read_test.sh
builds its bad sector this way. Needs python3-fuse (Debian's /usr/bin/python3).
"""
import errno
import os
import stat
import sys

import fuse
from fuse import Fuse

fuse.fuse_python_api = (0, 2)


class BadSectorFS(Fuse):
    def __init__(self, backing, bad, length, *args, **kw):
        super().__init__(*args, **kw)
        self.fd = os.open(backing, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size
        self.bad, self.bad_end = bad, bad + length

    def getattr(self, path):
        st = fuse.Stat()
        st.st_uid = st.st_gid = st.st_ino = st.st_dev = 0
        st.st_atime = st.st_mtime = st.st_ctime = 0
        if path == "/":
            st.st_mode, st.st_nlink, st.st_size = stat.S_IFDIR | 0o755, 2, 0
        elif path == "/disk":
            st.st_mode, st.st_nlink, st.st_size = stat.S_IFREG | 0o444, 1, self.size
        else:
            return -errno.ENOENT
        return st

    def readdir(self, path, offset):
        for name in (".", "..", "disk"):
            yield fuse.Direntry(name)

    def open(self, path, flags):
        if path != "/disk":
            return -errno.ENOENT
        if flags & (os.O_WRONLY | os.O_RDWR):
            return -errno.EROFS
        return 0

    def read(self, path, size, offset):
        if offset < self.bad_end and offset + size > self.bad:
            return -errno.EIO
        return os.pread(self.fd, size, offset)


def main():
    backing, bad, length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    del sys.argv[1:4]
    server = BadSectorFS(backing, bad, length, dash_s_do="setsingle")
    server.parse(errex=1)
    server.main()


if __name__ == "__main__":
    main()
