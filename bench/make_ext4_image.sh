#!/usr/bin/env bash
# The benchmarks' 1 GiB ext4 image: mkfs.ext4 -d from ~450 MiB of files
# (eight 40 MiB random blobs, 2000 small compressible files of 0-128 KiB),
# 4 KiB blocks; its free space is holes in the file.
#   bash bench/make_ext4_image.sh OUT.img
set -euo pipefail
out=$1
tree=$(mktemp -d "$(dirname "$out")/ext4_tree.XXXXXX")
trap 'rm -rf "$tree"' EXIT
for i in $(seq 1 8); do head -c 40M /dev/urandom > "$tree/blob$i"; done
python3 - "$tree" <<'PY'   # the small files, without a process each
import os, random, sys
os.mkdir(f"{sys.argv[1]}/small")
pool = os.urandom(1 << 20)
for i in range(2000):
    n = random.randrange(0, 128 << 10)
    off = random.randrange(0, (1 << 20) - n)
    with open(f"{sys.argv[1]}/small/f{i}", "wb") as f:
        f.write(pool[off:off + n])
PY
mkfs.ext4 -q -F -b 4096 -d "$tree" "$out" 1G
