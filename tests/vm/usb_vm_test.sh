#!/usr/bin/env bash
# flashpipe serve --usb against the stock fastboot client (29.0.6) over a
# real USB stack: Debian's 6.1 kernel under QEMU (TCG) with dummy_hcd (two
# UDCs), the host's root shared read-only, the work directory read-write.
# usb_guest.sh runs the flashes inside the guest; this script makes the
# images and disks before and checks every partition and guard byte after.
#   FLASHPIPE=build/flashpipe bash tests/vm/usb_vm_test.sh
# Needs root (configfs, mounts happen inside the VM only), qemu-system-x86,
# busybox-static and network access to the Debian archive the first time
# (the kernel package is kept in $FLASHPIPE_VM_CACHE, default build/vm-cache).
TRANSPORT=usb
source "$(dirname "$0")/../e2e/fastboot_lib.sh"
source "$(dirname "$0")/vm_lib.sh"
VM_SECONDS=${VM_SECONDS:-360}  # ~120 s idle; 300 s seen with load 11 on 2 cores (TCG)

for tool in qemu-system-x86_64 busybox dpkg-deb; do
  command -v $tool >/dev/null || die "$tool not installed (scripts/setup.sh installs it)"
done
start=$(date +%s)
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}" || die "no kernel for the VM"

# Images: made here, where it is fast; the guest copies them to its tmpfs.
head -c $((3 * 1024 * 1024 + 1234)) /dev/urandom >"$work/odd3.raw"
head -c 64K /dev/urandom >"$work/misc.raw"
head -c 12M /dev/urandom >"$work/big.raw"
head -c 12M /dev/urandom >"$work/big2.raw"
mkdir -p "$work/root/dir"
head -c 2M /dev/urandom >"$work/root/dir/blob"
seq 100000 >"$work/root/numbers"
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/ext4.img" 40M
img2simg "$work/ext4.img" "$work/ext4.simg"
simg2img "$work/ext4.simg" "$work/ext4.oracle"
mkdir -p "$work/root2"
head -c 1M /dev/urandom >"$work/root2/blob"
seq 50000 >"$work/root2/numbers"
mkfs.ext4 -q -F -b 4096 -d "$work/root2" "$work/small.img" 8M
img2simg "$work/small.img" "$work/small.simg"
simg2img "$work/small.simg" "$work/small.oracle"
head -c $((2 * 1024 * 1024 + 4321)) /dev/urandom >"$work/odd2.raw"
rm -rf "$work/root" "$work/root2" "$work/ext4.img" "$work/small.img"
make_disk "$work/disk.img"
cp "$work/disk.img" "$work/snap.img"
cp "$work/disk.img" "$work/disk2.img"
echo "$LAYOUT" >"$work/layout"
cp "$FLASHPIPE" "$work/flashpipe"
cp "$SRC/tests/vm/usb_guest.sh" "$SRC/tests/vm/usb_wire.py" "$work/"
echo "== images ready in $(($(date +%s) - start)) s; booting the VM (up to $VM_SECONDS s)"

rc=0
vm_run "$work" usb_guest.sh "$VM_SECONDS" "$work/console.log" || rc=$?
grep -vE "^\[ *[0-9.]+\]" "$work/console.log" || true
[ $rc = 124 ] && die "the VM did not finish in $VM_SECONDS s"
grep -q "^GUEST-DONE" "$work/console.log" && [ $rc = 0 ] || die "guest run failed (status $rc)"
echo "== VM run done after $(($(date +%s) - start)) s; checking the disks"

# boot_a: the client's odd3.raw, then flashpipe's shorter odd2.raw over it
# on both disks; what odd2.raw does not cover is left as it was.
cmp <(read_part "$work/disk.img" boot_a 0 2101473) "$work/odd2.raw" || die "boot_a != odd2.raw (flash --all)"
cmp <(read_part "$work/disk.img" boot_a 2101473 1045489) <(tail -c +2101474 "$work/odd3.raw") ||
  die "flash --all wrote past odd2.raw on disk 1"
cmp <(read_part "$work/disk.img" boot_a 3146962 1047342) <(read_part "$work/snap.img" boot_a 3146962 1047342) ||
  die "the raw flash wrote past its image"
# Disk 2 takes 1M downloads: odd2.raw went as sparse parts, its last block
# padded with zeros (as the AOSP client pads), nothing after that block.
cmp <(read_part "$work/disk2.img" boot_a 0 2101473) "$work/odd2.raw" || die "disk 2 boot_a != odd2.raw (flash --all)"
cmp <(read_part "$work/disk2.img" boot_a 2101473 3871) <(head -c 3871 /dev/zero) || die "disk 2 boot_a: last block not padded"
cmp <(read_part "$work/disk2.img" boot_a 2105344 2088960) <(read_part "$work/snap.img" boot_a 2105344 2088960) ||
  die "flash --all wrote past odd2.raw's last block on disk 2"
cmp <(read_part "$work/disk.img" boot_b 0 65536) "$work/misc.raw" || die "boot_b != misc.raw (flash --slot b)"
cmp <(read_part "$work/disk.img" boot_b 65536 $((4194304 - 65536))) <(head -c $((4194304 - 65536)) /dev/zero) ||
  die "boot_b not erased"
cmp <(read_part "$work/disk.img" system 0 41943040) "$work/ext4.oracle" || die "system != simg2img output"
cmp <(read_part "$work/disk.img" misc) <(read_part "$work/snap.img" misc) || die "a locked flash wrote misc"
# userdata: the client's 12 MiB (split at 8M), then flashpipe's 8 MiB sparse
# ext4 over its first part on both disks.
cmp <(read_part "$work/disk.img" userdata 0 8388608) "$work/small.oracle" || die "userdata != simg2img output (flash --all)"
cmp <(read_part "$work/disk.img" userdata 8388608 4194304) <(tail -c +8388609 "$work/big.raw") || die "userdata != big.raw"
cmp <(read_part "$work/disk2.img" userdata 0 8388608) "$work/small.oracle" || die "disk 2 userdata != simg2img output"
cmp <(read_part "$work/disk2.img" userdata 8388608 4194304) <(tail -c +8388609 "$work/big2.raw") ||
  die "disk 2 userdata != big2.raw"
cmp <(read_part "$work/disk2.img" system 0 65536) "$work/misc.raw" || die "disk 2 system != misc.raw (flash -s)"
cmp <(read_part "$work/disk2.img" system 65536 1048576) <(read_part "$work/snap.img" system 65536 1048576) ||
  die "flash -s wrote past misc.raw"
pass "partitions hold their images (raw, odd-sized raw, sparse ext4 == simg2img, split), erase, --slot b"
python3 - "$work/all.json" "$SRC/docs/schema/flash-report.schema.json" <<'PY' || die "flash --all report not valid against its schema"
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))
PY
pass "flashpipe flash --all: both disks hold odd2.raw (disk 1: nothing past it; disk 2, cut at 1M: its last block zero-padded) and simg2img's output, the --json report valid against its schema; flash -s wrote disk 2's system only"
check_guards "$work/disk.img" "$work/snap.img"
check_guards "$work/disk2.img" "$work/snap.img"
echo "PASS in $(($(date +%s) - start)) s"
