#!/usr/bin/env bash
# End-to-end test of `flashpipe write IMAGE TARGET:PARTNAME` and of
# --offset/--size windows (issue 22; bmaptool's yoctoproject/bmaptool#34):
# a disk image file partitioned with sgdisk (boot, system, vendor), random
# bytes everywhere but the system partition (zeros, as dd's reference needs
# for the image's holes and DONT_CARE), is written with a raw, a sparse, a
# bmap and a .zst image of the same content; each result equals dd of the raw
# image at the partition's offset, compared with cmp over the whole disk
# (only the partition's bytes changed). The same on a loop device with
# partition scanning (write IMG /dev/loopN:system), compared with bmaptool
# copy to the partition node /dev/loopNp2. Refusals (too large for the
# partition, unknown name, no GPT, offset out of range or not aligned, a
# --size past the partition) leave the target byte-identical and name the
# partition and the sizes; a stream of unknown size stops at the
# partition's end; the --json report names the window and fits its schema.
#   FLASHPIPE=build/flashpipe bash tests/e2e/write_window_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
HERE=$(cd "$(dirname "$0")" && pwd)
SCHEMA=${FLASHPIPE_SOURCE_DIR:-$HERE/../..}/docs/schema
for tool in sgdisk img2simg bmaptool losetup partx blockdev zstd gzip python3 cmp; do
  command -v "$tool" >/dev/null || { echo "write_window_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

T=$(mktemp -d /tmp/fp_window_e2e.XXXXXX)
LOOPS=()
cleanup() {
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }
fp() { timeout 300 "$FP" "$@"; }
# flashpipe write expecting exit 1; stderr in $T/err.
expect_fail() {
  local rc=0
  timeout 120 "$FP" write --no-progress "$@" 2>"$T/err" >/dev/null || rc=$?
  [ "$rc" -eq 1 ] || fail "expected exit 1, got $rc: write $* ($(cat "$T/err"))"
  grep -q "^flashpipe write: error: " "$T/err" || fail "no error line for: write $* ($(cat "$T/err"))"
}
err_has() { grep -qF -- "$1" "$T/err" || fail "error of $2 lacks '$1': $(cat "$T/err")"; }
# A loop device with partition scanning and direct I/O over FILE, its
# partition nodes there; sets PDEV. A kernel built without
# CONFIG_EFI_PARTITION (this one) scans no GPT: partx -a then adds the
# partitions through BLKPG, as it reads them.
attach_partitioned() {
  PDEV=$(losetup -P --direct-io=on --find --show "$1"); LOOPS+=("$PDEV")
  [ -b "${PDEV}p2" ] || partx -a "$PDEV" 2>/dev/null || true
  for _ in $(seq 50); do [ -b "${PDEV}p2" ] && break; sleep 0.1; done
  [ -b "${PDEV}p2" ] || fail "${PDEV}p2 did not appear"
}
same() { cmp -s "$1" "$2" || fail "$3: $1 differs from $2 ($(cmp "$1" "$2" 2>&1 | head -1))"; }

# The disk: 32 MiB, boot 4 MiB at 1 MiB, system 12 MiB, vendor 8 MiB; random
# bytes but zeros in system. Sectors from sgdisk -i.
head -c $((32 << 20)) /dev/urandom >pristine.img
sgdisk -o -n 1:2048:+4M -c 1:boot -n 2:0:+12M -c 2:system -n 3:0:+8M -c 3:vendor pristine.img >/dev/null
first=$(sgdisk -i 2 pristine.img | awk '/^First sector/ {print $3}')
last=$(sgdisk -i 2 pristine.img | awk '/^Last sector/ {print $3}')
START=$((first * 512)); SIZE=$(((last - first + 1) * 512))
[ "$SIZE" -eq $((12 << 20)) ] || fail "sgdisk made system $SIZE bytes"
dd if=/dev/zero of=pristine.img bs=512 seek="$first" count=$((last - first + 1)) conv=notrunc status=none

# The image: 5 MiB + 1000 bytes of data with a 2 MiB hole in the middle (a
# sparse file, so the bmap and the sparse image leave it out).
head -c $((2 << 20)) /dev/urandom >img.raw
truncate -s $((4 << 20)) img.raw
head -c $(((1 << 20) + 1000)) /dev/urandom >>img.raw
img2simg img.raw img.simg
bmaptool -q create -o img.raw.bmap img.raw
zstd -q img.raw -o img.raw.zst
cp pristine.img ref.img
dd if=img.raw of=ref.img bs=512 seek="$first" conv=notrunc status=none
cmp -s ref.img pristine.img && fail "the reference is the pristine disk"

# 1. Disk image files: every form equals dd at the partition's offset.
for img in img.raw img.simg img.raw.zst; do
  cp pristine.img disk.img
  fp write --no-progress --no-bmap "$img" disk.img:system 2>"$T/err" || fail "write $img: $(cat "$T/err")"
  same disk.img ref.img "write $img disk.img:system"
  ok "$img into disk.img:system equals dd at byte $START, nothing else changed"
done
cp pristine.img disk.img
fp write --no-progress --bmap img.raw.bmap img.raw disk.img:system 2>"$T/err" || fail "write bmap: $(cat "$T/err")"
same disk.img ref.img "write --bmap img.raw disk.img:system"
ok "raw + bmap into disk.img:system equals dd"

# --offset inside the partition, and on the plain file.
cp pristine.img disk.img
cp pristine.img ref_off.img
dd if=img.raw of=ref_off.img bs=512 seek=$((first + 2048)) conv=notrunc status=none
fp write --no-progress --offset 1M --json=report.json img.simg disk.img:system 2>"$T/err" || fail "write --offset: $(cat "$T/err")"
same disk.img ref_off.img "write --offset 1M img.simg disk.img:system"
python3 "$HERE/ux_check.py" validate "$SCHEMA/write-report.schema.json" report.json || fail "report.json fails its schema"
python3 - "$START" <<'PY' || fail "the report does not name the window: $(cat report.json)"
import json, sys
r = json.load(open("report.json"))["results"][0]
start = int(sys.argv[1])
assert r["partition"] == "system", r
assert r["window"] == {"offset": start + (1 << 20), "size": (11 << 20)}, r
assert r["in_place"] and r["state"] == "written", r
PY
ok "--offset 1M is inside the partition; --json names partition and window (schema valid)"
cp pristine.img disk.img
fp write --no-progress --offset "$START" --size 6M img.raw disk.img 2>"$T/err" || fail "write --offset plain: $(cat "$T/err")"
same disk.img ref.img "write --offset $START --size 6M img.raw disk.img"
ok "--offset/--size on a plain file target equals dd"

# 2. Refusals: byte-identical, errors naming the partition and the sizes.
cp pristine.img disk.img
head -c $(((12 << 20) + 4096)) /dev/urandom >big.raw
img2simg big.raw big.simg
expect_fail big.raw disk.img:system
err_has "does not fit disk.img partition 'system' of 12582912 bytes (12.0 MiB)" "a raw image too large"
err_has "image of 12587008 bytes" "a raw image too large"
expect_fail big.simg disk.img:system
err_has "does not fit disk.img partition 'system' of 12582912 bytes" "a sparse image too large"
expect_fail img.raw disk.img:system --offset 8M
err_has "does not fit disk.img partition 'system' from offset 8388608 of 4194304 bytes" "an image past the window"
expect_fail img.raw disk.img:data
err_has "disk.img: no GPT partition named 'data' (there are: boot, system, vendor)" "an unknown name"
expect_fail img.raw disk.img:system --offset 13M
err_has "--offset 13631488 is beyond the end of disk.img partition 'system' (12582912 bytes)" "an offset out of range"
expect_fail img.raw disk.img:system --offset 100
err_has "not a multiple of the" "an unaligned offset"
err_has "(--offset 100)" "an unaligned offset"
expect_fail img.raw disk.img:system --size 13M
err_has "disk.img partition 'system' holds only 12582912 bytes from offset 0; --size asks for 13631488" "a --size past it"
expect_fail img.raw disk.img --offset 33M
err_has "is beyond the end of disk.img" "an offset past a plain file"
same disk.img pristine.img "the refusals"
head -c $((8 << 20)) /dev/urandom >plain.img
cp plain.img plain0.img
expect_fail img.raw plain.img:system
err_has "plain.img: partition 'system'" "no GPT"
same plain.img plain0.img "the refusal without a GPT"
ok "refusals (too large raw/sparse, unknown name, no GPT, offset out of range or unaligned, --size) left the disk byte-identical"

# A stream of unknown size (gzip on stdin) stops at the partition's end.
head -c $((13 << 20)) /dev/urandom | gzip -1 >long.gz
rc=0
gzip -dc long.gz | gzip -1 | timeout 120 "$FP" write --no-progress - disk.img:system 2>"$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "a stream past the partition exited $rc: $(cat "$T/err")"
err_has "goes beyond the end of disk.img partition 'system' (size 12582912)" "a stream past the partition"
cmp -s <(head -c "$START" disk.img) <(head -c "$START" pristine.img) || fail "the stream changed bytes before the partition"
cmp -s <(tail -c +$((START + SIZE + 1)) disk.img) <(tail -c +$((START + SIZE + 1)) pristine.img) ||
  fail "the stream wrote past the partition's end"
ok "a stream of unknown size stopped at the partition's end, nothing past it changed"

# A file literally named with a colon is a path, never a partition.
cp pristine.img "odd:system"
fp write --no-progress img.raw "odd:system" 2>"$T/err" || fail "write to odd:system: $(cat "$T/err")"
same "odd:system" img.raw "a file named odd:system"
ok "a target that exists as given (odd:system) is a path: replaced whole"

# 3. A loop device with partition scanning, direct I/O: write DEV:system,
# compared with bmaptool copy to the partition node.
cp pristine.img loopdisk.img
attach_partitioned loopdisk.img; DEV=$PDEV
fp write --no-progress --verify img.simg "$DEV:system" 2>"$T/err" || fail "write $DEV:system: $(cat "$T/err")"
same loopdisk.img ref.img "write img.simg $DEV:system"
ok "img.simg into $DEV:system (verified) equals dd"
expect_fail big.raw "$DEV:system"
err_has "does not fit $DEV partition 'system' of 12582912 bytes" "too large on a device"
expect_fail img.raw "$DEV:nope"
err_has "no GPT partition named 'nope'" "an unknown name on a device"
expect_fail img.raw "$DEV:system" --offset 1000
err_has "512-byte logical block of $DEV" "an unaligned offset on a device"
expect_fail img.raw "$DEV:system" --offset 12M
err_has "nothing to write" "an offset at the partition's end"
same loopdisk.img ref.img "the refusals on $DEV"
ok "refusals on $DEV left it byte-identical"

cp pristine.img bmapdisk.img
attach_partitioned bmapdisk.img; BDEV=$PDEV
bmaptool -q copy --bmap img.raw.bmap img.raw "${BDEV}p2"
blockdev --flushbufs "${BDEV}p2"
cp pristine.img loopdisk2.img
attach_partitioned loopdisk2.img; LDEV=$PDEV
fp write --no-progress --bmap img.raw.bmap img.raw "$LDEV:system" 2>"$T/err" || fail "write bmap $LDEV: $(cat "$T/err")"
same loopdisk2.img bmapdisk.img "flashpipe write $LDEV:system vs bmaptool copy ${BDEV}p2"
same loopdisk2.img ref.img "flashpipe write --bmap $LDEV:system vs dd"
ok "raw + bmap into $LDEV:system equals bmaptool copy to ${BDEV}p2 and dd"

# A whole disk image written over a blank disk: the kernel gets its partitions
# (BLKRRPART, else BLKPG) without a reboot or partprobe.
truncate -s 64M blankdisk.img
KDEV=$(losetup -P --direct-io=on --find --show blankdisk.img); LOOPS+=("$KDEV")
[ ! -e "${KDEV}p2" ] || fail "a blank disk has partitions"
fp write --no-progress pristine.img "$KDEV" 2>"$T/err" || fail "write a disk image to $KDEV: $(cat "$T/err")"
grep -q "partitions .*${KDEV}p2" "$T/err" || fail "write did not say the kernel was told: $(cat "$T/err")"
[ -b "${KDEV}p2" ] || fail "${KDEV}p2 did not appear after writing a disk image"
want=$(sgdisk -i 2 pristine.img | sed -n 's/^Partition size: \([0-9]*\) sectors.*/\1/p')
got=$(cat "/sys/block/$(basename "$KDEV")/$(basename "$KDEV")p2/size")
[ "$got" = "$want" ] || fail "${KDEV}p2 has $got sectors, the image's table says $want"
ok "a disk image written to $KDEV: its partitions are the kernel's at once (${KDEV}p2, $got sectors)"

echo "write_window_test: $PASS passed"
