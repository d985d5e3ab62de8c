#!/usr/bin/env bash
# `flashpipe write` under a blk-throttle write limit (cgroup v2 io.max, or
# cgroup v1 blkio.throttle.write_bps_device where io is bound to v1): the
# throttle must be charged once for every byte, with every backend. io_uring
# used to charge each data byte twice (a non-blocking attempt that the block
# layer refused to split, then the retry from a worker), so a 30 MiB/s limit
# took twice as long as with the threads backend. The limit here is generous
# so the test is quick; the byte counter is what is checked: it must equal the
# report's bytes_written + bytes_zeroed (zero ranges are write-zeroes
# requests, charged at their length), and the device must hold the image.
#   FLASHPIPE=build/flashpipe bash tests/e2e/write_throttle_test.sh
set -euo pipefail

FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
for tool in img2simg simg2img losetup findmnt python3; do
  command -v "$tool" >/dev/null || { echo "write_throttle_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "write_throttle_test: needs root (loop devices, cgroups)"; exit 1; }

T=$(mktemp -d /tmp/fp_throttle_e2e.XXXXXX)
LOOP=""
CG=""
cleanup() {
  if [ -n "$CG" ] && [ -d "$CG" ]; then
    while read -r p; do echo "$p" > "$(dirname "$CG")/cgroup.procs" 2>/dev/null || true; done < "$CG/cgroup.procs"
    rmdir "$CG" 2>/dev/null || true
  fi
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
fail() { echo "FAIL $*"; exit 1; }

# 24 MiB of data, 16 MiB of zeros, 4 MiB of 0xAA, 20 MiB of data, zeros.
truncate -s 96M image.raw
head -c 24M /dev/urandom | dd of=image.raw conv=notrunc status=none
head -c 4M /dev/zero | tr '\0' '\252' | dd of=image.raw bs=1M seek=40 conv=notrunc status=none
head -c 20M /dev/urandom | dd of=image.raw bs=1M seek=44 conv=notrunc status=none
img2simg image.raw image.simg
truncate -s 128M disk.bin
LOOP=$(losetup --direct-io=on --find --show disk.bin)
MAJMIN=$(lsblk -ndo MAJ:MIN "$LOOP" | tr -d ' ')
LIMIT=1073741824  # 1 GiB/s: throttling on, the test not slowed

V2=$(findmnt -n -t cgroup2 -o TARGET | head -1 || true)
if [ -n "$V2" ] && grep -qw io "$V2/cgroup.controllers" 2>/dev/null; then
  grep -qw io "$V2/cgroup.subtree_control" || echo "+io" > "$V2/cgroup.subtree_control"
  CG=$V2/flashpipe_throttle_test.$$
  mkdir "$CG"
  echo "$MAJMIN wbps=$LIMIT" > "$CG/io.max"
  charged() { awk -v d="$MAJMIN" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); print $i } }' "$CG/io.stat" | grep . || echo 0; }
  echo "cgroup v2 io.max \"$MAJMIN wbps=$LIMIT\" in $CG"
else
  V1=$(findmnt -n -t cgroup -o TARGET,OPTIONS | awk '$2 ~ /(^|,)blkio(,|$)/ {print $1; exit}' || true)
  if [ -z "$V1" ] || [ ! -e "$V1/blkio.throttle.write_bps_device" ]; then
    echo "SKIP: no cgroup v2 io controller (${V2:-no cgroup2 mount}) and no cgroup v1 blkio throttle on this machine"
    exit 77
  fi
  CG=$V1/flashpipe_throttle_test.$$
  mkdir "$CG"
  echo "$MAJMIN $LIMIT" > "$CG/blkio.throttle.write_bps_device"
  charged() { awk -v d="$MAJMIN" '$1 == d && $2 == "Write" { print $3 }' "$CG/blkio.throttle.io_service_bytes" | grep . || echo 0; }
  echo "cgroup v2 io controller not available here; cgroup v1 blkio.throttle.write_bps_device \"$MAJMIN $LIMIT\" in $CG"
fi

simg2img image.simg expected.raw
for backend in io_uring threads sync; do
  for rs in "" "--request-size 4M"; do
    before=$(charged)
    # shellcheck disable=SC2086
    sh -c "echo \$\$ > $CG/cgroup.procs && exec timeout 120 $FP write --no-progress --json --backend $backend $rs image.simg $LOOP" > report.json \
      || fail "write with $backend $rs"
    after=$(charged)
    want=$(python3 -c 'import json; j = json.load(open("report.json")); print(j["bytes_written"] + j["bytes_zeroed"])')
    [ "$((after - before))" = "$want" ] ||
      fail "$backend $rs: the throttle was charged $((after - before)) bytes for $want bytes written and zeroed"
    cmp -s <(dd if="$LOOP" iflag=direct bs=1M count=96 status=none) expected.raw || fail "$backend $rs: device differs from the image"
    echo "ok   $backend $rs: charged $((after - before)) bytes = bytes written + zeroed"
  done
done
echo "PASS write_throttle_test"
