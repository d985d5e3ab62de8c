#!/usr/bin/env bash
# End-to-end test of `flashpipe dump`: the totals line (RAW, FILL, DONT_CARE
# bytes, checked against a parse of the file written here in Python), the JSON
# (numbers kept, magic/pattern/CRC also as "0x%08x" strings), and compressed
# input: a gzip/xz/zstd/bzip2/lz4 sparse image is named and dumped like the
# plain one; a compressed raw image is named, refused, and `write` really
# reads it as the message says.
#   FLASHPIPE=build/flashpipe bash tests/e2e/dump_test.sh
set -euo pipefail
FP=$(realpath "${FLASHPIPE:?set FLASHPIPE to the flashpipe binary}")
work=$(mktemp -d /tmp/fp-dump-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# An image with every chunk type: data, a 0x5a fill, zeros, a hole
# (DONT_CARE with -s), and a CRC32 chunk (--crc).
python3 - img.raw <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    f.write(os.urandom(40960)); f.write(b"\x5a" * 16384); f.write(bytes(8192))
    f.seek(1 << 20); f.write(os.urandom(4096)); f.truncate((1 << 20) + 8192)
PY
"$FP" img2simg -s --crc img.raw img.simg

step "totals line and JSON agree with the file"
"$FP" dump img.simg >plain.txt
"$FP" dump --json img.simg >plain.json
python3 - img.simg plain.txt plain.json <<'PY'
import json, re, struct, sys
data = open(sys.argv[1], "rb").read()
magic, major, minor, fhs, chs, blk, blks, nchunks, csum = struct.unpack_from("<IHHHHIIII", data)
want = {"RAW": [0, 0], "FILL": [0, 0], "DONT_CARE": [0, 0], "CRC32": [0, 0]}
names = {0xCAC1: "RAW", 0xCAC2: "FILL", 0xCAC3: "DONT_CARE", 0xCAC4: "CRC32"}
fills, crcs, off = [], [], fhs
for i in range(nchunks):
    ctype, _, csz, total = struct.unpack_from("<HHII", data, off)
    name = names[ctype]
    want[name][0] += 0 if name == "CRC32" else csz * blk
    want[name][1] += 1
    if name == "FILL": fills.append(struct.unpack_from("<I", data, off + chs)[0])
    if name == "CRC32": crcs.append(struct.unpack_from("<I", data, off + chs)[0])
    off += total
assert all(want[k][1] for k in want), want  # the image has every chunk type

text = open(sys.argv[2]).read().splitlines()[-1]
plural = lambda n: "%d chunk%s" % (n, "" if n == 1 else "s")
line = "total: RAW %d bytes (%s), FILL %d bytes (%s), DONT_CARE %d bytes (%s), CRC32 %s; %d bytes expanded" % (
    want["RAW"][0], plural(want["RAW"][1]), want["FILL"][0], plural(want["FILL"][1]),
    want["DONT_CARE"][0], plural(want["DONT_CARE"][1]), plural(want["CRC32"][1]), blks * blk)
assert text == line, (text, line)

j = json.load(open(sys.argv[3]))
t = j["totals"]
assert (t["raw_bytes"], t["fill_bytes"], t["dont_care_bytes"]) == (want["RAW"][0], want["FILL"][0], want["DONT_CARE"][0]), t
assert (t["raw_chunks"], t["fill_chunks"], t["dont_care_chunks"], t["crc32_chunks"]) == tuple(want[k][1] for k in ("RAW", "FILL", "DONT_CARE", "CRC32")), t
h = j["header"]
assert h["magic"] == magic == 0xED26FF3A and h["magic_hex"] == "0xed26ff3a", h
assert h["image_checksum"] == csum and h["image_checksum_hex"] == "0x%08x" % csum, h
got_fills = [(c["pattern"], c["pattern_hex"]) for c in j["chunks"] if c["type"] == "FILL"]
assert got_fills == [(p, "0x%08x" % p) for p in fills] and (0x5a5a5a5a, "0x5a5a5a5a") in got_fills, got_fills
got_crcs = [(c["crc32"], c["crc32_hex"], c["computed_crc32_hex"]) for c in j["chunks"] if c["type"] == "CRC32"]
assert got_crcs == [(v, "0x%08x" % v, "0x%08x" % v) for v in crcs], got_crcs
assert j["compression"] is None and j["valid"] is True
PY

step "a compressed sparse image is named and dumped"
for z in "gzip -c" "xz -c" "zstd -qc" "bzip2 -c" "lz4 -qc"; do
  name=${z%% *}
  $z img.simg >img.simg.z
  "$FP" dump img.simg.z >z.txt || fail "$name: dump failed"
  [ "$(head -1 z.txt)" = "img.simg.z: $name-compressed sparse image (flashpipe write reads it as it is); input offsets are in the decompressed stream" ] ||
    fail "$name: first line: $(head -1 z.txt)"
  diff <(tail -n +2 z.txt) plain.txt || fail "$name: the table differs from the plain image's"
  $z img.simg | "$FP" dump - >zs.txt || fail "$name from stdin"
  diff <(tail -n +2 zs.txt) plain.txt || fail "$name from stdin: table"
  head -1 zs.txt | grep -q "^stdin: $name-compressed sparse image" || fail "$name from stdin: $(head -1 zs.txt)"
  "$FP" dump --json img.simg.z >z.json
  python3 - z.json plain.json "$name" <<'PY'
import json, sys
z, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert z["compression"] == sys.argv[3], z["compression"]
assert z["chunks"] == p["chunks"] and z["totals"] == p["totals"] and z["valid"] is True
PY
done

step "a compressed raw image: named, refused, and write reads it"
gzip -c img.raw >img.raw.gz
rc=0; "$FP" dump img.raw.gz >out.txt 2>err.txt || rc=$?
[ "$rc" -eq 1 ] || fail "dump of a gzip raw image exited $rc"
grep -qx "flashpipe dump: error: img.raw.gz: gzip-compressed raw image, not a sparse image: nothing to dump (flashpipe write reads it as it is)" err.txt ||
  fail "message: $(cat err.txt)"
rc=0; "$FP" dump --json img.raw.gz >out.json 2>/dev/null || rc=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["compression"]=="gzip" and d["valid"] is False and "raw image" in d["error"], d' out.json
"$FP" write --no-progress img.raw.gz written.img
cmp img.raw written.img || fail "write did not read the gzip raw image as dump says"
# A corrupt compressed sparse image is still reported with its chunk.
head -c 30000 img.simg | gzip -c >trunc.simg.gz
rc=0; "$FP" dump trunc.simg.gz >out.txt 2>err.txt || rc=$?
[ "$rc" -eq 1 ] && grep -q "truncated RAW payload" err.txt || fail "truncated gzip sparse: rc $rc, $(cat err.txt)"
grep -q "^up to the error, total: RAW 0 bytes" out.txt || fail "totals up to the error: $(tail -1 out.txt)"
echo "dump e2e: all passed"
