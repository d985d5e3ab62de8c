#!/usr/bin/env bash
# The power-cut harness (docs/design.md, "Power cuts"): each case's device
# runs under dm-log-writes in the VM (powercut_guest.sh: serve's state file
# on ext4, misc's boot control through set_active, liblp metadata through
# update-super and create/resize/delete-logical-partition, write --verify to
# a block device, flashpipe partition tables, write/img2simg/resparse outputs
# on ext4, and a deliberately
# broken state writer), then powercut_replay rebuilds every flush/FUA state
# and sampled reorderings and tears of the writes in between, and each
# case's checker judges them. Fails on any unacceptable state (its write
# index, flush index and reason are printed), and unless the broken writer
# is caught.
#   FLASHPIPE=build/flashpipe bash tests/vm/powercut_vm_test.sh
# Bounds: POWERCUT_STATES states (default 1500) and POWERCUT_SECONDS seconds
# (default 90) per case; VM_SECONDS for the guest run (default 600). Whole run:
# 512 s at load 15-20 (VM 344 s, the replays two at a time 168 s).
# Runs beside usb_vm_test.sh: its own work directory and initramfs, the
# kernel cache shared under a lock. Exit 77 when a tool is missing.
set -euo pipefail
FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
REPLAY=${POWERCUT_REPLAY:-$(dirname "$FLASHPIPE")/powercut_replay}
STATES=${POWERCUT_STATES:-1500}
SECONDS_PER_CASE=${POWERCUT_SECONDS:-90}
VM_SECONDS=${VM_SECONDS:-600}  # guest runs of 235-680 s seen at load 15-25 on 2 cores (TCG)
source "$SRC/tests/vm/vm_lib.sh"

for tool in qemu-system-x86_64 busybox dpkg-deb dmsetup losetup mkfs.ext4 e2fsck debugfs sgdisk fastboot python3; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed (scripts/setup.sh installs it)"; exit 77; }
done
[ -x "$REPLAY" ] || { echo "SKIP: no $REPLAY (cmake --build build --target powercut_replay)"; exit 77; }
work=$(mktemp -d)
scratch=""
trap '[ -n "$scratch" ] && [ "$scratch" != "$work" ] && rm -rf "$scratch"; [ -n "${POWERCUT_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
die() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }
start=$(date +%s)
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}" || die "no kernel for the VM"

# Images, made here where it is fast.
rnd() { head -c "$2" /dev/urandom; }  # $1 names the piece
gpt_disk() {  # FILE MIB NAME:FIRST_SECTOR:SECTORS...
  local file=$1 mib=$2 args=() i=0 name first n
  shift 2
  for p in "$@"; do
    IFS=: read -r name first n <<<"$p"
    i=$((i + 1))
    args+=(-n "$i:$first:$((first + n - 1))" -c "$i:$name")
  done
  head -c $((mib << 20)) /dev/zero >"$file"
  sgdisk -a 1 "${args[@]}" "$file" >/dev/null
}
# boot_a and boot_b: the client sends set_active only to a device with slots.
gpt_disk "$work/misc.img" 4 misc:2048:128 boot_a:4096:256 boot_b:6144:256
MISC_OFFSET=$((2048 * 512))
gpt_disk "$work/super.img" 20 super:2048:32768
SUPER_OFFSET=$((2048 * 512)) SUPER_SIZE=$((32768 * 512))
"$FLASHPIPE" lp make -d $SUPER_SIZE -m 64K -s 2 -g main_a:6M -g main_b:6M \
  -p system_a:readonly:0:main_a -p system_b:readonly:0:main_b -o "$work/super_empty.img" >/dev/null
rnd 1 8388608 >"$work/blk.img"
head -c 8388608 /dev/zero >"$work/gpt.img"
{ rnd 2 1048576; head -c 1048576 /dev/zero; rnd 3 1049810; } >"$work/img.raw"
mkfs.ext4 -q -F -b 1024 "$work/state.fs" 8M
mkdir -p "$work/root/out"
rnd 4 1048576 >"$work/root/out/disk.img"
{ rnd 5 524288; head -c 524288 /dev/zero; } >"$work/old2.raw"
"$FLASHPIPE" img2simg "$work/old2.raw" "$work/root/out/conv.simg"
{ rnd 6 700000; head -c 300000 /dev/zero; rnd 7 700000; } >"$work/old3.raw"
"$FLASHPIPE" img2simg "$work/old3.raw" "$work/old3.simg"
"$FLASHPIPE" resparse -m 512K "$work/old3.simg" "$work/root/out/parts.simg" 2>/dev/null
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/files.fs" 16M
{ rnd 8 600000; head -c 400000 /dev/zero; rnd 9 5000; } >"$work/new.raw"
{ rnd 10 900000; head -c 600000 /dev/zero; rnd 11 100000; } >"$work/new2.raw"
{ rnd 12 1500000; head -c 500000 /dev/zero; rnd 13 900000; } >"$work/big.raw"
"$FLASHPIPE" img2simg "$work/big.raw" "$work/big.simg"
rm -rf "$work/root" "$work"/old*.raw "$work/big.raw" "$work/old3.simg"
cp "$FLASHPIPE" "$work/flashpipe"
cp "$SRC/tests/vm/powercut_guest.sh" "$SRC/tests/vm/powercut_wire.py" "$SRC/tests/e2e/fastboot_wire.py" "$work/"
echo "== images ready in $(($(date +%s) - start)) s; booting the VM (up to $VM_SECONDS s)"

rc=0
VM_MODULES="loop dm_mod dm_log_writes crc32c_generic ext4" vm_run "$work" powercut_guest.sh "$VM_SECONDS" \
  "$work/console.log" || rc=$?
grep -vE "^\[ *[0-9.]+\]" "$work/console.log" || true
[ $rc = 124 ] && die "the VM did not finish in $VM_SECONDS s"
grep -q "^GUEST-DONE" "$work/console.log" && [ $rc = 0 ] || die "guest run failed (status $rc)"
vm_done=$(date +%s)
echo "== VM run done after $((vm_done - start)) s; replaying the logs"

# replay NAME WANT CASE ARGS...: powercut_replay in the background; WANT is
# its exit status (0: every state acceptable, 1: the broken case caught).
names=() pids=()
# e2fsck runs once per distinct state: in memory when /dev/shm allows.
scratch=$work
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=$(mktemp -d /dev/shm/powercut.XXXXXX); fi
replay() {
  local name=$1 want=$2
  shift 2
  echo "$want" >"$work/$name.want"
  TMPDIR=$scratch "$REPLAY" "$@" --max-states "$STATES" --max-seconds "$SECONDS_PER_CASE" >"$work/$name.out" 2>&1 &
  names+=("$name") pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait_replays; fi
}
failed=0
wait_replays() {
  local i rc want
  for i in "${!pids[@]}"; do
    rc=0; wait "${pids[$i]}" || rc=$?
    want=$(cat "$work/${names[$i]}.want")
    sed "s/^/${names[$i]}: /" "$work/${names[$i]}.out" | grep -v ": expect " || true
    if [ "$rc" != "$want" ]; then echo "FAIL: ${names[$i]}: powercut_replay exited $rc, expected $want"; failed=1; fi
  done
  names=() pids=()
}
seq_expect() {  # DIR N: --expect DIR/1 .. DIR/N
  local i
  for i in $(seq "$2"); do printf -- '--expect\n%s\n' "$1/$i"; done
}
mapfile -t e_state < <(seq_expect "$work/out/state" 6)
mapfile -t e_broken < <(seq_expect "$work/out/broken" 3)
mapfile -t e_misc < <(seq_expect "$work/out/misc" 3)
mapfile -t e_lp < <(seq_expect "$work/out/lp" 6)
mapfile -t e_gpt < <(seq_expect "$work/out/gpt" 3)
mapfile -t e_files < <(printf -- '--expect\n%s\n' "$work/out/files/0"; seq_expect "$work/out/files" 3)
# ext4 assumes a write inside 4 KiB is not torn (its 1 KiB superblock,
# written in place): the file system cases tear at 4 KiB, the others at 512.
replay state 0 state-file --tear-unit 4096 --device "$work/state.fs" --log "$work/out/lws.log" --path /state --expect absent "${e_state[@]}"
replay state-broken 1 state-file --tear-unit 4096 --device "$work/state.fs" --log "$work/out/lwb.log" --path /state \
  --expect absent "${e_broken[@]}"
replay misc 0 boot-control --device "$work/misc.img" --log "$work/out/lwm.log" --offset $MISC_OFFSET \
  --expect "$work/misc.img" "${e_misc[@]}"
for slot in 0 1; do
  replay lp-slot$slot 0 lp-metadata --device "$work/super.img" --log "$work/out/lwl.log" --offset $SUPER_OFFSET \
    --size $SUPER_SIZE --slot $slot --expect "$work/super.img" "${e_lp[@]}"
done
replay block 0 region --device "$work/blk.img" --log "$work/out/lwd.log" --offset 0 --size "$(stat -c %s "$work/img.raw")" \
  --expect any --expect "$work/out/blk/1"
replay gpt 0 gpt --device "$work/gpt.img" --log "$work/out/lwg.log" --expect "$work/gpt.img" "${e_gpt[@]}"
replay files 0 files --tear-unit 4096 --device "$work/files.fs" --log "$work/out/lwf.log" --path /out/disk.img --path /out/conv.simg \
  --parts /out/parts.simg "${e_files[@]}"
wait_replays
[ $failed = 0 ] || die "unacceptable power-cut states (above: write index, flush index, reason)"

# The snapshots themselves: what the steps were asked to leave.
cmp <(head -c "$(stat -c %s "$work/img.raw")" "$work/out/blk/1") "$work/img.raw" || die "the block device != img.raw"
cmp "$work/out/files/3/disk.img" "$work/new.raw" || die "disk.img != new.raw"
grep -q "locked=1" "$work/out/state/2" || die "the state file after 'flashing lock': $(cat "$work/out/state/2")"
grep -q "UNACCEPTABLE state-file: .*was acknowledged" "$work/state-broken.out" ||
  die "the broken writer was not caught for losing an acknowledged state"
pass "the broken state writer (in place, no flush) is caught: $(grep -c '^UNACCEPTABLE' "$work/state-broken.out") reported"
echo "PASS in $(($(date +%s) - start)) s (VM $((vm_done - start)) s, replays $(($(date +%s) - vm_done)) s)"
