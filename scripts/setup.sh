#!/usr/bin/env bash
# Installs the Debian packages flashpipe builds and tests with, then
# configures and builds it, and fetches the kernel package the VM tests boot. Safe to rerun: apt-get skips what is installed,
# CMake and Ninja rebuild only what changed.
#   scripts/setup.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  liburing-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
  libisal-dev zlib1g-dev libarchive-dev libzstd-dev liblzma-dev libbz2-dev liblz4-dev
  libpugixml-dev libssl-dev libblkid-dev libfdisk-dev libusb-1.0-0-dev
  libcurl4-openssl-dev libgpgme-dev gnupg nginx-light openssl curl jq python3-gpg
  fastboot android-sdk-libsparse-utils bmap-tools fio
  e2fsprogs gdisk fdisk util-linux xxd python3 python3-fuse python3-jsonschema time
  gzip xz-utils zstd bzip2 lz4
  dpkg-dev man-db groff-base zsh systemd
  qemu-system-x86 busybox-static dmsetup
  python3-labgrid python3-pytest lava-dispatcher
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${1:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR"
# The kernel the USB tests boot (tests/vm): downloaded once, not installed.
source tests/vm/vm_lib.sh
vm_prepare "$BUILD_DIR/vm-cache"
