#!/usr/bin/env bash
# One flashpipe for some devices, never the others: three USB gadgets
# (dummy_hcd with three UDCs, in a QEMU VM as usb_vm_test.sh boots it),
# `flashpipe flash -s A -s B` while a second client holds C and talks to it
# (usb_select_guest.sh); then the disks: A and B hold the image, C and every
# byte around the partitions are untouched. Runs beside usb_vm_test.sh (its
# own work directory and VM). 1001 s in all with load 25 on 2 cores (TCG;
# the host-side initramfs build is a third of it); a quiet machine takes
# a fraction of that.
#   FLASHPIPE=build/flashpipe bash tests/vm/usb_select_vm_test.sh
set -euo pipefail
FLASHPIPE=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
SRC=$(realpath "${FLASHPIPE_SOURCE_DIR:-$(dirname "$0")/../..}")
source "$SRC/tests/vm/vm_lib.sh"
VM_SECONDS=${VM_SECONDS:-600}  # guest time: ~420 s seen with load 25 on 2 cores (TCG), far less on a quiet machine
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
for tool in qemu-system-x86_64 busybox dpkg-deb sgdisk python3; do
  command -v $tool >/dev/null || skip "$tool not installed (scripts/setup.sh installs it)"
done
start=$(date +%s)
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}" || { echo "FAIL: no kernel for the VM"; exit 1; }

# The guest sees the work directory through a share of its own (vm_lib.sh).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
die() { echo "FAIL: $*"; exit 1; }

# Disks of 16 MiB: random guard bytes, a GPT, system at 1 MiB for 12 MiB.
for i in 0 1 2; do
  head -c 16M /dev/urandom >"$work/disk$i.img"
  sgdisk -a 1 -n 1:2048:26623 -c 1:system "$work/disk$i.img" >/dev/null
  cp "$work/disk$i.img" "$work/snap$i.img"
done
head -c $((8 * 1024 * 1024 + 512)) /dev/urandom >"$work/sys.raw"
cp "$FLASHPIPE" "$work/flashpipe"
cp "$SRC/tests/vm/usb_select_guest.sh" "$SRC/tests/vm/usb_wire.py" "$work/"

rc=0
VM_DUMMY_HCD=num=3 vm_run "$work" usb_select_guest.sh "$VM_SECONDS" "$work/console.log" || rc=$?
grep -vE "^\[ *[0-9.]+\]" "$work/console.log" || true
[ $rc = 124 ] && die "the VM did not finish in $VM_SECONDS s"
grep -q "^GUEST-DONE" "$work/console.log" && [ $rc = 0 ] || die "guest run failed (status $rc)"

size=$(stat -c %s "$work/sys.raw")
for i in 0 1; do
  cmp <(tail -c +$((1048576 + 1)) "$work/disk$i.img" | head -c "$size") "$work/sys.raw" || die "disk $i: system != sys.raw"
  cmp <(head -c $((1048576)) "$work/disk$i.img") <(head -c 1048576 "$work/snap$i.img") || die "disk $i: bytes before system changed"
  cmp <(tail -c +$((13631488 + 1)) "$work/disk$i.img") <(tail -c +$((13631488 + 1)) "$work/snap$i.img") ||
    die "disk $i: bytes after system changed"
done
cmp "$work/disk2.img" "$work/snap2.img" || die "disk 2 (gadget C, never named) changed"
echo "ok: A and B hold the image, nothing around it changed; C's disk is as it was"
echo "PASS in $(($(date +%s) - start)) s"
