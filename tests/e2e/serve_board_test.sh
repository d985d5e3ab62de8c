#!/usr/bin/env bash
# flashpipe serve on a real board (issue 11), end to end with the real AOSP
# client 29.0.6: option checks before anything is touched (exit 2), bare
# ports, TCP kept with --udp, `fastboot -w` and `fastboot format` through a
# directory that gives the Debian client its mke2fs (contrib/fastboot-mke2fs),
# partition types from the GPT type and from --partition-type, the state a
# lock command reports, the log line of each flash and erase, set_active
# into misc's bootloader_control with its hook, and `fastboot boot`.
TRANSPORT=tcp
source "$(dirname "$0")/fastboot_lib.sh"
pass() { echo "ok: $* (${SECONDS}s)"; }

# The Debian client runs mke2fs from the directory of its real binary
# (/proc/self/exe), not of the /usr/bin symlink: a copy of the client in a
# directory of the test's own, with the wrapper beside it.
client=$(readlink -f "$(command -v fastboot)")
mkdir -p "$work/fbdir"
cp "$client" "$work/fbdir/fastboot"
cp "$SRC/contrib/fastboot-mke2fs" "$work/fbdir/mke2fs"
chmod +x "$work/fbdir/mke2fs"
fbw() { timeout 120 "$work/fbdir/fastboot" -s "tcp:127.0.0.1:$PORT" "$@"; }
# fastboot getvar VAR answers VALUE (read whole: grep -q would close the
# pipe under fastboot).
getvar_is() { local out; out=$(fb getvar "$1" 2>&1 || true); grep -q "^$1: $2\$" <<<"$out"; }

# A GPT disk whose partitions carry Android type codes (sgdisk):
# name first_sector sectors type
BOARD=$'boot_a 2048 8192 a002\nboot_b 10240 8192 a002\nmisc 18432 2048 a004\nmetadata 20480 32768 a005\ncache 53248 32768 a007\nuserdata 86016 65536 a008'
board_off() { awk -v n="$1" '$1==n {print $2*512}' <<<"$BOARD"; }
board_size() { awk -v n="$1" '$1==n {print $3*512}' <<<"$BOARD"; }
make_board() {
  head -c 80M /dev/urandom >"$1"
  local args=() i=1
  while read -r name first n type; do
    args+=(-n "$i:$first:$((first + n - 1))" -c "$i:$name" -t "$i:$type")
    i=$((i + 1))
  done <<<"$BOARD"
  sgdisk -a 1 "${args[@]}" "$1" >/dev/null
}
# board_part DISK NAME > bytes
board_part() { dd if="$1" bs=512 iflag=count_bytes skip=$(( $(board_off "$2") / 512 )) count="$(board_size "$2")" status=none; }
# The partition holds a clean ext4 as large as the partition.
is_whole_ext4() {
  board_part "$1" "$2" >"$work/fs.img"
  [ "$(blkid -o value -s TYPE "$work/fs.img")" = ext4 ] || return 1
  e2fsck -fn "$work/fs.img" >/dev/null 2>&1 || return 1
  local blocks
  blocks=$(dumpe2fs -h "$work/fs.img" 2>/dev/null | awk -F: '/^Block count/ {print $2+0}')
  [ "$((blocks * 4096))" = "$(board_size "$2")" ]
}

cli_checks() {
  local out rc
  # A usage error exits 2 before the storage is opened: a disk that is not
  # there is not even looked for, and no state file appears.
  rc=0; out=$("$FLASHPIPE" serve --storage "$work/absent.img" --state "$work/cli.state" --tcp 1.2.3 2>&1) || rc=$?
  [ "$rc" = 2 ] || die "bad --tcp: exit $rc, not 2: $out"
  grep -q "expected ADDR:PORT" <<<"$out" || die "bad --tcp says: $out"
  [ ! -e "$work/cli.state" ] || die "a usage error created the state file"
  rc=0; out=$("$FLASHPIPE" serve --partition "boot=$work/x.img:1M" --state "$work/cli.state" 2>&1) || rc=$?
  [ "$rc" = 2 ] || die "malformed --partition: exit $rc: $out"
  grep -qF "expected NAME=PATH[:OFFSET:SIZE]" <<<"$out" || die "malformed --partition says: $out"
  rc=0; out=$("$FLASHPIPE" serve --partition "userdata" 2>&1) || rc=$?
  [ "$rc" = 2 ] && grep -qF "expected NAME=PATH[:OFFSET:SIZE]" <<<"$out" || die "--partition without '=': $rc $out"
  rc=0; out=$("$FLASHPIPE" serve --partition "u=$work/x.img" --partition-type u=xfs 2>&1) || rc=$?
  [ "$rc" = 2 ] && grep -qF "expected NAME=ext4|f2fs|raw" <<<"$out" || die "bad --partition-type: $rc $out"
  [ ! -e "$work/cli.state" ] || die "a usage error created the state file"
  pass "usage errors exit 2 before any file is touched, and say the expected syntax"

  truncate -s 8M "$work/cli.img"
  # A bare port: loopback.
  rm -f "$work/daemon.out"
  "$FLASHPIPE" serve --partition "data=$work/cli.img" --state "$work/cli.state" --tcp 0 >"$work/daemon.out" 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 50); do PORT=$(listening_port tcp); [ -n "$PORT" ] && break; sleep 0.1; done
  [ -n "$PORT" ] || die "--tcp 0 did not listen on loopback: $(cat "$work/daemon.out" "$work/daemon.log")"
  getvar_is product flashpipe || die "no answer on the bare port"
  fb flashing lock >"$work/fb.out" 2>&1 || die "flashing lock: $(cat "$work/fb.out")"
  grep -q "(bootloader) device now locked, critical partitions locked" "$work/fb.out" ||
    die "flashing lock does not say the new state: $(cat "$work/fb.out")"
  fb flashing unlock >"$work/fb.out" 2>&1 || die "flashing unlock: $(cat "$work/fb.out")"
  grep -q "(bootloader) device now unlocked" "$work/fb.out" || die "flashing unlock says: $(cat "$work/fb.out")"
  stop_daemon
  pass "--tcp PORT listens on loopback; flashing lock/unlock say the new state"

  # --udp alone keeps TCP on its default address; on a shared machine that
  # port may be taken, which shows as well that TCP was asked for.
  rm -f "$work/daemon.out"
  "$FLASHPIPE" serve --partition "data=$work/cli.img" --state "$work/cli.state" --udp 0 >"$work/daemon.out" 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 50); do
    grep -q "listening on udp" "$work/daemon.out" 2>/dev/null && break
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$daemon_pid" 2>/dev/null; then
    grep -qx "serve: listening on tcp 127.0.0.1:5554" "$work/daemon.out" || die "--udp alone: $(cat "$work/daemon.out")"
    grep -qE "^serve: listening on udp 127\.0\.0\.1:[1-9]" "$work/daemon.out" || die "--udp 0: $(cat "$work/daemon.out")"
    stop_daemon
  else
    wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""
    grep -q "bind 127.0.0.1:5554" "$work/daemon.log" || die "--udp alone did not start: $(cat "$work/daemon.log")"
  fi
  rm -f "$work/daemon.out"
  "$FLASHPIPE" serve --partition "data=$work/cli.img" --state "$work/cli.state" --udp 0 --no-tcp \
    >"$work/daemon.out" 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 50); do grep -q "listening on udp" "$work/daemon.out" 2>/dev/null && break; sleep 0.1; done
  grep -q "listening on udp" "$work/daemon.out" || die "--udp --no-tcp: $(cat "$work/daemon.log")"
  ! grep -q "listening on tcp" "$work/daemon.out" || die "--no-tcp still listens on tcp"
  stop_daemon
  pass "--udp alone keeps TCP on 127.0.0.1:5554; --no-tcp leaves it out"
}

format_checks() {
  make_board "$work/board.img"
  cp "$work/board.img" "$work/board.snap"
  start_daemon --storage "$work/board.img" --max-download-size 16M
  # Random bytes: libblkid finds nothing, the GPT types decide.
  for p in userdata cache metadata; do
    getvar_is "partition-type:$p" ext4 || die "partition-type:$p is not ext4"
  done
  getvar_is partition-type:misc raw || die "partition-type:misc"
  fbw -w >"$work/fb.out" 2>&1 || die "fastboot -w: $(cat "$work/fb.out")"
  for p in userdata cache metadata; do
    grep -q "Erasing '$p'" "$work/fb.out" && grep -q "Sending '$p'" "$work/fb.out" ||
      die "fastboot -w did not erase and format $p: $(cat "$work/fb.out")"
    is_whole_ext4 "$work/board.img" "$p" || die "$p is not a clean ext4 of the partition's size after -w"
  done
  cmp <(board_part "$work/board.img" boot_a) <(board_part "$work/board.snap" boot_a) || die "-w touched boot_a"
  cmp <(board_part "$work/board.img" misc) <(board_part "$work/board.snap" misc) || die "-w touched misc"
  pass "fastboot -w: userdata, cache and metadata erased and formatted ext4 (GPT types), nothing else touched"

  fb_ok erase userdata
  fbw format userdata >"$work/fb.out" 2>&1 || die "fastboot format: $(cat "$work/fb.out")"
  is_whole_ext4 "$work/board.img" userdata || die "userdata after erase + format"
  stop_daemon
  pass "fastboot format after an erase"

  # --partition has no GPT: --partition-type says what the partition is for.
  truncate -s 64M "$work/data.img"
  start_daemon --partition "data=$work/data.img" --partition-type data=ext4
  fb_ok erase data
  fbw format data >"$work/fb.out" 2>&1 || die "format with --partition-type: $(cat "$work/fb.out")"
  [ "$(blkid -o value -s TYPE "$work/data.img")" = ext4 ] && e2fsck -fn "$work/data.img" >/dev/null 2>&1 ||
    die "data is not a clean ext4 after format"
  stop_daemon
  start_daemon --partition "data=$work/data.img"
  fb_ok erase data
  getvar_is partition-type:data raw || die "erased data without a type"
  stop_daemon
  pass "--partition-type data=ext4: format works on an erased --partition; without it the type is raw"
}

log_checks() {
  truncate -s 16M "$work/log.img"
  head -c 3M /dev/urandom >"$work/log.raw"
  start_daemon --partition "data=$work/log.img"
  fb_ok flash data "$work/log.raw"
  fb_ok erase data
  stop_daemon
  grep -qE "^serve: flash 'data': raw image, 3\.0 MiB in [0-9.]+ s, [0-9.]+ [KMG]?i?B/s$" "$work/daemon.log" ||
    die "no flash line without -v: $(cat "$work/daemon.log")"
  grep -qE "^serve: erase 'data': 16\.0 MiB in [0-9.]+ s, " "$work/daemon.log" || die "no erase line: $(cat "$work/daemon.log")"
  start_daemon --partition "data=$work/log.img" -v
  fb_ok flash data "$work/log.raw"
  stop_daemon
  grep -v "^serve: [0-9]*\.[0-9]\{3\}: " "$work/daemon.log" >"$work/unstamped" || true
  [ ! -s "$work/unstamped" ] || die "-v lines without a timestamp: $(head -5 "$work/unstamped")"
  grep -qE "^serve: [0-9.]+: flash 'data': raw image" "$work/daemon.log" || die "-v: no flash line"
  pass "one log line per flash and erase without -v; every -v line stamped"
}

# misc_block DISK: "suffix priority_a tries_a ok_a priority_b tries_b ok_b"
# from the bootloader_control at byte 2048 of misc, decoded here from AOSP's
# layout (not by flashpipe's code); fails on a wrong magic or CRC.
misc_block() {
  python3 - "$1" "$(board_off misc)" <<'PY'
import struct, sys, zlib
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2]) + 2048)
    b = f.read(32)
magic, = struct.unpack_from("<I", b, 4)
crc, = struct.unpack_from("<I", b, 28)
if magic != 0x42414342 or crc != zlib.crc32(b[:28]) or b[8] != 1 or b[9] & 7 != 2:
    sys.exit("bad block: " + b.hex())
out = [b[:4].rstrip(b"\0").decode()]
for i in (0, 1):
    x = b[12 + 2 * i]
    out += [str(x & 15), str((x >> 4) & 7), str(x >> 7)]
print(" ".join(out))
PY
}
# misc_set DISK SLOT BYTE: what a bootloader does after a failed boot (the
# slot's metadata byte set, CRC redone), written beside the daemon.
misc_set() {
  python3 - "$1" "$(board_off misc)" "$2" "$3" <<'PY'
import os, struct, sys, zlib
at = int(sys.argv[2]) + 2048
with open(sys.argv[1], "r+b") as f:
    f.seek(at)
    b = bytearray(f.read(32))
    b[12 + 2 * "ab".index(sys.argv[3])] = int(sys.argv[4], 0)
    struct.pack_into("<I", b, 28, zlib.crc32(bytes(b[:28])))
    f.seek(at)
    f.write(b)
    f.flush()
    os.fsync(f.fileno())
PY
}

slot_checks() {
  make_board "$work/slots.img"
  cp "$work/slots.img" "$work/slots.snap"
  local hook="env | grep '^FLASHPIPE_' | sort >'$work/hook.env'; echo \"hook saw \$1\""
  start_daemon --storage "$work/slots.img" --misc misc --serialno BOARD7 --on-set-active "$hook"
  fb_ok set_active b
  grep -q "(bootloader) hook saw b" "$work/fb.out" || die "set_active hook output: $(cat "$work/fb.out")"
  getvar_is current-slot b || die "current-slot after set_active b"
  [ "$(misc_block "$work/slots.img")" = "_b 7 7 1 15 6 0" ] || die "misc after set_active b: $(misc_block "$work/slots.img")"
  for want in FLASHPIPE_HOOK=set-active FLASHPIPE_SLOT=b FLASHPIPE_SLOT_SUFFIX=_b FLASHPIPE_PREVIOUS_SLOT=a \
      FLASHPIPE_PARTITION=misc "FLASHPIPE_PARTITION_PATH=$work/slots.img" \
      "FLASHPIPE_PARTITION_OFFSET=$(board_off misc)" "FLASHPIPE_PARTITION_SIZE=$(board_size misc)" \
      FLASHPIPE_SERIALNO=BOARD7 FLASHPIPE_LOCKED=0 FLASHPIPE_CRITICAL_LOCKED=1; do
    grep -qxF "$want" "$work/hook.env" || die "hook environment lacks $want: $(cat "$work/hook.env")"
  done
  # Misc outside the 32-byte block, and every other partition, untouched.
  cmp <(board_part "$work/slots.img" misc | head -c 2048) <(board_part "$work/slots.snap" misc | head -c 2048) ||
    die "set_active changed misc before the block"
  cmp <(board_part "$work/slots.img" misc | tail -c +2081) <(board_part "$work/slots.snap" misc | tail -c +2081) ||
    die "set_active changed misc after the block"
  cmp <(board_part "$work/slots.img" userdata) <(board_part "$work/slots.snap" userdata) || die "set_active touched userdata"
  pass "set_active b: misc holds AOSP's bootloader_control for b, the hook got its environment"

  # The bootloader ran out of tries on b (priority 15, 0 tries, not successful): a again.
  misc_set "$work/slots.img" b 0x0f
  getvar_is current-slot a || die "current-slot does not follow misc: $(fb getvar current-slot 2>&1)"
  getvar_is slot-unbootable:b yes || die "slot-unbootable:b"
  getvar_is slot-successful:a yes || die "slot-successful:a"
  getvar_is slot-retry-count:b 0 || die "slot-retry-count:b"
  fb getvar all >"$work/fb.out" 2>&1 || true
  grep -q "(bootloader) slot-retry-count:a:7" "$work/fb.out" || die "getvar all: $(cat "$work/fb.out")"
  fb_ok set_active b
  [ "$(misc_block "$work/slots.img")" = "_b 7 7 1 15 6 0" ] || die "misc after set_active b again"
  grep -qxF FLASHPIPE_PREVIOUS_SLOT=a "$work/hook.env" || die "previous slot: $(cat "$work/hook.env")"
  stop_daemon
  pass "current-slot and slot-unbootable/-successful/-retry-count read back what the bootloader left in misc"

  # boot: refused with what to do, or handed to --on-boot.
  { printf 'ANDROID!'; head -c 300000 /dev/urandom; } >"$work/boot.img"
  start_daemon --storage "$work/slots.img"
  fb boot "$work/boot.img" >"$work/fb.out" 2>&1 && die "boot without --on-boot succeeded"
  grep -q "(bootloader) to run an image: fastboot flash boot IMAGE" "$work/fb.out" &&
    grep -q "boot: not supported: flash boot, then reboot" "$work/fb.out" || die "boot refusal says: $(cat "$work/fb.out")"
  stop_daemon
  start_daemon --storage "$work/slots.img" --on-boot "cp \"\$1\" '$work/booted'; echo \"\$1\" >'$work/booted.path'"
  fb_ok boot "$work/boot.img"
  for _ in $(seq 50); do [ -s "$work/booted.path" ] && break; sleep 0.1; done
  cmp "$work/booted" "$work/boot.img" || die "the boot hook did not get the image"
  sleep 0.2
  [ ! -e "$(cat "$work/booted.path")" ] || die "boot image left in $(cat "$work/booted.path")"
  stop_daemon
  pass "fastboot boot: refused with what to do; with --on-boot the hook gets the image, removed after"

  local rc=0 out
  out=$("$FLASHPIPE" serve --storage "$work/slots.img" --misc nosuch --state "$work/m.state" --tcp 0 2>&1) || rc=$?
  [ "$rc" != 0 ] && grep -q "\-\-misc 'nosuch': no such partition" <<<"$out" || die "--misc nosuch: $rc $out"
  pass "--misc must name a partition"
}

# A board with 512 MiB: idle, the daemon does not hold max-download-size
# (256M by default) unless told to (--prefault).
memory_checks() {
  truncate -s 16M "$work/mem.img"
  start_daemon --partition "data=$work/mem.img"
  sleep 1
  local rss
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon_pid/status")
  [ "$rss" -lt 65536 ] || die "idle RSS ${rss} KiB with the default 256M buffer"
  head -c 4M /dev/urandom >"$work/mem.raw"
  fb_ok flash data "$work/mem.raw"
  cmp -n 4194304 "$work/mem.raw" "$work/mem.img" || die "the 4 MiB flash did not land"
  # The download's pages are faulted in ahead of it, never past its size.
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon_pid/status")
  [ "$rss" -lt 65536 ] || die "RSS ${rss} KiB after a 4 MiB flash: prefaulted past the download"
  stop_daemon
  start_daemon --partition "data=$work/mem.img" --prefault
  for _ in $(seq 100); do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon_pid/status")
    [ "$rss" -ge 262144 ] && break
    sleep 0.1
  done
  [ "$rss" -ge 262144 ] || die "--prefault: RSS ${rss} KiB, not the 256M buffer"
  stop_daemon
  pass "idle RSS under 64 MiB by default, also after a 4 MiB flash (was ${rss} KiB with --prefault)"
}

cli_checks
format_checks
slot_checks
log_checks
memory_checks
echo "serve_board_test: all passed"
