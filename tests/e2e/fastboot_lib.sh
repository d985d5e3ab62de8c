# Shared body of fastboot_tcp_test.sh and fastboot_udp_test.sh: runs the real
# AOSP fastboot client (29.0.6) against `flashpipe serve` on a GPT disk image
# and on a loop device (--direct-io=on) holding one, and checks the bytes.
# Sourced with TRANSPORT=tcp|udp set. Not a test by itself.
set -euo pipefail

FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WIRE="python3 $SRC/tests/e2e/fastboot_wire.py"
for tool in fastboot img2simg simg2img sgdisk mkfs.ext4 python3; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

work=$(mktemp -d)
daemon_pid=""
loopdev=""
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  if [ -n "$loopdev" ]; then losetup -d "$loopdev" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

die() { echo "FAIL: $*"; [ -f "$work/daemon.log" ] && tail -20 "$work/daemon.log"; exit 1; }
pass() { echo "ok: $*"; }

# name first_sector sectors  (512-byte sectors; 1 MiB gaps hold guard bytes;
# misc starts and ends off any 4 KiB boundary)
LAYOUT=$'boot_a 2048 8192\nboot_b 12288 8192\nsystem 22528 98304\nmisc 122887 2039\nuserdata 126976 32768'
part_off() { awk -v n="$1" '$1==n {print $2*512}' <<<"$LAYOUT"; }
part_size() { awk -v n="$1" '$1==n {print $3*512}' <<<"$LAYOUT"; }

# A 96 MiB disk image of pseudo-random guard bytes with a GPT.
make_disk() {
  python3 - "$1" <<'PY'
import random, sys
r = random.Random(1234)
with open(sys.argv[1], "wb") as f:
    for _ in range(96):
        f.write(r.randbytes(1 << 20))
PY
  local args=() i=1
  while read -r name first n; do
    args+=(-n "$i:$first:$((first + n - 1))" -c "$i:$name")
    i=$((i + 1))
  done <<<"$LAYOUT"
  sgdisk -a 1 "${args[@]}" "$1" >/dev/null
}

# read_part DISK NAME [OFFSET LENGTH] > bytes
read_part() {
  local off=$(( $(part_off "$2") + ${3:-0} )) len=${4:-$(part_size "$2")}
  dd if="$1" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none
}

# Every byte outside the partitions equals the snapshot.
check_guards() {
  python3 - "$1" "$2" "$LAYOUT" <<'PY' || die "guard bytes outside the partitions changed"
import sys
disk, snap, layout = sys.argv[1], sys.argv[2], sys.argv[3]
parts = sorted((int(a) * 512, int(a) * 512 + int(b) * 512) for _, a, b in (l.split() for l in layout.splitlines()))
with open(disk, "rb") as d, open(snap, "rb") as s:
    a, b = d.read(), s.read()
pos = 0
for start, end in parts + [(len(b), len(b))]:
    if a[pos:start] != b[pos:start]:
        i = next(i for i in range(pos, start) if a[i] != b[i])
        sys.exit("guard changed at byte %d" % i)
    pos = end
PY
  pass "guards around every partition untouched"
}

# The port a transport listens on, from the daemon's
# "serve: listening on tcp 127.0.0.1:PORT" line ("" before it is written).
listening_port() {
  { sed -n "s/^serve: listening on $1 127\.0\.0\.1:\([0-9][0-9]*\)\$/\1/p" "$work/daemon.out" 2>/dev/null || true; } |
    head -1
}

# Starts the daemon on $TRANSPORT at a port the kernel picks (PORT), with
# the state file $STATE (default $work/state).
start_daemon() {
  # Removed first: the child truncates them only once it runs, and the old
  # daemon's listening line must not be read meanwhile.
  rm -f "$work/daemon.out" "$work/daemon.log"
  # Over UDP alone (unless the caller asks for TCP too): TCP would listen on
  # 127.0.0.1:5554 too, which another daemon on this machine may hold.
  local only=()
  [ "$TRANSPORT" = udp ] && [[ " $* " != *" --tcp "* ]] && only=(--no-tcp)
  "$FLASHPIPE" serve "$@" --"$TRANSPORT" "127.0.0.1:0" "${only[@]}" --state "${STATE:-$work/state}" \
    >"$work/daemon.out" 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 50); do
    PORT=$(listening_port "$TRANSPORT")
    [ -n "$PORT" ] && [ "$PORT" != 0 ] && return 0
    kill -0 "$daemon_pid" 2>/dev/null || die "daemon did not start: $(cat "$work/daemon.log")"
    sleep 0.1
  done
  die "daemon not listening: $(cat "$work/daemon.out")"
}

stop_daemon() {
  kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""
}

fb() { timeout 120 fastboot -s "$TRANSPORT:127.0.0.1:$PORT" "$@"; }
fb_ok() { fb "$@" >"$work/fb.out" 2>&1 || die "fastboot $* failed: $(cat "$work/fb.out")"; }

make_images() {
  head -c 3M /dev/urandom >"$work/raw3m"
  head -c $((5 * 1024 * 1024 + 1234)) /dev/urandom >"$work/odd.raw"
  head -c 64K /dev/urandom >"$work/misc.raw"
  # 40 MiB mixing random data, zeros and a fill pattern: split by the client.
  python3 - "$work/mixed.raw" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(40):
        kind = i % 4
        f.write(os.urandom(1 << 20) if kind < 2 else (b"\0" * (1 << 20) if kind == 2 else b"ABCD" * (1 << 18)))
PY
  mkdir -p "$work/root/dir"
  head -c 2M /dev/urandom >"$work/root/dir/blob"
  seq 100000 >"$work/root/numbers"
  mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/ext4.img" 40M
  img2simg "$work/ext4.img" "$work/ext4.simg"
  simg2img "$work/ext4.simg" "$work/ext4.oracle"
  # A sparse image with a corrupt chunk header in the middle.
  head -c 8M /dev/urandom >"$work/c.raw"
  dd if=/dev/zero of="$work/c.raw" bs=1M seek=2 count=2 conv=notrunc status=none
  img2simg "$work/c.raw" "$work/corrupt.simg"
  python3 - "$work/corrupt.simg" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off, n = 28, 0
while off < len(b):
    t, _, sz, total = struct.unpack_from("<HHII", b, off)
    n += 1
    if n == 3:
        struct.pack_into("<H", b, off, 0xCAC9)
        break
    off += total
open(sys.argv[1], "wb").write(b)
PY
}

# The whole scenario on one disk (image file or loop device).
run_suite() {
  local disk=$1 snap=$2
  start_daemon --storage "$disk" --max-download-size 16M

  fb getvar all >"$work/all.out" 2>&1 || true
  grep -q "partition-size:system:0x0000000003000000" "$work/all.out" || die "getvar all: $(cat "$work/all.out")"
  grep -q "max-download-size:0x01000000" "$work/all.out" || die "getvar all lacks max-download-size"
  grep -q "has-slot:boot:yes" "$work/all.out" || die "getvar all lacks has-slot:boot"
  pass "getvar all"

  fb_ok flash boot_a "$work/raw3m"
  cmp <(read_part "$disk" boot_a 0 3145728) "$work/raw3m" || die "raw flash content"
  cmp <(read_part "$disk" boot_a 3145728 1048576) <(read_part "$snap" boot_a 3145728 1048576) || die "raw flash wrote past the image"
  pass "flash raw"

  fb_ok erase system
  cmp <(read_part "$disk" system) <(head -c 48M /dev/zero) || die "erase system"
  pass "erase"
  fb_ok flash system "$work/ext4.simg"
  cmp <(read_part "$disk" system 0 41943040) "$work/ext4.oracle" || die "sparse ext4 differs from simg2img output"
  fb getvar partition-type:system 2>&1 | grep "partition-type:system: ext4" >/dev/null || die "partition-type after ext4 flash"
  pass "flash sparse ext4 == simg2img output, partition-type ext4"

  fb_ok erase system
  fb_ok -S 2M flash system "$work/ext4.simg"
  grep -q "Sending sparse 'system' 1/" "$work/fb.out" || die "ext4 image was not split: $(cat "$work/fb.out")"
  cmp <(read_part "$disk" system 0 41943040) "$work/ext4.oracle" || die "split sparse ext4 differs from simg2img output"
  pass "flash sparse ext4 split into parts with -S 2M == simg2img output"

  fb_ok flash system "$work/mixed.raw"
  grep -q "Sending sparse 'system' 2/" "$work/fb.out" || die "40 MiB raw was not split at 16M: $(cat "$work/fb.out")"
  cmp <(read_part "$disk" system 0 41943040) "$work/mixed.raw" || die "split raw content"
  pass "flash raw larger than max-download-size (split by the client)"

  fb_ok -S 2M flash system "$work/odd.raw"
  grep -q "Sending sparse 'system' 3/3" "$work/fb.out" || die "odd raw was not split in 3: $(cat "$work/fb.out")"
  cmp <(read_part "$disk" system 0 5244114) "$work/odd.raw" || die "odd-sized raw split content"
  pass "raw of 5 MiB + 1234 bytes split into truncated-padding parts"

  fb_ok erase boot_b
  cmp <(read_part "$disk" boot_b) <(head -c 4M /dev/zero) || die "erase boot_b"
  pass "erase boot_b"

  fb_ok set_active b
  fb getvar current-slot 2>&1 | grep "current-slot: b" >/dev/null || die "current-slot after set_active b"
  fb_ok flash --slot b boot "$work/misc.raw"
  cmp <(read_part "$disk" boot_b 0 65536) "$work/misc.raw" || die "flash --slot b"
  cmp <(read_part "$disk" boot_a 0 3145728) "$work/raw3m" || die "flash --slot b touched boot_a"
  fb_ok set_active a
  pass "set_active b, flash --slot b"

  fb_ok flashing lock
  read_part "$disk" misc >"$work/misc.before"
  if fb flash misc "$work/misc.raw" >"$work/fb.out" 2>&1; then die "flash succeeded on a locked device"; fi
  grep -q "locked" "$work/fb.out" || die "locked refusal: $(cat "$work/fb.out")"
  cmp <(read_part "$disk" misc) "$work/misc.before" || die "locked flash wrote"
  fb_ok flashing unlock
  fb_ok flash misc "$work/misc.raw"
  cmp <(read_part "$disk" misc 0 65536) "$work/misc.raw" || die "flash misc (partition at an odd sector)"
  img2simg "$work/misc.raw" "$work/misc.simg" 1024
  fb_ok flash misc "$work/misc.simg"
  cmp <(read_part "$disk" misc 0 65536) "$work/misc.raw" || die "sparse flash of misc (odd sector)"
  pass "lock refuses flash, unlock allows it; raw and sparse flash of a partition at an odd sector"

  # Faults.
  read_part "$disk" userdata >"$work/userdata.before"
  if [ "$TRANSPORT" = tcp ]; then
    $WIRE tcp-partial-download 127.0.0.1 "$PORT" 1048576 300000 || die "partial download"
    $WIRE tcp-command 127.0.0.1 "$PORT" flash:userdata "FAILno image downloaded" || die "after partial download"
    $WIRE tcp-malformed 127.0.0.1 "$PORT" || die "malformed frames"
  else
    $WIRE udp-partial-download 127.0.0.1 "$PORT" 1048576 300000 || die "partial download"
    sleep 1.5  # the dead client is now gone (1.2 s of silence): the next one takes over
    $WIRE udp-malformed 127.0.0.1 "$PORT" || die "malformed packets"
  fi
  cmp <(read_part "$disk" userdata) "$work/userdata.before" || die "client killed mid-download wrote something"
  pass "client gone mid-download: nothing written"

  head -c 20M /dev/urandom >"$work/big.raw"
  if fb -S 32M flash userdata "$work/big.raw" >"$work/fb.out" 2>&1; then die "download above the limit accepted"; fi
  grep -q "max-download-size" "$work/fb.out" || die "above-limit message: $(cat "$work/fb.out")"
  pass "download above max-download-size refused"

  if fb flash userdata "$work/corrupt.simg" >"$work/fb.out" 2>&1; then die "corrupt sparse image accepted"; fi
  grep -q "chunk 2" "$work/fb.out" || die "corrupt sparse reason: $(cat "$work/fb.out")"
  cmp <(read_part "$disk" userdata) "$work/userdata.before" || die "corrupt sparse image wrote something"
  pass "corrupt sparse image: FAIL with the reason, nothing written"

  rm -f "$work/hold.out"  # the last run's "ok:" must not be read before the holder starts
  if [ "$TRANSPORT" = tcp ]; then
    $WIRE tcp-hold 127.0.0.1 "$PORT" 4 >"$work/hold.out" & bg_pids+=($!)
  else
    $WIRE udp-hold 127.0.0.1 "$PORT" 4 >"$work/hold.out" & bg_pids+=($!)
  fi
  for _ in $(seq 50); do grep -q "ok:" "$work/hold.out" && break; sleep 0.1; done
  out=$(timeout 20 fastboot -s "$TRANSPORT:127.0.0.1:$PORT" getvar product 2>&1 || true)
  grep -q "busy: another session is active" <<<"$out" || die "second client not refused: $out"
  wait "${bg_pids[-1]}" || die "session holder failed: $(cat "$work/hold.out")"
  [ "$TRANSPORT" = udp ] && sleep 1.5
  fb getvar product 2>&1 | grep "product: flashpipe" >/dev/null || die "daemon not serving after the second client"
  pass "second client refused while a session is active, served afterwards"

  if [ "$TRANSPORT" = tcp ]; then
    # Scripts run the client back to back: a newcomer that connects while the
    # last client is closing waits for that session to end, it is not refused.
    rm -f "$work/hold.out"
    $WIRE tcp-hold 127.0.0.1 "$PORT" 0.5 >"$work/hold.out" & bg_pids+=($!)
    for _ in $(seq 50); do grep -q "ok:" "$work/hold.out" && break; sleep 0.1; done
    out=$(timeout 20 fastboot -s "tcp:127.0.0.1:$PORT" getvar product 2>&1 || true)
    grep -q "product: flashpipe" <<<"$out" || die "client after a closing session refused: $out"
    wait "${bg_pids[-1]}" || die "session holder failed: $(cat "$work/hold.out")"
    pass "a client that connects while the last one is closing is served"
  fi

  fb_ok reboot
  grep -q "Rebooting" "$work/fb.out" || die "reboot: $(cat "$work/fb.out")"
  fb getvar version 2>&1 | grep "version: 0.4" >/dev/null || die "daemon not serving after reboot"
  # The client reconnects after reboot-fastboot and wants is-userspace: yes.
  fb_ok reboot fastboot
  out=$(fb getvar is-userspace 2>&1 || true)
  grep -q "is-userspace: yes" <<<"$out" || die "is-userspace after reboot fastboot: $out"
  fb_ok reboot bootloader
  out=$(fb getvar is-userspace 2>&1 || true)
  grep -q "is-userspace: no" <<<"$out" || die "is-userspace after reboot bootloader: $out"
  pass "reboot, reboot fastboot (client reconnects to 'userspace'), reboot bootloader answered; daemon keeps serving"

  stop_daemon
  check_guards "$disk" "$snap"
}

# --write-behind with the real client: a split sparse image and a raw image
# that the client splits, each checked after a getvar (which waits for the
# writes and their sync); guards untouched.
write_behind_check() {
  cp "$1" "$work/wb.img"
  start_daemon --storage "$work/wb.img" --max-download-size 16M --write-behind
  fb_ok -S 2M flash system "$work/ext4.simg"
  grep -q "Sending sparse 'system' 2/" "$work/fb.out" || die "write-behind: image not split: $(cat "$work/fb.out")"
  fb getvar version >/dev/null 2>&1
  cmp <(read_part "$work/wb.img" system 0 41943040) "$work/ext4.oracle" || die "write-behind: split sparse ext4 differs"
  fb_ok flash system "$work/mixed.raw"
  fb getvar version >/dev/null 2>&1
  cmp <(read_part "$work/wb.img" system 0 41943040) "$work/mixed.raw" || die "write-behind: split raw differs"
  stop_daemon
  check_guards "$work/wb.img" "$1"
  pass "--write-behind: split sparse and raw flashes == expected after getvar"
}

# The benchmark's write models with the real client: bounce:N (U-Boot's
# sparse writer) leaves the same bytes as the engine, discard leaves none;
# the older spellings --bounce-blocks N and --discard-writes still work.
write_model_check() {
  local flags
  for flags in "--write-model bounce:100" "--bounce-blocks 16" "--write-model discard" "--discard-writes"; do
    cp "$1" "$work/wm.img"
    # shellcheck disable=SC2086
    start_daemon --storage "$work/wm.img" --max-download-size 16M $flags
    fb_ok -S 2M flash system "$work/ext4.simg"
    fb_ok flash userdata "$work/raw3m"
    if [[ $flags == *discard* ]]; then
      cmp <(read_part "$work/wm.img" system) <(read_part "$1" system) || die "$flags: system was written"
      cmp <(read_part "$work/wm.img" userdata) <(read_part "$1" userdata) || die "$flags: userdata was written"
    else
      cmp <(read_part "$work/wm.img" system 0 41943040) "$work/ext4.oracle" || die "$flags: split sparse ext4 differs"
      cmp <(read_part "$work/wm.img" userdata 0 3145728) "$work/raw3m" || die "$flags: raw image differs"
    fi
    stop_daemon
    check_guards "$work/wm.img" "$1"
    pass "serve $flags: split sparse and raw flashes"
  done
  rm -f "$work/wm.img"
}

# --critical boot: flash and erase of boot_a/boot_b refused until
# `fastboot flashing unlock_critical`, which survives a daemon restart.
critical_check() {
  cp "$1" "$work/cr.img"
  rm -f "$work/state"
  start_daemon --storage "$work/cr.img" --critical boot
  if fb flash boot_a "$work/misc.raw" >"$work/fb.out" 2>&1; then die "flash of a critical partition accepted"; fi
  grep -q "critical partition 'boot_a'" "$work/fb.out" || die "critical refusal: $(cat "$work/fb.out")"
  fb_ok flashing unlock_critical
  stop_daemon
  start_daemon --storage "$work/cr.img" --critical boot
  fb_ok flash boot_a "$work/misc.raw"
  cmp <(read_part "$work/cr.img" boot_a 0 65536) "$work/misc.raw" || die "flash after unlock_critical"
  fb_ok flashing lock_critical
  if fb erase boot_b >"$work/fb.out" 2>&1; then die "erase of a critical partition accepted"; fi
  stop_daemon
  rm -f "$work/state"
  check_guards "$work/cr.img" "$1"
  pass "critical partitions: refused, unlock_critical (kept across a restart), lock_critical"
}

# The real client killed (SIGKILL) while its download is on the wire: nothing
# is written, and the next client is served (UDP: once the killed client has
# been silent for the daemon's 1.2 s "gone" limit).
killed_client_check() {
  head -c 200M /dev/urandom >"$work/k.raw"
  local tries=0 killed=""
  while [ $tries -lt 3 ] && [ -z "$killed" ]; do
    tries=$((tries + 1))
    [ -n "$daemon_pid" ] && stop_daemon
    rm -f "$work/k.img"; truncate -s 256M "$work/k.img"
    start_daemon --partition "userdata=$work/k.img" --max-download-size 256M -v
    local before done_before
    before=$(grep -c "download of" "$work/daemon.log" || true)
    done_before=$(grep -c "download complete" "$work/daemon.log" || true)
    fastboot -s "$TRANSPORT:127.0.0.1:$PORT" flash userdata "$work/k.raw" >"$work/k.out" 2>&1 & local fpid=$!
    for _ in $(seq 2000); do
      [ "$(grep -c "download of" "$work/daemon.log" || true)" -gt "$before" ] && break
      sleep 0.005
    done
    kill -9 "$fpid" 2>/dev/null || true; wait "$fpid" 2>/dev/null || true
    sleep 0.2
    # Too late (the whole image was in already)? Try again.
    [ "$(grep -c "download complete" "$work/daemon.log" || true)" -gt "$done_before" ] || killed=yes
  done
  [ -n "$killed" ] || die "could not kill the client mid-download in 3 tries"
  cmp -n $((256 << 20)) "$work/k.img" /dev/zero >/dev/null || die "a killed client's download wrote something"
  [ "$TRANSPORT" = udp ] && sleep 1.5
  # The daemon ends the dead session when the kernel reports the reset; on a
  # loaded machine that can come after the next client's connect, which then
  # gets the one-session busy refusal. Serving again within 10 s is the claim.
  local served=""
  for _ in $(seq 20); do
    fb getvar product 2>&1 | grep "product: flashpipe" >/dev/null && { served=yes; break; }
    sleep 0.5
  done
  [ -n "$served" ] || die "daemon not serving 10 s after a killed client"
  head -c 1M "$work/k.raw" >"$work/k1.raw"
  fb_ok flash userdata "$work/k1.raw"
  cmp -n $((1 << 20)) "$work/k.img" "$work/k1.raw" || die "flash after a killed client"
  pass "client killed mid-download (SIGKILL): nothing written, next client served"
  stop_daemon
  rm -f "$work/k.raw" "$work/k1.raw" "$work/k.img"
}

main() {
  make_images
  make_disk "$work/disk.img"
  cp "$work/disk.img" "$work/snap.img"
  echo "== $TRANSPORT: GPT disk image file"
  run_suite "$work/disk.img" "$work/snap.img"
  echo "== $TRANSPORT: write-behind, killed client$(declare -F transport_extra >/dev/null && echo ', both transports')"
  write_behind_check "$work/snap.img"
  write_model_check "$work/snap.img"
  critical_check "$work/snap.img"
  killed_client_check
  if declare -F transport_extra >/dev/null; then transport_extra "$work/snap.img"; fi

  if ! command -v losetup >/dev/null || ! loopdev=$(losetup --direct-io=on -f --show "$work/disk.img" 2>/dev/null); then
    echo "SKIP: loop devices unavailable"; exit 77
  fi
  cp "$work/snap.img" "$work/disk.img"  # same start as the file run
  blockdev --rereadpt "$loopdev" 2>/dev/null || true
  echo "== $TRANSPORT: loop device $loopdev (direct I/O)"
  run_suite "$loopdev" "$work/snap.img"
  echo "PASS"
}
