#!/usr/bin/env bash
# Installs the Debian packages flashpipe needs, configures and builds it.
# Safe to rerun: apt-get skips what is installed, CMake and Ninja rebuild only
# what changed.
#   scripts/setup.sh --main [BUILD_DIR]   what the main job needs (scripts/demo.sh):
#                                         the compiler and libraries, the AOSP tools
#                                         it compares with; builds the flashpipe binary
#   scripts/setup.sh [BUILD_DIR]          everything the test suite needs too (QEMU and
#                                         the VM tests' kernel, fio, bmap-tools, nginx,
#                                         labgrid, LAVA, clang for the fuzzers); builds all
# (default BUILD_DIR: build)
set -euo pipefail
cd "$(dirname "$0")/.."

MAIN=0
if [ "${1:-}" = --main ]; then MAIN=1; shift; fi

# The build and the demo.
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  liburing-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
  libisal-dev zlib1g-dev libarchive-dev libzstd-dev liblzma-dev libbz2-dev liblz4-dev
  libpugixml-dev libssl-dev libblkid-dev libfdisk-dev libusb-1.0-0-dev
  libcurl4-openssl-dev libgpgme-dev
  fastboot android-sdk-libsparse-utils e2fsprogs gdisk python3
)
# The test suite's oracles, tools and VMs.
[ "$MAIN" = 1 ] || PACKAGES+=(
  clang libclang-rt-14-dev
  gnupg nginx-light openssl curl jq python3-gpg
  bmap-tools fio
  fdisk util-linux xxd python3-fuse python3-jsonschema time
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
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}"
fi
if [ "$MAIN" = 1 ]; then
  cmake --build "$BUILD_DIR" --target flashpipe
  exit 0
fi
cmake --build "$BUILD_DIR"
# The kernel the USB tests boot (tests/vm): downloaded once, not installed.
source tests/vm/vm_lib.sh
vm_prepare "$BUILD_DIR/vm-cache"
