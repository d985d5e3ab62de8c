#!/usr/bin/env bash
# Reading back from `flashpipe serve` over TCP and UDP, on a GPT disk image
# file and on a loop device (--direct-io=on) holding one: the real 29.0.6
# client's `oem stage` + `get_staged` (upload) and `oem digest`, and
# fetch:PART:OFFSET:SIZE through fastboot_wire.py (29.0.6 has no fetch
# verb). The bytes must be the partition's; a byte changed behind the
# daemon's back (dd on the file, or on the file under the loop device, whose
# page cache still holds the old byte) must change the digest; a locked
# device gives out nothing. Helpers come from fastboot_lib.sh.
TRANSPORT=tcp
source "$(dirname "$0")/fastboot_lib.sh"
command -v sha256sum >/dev/null || { echo "SKIP: sha256sum not installed"; exit 77; }

# The digest the daemon answers for `oem digest ARGS`: its two INFO halves.
digest() {
  fb oem digest "$@" >"$work/digest.out" 2>&1 || die "oem digest $*: $(cat "$work/digest.out")"
  local one two
  one=$(sed -n 's/.*(bootloader) sha256 1\/2 \([0-9a-f]\{32\}\)$/\1/p' "$work/digest.out")
  two=$(sed -n 's/.*(bootloader) sha256 2\/2 \([0-9a-f]\{32\}\)$/\1/p' "$work/digest.out")
  [ -n "$one" ] && [ -n "$two" ] || die "oem digest $*: no digest in $(cat "$work/digest.out")"
  echo "$one$two"
}
sha() { sha256sum | cut -d' ' -f1; }

# get_staged of PART OFFSET LENGTH (29.0.6: oem stage, then get_staged in a
# second run) equals the partition's bytes.
staged_check() {
  rm -f "$work/staged.bin"
  fb_ok oem stage "$1" "$2" "$3"
  fb_ok get_staged "$work/staged.bin"
  cmp "$work/staged.bin" <(read_part "$DISK" "$1" $(($2)) $(($3))) || die "get_staged of $1 $2 $3 differs"
}

# fetch:... through the raw client equals the partition's bytes.
fetch_check() {
  rm -f "$work/fetched.bin"
  $WIRE "$TRANSPORT-fetch" 127.0.0.1 "$PORT" "fetch:$1:$2:$3" "$work/fetched.bin" >"$work/wire.out" ||
    die "fetch:$1:$2:$3: $(cat "$work/wire.out")"
  cmp "$work/fetched.bin" <(read_part "$DISK" "$1" $(($2)) $(($3))) || die "fetch:$1:$2:$3 differs"
}

# One transport on one disk (DISK; BACKING: the file to corrupt).
readback_suite() {
  start_daemon --storage "$DISK" --max-download-size 16M
  local max=0x01000000 big=0x400000
  [ "$TRANSPORT" = udp ] && max=0x00100000 big=0x100000
  fb getvar max-fetch-size >"$work/fb.out" 2>&1 || true
  grep -q "max-fetch-size: $max" "$work/fb.out" || die "max-fetch-size: $(cat "$work/fb.out")"

  staged_check system 0x1000 $big
  staged_check misc 0 1043968  # the whole partition at an odd sector
  pass "$TRANSPORT: oem stage + get_staged (upload) == partition bytes"
  fetch_check system 0 $big
  fetch_check misc 0x3 0x1001
  fetch_check userdata 0x123000 0x10000
  $WIRE "$TRANSPORT-command" 127.0.0.1 "$PORT" "fetch:system:0x2fff000:0x2000" "FAIL0x2fff000+0x2000 runs past" ||
    die "fetch past the end"
  pass "$TRANSPORT: fetch:PART:OFFSET:SIZE == partition bytes (one data phase), past the end refused"

  [ "$(digest system)" = "$(read_part "$DISK" system | sha)" ] || die "digest of system"
  [ "$(digest userdata 4096 65536)" = "$(read_part "$DISK" userdata 4096 65536 | sha)" ] || die "digest of a range"
  [ "$(digest misc:0x3:0x1001)" = "$(read_part "$DISK" misc 3 4097 | sha)" ] || die "digest misc:0x3:0x1001"
  if fb oem digest system 0x2fff000 0x2000 >"$work/fb.out" 2>&1; then die "digest past the end accepted"; fi
  grep -q "runs past the end of 'system'" "$work/fb.out" || die "digest past the end: $(cat "$work/fb.out")"
  pass "$TRANSPORT: oem digest == sha256sum of the partition's bytes, past the end refused"

  # Behind the daemon's back: a byte of system changed in the file (under a
  # loop device, after the device's page cache read the old byte).
  local at=$(( $(part_off system) + 0x123457 )) before after cached
  before=$(digest system 0x100000 0x100000)
  read_part "$DISK" system $((0x100000)) $((0x100000)) >/dev/null  # buffered: the old byte now cached
  python3 - "$BACKING" "$at" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
at = int(sys.argv[2])
os.pwrite(fd, bytes([(os.pread(fd, 1, at)[0] + 1) % 256]), at)
os.fsync(fd)
PY
  after=$(digest system 0x100000 0x100000)
  [ "$after" != "$before" ] || die "digest did not change after a byte changed on the device"
  [ "$after" = "$(read_part "$BACKING" system $((0x100000)) $((0x100000)) | sha)" ] || die "digest != the medium's bytes"
  cached=$(read_part "$DISK" system $((0x100000)) $((0x100000)) | sha)
  [ "$cached" = "$before" ] && echo "  (a buffered read of $DISK still gives the old bytes: its page cache)"
  pass "$TRANSPORT: a byte changed behind the daemon's back changes the digest"

  fb_ok flashing lock
  for cmd in "oem digest system" "oem stage system 0 4096" "get_staged $work/locked.bin"; do
    # shellcheck disable=SC2086
    if fb $cmd >"$work/fb.out" 2>&1; then die "$cmd succeeded on a locked device"; fi
    grep -q "locked" "$work/fb.out" || die "$cmd while locked: $(cat "$work/fb.out")"
  done
  [ ! -s "$work/locked.bin" ] || die "get_staged wrote data while locked"
  $WIRE "$TRANSPORT-command" 127.0.0.1 "$PORT" "fetch:system:0:4096" "FAILfetch: locked (fastboot flashing unlock)" ||
    die "fetch while locked"
  fb_ok flashing unlock
  pass "$TRANSPORT: locked: fetch, oem stage, get_staged, oem digest refused"
  stop_daemon
}

make_disk "$work/disk.img"
cp "$work/disk.img" "$work/snap.img"
for TRANSPORT in tcp udp; do
  echo "== $TRANSPORT: GPT disk image file"
  DISK=$work/disk.img BACKING=$work/disk.img readback_suite
done
check_guards "$work/disk.img" "$work/snap.img"  # only system changed, by the test

if ! command -v losetup >/dev/null || ! loopdev=$(losetup --direct-io=on -f --show "$work/disk.img" 2>/dev/null); then
  echo "SKIP: loop devices unavailable"; exit 77
fi
for TRANSPORT in tcp udp; do
  echo "== $TRANSPORT: loop device $loopdev (direct I/O)"
  DISK=$loopdev BACKING=$work/disk.img readback_suite
done
echo "PASS"
