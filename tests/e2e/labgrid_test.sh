#!/usr/bin/env bash
# flashpipe's labgrid drivers (contrib/labgrid) under Debian's python3-labgrid:
# `pytest --lg-env contrib/labgrid/example/env.yaml` flashes a `flashpipe
# serve` daemon over TCP (a NetworkService on 127.0.0.1:5554, inside a network
# namespace of this test's own, so the fixed port meets no one) and writes a
# loop device (a FlashpipeBlockDevice), and checks the bytes against
# simg2img's output; then the same test against a locked daemon must fail
# with flashpipe's message. About 10 s.
#   FLASHPIPE=build/flashpipe bash tests/e2e/labgrid_test.sh
set -euo pipefail
FLASHPIPE=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
SRC=$(realpath "${FLASHPIPE_SOURCE_DIR:-$(dirname "$0")/../..}")
# Debian's interpreter: the packages (python3-labgrid, python3-pytest) are installed for it.
PY=${FLASHPIPE_PYTHON:-/usr/bin/python3}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (loop device, network namespace)"
"$PY" -c "import labgrid, pytest" 2>/dev/null || skip "python3-labgrid or python3-pytest not installed (scripts/setup.sh)"
for tool in simg2img img2simg sgdisk sfdisk mkfs.ext4 bmaptool xz losetup unshare ip; do
  command -v $tool >/dev/null || skip "$tool not installed"
done

work=$(mktemp -d)
loopdev=""
made_nodes=()
cleanup() {
  for n in "${made_nodes[@]}"; do rm -f "$n"; done
  if [ -n "$loopdev" ]; then losetup -d "$loopdev" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; [ -f "$work/daemon.log" ] && tail -20 "$work/daemon.log"; exit 1; }
pass() { echo "ok: $*"; }

# Images: raw boot of an odd size, sparse ext4 system and rootfs, and an xz
# raw firmware with a bmap beside it.
head -c $((1024 * 1024 + 777)) /dev/urandom >"$work/boot.raw"
mkdir -p "$work/root"
head -c 3M /dev/urandom >"$work/root/blob"
seq 100000 >"$work/root/numbers"
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/system.ext4" 24M
img2simg "$work/system.ext4" "$work/system.simg"
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/rootfs.ext4" 20M
img2simg "$work/rootfs.ext4" "$work/rootfs.simg"
truncate -s 8M "$work/firmware.img"
dd if=/dev/urandom of="$work/firmware.img" bs=64K count=8 seek=3 conv=notrunc status=none
bmaptool -q create "$work/firmware.img" -o "$work/firmware.img.bmap"
xz -T1 -1 "$work/firmware.img"
rm -rf "$work/root" "$work/system.ext4" "$work/rootfs.ext4"

# The daemon's disk and the storage medium, each with a GPT.
truncate -s 48M "$work/serve.img"
sgdisk -n 1:2048:+4M -c 1:boot -n 2:0:+32M -c 2:system "$work/serve.img" >/dev/null
truncate -s 40M "$work/medium.img"
sgdisk -n 1:2048:+10M -c 1:firmware -n 2:0:+24M -c 2:rootfs "$work/medium.img" >/dev/null
loopdev=$(losetup -f --show -P --direct-io=on "$work/medium.img")
# Partition nodes as udev would make them: this machine's kernel may not
# scan a loop device (then partx adds the partitions) and no udevd runs.
name=$(basename "$loopdev")
[ -d "/sys/block/$name/${name}p2" ] || partx -a "$loopdev" 2>/dev/null || true
for n in 1 2; do
  [ -d "/sys/block/$name/${name}p$n" ] || die "no partition $n on $loopdev"
  if [ ! -b "${loopdev}p$n" ]; then
    IFS=: read -r major minor <"/sys/block/$name/${name}p$n/dev"
    mknod "${loopdev}p$n" b "$major" "$minor" && made_nodes+=("${loopdev}p$n")
  fi
done

# run_pytest NAME [SERVE FLAGS...]: the daemon and pytest in a network
# namespace of their own; pytest's output in $work/NAME.out, its status returned.
run_pytest() {
  local name=$1; shift
  cat >"$work/$name.sh" <<EOF
set -u
ip link set lo up
"$FLASHPIPE" serve --storage "$work/serve.img" --state "$work/$name.state" --tcp 127.0.0.1:5554 $* \
  >"$work/daemon.out" 2>"$work/daemon.log" &
daemon=\$!
for _ in \$(seq 100); do grep -q "listening on tcp" "$work/daemon.out" 2>/dev/null && break; sleep 0.05; done
cd "$SRC/contrib/labgrid/example"
LG_FLASHPIPE="$FLASHPIPE" LG_IMAGES="$work" LG_STORAGE="$loopdev" LG_SERVE_DISK="$work/serve.img" \
  timeout 240 "$PY" -m pytest -p no:cacheprovider -q --lg-env env.yaml test_flashpipe.py --basetemp="$work/pt-$name"
rc=\$?
kill \$daemon; wait \$daemon
exit \$rc
EOF
  local rc=0
  unshare --net bash "$work/$name.sh" >"$work/$name.out" 2>&1 || rc=$?
  return $rc
}

rc=0
run_pytest unlocked || rc=$?
cat "$work/unlocked.out"
[ $rc = 0 ] || die "pytest --lg-env env.yaml failed (status $rc)"
grep -q "3 passed" "$work/unlocked.out" || die "not all 3 tests passed"
pass "labgrid: FlashpipeDriver flashed boot (raw) and system (sparse == simg2img) over TCP with --verify; FlashpipeStorageDriver wrote a sparse image to a partition by name and an xz image with its bmap to a partition by number"

rc=0
run_pytest locked --initial-lock locked || rc=$?
[ $rc = 1 ] || { cat "$work/locked.out"; die "pytest against a locked daemon: status $rc, not 1"; }
grep -q "FlashpipeError: flashpipe flash failed (exit 1): tcp:127.0.0.1:5554: refused: remote: 'download: locked" \
  "$work/locked.out" || { cat "$work/locked.out"; die "the failure does not carry flashpipe's message"; }
grep -q "1 failed, 2 passed" "$work/locked.out" || { cat "$work/locked.out"; die "expected only the fastboot test to fail"; }
pass "labgrid: against a locked daemon the fastboot test fails with flashpipe's message ($(grep -o "remote: 'download: locked[^']*'" "$work/locked.out" | head -1))"
echo "PASS"
