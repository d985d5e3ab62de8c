#!/usr/bin/env bash
# End-to-end test of `flashpipe partition` (issue 22) against util-linux and
# gdisk: on an image file and on a loop device attached with partition
# scanning (losetup -P, direct I/O; detached by the trap), layouts in both
# formats are written, `sgdisk -v` finds no problem, `sfdisk --dump` prints
# what `--dump` prints, the kernel's /dev/loopNpK nodes are there with the
# sizes of the table, --dump round-trips in both formats, refusals leave the
# target byte-identical, and bad layouts are refused naming the line/field.
#   FLASHPIPE=build/flashpipe bash tests/e2e/partition_test.sh
# The loop device part needs root; without it it is skipped and says so.
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
for tool in sgdisk sfdisk cmp sha256sum; do
  command -v "$tool" >/dev/null || { echo "partition_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

T=$(mktemp -d /tmp/fp_partition.XXXXXX)
LOOP=""
MNT=""
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null || true
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }
run() { timeout 60 "$FP" partition "$@" >"$T/out" 2>"$T/err"; }
expect_fail() {  # expect_fail WHAT ARGS...: exit 1 and an error line
  local what=$1 rc=0
  shift
  run "$@" || rc=$?
  [ "$rc" -eq 1 ] || fail "$what: exit $rc, expected 1 ($(cat "$T/err"))"
  grep -q "^flashpipe partition: error: " "$T/err" || fail "$what: no error line: $(cat "$T/err")"
}
err_has() { grep -qF -- "$1" "$T/err" || fail "$2: error lacks '$1': $(cat "$T/err")"; }
sig() { blockdev --flushbufs "$1" 2>/dev/null || true; sha256sum < "$1"; }

cat > board.sfdisk <<'LAYOUT'
# a board, as a person writes it
label: gpt
label-id: 5E6A4C3B-1D2E-4F50-8A9B-0C1D2E3F4A5B
unit: sectors

size=64MiB, type=esp, name=boot, bootable
size=256M, type=android-system, name=system_a, uuid=11111111-2222-4333-8444-555555555555
size=256M, type=android-system, name=system_b
name=userdata, type=linux
LAYOUT
cat > board.uboot <<'LAYOUT'
uuid_disk=5E6A4C3B-1D2E-4F50-8A9B-0C1D2E3F4A5B;
name=bootloader,start=1MiB,size=4MiB,type=android-bootloader;
name=misc,size=1M,type=android-misc;
name=super,size=512MiB,type=a006;
name=userdata,size=-;
LAYOUT

# Checks a target that now holds LAYOUT's table: sgdisk -v clean, sfdisk's
# dump equal to ours, both formats round-trip to the same table.
check_table() {  # check_table TARGET WHAT
  local t=$1 what=$2
  sgdisk -v "$t" > sgdisk.out 2>&1 || fail "$what: sgdisk -v failed: $(cat sgdisk.out)"
  grep -q "No problems found" sgdisk.out || fail "$what: sgdisk -v: $(cat sgdisk.out)"
  run "$t" --dump || fail "$what: --dump: $(cat "$T/err")"
  cp "$T/out" ours.sfdisk
  sfdisk --dump "$t" > theirs.sfdisk
  diff theirs.sfdisk ours.sfdisk > dump.diff || fail "$what: sfdisk --dump and ours differ: $(cat dump.diff)"
  for fmt in sfdisk uboot; do
    run "$t" --dump --format "$fmt" || fail "$what: --dump --format $fmt: $(cat "$T/err")"
    cp "$T/out" "dump.$fmt"
    run "$t" "dump.$fmt" || fail "$what: writing back the $fmt dump: $(cat "$T/err")"
    run "$t" --dump || fail "$what: --dump after the $fmt round trip"
    cmp -s "$T/out" ours.sfdisk || fail "$what: $fmt round trip changed the table: $(diff ours.sfdisk "$T/out")"
  done
  ok "$what: sgdisk -v clean, sfdisk --dump agrees, both formats round-trip"
}

# --- an image file -----------------------------------------------------------
truncate -s 1G disk.img
run disk.img board.sfdisk || fail "sfdisk layout on a file: $(cat "$T/err")"
grep -q "disk.img: GPT written, 4 partitions (was: no valid table)" "$T/out" || fail "summary: $(cat "$T/out")"
check_table disk.img "file, sfdisk layout"
sfdisk --dump disk.img | grep -q 'disk.img2 : start=      133120, size=      524288, type=38F428E6-D326-425D-9140-6E0EA133647C, uuid=11111111-2222-4333-8444-555555555555, name="system_a"' \
  || fail "file: system_a not where the layout put it: $(sfdisk --dump disk.img)"
sfdisk --dump disk.img | grep -q 'label-id: 5E6A4C3B-1D2E-4F50-8A9B-0C1D2E3F4A5B' || fail "file: label-id not kept"
sfdisk --dump disk.img | grep -q 'name="boot", attrs="LegacyBIOSBootable"' || fail "file: bootable not kept"
ok "file: sizes, types, given GUIDs and attributes as the layout says"

run disk.img board.uboot || fail "U-Boot layout on a file: $(cat "$T/err")"
check_table disk.img "file, U-Boot layout"
[ "$(sgdisk -i 3 disk.img | grep -c 'Android system')" = 1 ] || fail "file: super's type (a006) is not Android system"
ok "file: U-Boot string's type names as sgdisk names them"

# sfdisk reading our sfdisk dump writes the same table.
truncate -s 1G disk2.img
sfdisk -q disk2.img < ours.sfdisk 2> sfdisk.err || fail "sfdisk could not read our dump: $(cat sfdisk.err)"
run disk2.img --dump
sed 's/disk2\.img/disk.img/' "$T/out" > theirs2.sfdisk
cmp -s theirs2.sfdisk ours.sfdisk || fail "sfdisk wrote a different table from our dump: $(diff ours.sfdisk theirs2.sfdisk)"
ok "sfdisk reads our dump back to the same table"

# 4096-byte sectors in a file, from the layout.
truncate -s 256M disk4k.img
printf 'label: gpt\nsector-size: 4096\n\nsize=16M, name=a\nname=b\n' > l4k
run disk4k.img l4k || fail "4K layout: $(cat "$T/err")"
run disk4k.img --dump
grep -q "sector-size: 4096" "$T/out" && grep -q "first-lba: 6" "$T/out" || fail "4K dump: $(cat "$T/out")"
ok "file: 4096-byte sectors from the layout's sector-size"

# --- refusals leave the target byte-identical --------------------------------
cp disk.img before.img
refuse() {  # refuse WHAT EXPECTED-TEXT LAYOUT-TEXT [FLAGS...]
  local what=$1 want=$2 text=$3
  shift 3
  printf '%b' "$text" > bad.layout
  expect_fail "$what" disk.img bad.layout "$@"
  err_has "$want" "$what"
  cmp -s disk.img before.img || fail "$what: the target changed"
  ok "refused, target unchanged: $what"
}
refuse "overlap" "line 2 (partition 2 'b') (LBAs 4096-6143) overlaps line 1 (partition 1 'a') (LBAs 2048-10239)" \
  'start=2048 size=8192 name=a\nstart=4096 size=2048 name=b\n'
refuse "too large" "line 1 (partition 1 'huge'): LBAs 2048-4196351 do not fit the usable LBAs 34-2097118" \
  'size=2G name=huge\n'
refuse "duplicate name" "line 2 (partition 2 'x'): name 'x' given twice" 'size=1M name=x\nsize=1M name=x\n'
refuse "long name" "name is 37 UTF-16 code units, a GPT entry holds 36" "size=1M name=$(printf 'n%.0s' {1..37})\n"
refuse "bad size" "line 3: size: '12Q' is not a size (unknown suffix 'Q')" 'label: gpt\n\nsize=12Q\n'
refuse "bad type" "line 1: type: unknown partition type 'ntfs'" 'size=1M type=ntfs\n'
refuse "bad field" "line 1: colour: unknown field" 'size=1M colour=red\n'
refuse "unnamed fields" "(unnamed fields like" '2048,4096,L\n'
refuse "not gpt" "line 1: label: label: 'dos': only gpt tables are written" 'label: dos\n'
refuse "rest not last" "line 1: size: only the last partition can take the rest of the disk" 'name=a\nsize=1M name=b\n'
refuse "U-Boot variable" "U-Boot variable '\${uuid_gpt_disk}' is not expanded here" 'uuid_disk=${uuid_gpt_disk};name=a,size=1M;'
refuse "U-Boot field" "partition 2 'b': size: '1X' is not a size" 'name=a,size=1M;name=b,size=1X;'
refuse "U-Boot missing name" "partition 1: name: missing" 'size=1M;' --format uboot
[ -z "$(ls -A . | grep -E '^\.?disk\.img\.' || true)" ] || fail "stray files beside the target"
expect_fail "missing target" nothing.img board.sfdisk
err_has "nothing.img: no such file or device" "missing target"
[ ! -e nothing.img ] || fail "a missing target was created"
ok "a missing image file is refused, not created"
rc=0; "$FP" partition disk.img >/dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "no LAYOUT and no --dump: exit $rc, not 2"
rc=0; "$FP" partition disk.img board.sfdisk --dump >/dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "LAYOUT with --dump: exit $rc"
ok "usage errors exit 2"
run disk.img board.sfdisk --dry-run || fail "dry run: $(cat "$T/err")"
cmp -s disk.img before.img || fail "--dry-run changed the target"
grep -q 'name="system_a"' "$T/out" || fail "--dry-run printed no table"
ok "--dry-run prints the table and writes nothing"
printf 'garbage' | dd of=blank.img bs=1M count=0 seek=64 status=none 2>/dev/null; truncate -s 64M blank.img
expect_fail "dump of no table" blank.img --dump
err_has "no 'EFI PART' signature" "dump of no table"
ok "--dump of a disk without a table says so"

# --- a loop device -----------------------------------------------------------
if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null || ! command -v mkfs.ext4 >/dev/null; then
  echo "skip loop device part: needs root, losetup and mkfs.ext4"
  echo "partition_test: $PASS checks passed (loop device part skipped)"
  exit 0
fi
# 1 GiB for the checks (every refusal hashes the whole device), a blank
# 8 GiB one for the timing at the end.
truncate -s 1G loop.img
LOOP=$(losetup --find --show -P --direct-io=on loop.img)
N=$(basename "$LOOP")
# The nodes and sizes the kernel has are the table's.
check_kernel() {  # check_kernel WHAT
  local dump line num start size
  dump=$(sfdisk --dump "$LOOP")
  local count=0
  while read -r line; do
    num=$(sed -E 's/^[^ ]*p([0-9]+) :.*/\1/' <<<"$line")
    start=$(sed -E 's/.*start= *([0-9]+),.*/\1/' <<<"$line")
    size=$(sed -E 's/.*size= *([0-9]+),.*/\1/' <<<"$line")
    [ -b "/dev/${N}p$num" ] || fail "$1: /dev/${N}p$num is not there"
    [ "$(cat /sys/block/$N/${N}p$num/start)" = "$start" ] || fail "$1: ${N}p$num starts elsewhere in the kernel"
    [ "$(cat /sys/block/$N/${N}p$num/size)" = "$size" ] || fail "$1: ${N}p$num has another size in the kernel"
    [ "$(blockdev --getsize64 "/dev/${N}p$num")" = "$((size * 512))" ] || fail "$1: /dev/${N}p$num size"
    count=$((count + 1))
  done < <(grep ' : start=' <<<"$dump")
  [ "$(ls -d /sys/block/$N/${N}p* 2>/dev/null | wc -l)" = "$count" ] || fail "$1: the kernel has other partitions too"
  ok "$1: the kernel's $count nodes are there with the table's starts and sizes"
}
run "$LOOP" board.sfdisk || fail "loop: $(cat "$T/err")"
grep -q "kernel .* ready in" "$T/out" || fail "loop: the kernel was not told: $(cat "$T/out")"
check_kernel "loop, sfdisk layout"
check_table "$LOOP" "loop, sfdisk layout"
run "$LOOP" board.uboot || fail "loop U-Boot: $(cat "$T/err")"
check_kernel "loop, U-Boot layout"

before=$(sig "$LOOP")
printf 'sector-size: 4096\nsize=1M\n' > l4k.dev
expect_fail "sector size of a device" "$LOOP" l4k.dev
err_has "sector-size: 4096 in the layout, but the target's sectors are 512" "sector size of a device"
[ "$(sig "$LOOP")" = "$before" ] || fail "sector size: the device changed"
ok "refused, device unchanged: the layout's sector size is not the device's"

# A mounted partition: refused without --force, the device unchanged.
mkfs.ext4 -q "/dev/${N}p4"
# Read-only and without the journal, so that the file system itself writes
# nothing while the device's bytes are compared.
MNT=$T/mnt; mkdir -p "$MNT"; mount -o ro,noload "/dev/${N}p4" "$MNT"
before=$(sig "$LOOP")
expect_fail "mounted" "$LOOP" board.sfdisk
err_has "in use (mounted on $MNT)" "mounted"
[ "$(sig "$LOOP")" = "$before" ] || fail "mounted: the device changed"
ok "refused, device unchanged: a partition is mounted"
# With --force a mounted partition must keep its place.
printf 'name=bootloader,start=1MiB,size=4MiB;name=misc,size=1M;name=super,size=256MiB;name=userdata,size=-;' > moves.uboot
expect_fail "moves a mounted partition" "$LOOP" moves.uboot --force
err_has "/dev/${N}p4 is in use (mounted on $MNT) and the new table would move, resize or drop partition 4" "moves"
[ "$(sig "$LOOP")" = "$before" ] || fail "moves: the device changed"
ok "refused even with --force, device unchanged: the table would move a mounted partition"
run "$LOOP" --dump --format uboot
sed 's/name=misc,/name=misc2,/' "$T/out" > keeps.uboot
run "$LOOP" keeps.uboot --force || fail "--force keeping the mounted partition: $(cat "$T/err")"
grep -q "BLKPG: partitions are open" "$T/out" || fail "--force: not per partition: $(cat "$T/out")"
check_kernel "loop, --force with a mounted partition kept"
umount "$MNT"; MNT=""

# The table step on a blank 8 GiB loop device with direct I/O.
losetup -d "$LOOP"; LOOP=""
rm loop.img; truncate -s 8G loop.img
LOOP=$(losetup --find --show -P --direct-io=on loop.img)
N=$(basename "$LOOP")
start=$(date +%s%N)
run "$LOOP" board.uboot || fail "blank loop: $(cat "$T/err")"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check_kernel "blank 8 GiB loop"
echo "table step on a blank 8 GiB loop device (direct I/O), kernel re-read included: $ms ms"
cat "$T/out"
[ "$ms" -lt 1000 ] || fail "the table step took $ms ms (goal: under 1 s)"
ok "table step under 1 s ($ms ms)"
echo "partition_test: $PASS checks passed"
