#!/usr/bin/env bash
# The main job on a built-in default, no device needed: installs and builds,
# makes an ext4 image with some files, converts it to sparse, writes it to a
# file with read-back verify, then serves a GPT disk image as a fastboot device
# and flashes the sparse image into its `system` partition with the real AOSP
# fastboot client over TCP loopback, split into parts. Every result is checked
# against AOSP simg2img's expansion of the same image.
#   scripts/demo.sh [WORKDIR]   (default: a temp dir, removed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --main build >/dev/null
FP=$PWD/build/flashpipe

work=${1:-$(mktemp -d /tmp/flashpipe-demo.XXXXXX)}
keep=${1:+yes}
mkdir -p "$work"
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -z "$keep" ] && rm -rf "$work"
  return 0
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }

step "make a 96 MiB ext4 image with files in it"
mkdir -p "$work/root/etc" "$work/root/data"
head -c 3000000 /dev/urandom >"$work/root/data/random.bin"
seq 1 200000 >"$work/root/data/numbers.txt"
echo "flashpipe demo" >"$work/root/etc/motd"
truncate -s 96M "$work/system.raw"
mkfs.ext4 -q -F -d "$work/root" "$work/system.raw"

step "convert to sparse: flashpipe img2simg, then dump"
"$FP" img2simg "$work/system.raw" "$work/system.simg"
"$FP" dump "$work/system.simg" | head -12
simg2img "$work/system.simg" "$work/expected.raw"
cmp "$work/expected.raw" "$work/system.raw" && echo "AOSP simg2img expands it to the original bytes"

step "flashpipe write --verify to a file"
"$FP" write --verify --no-progress "$work/system.simg" "$work/written.raw"
cmp "$work/written.raw" "$work/expected.raw" && echo "written file equals AOSP simg2img output"

step "serve a GPT disk image over fastboot TCP and flash it with the AOSP client"
truncate -s 256M "$work/disk.img"
sgdisk -o -n 1:2048:+32M -c 1:boot_a -n 2:0:+32M -c 2:boot_b -n 3:0:+160M -c 3:system "$work/disk.img" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$FP" serve --storage "$work/disk.img" --tcp "127.0.0.1:$port" --max-download-size 2M &
daemon=$!
sleep 0.5
timeout 60 fastboot -s "tcp:127.0.0.1:$port" getvar partition-size:system 2>&1 | head -1
timeout 300 fastboot -s "tcp:127.0.0.1:$port" flash system "$work/system.simg"
start=$(sgdisk -i 3 "$work/disk.img" | awk '/First sector/ {print $3}')
dd if="$work/disk.img" of="$work/system.out" bs=512 skip="$start" count=$((96*2048)) status=none
cmp "$work/system.out" "$work/expected.raw" && echo "partition 'system' equals AOSP simg2img output"
timeout 30 fastboot -s "tcp:127.0.0.1:$port" reboot
echo
echo "demo: all results match"
