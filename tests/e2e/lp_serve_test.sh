#!/usr/bin/env bash
# `flashpipe serve` as userspace fastboot for dynamic partitions, driven by
# the stock AOSP client (29.0.6) over TCP on loopback: a GPT disk (image file,
# then a loop device) with boot_a/b, vbmeta_a/b and super; a product folder
# (ANDROID_PRODUCT_OUT) of boot, vbmeta, system/vendor/product (ext4 made
# with mkfs.ext4 -d), android-info.txt and a super_empty.img from `flashpipe
# lp make`. `fastboot flashall` (plain, -w, --slot all, --slot other) and
# `fastboot update ZIP`, then every logical partition read back through its
# extents by tests/e2e/lp_reader.py (written from the published format, not
# from our C++) must equal its image; the logical partition commands by hand;
# update-super (flashall's) with another geometry or a corrupt super_empty.img
# refused with nothing written; bytes outside the GPT partitions never change.
# Also flashall with --write-behind and over UDP.
# Needs $FLASHPIPE and $FLASHPIPE_SOURCE_DIR (set by ctest). Temp dir only.
TRANSPORT=tcp
# shellcheck source=fastboot_lib.sh
source "$(dirname "$0")/fastboot_lib.sh"
for tool in mkfs.ext4 sgdisk; do
  command -v $tool >/dev/null || { echo "missing $tool (scripts/setup.sh installs it)"; exit 1; }
done
READER="python3 $SRC/tests/e2e/lp_reader.py"

# name first_sector sectors: a 96 MiB disk, 1 MiB gaps of guard bytes.
LAYOUT=$'boot_a 2048 8192\nboot_b 12288 8192\nvbmeta_a 22528 2048\nvbmeta_b 26624 2048\nsuper 30720 131072'
SUPER_SIZE=$((131072 * 512))
SUPER_GEOMETRY=(-d $SUPER_SIZE -m 64K -s 2)
SUPER_LAYOUT=(-g main_a:30M -g main_b:30M
              -p system_a:readonly:0:main_a -p vendor_a:readonly:0:main_a -p product_a:readonly:0:main_a
              -p system_b:readonly:0:main_b -p vendor_b:readonly:0:main_b -p product_b:readonly:0:main_b)
LOGICAL="system vendor product"

# make_product DIR SEED: a product folder whose images differ with SEED.
make_product() {
  local dir=$1 seed=$2 root="$work/root.$2"
  mkdir -p "$dir" "$root/sys/bin" "$root/ven/lib" "$root/prod"
  python3 -c "import random,sys; sys.stdout.buffer.write(random.Random($seed).randbytes(3000000))" >"$root/sys/bin/blob"
  seq "$seed" 100000 >"$root/sys/bin/numbers"
  python3 -c "import random,sys; sys.stdout.buffer.write(random.Random($seed + 1).randbytes(1000000))" >"$root/ven/lib/lib.so"
  echo "product $seed" >"$root/prod/build.prop"
  mkfs.ext4 -q -F -b 4096 -d "$root/sys" "$dir/system.img" 12M >/dev/null 2>&1
  mkfs.ext4 -q -F -b 4096 -d "$root/ven" "$dir/vendor.img" 4M >/dev/null 2>&1
  mkfs.ext4 -q -F -b 4096 -d "$root/prod" "$dir/product.img" 2M >/dev/null 2>&1
  python3 -c "import random,sys; sys.stdout.buffer.write(random.Random($seed + 2).randbytes(2 << 20))" >"$dir/boot.img"
  python3 -c "import random,sys; sys.stdout.buffer.write(random.Random($seed + 3).randbytes(64 << 10))" >"$dir/vbmeta.img"
  echo "require board=flashpipe" >"$dir/android-info.txt"
  "$FLASHPIPE" lp make "${SUPER_GEOMETRY[@]}" "${SUPER_LAYOUT[@]}" -o "$dir/super_empty.img" || die "lp make"
}

# The super partition of DISK as a file, for the reader.
super_of() { read_part "$1" super >"$work/super.img"; }

# expect_slot DISK METADATA_SLOT SUFFIX DIR: each logical partition SUFFIX in
# that metadata slot holds DIR's image, read through its extents.
expect_slot() {
  super_of "$1"
  $READER check "$work/super.img" || die "super metadata after flashing"
  local p
  for p in $LOGICAL; do
    $READER extract "$work/super.img" "${p}_$3" "$work/got.img" --slot="$2" || die "extract ${p}_$3"
    cmp "$work/got.img" "$4/$p.img" || die "${p}_$3 (metadata slot $2) differs from $4/$p.img"
  done
}

# expect_empty DISK METADATA_SLOT SUFFIX: the slot's logical partitions have no extents.
expect_empty() {
  super_of "$1"
  local p
  for p in $LOGICAL; do
    $READER extract "$work/super.img" "${p}_$3" "$work/got.img" --slot="$2" || die "extract ${p}_$3"
    [ ! -s "$work/got.img" ] || die "${p}_$3 (metadata slot $2) not empty after a wipe"
  done
}

# Bytes of the super that no extent of any metadata slot covers equal the
# snapshot's (the metadata area aside): flashing never strays into free space.
check_free_space() {
  super_of "$1"
  read_part "$2" super >"$work/super.snap"
  python3 - "$work/super.img" "$work/super.snap" "$SRC/tests/e2e" <<'PY' || die "super free space changed"
import sys
sys.path.insert(0, sys.argv[3])
import lp_reader
got, snap = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
geometry, m, _ = lp_reader.read_super(sys.argv[1], 0, False)
used = []
for slot in range(geometry["metadata_slot_count"]):
    _, m, _ = lp_reader.read_super(sys.argv[1], slot, False)
    used += [(e["target_data"] * 512, (e["target_data"] + e["num_sectors"]) * 512) for e in m["extents"]]
pos = m["block_devices"][0]["first_logical_sector"] * 512
for start, end in sorted(used) + [(len(got), len(got))]:
    if got[pos:start] != snap[pos:start]:
        sys.exit("free space of the super changed at byte %d" % next(i for i in range(pos, start) if got[i] != snap[i]))
    pos = max(pos, end)
PY
  pass "free space of the super untouched"
}

expect_refused() {  # WHAT PATTERN fastboot-args...
  local what=$1 pattern=$2
  shift 2
  if fb "$@" >"$work/fb.out" 2>&1 && ! grep -q "FAILED" "$work/fb.out"; then die "$what accepted"; fi
  grep -q -- "$pattern" "$work/fb.out" || die "$what: $(cat "$work/fb.out")"
}

lp_suite() {
  local disk=$1 snap=$2 A="$work/prodA" B="$work/prodB"
  start_daemon --storage "$disk"

  out=$(fb getvar super-partition-name 2>&1 || true)
  grep -q "super-partition-name: super" <<<"$out" || die "super-partition-name: $out"
  out=$(fb getvar is-userspace 2>&1 || true)
  grep -q "is-userspace: yes" <<<"$out" || die "is-userspace: $out"
  pass "getvar super-partition-name, is-userspace"

  # A blank super: flashall writes the metadata (update-super), then each
  # logical partition (resize, flash) through its extents.
  ANDROID_PRODUCT_OUT=$A fb_ok flashall
  grep -q "Updating super partition" "$work/fb.out" || die "flashall did not update the super: $(cat "$work/fb.out")"
  grep -q "Resizing 'system_a'" "$work/fb.out" || die "flashall did not resize system_a: $(cat "$work/fb.out")"
  expect_slot "$disk" 0 a "$A"
  expect_slot "$disk" 1 a "$A"
  cmp <(read_part "$disk" boot_a 0 $((2 << 20))) "$A/boot.img" || die "flashall: boot_a"
  cmp <(read_part "$disk" vbmeta_a 0 65536) "$A/vbmeta.img" || die "flashall: vbmeta_a"
  check_free_space "$disk" "$snap"
  out=$(fb getvar all 2>&1 || true)
  for line in "is-logical:system_a:yes" "is-logical:super:no" "partition-size:system_a:0x0000000000C00000" \
              "partition-size:product_b:0x0000000000000000" "has-slot:vendor:yes"; do
    grep -qi -- "$line" <<<"$out" || die "getvar all lacks $line: $out"
  done
  out=$(fb getvar partition-type:system_a 2>&1 || true)
  grep -q "partition-type:system_a: ext4" <<<"$out" || die "partition-type of a flashed logical partition: $out"
  pass "flashall from a blank super: slot a's logical partitions == images, in both metadata slots; getvar all, partition-type ext4"

  # --skip-secondary: without it the 29.0.6 client resizes the other slot's
  # system and vendor to 0 (its system_other/vendor_other entries, even with
  # no such image), which fastbootd obeys too.
  ANDROID_PRODUCT_OUT=$B fb_ok --slot other --skip-secondary flashall
  out=$(fb getvar current-slot 2>&1 || true)
  grep -q "current-slot: b" <<<"$out" || die "--slot other did not switch to b: $out"
  expect_slot "$disk" 1 b "$B"
  expect_slot "$disk" 1 a "$A"
  expect_slot "$disk" 0 a "$A"
  cmp <(read_part "$disk" boot_b 0 $((2 << 20))) "$B/boot.img" || die "flashall --slot other: boot_b"
  pass "flashall --slot other: slot b == images B, slot a kept (update-super keeps the other slot)"

  ANDROID_PRODUCT_OUT=$A fb_ok -w flashall
  grep -q "Updating super partition" "$work/fb.out" || die "flashall -w: $(cat "$work/fb.out")"
  expect_slot "$disk" 1 b "$A"
  expect_empty "$disk" 1 a
  pass "flashall -w (update-super:wipe): slot b == images A, slot a's partitions gone"

  ANDROID_PRODUCT_OUT=$B fb_ok --slot all flashall
  for s in 0 1; do expect_slot "$disk" $s a "$B"; expect_slot "$disk" $s b "$B"; done
  cmp <(read_part "$disk" boot_a 0 $((2 << 20))) "$B/boot.img" || die "--slot all: boot_a"
  cmp <(read_part "$disk" boot_b 0 $((2 << 20))) "$B/boot.img" || die "--slot all: boot_b"
  pass "flashall --slot all: both slots == images B"

  (cd "$A" && python3 -m zipfile -c "$work/update.zip" boot.img vbmeta.img system.img vendor.img product.img android-info.txt super_empty.img)
  fb_ok set_active a
  fb_ok --skip-secondary update "$work/update.zip"
  expect_slot "$disk" 0 a "$A"
  expect_slot "$disk" 0 b "$B"
  pass "fastboot update ZIP: slot a == images A, slot b kept"

  # By hand.
  fb_ok create-logical-partition odm_a 1048576
  out=$(fb getvar is-logical:odm_a 2>&1 || true)
  grep -q "is-logical:odm_a: yes" <<<"$out" || die "created odm_a is not logical: $out"
  head -c 1M /dev/urandom >"$work/odm.img"
  fb_ok flash odm_a "$work/odm.img"
  super_of "$disk"
  $READER extract "$work/super.img" odm_a "$work/got.img" && cmp "$work/got.img" "$work/odm.img" || die "flash odm_a"
  fb_ok resize-logical-partition odm_a 3000000
  out=$(fb getvar partition-size:odm_a 2>&1 || true)
  grep -qi "partition-size:odm_a: 0x00000000002DD000" <<<"$out" || die "resize odm_a: $out"
  super_of "$disk"
  $READER extract "$work/super.img" odm_a "$work/got.img" --slot=1 || die "odm_a in slot 1"
  [ "$(stat -c %s "$work/got.img")" = 3002368 ] || die "resize odm_a: slot 1 size $(stat -c %s "$work/got.img")"
  cmp -n 1048576 "$work/got.img" "$work/odm.img" || die "growing odm_a moved its data"
  expect_refused "create of an existing partition" "already exists" create-logical-partition odm_a 4096
  expect_refused "create beyond the free space" "not enough free space" create-logical-partition huge 200000000
  expect_refused "resize beyond the group" "group main_a" resize-logical-partition system_a 40000000
  fb_ok delete-logical-partition odm_a
  out=$(fb getvar is-logical:odm_a 2>&1 || true)
  grep -q "not found" <<<"$out" || die "odm_a after delete: $out"
  expect_slot "$disk" 0 a "$A"
  pass "create/flash/resize/delete-logical-partition by hand; no room and group limit refused"

  # update-super refusals, through the stock client's flashall (it sends
  # super_empty.img as it is): nothing of the super changes (boot_a and
  # vbmeta_a, flashed before update-super, get the bytes they hold already).
  dd if="$disk" of="$work/before.img" bs=1M status=none
  local bad
  for bad in other_geometry corrupt bigger; do
    rm -rf "$work/prod.$bad"; cp -r "$A" "$work/prod.$bad"
  done
  "$FLASHPIPE" lp make -d $SUPER_SIZE -m 64K -s 3 "${SUPER_LAYOUT[@]}" -o "$work/prod.other_geometry/super_empty.img" ||
    die "lp make"
  printf '\xff' | dd of="$work/prod.corrupt/super_empty.img" bs=1 seek=$((4096 + 200)) conv=notrunc status=none
  "$FLASHPIPE" lp make -d $((SUPER_SIZE * 2)) -m 64K -s 2 "${SUPER_LAYOUT[@]}" -o "$work/prod.bigger/super_empty.img" ||
    die "lp make"
  for bad in "other_geometry:geometry" "corrupt:super_empty.img: metadata at byte 0x1000" "bigger:is for a super of"; do
    ANDROID_PRODUCT_OUT="$work/prod.${bad%%:*}" fb flashall >"$work/fb.out" 2>&1 || true
    grep -q "FAILED" "$work/fb.out" && grep -q -- "${bad#*:}" "$work/fb.out" ||
      die "flashall with the ${bad%%:*} super_empty.img: $(cat "$work/fb.out")"
  done
  cmp "$disk" "$work/before.img" || die "a refused update-super changed the disk"
  rm -f "$work/before.img"
  pass "update-super of a super_empty.img with another geometry, corrupt, or for a larger super: refused, nothing written"

  fb_ok flashing lock
  expect_refused "create-logical-partition while locked" "locked" create-logical-partition odm_a 4096
  ANDROID_PRODUCT_OUT=$B fb flashall >"$work/fb.out" 2>&1 || true
  grep -q "locked" "$work/fb.out" || die "flashall while locked: $(cat "$work/fb.out")"
  expect_slot "$disk" 0 a "$A"
  fb_ok flashing unlock
  pass "locked: logical commands and flashall refused, nothing changed"

  stop_daemon
  check_guards "$disk" "$snap"
}

# The same flow with --write-behind (metadata commands wait for queued
# flashes) and over UDP, on a copy of the fresh disk.
variants_check() {
  local disk="$work/variant.img"
  cp "$1" "$disk"
  rm -f "$work/state"
  start_daemon --storage "$disk" --write-behind
  ANDROID_PRODUCT_OUT="$work/prodB" fb_ok --slot all flashall
  fb getvar version >/dev/null 2>&1  # waits for the last queued write
  for s in 0 1; do expect_slot "$disk" $s a "$work/prodB"; expect_slot "$disk" $s b "$work/prodB"; done
  stop_daemon
  pass "--write-behind: flashall --slot all == images B"
  TRANSPORT=udp
  start_daemon --storage "$disk"
  ANDROID_PRODUCT_OUT="$work/prodA" fb_ok --skip-secondary flashall
  expect_slot "$disk" 0 a "$work/prodA"
  expect_slot "$disk" 0 b "$work/prodB"
  stop_daemon
  TRANSPORT=tcp
  check_guards "$disk" "$1"
  rm -f "$disk" "$work/state"
  pass "UDP: flashall == images A, slot b kept"
}

make_product "$work/prodA" 1
make_product "$work/prodB" 2
cmp -s "$work/prodA/system.img" "$work/prodB/system.img" && die "products A and B are the same"
make_disk "$work/disk.img"
cp "$work/disk.img" "$work/snap.img"
echo "== GPT disk image file"
lp_suite "$work/disk.img" "$work/snap.img"
variants_check "$work/snap.img"

loopdev=$(losetup --direct-io=on -f --show "$work/disk.img") || die "cannot attach a loop device"
cp "$work/snap.img" "$work/disk.img"
blockdev --rereadpt "$loopdev" 2>/dev/null || true
echo "== loop device $loopdev (direct I/O)"
rm -f "$work/state"
lp_suite "$loopdev" "$work/snap.img"
echo "PASS"
