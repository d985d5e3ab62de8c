#!/usr/bin/env python3
"""The hash floor of `bmap create`: read the bytes a file stores (its data
extents, SEEK_DATA/SEEK_HOLE) and SHA-256 them, split into THREADS equal
shares hashed at once (hashlib is OpenSSL's SHA-256 and releases the GIL), so
no tool that reads and hashes the same bytes on as many cores can be faster.
Usage: hash_floor.py FILE [THREADS]   (prints the bytes hashed)"""
import hashlib
import os
import sys
import threading

CHUNK = 1 << 20


def extents(fd, size):
    out, pos = [], 0
    while pos < size:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: no data after pos
            break
        hole = os.lseek(fd, data, os.SEEK_HOLE)
        out.append((data, min(hole, size)))
        pos = hole
    return out


def shares(ext, n):
    total = sum(e - s for s, e in ext)
    want, cur, parts = -(-total // n), [], []
    left = want
    for s, e in ext:
        while s < e:
            take = min(e - s, left)
            cur.append((s, s + take))
            s += take
            left -= take
            if left == 0:
                parts.append(cur)
                cur, left = [], want
    if cur:
        parts.append(cur)
    return parts, total


def hash_share(fd, share, out, i):
    h = hashlib.sha256()
    for s, e in share:
        while s < e:
            b = os.pread(fd, min(CHUNK, e - s), s)
            if not b:
                raise SystemExit(f"hash_floor: short read at {s}")
            h.update(b)
            s += len(b)
    out[i] = h.hexdigest()


def main():
    path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    parts, total = shares(extents(fd, size), n)
    out = [None] * len(parts)
    ts = [threading.Thread(target=hash_share, args=(fd, p, out, i)) for i, p in enumerate(parts)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(total)


if __name__ == "__main__":
    main()
