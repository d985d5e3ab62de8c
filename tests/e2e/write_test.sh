#!/usr/bin/env bash
# End-to-end test of `flashpipe write`: every input kind onto regular files and
# onto loop devices (direct I/O on), each compared byte for byte with AOSP
# simg2img's output of the same image (bmaptool copy's for bmap input); zero
# and discard modes read back; forced backends; several targets at once;
# --verify and --verify-only catching a corruption made after the write; bad
# input and faults (truncated, corrupt, oversized, a dying stream, ENOSPC).
#   FLASHPIPE=build/flashpipe bash tests/e2e/write_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
for tool in simg2img img2simg bmaptool mkfs.ext4 losetup blkdiscard blockdev gzip xz zstd bzip2 lz4; do
  command -v "$tool" >/dev/null || { echo "write_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

T=$(mktemp -d /tmp/fp_write_e2e.XXXXXX)
LOOPS=()
MOUNTS=()
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for m in "${MOUNTS[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null || true; done
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$T" "/dev/shm/fp_write_e2e.$$.img"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }
fp() { timeout 120 "$FP" "$@"; }
# Runs flashpipe write expecting failure; stderr goes to $T/err.
expect_fail() {
  local rc=0
  timeout 60 "$FP" write --no-progress "$@" 2>"$T/err" >/dev/null || rc=$?
  [ "$rc" -ne 0 ] || fail "expected failure: write $*"
  [ "$rc" -ne 124 ] || fail "timed out: write $*"
  grep -q "^flashpipe write: error: " "$T/err" || fail "no error line for: write $* ($(cat "$T/err"))"
}
err_has() { grep -q -- "$1" "$T/err" || fail "error of $2 lacks '$1': $(cat "$T/err")"; }
attach() {  # attach a loop device with direct I/O over a new file of $2 bytes; sets DEV
  truncate -s "$2" "$1"
  DEV=$(losetup --direct-io=on --find --show "$1")
  LOOPS+=("$DEV")
}
# First $2 bytes of a file or device, past any page cache.
readback() {
  if [ -b "$1" ]; then blockdev --flushbufs "$1"; fi
  head -c "$2" "$1"
}
same() {  # same TARGET REFERENCE what
  local size
  size=$(stat -c %s "$2")
  if ! cmp -s <(readback "$1" "$size") "$2"; then fail "$3: $1 differs from $2"; fi
  if [ -f "$1" ] && [ "$(stat -c %s "$1")" != "$size" ]; then fail "$3: $1 has size $(stat -c %s "$1"), want $size"; fi
}

# ---- fixtures: an ext4 image with files, its sparse forms, parts, compressed forms, a bmap
mkdir tree
head -c 6000000 /dev/urandom > tree/random.bin
seq 1 300000 > tree/numbers.txt
mkdir tree/dir && for i in $(seq 1 50); do echo "file $i" > tree/dir/f$i; done
mkfs.ext4 -q -F -b 4096 -d tree ext4.img 48M
img2simg ext4.img aosp.simg
fp img2simg ext4.img ours.simg
fp img2simg -s ext4.img holes.simg   # DONT_CARE for holes
simg2img aosp.simg ref.img
cmp -s ref.img ext4.img || fail "simg2img of img2simg is not the original"
simg2img holes.simg ref_holes.img
fp resparse -m 2M aosp.simg part
PARTS=$(ls part.* | sort -t. -k2 -n | tr '\n' ',' | sed 's/,$//')
[ "$(ls part.* | wc -l)" -ge 2 ] || fail "resparse made fewer than 2 parts"
simg2img $(ls part.* | sort -t. -k2 -n) ref_parts.img 2>/dev/null || simg2img "$(echo "$PARTS" | tr ',' ' ')" ref_parts.img
cmp -s ref_parts.img ref.img || fail "simg2img of the parts is not the original"
# A raw image whose size is not a multiple of 4096, with zero runs.
{ head -c 3000000 /dev/urandom; head -c 2000000 /dev/zero; head -c 1234567 /dev/urandom; } > odd.img
gzip -k -1 aosp.simg; xz -k -0 -T1 aosp.simg; zstd -q -k aosp.simg; bzip2 -k -1 aosp.simg; lz4 -q aosp.simg aosp.simg.lz4
gzip -c -1 odd.img > odd.gz; xz -c -0 -T1 odd.img > odd.xz; zstd -q -c odd.img > odd.zst
bzip2 -c -1 odd.img > odd.bz2; lz4 -q -c odd.img > odd.lz4
# gzip with two members, as pigz and `cat a.gz b.gz` make.
{ head -c 1000000 ext4.img | gzip -1; tail -c +1000001 ext4.img | gzip -1; } > twomember.gz
bmaptool -q create ext4.img > ext4.bmap 2>/dev/null || bmaptool create ext4.img > ext4.bmap
bmaptool -q copy --bmap ext4.bmap ext4.img ref_bmap.img 2>/dev/null
# Renamed copies: detection goes by magic bytes, never by name.
cp aosp.simg.gz looks_raw.img

attach loop.bin 64M; LOOP=$DEV
reset_loop() { blkdiscard -f "$LOOP"; }

# ---- every input kind, onto a regular file and onto the loop device
check_kind() {  # check_kind WHAT REFERENCE IMAGE [write options...]
  local what=$1 ref=$2 img=$3
  shift 3
  rm -f out.img
  fp write --no-progress "$@" "$img" out.img || fail "$what -> file"
  same out.img "$ref" "$what -> file"
  reset_loop
  fp write --no-progress "$@" "$img" "$LOOP" || fail "$what -> loop"
  same "$LOOP" "$ref" "$what -> loop"
  ok "$what (file and loop device)"
}
check_kind "sparse (AOSP img2simg)" ref.img aosp.simg
check_kind "sparse (flashpipe img2simg)" ref.img ours.simg
check_kind "sparse with DONT_CARE" ref_holes.img holes.simg
check_kind "raw ext4" ext4.img ext4.img
check_kind "raw, odd size, zero runs" odd.img odd.img
check_kind "sparse parts ($PARTS)" ref_parts.img "$PARTS"
for z in gz xz zst bz2 lz4; do
  case $z in gz) s=aosp.simg.gz ;; xz) s=aosp.simg.xz ;; zst) s=aosp.simg.zst ;; bz2) s=aosp.simg.bz2 ;; lz4) s=aosp.simg.lz4 ;; esac
  check_kind "$z of sparse" ref.img "$s"
  check_kind "$z of raw" odd.img "odd.$z"
done
check_kind "gzip of two members" ext4.img twomember.gz
check_kind "gzip under a raw name" ref.img looks_raw.img
check_kind "raw + bmap (vs bmaptool copy)" ref_bmap.img ext4.img --bmap ext4.bmap

# stdin: sparse and raw, plain and compressed, by their first bytes.
for pair in "aosp.simg ref.img" "odd.img odd.img" "aosp.simg.zst ref.img" "odd.xz odd.img"; do
  set -- $pair
  rm -f out.img
  fp write --no-progress - out.img < "$1" || fail "stdin $1 -> file"
  same out.img "$2" "stdin $1 -> file"
  reset_loop
  cat "$1" | fp write --no-progress - "$LOOP" || fail "stdin $1 -> loop"
  same "$LOOP" "$2" "stdin $1 -> loop"
  ok "stdin $1 (file and loop device)"
done
rm -f out.img
fp write --no-progress --bmap ext4.bmap - out.img < ext4.img
same out.img ref_bmap.img "stdin + bmap"
ok "stdin raw + bmap"

# An existing regular file under /dev (tmpfs /dev/shm) is a file, not a missing disk.
SHM=/dev/shm/fp_write_e2e.$$.img
: > "$SHM"
fp write --no-progress aosp.simg.lz4 "$SHM"
same "$SHM" ref.img "file under /dev/shm"
rm -f "$SHM"
ok "regular file under /dev/shm"

# ---- backends forced
for b in io_uring threads sync; do
  reset_loop
  fp write --no-progress --io-backend $b --queue-depth 3 --request-size 256K aosp.simg "$LOOP"
  same "$LOOP" ref.img "backend $b"
  fp write --json --io-backend $b odd.gz out.img > j.json
  grep -q "\"backend\": \"$b" j.json || fail "backend $b not used: $(cat j.json)"
  same out.img odd.img "backend $b, file"
  ok "backend $b"
done

# ---- several targets at once, from one read of the source (stdin)
reset_loop
attach loop2.bin 50M; LOOP2=$DEV
rm -f a.img b.img
fp write --no-progress --verify - a.img "$LOOP" b.img "$LOOP2" < aosp.simg.xz
for t in a.img "$LOOP" b.img "$LOOP2"; do same "$t" ref.img "multi-target $t"; done
ok "four targets at once from stdin, verified"

# ---- zero mode and discard, read back
# Fill the device with 0xFF: FILL 0 ranges must come back as zeros.
fill_ff() { head -c 64M /dev/zero | tr '\0' '\377' | dd of="$LOOP" bs=1M oflag=direct status=none; }
fill_ff
fp write --json aosp.simg "$LOOP" > j.json
same "$LOOP" ref.img "zero-mode auto over 0xFF"
grep -Eq '"bytes_zeroed": [1-9]' j.json || fail "zero-mode auto zeroed nothing: $(cat j.json)"
fill_ff
fp write --json --zero-mode write aosp.simg "$LOOP" > j.json
same "$LOOP" ref.img "zero-mode write over 0xFF"
grep -q '"bytes_zeroed": 0,' j.json || fail "zero-mode write still zeroed: $(cat j.json)"
ok "zero-mode auto and write read back zeros over 0xFF"
rm -f out.img out2.img
fp write --no-progress aosp.simg out.img
fp write --no-progress --zero-mode write aosp.simg out2.img
same out.img ref.img "file zero-mode auto"; same out2.img ref.img "file zero-mode write"
[ "$(du -k out.img | cut -f1)" -lt "$(du -k out2.img | cut -f1)" ] || fail "zero-mode auto did not leave holes in a file"
ok "files: zero ranges are holes in auto mode, written in write mode"
# DONT_CARE: left alone by default (0xFF stays), discarded with --discard.
fill_ff
fp write --no-progress holes.simg "$LOOP"
if cmp -s <(readback "$LOOP" "$(stat -c %s ref_holes.img)") ref_holes.img; then fail "DONT_CARE was not left alone"; fi
fill_ff
fp write --json --discard holes.simg "$LOOP" > j.json
grep -Eq '"bytes_discarded": [1-9]' j.json || fail "--discard discarded nothing: $(cat j.json)"
same "$LOOP" ref_holes.img "--discard on a loop device (discard punches holes: reads zero)"
ok "DONT_CARE skipped by default, discarded with --discard"

# ---- --first-block-last and --verify
reset_loop
fp write --no-progress --first-block-last --verify --json aosp.simg "$LOOP" > j.json
grep -q '"verify": "passed"' j.json || fail "--verify did not pass: $(cat j.json)"
same "$LOOP" ref.img "first-block-last"
ok "--first-block-last --verify"

# ---- a corruption made after the write: --verify-only finds the first bad byte
rm -f out.img
fp write --no-progress aosp.simg out.img
fp write --no-progress --verify-only aosp.simg out.img "$LOOP" || fail "verify-only of good targets failed"
off=$((1024 * 1024 + 12345))
orig=$(od -An -tx1 -j $off -N1 out.img | tr -d ' ')
printf '\x5a' | dd of=out.img bs=1 seek=$off conv=notrunc status=none
[ "$orig" != "5a" ] || { printf '\x5b' | dd of=out.img bs=1 seek=$off conv=notrunc status=none; }
expect_fail --verify-only aosp.simg out.img
err_has "$(printf 'differs from the image at byte %#x' $off)" "verify-only after corruption"
printf '\x00\x01\x02\x03' | dd of="$LOOP" bs=1 seek=$((5 * 1024 * 1024 + 7)) conv=notrunc status=none
expect_fail --verify-only aosp.simg.gz "$LOOP"
err_has "differs from the image at byte" "verify-only on the loop device"
ok "--verify-only reports the first corrupted byte (file and loop device)"

# ---- faults
# Truncated and corrupt images.
head -c 3000000 aosp.simg > trunc.simg
expect_fail trunc.simg out.img; ok "truncated sparse refused: $(head -c 150 err)"
cp aosp.simg corrupt.simg
printf '\xff\xff' | dd of=corrupt.simg bs=1 seek=28 conv=notrunc status=none   # first chunk type
expect_fail corrupt.simg out.img; err_has "chunk 0" "corrupt chunk"; ok "corrupt chunk type refused"
head -c 200000 odd.gz > trunc.gz
expect_fail trunc.gz out.img; err_has "truncated" "truncated gzip"; ok "truncated gzip refused"
cp odd.xz corrupt.xz
printf 'XXXXXXXX' | dd of=corrupt.xz bs=1 seek=5000 conv=notrunc status=none
expect_fail corrupt.xz out.img; err_has "compressed byte" "corrupt xz"; ok "corrupt xz refused"
# bmap: a byte of a mapped range changed in the image.
cp ext4.img bad.img
printf 'Z' | dd of=bad.img bs=1 seek=1100 conv=notrunc status=none
expect_fail --bmap ext4.bmap bad.img out.img; err_has "bmap range 0" "bmap checksum"; ok "bmap range checksum mismatch refused"
# Image larger than the target: refused before the first byte, target untouched.
attach small.bin 16M; SMALL=$DEV
head -c 16M /dev/zero | tr '\0' '\252' | dd of="$SMALL" bs=1M oflag=direct status=none
before=$(readback "$SMALL" 16777216 | sha256sum)
expect_fail aosp.simg "$SMALL"; err_has "does not fit" "oversized sparse"
expect_fail ext4.img "$SMALL"; err_has "does not fit" "oversized raw"
expect_fail --bmap ext4.bmap ext4.img "$SMALL"; err_has "does not fit" "oversized bmap"
expect_fail aosp.simg out_ok.img "$SMALL"; err_has "does not fit" "oversized with a file target too"
[ ! -e out_ok.img ] || fail "a file target was created although another target is too small"
[ "$(readback "$SMALL" 16777216 | sha256sum)" = "$before" ] || fail "oversized image touched the small target"
ok "image larger than target refused before writing, target untouched"
# A mounted block device is refused (O_EXCL) unless --force.
mkfs.ext4 -q -F "$SMALL"
mkdir mnt && mount "$SMALL" mnt && MOUNTS+=("$T/mnt")
expect_fail odd.img "$SMALL"; err_has "$SMALL" "mounted target"
ok "mounted block device refused: $(head -c 160 err)"
umount mnt
# A stream of unknown size that runs past the end of the device: error with offset.
expect_fail - "$SMALL" < ext4.img
err_has "16777216\|0x1000000" "raw stream past the end"
ok "raw stream past the end of the device refused: $(head -c 160 err)"
# A missing block device does not become a file under /dev.
expect_fail aosp.simg /dev/flashpipe-no-such-disk
[ ! -e /dev/flashpipe-no-such-disk ] || { rm -f /dev/flashpipe-no-such-disk; fail "created a file under /dev"; }
ok "missing block device refused"
# A missing image.
expect_fail no-such.img out.img; err_has "cannot open image no-such.img" "missing image"; ok "missing image refused"
# The image as its own target.
expect_fail ext4.img ext4.img; err_has "image itself" "self target"; ok "image as its own target refused"
# A stream (stdin, a pipe) whose writer dies mid-image: an error, no hang.
expect_fail - out.img < <(head -c 5000000 aosp.simg); ok "stream writer dying mid-sparse: $(head -c 150 err)"
expect_fail - "$LOOP" < <(head -c 300000 odd.zst); err_has "truncated" "stream zstd"; ok "stream writer dying mid-zstd"
# A fifo by its path is not an image (endless_streams_test.sh): - is.
mkfifo fifo
expect_fail fifo out.img; err_has "fifo is a fifo, not an image; use - for a stream" "fifo path"; ok "fifo path refused"
# ENOSPC on a small tmpfs: clear error with the offset.
mkdir small_fs
mount -t tmpfs -o size=4m tmpfs small_fs && MOUNTS+=("$T/small_fs")
expect_fail odd.img small_fs/out.img
err_has "No space left on device" "ENOSPC"
ok "ENOSPC: $(head -c 200 err)"
expect_fail - small_fs/out2.img < odd.img
err_has "No space left on device" "ENOSPC stream"
ok "ENOSPC from a stream"
# Progress lines when stderr is not a terminal, JSON on stdout.
rm -f out.img
fp write aosp.simg out.img 2> progress.txt
grep -q "MiB/s" progress.txt || fail "no progress lines: $(cat progress.txt)"
ok "plain progress lines without a terminal"

echo "write_test: $PASS checks passed"
