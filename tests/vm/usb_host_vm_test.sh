#!/usr/bin/env bash
# The host side over a real USB stack (issue 21): `flashpipe flash` and the
# AOSP client (29.0.6) flash the same images into `flashpipe serve --usb`
# (partitions in files), and each partition equals its image (cmp; a sparse
# image against simg2img's output); then a download cut by an unplug (the
# gadget's UDC unbound mid-transfer) and one cut by the daemon killed
# mid-transfer each end `flashpipe flash` non-zero within a bounded time,
# saying the device went away, with no flashpipe client left running; after
# the replug the same device is flashed correctly again. Read-back: both
# partitions fetched back over USB (usb_fetch_probe: Transport::ReceiveData,
# queued IN transfers) equal their images, and a fetch cut by an unplug
# fails at once. Inside the VM of
# tests/vm (Debian 6.1 under QEMU TCG, dummy_hcd); usb_host_guest.sh runs
# the flashes and checks in the guest.
#   FLASHPIPE=build/flashpipe bash tests/vm/usb_host_vm_test.sh
TRANSPORT=usb
source "$(dirname "$0")/../e2e/fastboot_lib.sh"
source "$(dirname "$0")/vm_lib.sh"
VM_SECONDS=${VM_SECONDS:-300}  # about 70 s idle

for tool in qemu-system-x86_64 busybox dpkg-deb img2simg simg2img mkfs.ext4; do
  command -v $tool >/dev/null || die "$tool not installed (scripts/setup.sh installs it)"
done
start=$(date +%s)
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}" || die "no kernel for the VM"

head -c $((20 * 1024 * 1024 + 1234)) /dev/urandom >"$work/odd.raw"  # not whole blocks
mkdir -p "$work/root/dir"
head -c 6M /dev/urandom >"$work/root/dir/blob"
seq 200000 >"$work/root/numbers"
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/ext4.img" 32M
img2simg "$work/ext4.img" "$work/ext4.simg"
simg2img "$work/ext4.simg" "$work/ext4.oracle"
rm -rf "$work/root" "$work/ext4.img"
cp "$FLASHPIPE" "$work/flashpipe"
probe=${FLASHPIPE_BUILD_DIR:-$(dirname "$FLASHPIPE")}/usb_fetch_probe
[ -x "$probe" ] || die "$probe missing (cmake --build build --target usb_fetch_probe)"
cp "$probe" "$work/"
cp "$SRC/tests/vm/usb_host_guest.sh" "$work/"
echo "== images ready in $(($(date +%s) - start)) s; booting the VM (up to $VM_SECONDS s)"

rc=0
VM_MEM=2048 vm_run "$work" usb_host_guest.sh "$VM_SECONDS" "$work/console.log" || rc=$?
grep -avE "^\[ *[0-9.]+\]" "$work/console.log" | grep -avE "^VM-INIT" || true
[ $rc = 124 ] && die "the VM did not finish in $VM_SECONDS s"
grep -q "^GUEST-DONE" "$work/console.log" && [ $rc = 0 ] || die "guest run failed (status $rc)"
echo "PASS in $(($(date +%s) - start)) s"
