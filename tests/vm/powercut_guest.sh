# Runs inside the VM (powercut_vm_test.sh), chrooted into the host's root, in
# the shared work directory. Each case's device is a loop device over a file
# in the guest's tmpfs under dm-log-writes (its log in a second loop device);
# flashpipe runs on it step by step, and after each step the product
# reported done the script puts a mark in the log and takes a snapshot of
# what the step should have left. Logs and snapshots go back through the
# work directory (out/); the host replays them (powercut_replay).
# Prints 'ok: ...' per step; the first failure prints 'FAIL: ...' and ends
# the script non-zero.
set -uo pipefail
cd /tmp/work
export PATH=/usr/sbin:/usr/bin:/sbin:/bin DM_DISABLE_UDEV=1
FP=/tmp/flashpipe
daemon=""
PORT=""

die() {
  echo "FAIL: $*"
  [ -f /tmp/d.log ] && tail -20 /tmp/d.log
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
  exit 1
}
pass() { echo "ok: $* [${SECONDS} s]"; }

# lw_start NAME IMAGE: a copy of IMAGE behind /dev/mapper/NAME, every write
# to it logged.
lw_start() {
  local name=$1 data log
  cp "$2" "/tmp/$name.data" || die "copy $2"
  truncate -s 64M "/tmp/$name.log"
  data=$(losetup -f --show "/tmp/$name.data") && log=$(losetup -f --show "/tmp/$name.log") || die "losetup for $name"
  echo "$data $log" >"/tmp/$name.loops"
  dmsetup create "$name" --table "0 $(blockdev --getsz "$data") log-writes $data $log" || die "dmsetup create $name"
  [ -b "/dev/mapper/$name" ] || die "no /dev/mapper/$name"
}
# lw_mark NAME TEXT: the kernel splits a message at spaces, so they become _.
lw_mark() { dmsetup message "$1" 0 mark "${2// /_}" || die "mark '$2' on $1"; }
# lw_stop NAME: the log goes to out/NAME.log (holes stay holes).
lw_stop() {
  local data log
  dmsetup remove "$1" || die "dmsetup remove $1"
  read -r data log <"/tmp/$1.loops"
  losetup -d "$data" "$log"
  cp --sparse=always "/tmp/$1.log" "out/$1.log" || die "copy the log of $1"
  rm -f "/tmp/$1.data" "/tmp/$1.log"
}
snap_device() { cp --sparse=always "/dev/mapper/$1" "$2" || die "snapshot of $1"; }

serve_start() {
  rm -f /tmp/d.out /tmp/d.log
  "$FP" serve "$@" --tcp 127.0.0.1:0 >/tmp/d.out 2>/tmp/d.log &
  daemon=$!
  for _ in $(seq 300); do
    PORT=$(sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' /tmp/d.out | head -1)
    [ -n "$PORT" ] && return 0
    kill -0 "$daemon" 2>/dev/null || die "serve did not start: $(cat /tmp/d.log)"
    sleep 0.1
  done
  die "serve not listening"
}
serve_stop() { kill "$daemon"; wait "$daemon" 2>/dev/null; daemon=""; }
fb() { timeout 120 fastboot -s "tcp:127.0.0.1:$PORT" "$@" >/tmp/fb.out 2>&1 || die "fastboot $*: $(cat /tmp/fb.out)"; }

mkdir -p out /tmp/mnt
echo "guest: up after $(cut -d" " -f1 /proc/uptime) s"
cp ./flashpipe img.raw new.raw new2.raw big.simg super_empty.img /tmp/ || die "copy the inputs"

# serve's state file on ext4, changed by the stock client.
case_state() {
  mkdir -p out/state /tmp/mnt/s
  lw_start lws state.fs
  mount -o commit=300 /dev/mapper/lws /tmp/mnt/s || die "mount the state file system"
  truncate -s 1M /tmp/boot_a.img /tmp/boot_b.img  # slots, so that set_active is sent
  serve_start --partition boot_a=/tmp/boot_a.img --partition boot_b=/tmp/boot_b.img --state /tmp/mnt/s/state
  local k=1
  lw_mark lws "first start"
  cp /tmp/mnt/s/state out/state/$k
  for step in "flashing lock" "flashing unlock" "set_active b" "flashing unlock_critical" "flashing lock_critical"; do
    # shellcheck disable=SC2086  # the words of a client command
    fb $step
    k=$((k + 1))
    lw_mark lws "$step"
    cp /tmp/mnt/s/state out/state/$k
  done
  serve_stop
  umount /tmp/mnt/s || die "umount /tmp/mnt/s"
  lw_stop lws
  pass "state file: first start, lock, unlock, set_active b, unlock_critical, lock_critical ($k marks)"
}

# The calibration: a state file written in place, with no flush at all.
case_state_broken() {
  mkdir -p out/broken /tmp/mnt/b
  lw_start lwb state.fs
  mount -o commit=300 /dev/mapper/lwb /tmp/mnt/b || die "mount the broken case's file system"
  local k=0
  for text in 'slot=a\nlocked=0\ncritical_locked=1\n' 'slot=a\nlocked=1\ncritical_locked=1\n' \
              'slot=b\nlocked=1\ncritical_locked=1\n'; do
    # shellcheck disable=SC2059  # the text holds the newlines
    printf "$text" >/tmp/mnt/b/state
    k=$((k + 1))
    lw_mark lwb "in-place write $k"
    cp /tmp/mnt/b/state out/broken/$k
  done
  umount /tmp/mnt/b || die "umount /tmp/mnt/b"
  lw_stop lwb
  pass "broken state writer: $k in-place writes without a flush"
}

# misc's bootloader_control through set_active.
case_misc() {
  mkdir -p out/misc
  lw_start lwm misc.img
  serve_start --storage /dev/mapper/lwm --misc misc --state /tmp/state.misc
  local k=0
  for slot in b a b; do
    fb set_active $slot
    k=$((k + 1))
    lw_mark lwm "set_active $slot"
    snap_device lwm out/misc/$k
  done
  serve_stop
  lw_stop lwm
  pass "misc: set_active b, a, b"
}

# liblp metadata: update-super, create, resize and delete, update-super wipe.
case_lp() {
  mkdir -p out/lp
  lw_start lwl super.img
  serve_start --storage /dev/mapper/lwl --state /tmp/state.lp
  python3 /tmp/work/powercut_wire.py 127.0.0.1 "$PORT" /tmp/super_empty.img >/tmp/w.out 2>&1 ||
    die "update-super: $(cat /tmp/w.out)"
  lw_mark lwl "update-super"
  snap_device lwl out/lp/1
  local k=1
  for step in "create-logical-partition odm_a 1048576" "resize-logical-partition system_a 2097152" \
              "resize-logical-partition odm_a 3145728" "delete-logical-partition odm_a"; do
    # shellcheck disable=SC2086
    fb $step
    k=$((k + 1))
    lw_mark lwl "$step"
    snap_device lwl out/lp/$k
  done
  # flashall -w: the metadata flashed whole again (FlashMetadata), slots wiped.
  python3 /tmp/work/powercut_wire.py 127.0.0.1 "$PORT" /tmp/super_empty.img wipe >/tmp/w.out 2>&1 ||
    die "update-super wipe: $(cat /tmp/w.out)"
  k=$((k + 1))
  lw_mark lwl "update-super wipe"
  snap_device lwl out/lp/$k
  serve_stop
  lw_stop lwl
  pass "lp: update-super, create, resize, resize, delete, update-super wipe ($k marks)"
}

# write --verify onto a block device; the mark once it said done.
case_block() {
  mkdir -p out/blk
  lw_start lwd blk.img
  "$FP" write --verify /tmp/img.raw /dev/mapper/lwd >/tmp/w.out 2>&1 || die "write --verify: $(cat /tmp/w.out)"
  lw_mark lwd "write --verify"
  snap_device lwd out/blk/1
  lw_stop lwd
  pass "write --verify to a block device"
}

# flashpipe partition: a blank disk, then three tables (sfdisk, U-Boot, and
# the first one's dump written back), each a mark once it said done.
case_gpt() {
  mkdir -p out/gpt
  lw_start lwg gpt.img
  printf 'label: gpt\n\nsize=1MiB, type=esp, name=boot\nname=rootfs\n' >/tmp/gpt1.sfdisk
  printf 'name=a,start=2MiB,size=1MiB;name=b,size=3MiB,type=android-system;name=c,size=-;' >/tmp/gpt2.uboot
  "$FP" partition /dev/mapper/lwg /tmp/gpt1.sfdisk >/tmp/w.out 2>&1 || die "partition 1: $(cat /tmp/w.out)"
  lw_mark lwg "partition sfdisk"
  snap_device lwg out/gpt/1
  "$FP" partition /dev/mapper/lwg --dump >/tmp/gpt1.dump 2>/tmp/w.out || die "partition --dump: $(cat /tmp/w.out)"
  "$FP" partition /dev/mapper/lwg /tmp/gpt2.uboot >/tmp/w.out 2>&1 || die "partition 2: $(cat /tmp/w.out)"
  lw_mark lwg "partition uboot"
  snap_device lwg out/gpt/2
  "$FP" partition /dev/mapper/lwg /tmp/gpt1.dump >/tmp/w.out 2>&1 || die "partition 3: $(cat /tmp/w.out)"
  lw_mark lwg "partition dump back"
  snap_device lwg out/gpt/3
  cmp -s out/gpt/1 out/gpt/3 || die "the dump written back is not the first table"
  lw_stop lwg
  pass "partition: blank, sfdisk layout, U-Boot layout, the first one's dump back"
}

# Outputs in files on ext4: write, img2simg, resparse, each replacing an
# older file (or set of parts).
snap_files() { cp -a /tmp/mnt/f/out "out/files/$1" || die "snapshot $1 of the files"; }
case_files() {
  mkdir -p out/files /tmp/mnt/f
  lw_start lwf files.fs
  mount -o commit=300 /dev/mapper/lwf /tmp/mnt/f || die "mount the files' file system"
  snap_files 0
  "$FP" write /tmp/new.raw /tmp/mnt/f/out/disk.img >/tmp/w.out 2>&1 || die "write: $(cat /tmp/w.out)"
  lw_mark lwf "write disk.img"
  snap_files 1
  "$FP" img2simg /tmp/new2.raw /tmp/mnt/f/out/conv.simg >/tmp/w.out 2>&1 || die "img2simg: $(cat /tmp/w.out)"
  lw_mark lwf "img2simg conv.simg"
  snap_files 2
  "$FP" resparse -m 512K /tmp/big.simg /tmp/mnt/f/out/parts.simg >/tmp/w.out 2>&1 || die "resparse: $(cat /tmp/w.out)"
  lw_mark lwf "resparse parts.simg"
  snap_files 3
  umount /tmp/mnt/f || die "umount /tmp/mnt/f"
  lw_stop lwf
  pass "files on ext4: write, img2simg, resparse"
}

case_state
case_state_broken
case_misc
case_lp
case_block
case_gpt
case_files
echo "GUEST-DONE"
