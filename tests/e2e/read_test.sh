#!/usr/bin/env bash
# End-to-end test of `flashpipe read` and `flashpipe bmap create`: an ext4
# image written to a loop device (direct I/O) is read back in every format,
# each written again to a second loop device and compared byte for byte;
# the sparse output is checked with AOSP simg2img, the bmap with bmaptool
# (copy accepts it; bmap create's ranges equal bmaptool create's); a GPT
# partition read by name stays inside it (random guard bytes all around);
# and the failures leave no output: a source shorter than --length, an
# unreadable sector (a loop device over a FUSE file that fails a range with
# EIO: this kernel has no device-mapper), ENOSPC (a small tmpfs), a device
# another program holds, the source as the output.
#   FLASHPIPE=build/flashpipe bash tests/e2e/read_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in simg2img bmaptool mkfs.ext4 losetup blkdiscard blockdev sgdisk zstd xz gzip python3 fusermount; do
  command -v "$tool" >/dev/null || { echo "read_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

T=$(mktemp -d /tmp/fp_read_e2e.XXXXXX)
LOOPS=()
MOUNTS=()
PIDS=()
# Mounts first (a mounted loop device cannot be detached), then the loop
# devices, then the FUSE filesystem under one of them and its server.
cleanup() {
  for m in "${MOUNTS[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null || true; done
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  umount "$T/fusemnt" 2>/dev/null || true
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }
fp() { timeout 300 "$FP" "$@"; }
# Runs flashpipe read expecting failure; stderr goes to $T/err.
expect_fail() {
  local rc=0
  timeout 120 "$FP" read --no-progress "$@" 2>"$T/err" >/dev/null || rc=$?
  [ "$rc" -eq 1 ] || fail "expected exit 1, got $rc: read $* ($(cat "$T/err"))"
  grep -q "^flashpipe read: error: " "$T/err" || fail "no error line for: read $* ($(cat "$T/err"))"
}
err_has() { grep -q -- "$1" "$T/err" || fail "error of $2 lacks '$1': $(cat "$T/err")"; }
attach() {  # attach FILE SIZE: a loop device with direct I/O over a new file; sets DEV
  truncate -s "$2" "$1"
  DEV=$(losetup --direct-io=on --find --show "$1")
  LOOPS+=("$DEV")
}
# The first $2 bytes of a device, past any page cache.
readback() {
  blockdev --flushbufs "$1"
  head -c "$2" "$1"
}
# Nothing but the listed files in a directory (no output, no temp left).
only() {  # only DIR NAME...
  local dir=$1 got want
  shift
  got=$(ls -A "$dir" | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$dir holds '$got', want '$want'"
}

# ---- fixtures: an ext4 image (files, holes, zero runs) and two loop devices
mkdir tree
head -c 6000000 /dev/urandom > tree/random.bin
seq 1 300000 > tree/numbers.txt
head -c 3000000 /dev/zero > tree/zeros.bin
mkdir tree/dir && for i in $(seq 1 50); do echo "file $i" > tree/dir/f$i; done
mkfs.ext4 -q -F -b 4096 -d tree ext4.img 40M
SIZE=$(stat -c %s ext4.img)
attach a.bin 48M; A=$DEV
attach b.bin 48M; B=$DEV
fp write --no-progress ext4.img "$A"
cmp <(readback "$A" "$SIZE") ext4.img || fail "the image did not reach $A"

# B starts full of 0xFF, so a zero the output forgets shows up.
fill_b() { head -c 48M /dev/zero | tr '\0' '\377' | dd of="$B" bs=1M oflag=direct status=none; }
same_devices() {  # the image's bytes on A and B are the same
  cmp <(readback "$A" "$SIZE") <(readback "$B" "$SIZE") || fail "$1: $B differs from $A"
}

# ---- round trips: read A in every format, write that to B, A == B
for out in out.img out.simg out.zst out.xz out.gz; do
  rm -f "$out"
  fp read --no-progress --verify --json --length "$SIZE" "$A" "$out" > j.json
  grep -q '"verify": "passed"' j.json || fail "read -> $out: verify did not pass: $(cat j.json)"
  fill_b
  fp write --no-progress "$out" "$B"
  same_devices "$out"
  ok "round trip $A -> $out -> $B, byte-identical ($(grep -o '"format": "[a-z]*"' j.json))"
done
# A raw output keeps the zero runs as holes.
[ "$(du -k out.img | cut -f1)" -lt $((SIZE / 1024 / 2)) ] || fail "out.img is not sparse: $(du -k out.img)"
ok "raw output: zero runs are holes ($(du -k out.img | cut -f1) KiB of $((SIZE / 1024)))"
# The sparse output as AOSP reads it.
simg2img out.simg aosp.raw
cmp aosp.raw ext4.img || fail "AOSP simg2img of read's sparse output is not the image"
ok "AOSP simg2img expands the sparse output to the same bytes"
# DONT_CARE zeros: smaller, and right over a zeroed device.
fp read --no-progress --dont-care-zeros --length "$SIZE" "$A" dc.simg
[ "$(stat -c %s dc.simg)" -le "$(stat -c %s out.simg)" ] || fail "--dont-care-zeros made a larger image"
blkdiscard -f -z "$B" 2>/dev/null
fp write --no-progress dc.simg "$B"
same_devices "dont-care zeros"
ok "--dont-care-zeros, written over a zeroed device"
# Parts of at most 4 MiB, written back as parts.
fp read --no-progress --verify --max-size 4M --length "$SIZE" "$A" part.simg
N=$(ls part.simg.* | wc -l)
[ "$N" -ge 2 ] || fail "--max-size 4M made $N parts"
for p in part.simg.*; do [ "$(stat -c %s "$p")" -le $((4 << 20)) ] || fail "$p is larger than 4 MiB"; done
fill_b
fp write --no-progress "$(ls part.simg.* | sort -t. -k3 -n | tr '\n' ',' | sed 's/,$//')" "$B"
same_devices "parts"
ok "--max-size 4M: $N parts, verified, written back as parts"
# stdout: raw and a sparse stream (two passes over the source).
fp read --no-progress --length "$SIZE" "$A" - | cmp - ext4.img || fail "raw to stdout"
fp read --no-progress --format sparse --length "$SIZE" "$A" - > stream.simg
cmp stream.simg out.simg || fail "the sparse stream differs from the sparse file"
ok "stdout: raw, and a sparse stream identical to the sparse file"
# Every backend, a small request size, a shallow queue.
for b in io_uring threads sync; do
  fp read --no-progress --json --backend $b -Q 2 --request-size 64K --length "$SIZE" "$A" "be_$b.img" > j.json
  grep -q "\"backend\": \"$b" j.json || fail "backend $b not used: $(cat j.json)"
  cmp "be_$b.img" ext4.img || fail "backend $b read different bytes"
done
ok "backends io_uring, threads, sync"

# ---- bmaps: bmap create against bmaptool create, bmaptool copy accepts ours
{ head -c 1000000 /dev/urandom; } > holes.img
truncate -s 30M holes.img
dd if=/dev/urandom of=holes.img bs=4096 seek=2000 count=300 conv=notrunc status=none
dd if=/dev/zero of=holes.img bs=4096 seek=4000 count=100 conv=notrunc status=none   # allocated zeros
printf 'tail' | dd of=holes.img bs=1 seek=$((30 * 1048576 - 100)) conv=notrunc status=none
truncate -s $((30 * 1048576 + 1234)) holes.img   # a short last block
fp bmap create holes.img -o fp.bmap
bmaptool -q create holes.img -o bt.bmap 2>/dev/null || bmaptool create holes.img -o bt.bmap
ranges() { grep -o '<Range[^<]*</Range>' "$1"; }
[ "$(ranges fp.bmap)" = "$(ranges bt.bmap)" ] || fail "bmap create's ranges differ from bmaptool create's: $(diff <(ranges fp.bmap) <(ranges bt.bmap))"
ok "bmap create: the same ranges and checksums as bmaptool create ($(ranges fp.bmap | wc -l) ranges)"
rm -f copy.img
bmaptool copy --bmap fp.bmap holes.img copy.img 2>err || fail "bmaptool copy refused our bmap: $(cat err)"
cmp copy.img holes.img || fail "bmaptool copy with our bmap made a different image"
fp write --no-progress --bmap fp.bmap holes.img copy2.img
cmp copy2.img holes.img || fail "flashpipe write --bmap with our bmap"
ok "bmaptool copy and write --bmap accept it"
fp bmap create --zeros-unmapped holes.img > z.bmap
ranges fp.bmap | grep -q '> 4000-4099 <' || fail "bmap create did not map the allocated zero run (as bmaptool does)"
if ranges z.bmap | grep -q '> 4000-4099 <'; then fail "--zeros-unmapped did not leave the zero run out"; fi
bmaptool copy --bmap z.bmap holes.img copy3.img 2>err || fail "bmaptool copy refused the --zeros-unmapped bmap: $(cat err)"
cmp copy3.img holes.img || fail "--zeros-unmapped bmap copied onto a new file"
ok "--zeros-unmapped: the allocated zero run is unmapped; to stdout"
# read --bmap of a device: its non-zero blocks, and bmaptool copy takes it.
fp read --no-progress --length "$SIZE" --bmap dev.bmap "$A" dev.img
bmaptool copy --bmap dev.bmap dev.img copy4.img 2>err || fail "bmaptool copy refused read's bmap: $(cat err)"
cmp copy4.img ext4.img || fail "read --bmap + bmaptool copy"
ok "read --bmap of a device: bmaptool copy rebuilds the image"

# ---- a GPT partition by name stays inside it (random bytes everywhere else)
attach c.bin 16M; C=$DEV
dd if=/dev/urandom of="$C" bs=1M count=16 oflag=direct status=none
sgdisk -a 1 -n 1:2048:+2M -c 1:boot -n 2:6145:+3M -c 2:system "$C" >/dev/null   # system at an odd sector
blockdev --rereadpt "$C" 2>/dev/null || true
START=6145; SECTORS=$((3 * 2048))
fp read --no-progress "$C:system" part.img
cmp part.img <(dd if="$C" bs=512 skip=$START count=$SECTORS iflag=direct status=none) || fail "partition read differs from dd"
[ "$(stat -c %s part.img)" -eq $((SECTORS * 512)) ] || fail "partition read has the wrong size"
fp read --no-progress --offset 1536 --length 1M "$C:system" inner.img
cmp inner.img <(dd if="$C" bs=512 skip=$((START + 3)) count=2048 iflag=direct status=none) || fail "offset inside the partition"
ok "$C:system (at an odd sector) equals dd of exactly its range; --offset/--length inside it"
rm -f x.img
expect_fail --length 4M "$C:system" x.img
err_has "partition 'system' of $C holds only 3145728 bytes from offset 0; --length asks for 4194304" "past the partition"
[ ! -e x.img ] || fail "a refused read left x.img"
expect_fail "$C:vendor" x.img; err_has "no GPT partition named 'vendor' (there are: boot, system)" "unknown name"
expect_fail --offset 1000 "$C" x.img; err_has "not a multiple of the 512-byte logical block" "unaligned offset"
ok "a partition, a device or a file shorter than --length is refused, saying how long it is"
# A broken primary GPT header: the backup is used, and read says so.
printf 'XXXXXXXX' | dd of="$C" bs=1 seek=512 conv=notrunc,fsync status=none   # the primary header's signature
fp read --no-progress "$C:system" part2.img 2>"$T/err" || fail "read by name with only the backup GPT: $(cat "$T/err")"
cmp -s part.img part2.img || fail "the backup GPT gave another range"
grep -q "primary GPT unusable .*using the backup" "$T/err" || fail "read used the backup GPT silently: $(cat "$T/err")"
ok "a damaged primary GPT: the backup is used and read says so"

# ---- failures leave no output
mkdir outdir
expect_fail --length 100M "$A" outdir/x.img; err_has "--length asks for" "short source"
only outdir
# An unreadable sector: a loop device over a FUSE file whose bytes from
# 20000 * 512 on (8 sectors) cannot be read.
/usr/bin/python3 -c 'import fuse' 2>/dev/null || fail "python3-fuse is missing (scripts/setup.sh installs it)"
head -c 16M /dev/urandom > bad_backing.img
mkdir fusemnt
/usr/bin/python3 "$HERE/bad_sector_fs.py" bad_backing.img $((20000 * 512)) 4096 fusemnt -f &
PIDS+=($!)
for _ in $(seq 1 50); do [ -e fusemnt/disk ] && break; sleep 0.1; done
[ -e fusemnt/disk ] || fail "the FUSE filesystem did not come up"
BAD=$(losetup --find --show -r fusemnt/disk)
LOOPS+=("$BAD")
for out in x.img x.simg x.zst; do
  expect_fail --bmap outdir/x.bmap "$BAD" "outdir/$out"
  err_has "the 512-byte block at byte 0x$(printf '%x' $((20000 * 512))) (" "unreadable sector ($out)"
  err_has "is unreadable: Input/output error" "unreadable sector ($out)"
  only outdir
done
ok "an unreadable sector: $(head -c 200 err)"
# ENOSPC on a small tmpfs.
mkdir small && mount -t tmpfs -o size=4m tmpfs small && MOUNTS+=("$T/small")
for out in x.img x.simg x.zst; do
  expect_fail --length "$SIZE" --bmap small/x.bmap "$A" "small/$out"; err_has "No space left on device" "ENOSPC ($out)"
  only small
done
ok "ENOSPC: $(head -c 160 err)"
umount small; MOUNTS=()
# The source is never the output.
cp ext4.img self.img
ln self.img self_link.img
expect_fail self.img self_link.img; err_has "is the source itself" "hard link"
expect_fail self.img out.img --bmap self.img; err_has "is the source itself" "bmap over the source"
cmp self.img ext4.img || fail "the source was changed"
ok "the source as output (hard link), as bmap: refused"

# ---- in use: held by another program is refused, mounted is read with a warning
/usr/bin/python3 -c 'import os, sys, time; os.open(sys.argv[1], os.O_RDWR | os.O_EXCL); time.sleep(60)' "$B" &
HOLDER=$!
PIDS+=("$HOLDER")
sleep 0.5
expect_fail "$B" outdir/x.img; err_has "held exclusively by another program" "held device"
only outdir
fp read --no-progress --force --length 1M "$B" outdir/x.img 2>err
grep -q "warning: $B is held by another program; reading it anyway" err || fail "no --force warning: $(cat err)"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null || true
ok "a device another program holds exclusively is refused, read with --force"
mkdir mnt && mount -o ro "$A" mnt && MOUNTS+=("$T/mnt")
fp read --no-progress --length "$SIZE" "$A" mounted.img 2>err
grep -q "warning: $A is mounted at $T/mnt (read-only)" err || fail "no mounted warning: $(cat err)"
cmp mounted.img ext4.img || fail "reading a read-only mounted device"
ok "a mounted device is read with a warning: $(head -c 140 err)"
umount mnt; MOUNTS=()

# ---- usage errors exit 2
rc=0; "$FP" read --format tar "$A" x.img 2>err || rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown output format 'tar'" err || fail "bad --format: rc $rc $(cat err)"
rc=0; "$FP" read --max-size 1M "$A" x.img 2>err || rc=$?
[ "$rc" -eq 2 ] && grep -q "max-size cuts sparse images" err || fail "--max-size on raw: rc $rc $(cat err)"
rc=0; "$FP" read --verify "$A" - 2>err >/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "--verify to stdout: rc $rc"
ok "usage errors exit 2"

echo "read_test: all $PASS checks passed"
