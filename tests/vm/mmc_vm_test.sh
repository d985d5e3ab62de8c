#!/usr/bin/env bash
# flashpipe on a real Linux MMC stack: QEMU's sdhci-pci controller with an
# sd-card drive gives the guest /dev/mmcblk0 through mmc_core, sdhci and
# mmc_block (Debian's 6.1 kernel under TCG, the VM recipe of vm_lib.sh; see
# the notes mmc-and-dm-log-writes-vm.md). mmc_guest.sh, inside the guest:
# `flashpipe mmc extcsd` sends CMD8 through MMC_IOC_CMD to the card and
# fails saying an SD card has no EXT_CSD; `partition` writes a GPT and the
# kernel shows its nodes; `write --verify` and `read` of a partition give the
# image back; `serve --storage --mmc` flashes the new partition with the
# stock fastboot client, FAILs `oem partconf` the same way and serves no
# boot area; `bench` runs on a partition. This script checks the card's
# image afterwards too (the table and the partition's bytes on the "medium").
#   FLASHPIPE=build/flashpipe bash tests/vm/mmc_vm_test.sh
# QEMU 7.2 has no eMMC model: boot areas and EXT_CSD writes are tested
# against testing/fake_mmc_card.h (mmc_test), not here.
source "$(dirname "$0")/../e2e/fastboot_lib.sh"
source "$(dirname "$0")/vm_lib.sh"
VM_SECONDS=${VM_SECONDS:-400}

for tool in qemu-system-x86_64 busybox dpkg-deb sgdisk; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed (scripts/setup.sh installs it)"; exit 77; }
done
start=$(date +%s)
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}" || die "no kernel for the VM"

truncate -s 64M "$work/sd.img"
head -c 8M /dev/urandom >"$work/image.raw"
printf 'label: gpt\nsize=8MiB, name=boot\nsize=16MiB, name=data\n' >"$work/layout"
cp "$FLASHPIPE" "$work/flashpipe"
cp "$SRC/tests/vm/mmc_guest.sh" "$work/"
echo "== ready in $(($(date +%s) - start)) s; booting the VM (up to $VM_SECONDS s)"

VM_MODULES="mmc_core sdhci cqhci sdhci-pci mmc_block"
VM_QEMU_ARGS=(-device sdhci-pci -device sd-card,drive=sd -drive "id=sd,if=none,format=raw,file=$work/sd.img")
rc=0
vm_run "$work" mmc_guest.sh "$VM_SECONDS" "$work/console.log" || rc=$?
grep -vE "^\[ *[0-9.]+\]" "$work/console.log" || true
[ $rc = 124 ] && die "the VM did not finish in $VM_SECONDS s"
grep -q "^GUEST-DONE" "$work/console.log" && [ $rc = 0 ] || die "guest run failed (status $rc)"
echo "== VM run done after $(($(date +%s) - start)) s; checking the card's image"

sgdisk -v "$work/sd.img" | grep -q "No problems found" || die "sgdisk -v: $(sgdisk -v "$work/sd.img")"
start_lba=$(sgdisk -i 1 "$work/sd.img" | sed -n 's/^First sector: \([0-9]*\).*/\1/p')
[ -n "$start_lba" ] || die "no partition 1 on the card image"
cmp <(tail -c +$((start_lba * 512 + 1)) "$work/sd.img" | head -c 8M) "$work/image.raw" ||
  die "partition 1 on the card's medium differs from image.raw"
echo "ok: the card's medium holds the table and the image ($(($(date +%s) - start)) s)"
echo "PASS"
