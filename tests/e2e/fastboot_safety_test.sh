#!/usr/bin/env bash
# flashpipe serve fails closed (issue 14), end to end with the real AOSP
# client 29.0.6 and the raw wire helper: the state file (planted symlinks,
# shared directories, bad content means locked, --initial-lock, --no-unlock),
# every mutating command refused while locked, a download owned by its
# session (two UDP clients, TCP after UDP), bounded oem hooks, the session
# and download-rate deadlines (TCP and UDP), reboot targets, a write-behind
# failure on a full tmpfs, unaligned --partition ranges, escaped GPT names,
# the listening address.
TRANSPORT=tcp
source "$(dirname "$0")/fastboot_lib.sh"

mnt=""
loop2=""
safety_cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  daemon_pid=""
  if [ -n "$loop2" ]; then losetup -d "$loop2" 2>/dev/null || true; fi
  if [ -n "$mnt" ]; then umount "$mnt" 2>/dev/null || true; fi
  cleanup
}
trap safety_cleanup EXIT
pass() { echo "ok: $* (${SECONDS}s)"; }

# 32 MiB of zeros: boot_a, boot_b, data.
PARTS=()
make_parts() {
  rm -f "$work/p.img"; truncate -s 32M "$work/p.img"
  PARTS=(--partition "boot_a=$work/p.img:0:8M" --partition "boot_b=$work/p.img:8M:8M"
         --partition "data=$work/p.img:16M:16M" --no-prefault --max-download-size 16M)
}
data_is_zero() { cmp -s <(dd if="$work/p.img" bs=1M skip=16 count=16 status=none) <(head -c 16M /dev/zero); }
# fastboot getvar VAR answers VALUE (the output is read whole: grep -q
# would close the pipe under fastboot).
getvar_is() { local out; out=$(fb getvar "$1" 2>&1 || true); grep -q "$1: $2" <<<"$out"; }
unlocked_is() { getvar_is unlocked "$1"; }

# `serve ARGS` must refuse to start, saying $1.
refuses_start() {
  local want=$1; shift
  local out rc=0
  out=$(timeout 10 "$FLASHPIPE" serve "$@" --tcp 127.0.0.1:0 2>&1 </dev/null) || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || die "serve $* started (rc $rc): $out"
  grep -qF -- "$want" <<<"$out" || die "serve $* refused without saying '$want': $out"
}

state_checks() {
  TRANSPORT=tcp; make_parts
  mkdir -p "$work/st"; STATE="$work/st/state"
  # The temp file used to be STATE.tmp opened O_CREAT|O_TRUNC: a symlink
  # planted there made root overwrite its target.
  echo precious >"$work/victim"
  ln -s "$work/victim" "$STATE.tmp"
  start_daemon "${PARTS[@]}"
  fb_ok flashing lock
  stop_daemon
  [ "$(cat "$work/victim")" = precious ] || die "saving the state wrote through a planted symlink"
  grep -qx "locked=1" "$STATE" || die "lock not saved: $(cat "$STATE")"
  pass "state file: a symlink planted at the old temp name is not followed"

  local why
  for why in empty nolock corrupt; do
    case $why in
      empty) : >"$STATE" ;;
      nolock) printf 'slot=a\ncritical_locked=0\n' >"$STATE" ;;
      corrupt) printf 'locked=0\033[2J\nserve: forged line\n' >"$STATE" ;;
    esac
    start_daemon "${PARTS[@]}"
    unlocked_is no || die "state file '$why' did not start locked"
    if fb flash data "$work/small" >"$work/fb.out" 2>&1; then die "flash accepted with a '$why' state file"; fi
    grep -q "starting locked" "$work/daemon.log" || die "log does not say why it is locked: $(cat "$work/daemon.log")"
    stop_daemon
  done
  data_is_zero || die "a locked device was written"
  grep -qF 'locked=0\x1b[2J' "$work/daemon.log" || die "state line not escaped: $(cat "$work/daemon.log")"
  if grep -q $'\033' "$work/daemon.log" || grep -q "^serve: forged" "$work/daemon.log"; then
    die "raw control characters from the state file reached the log"
  fi
  pass "state file empty, without locked=, or corrupt: starts locked, the log says why (escaped)"

  printf 'slot=a\nlocked=0\ncritical_locked=0\n' >"$STATE"
  start_daemon "${PARTS[@]}" --no-unlock
  unlocked_is no || die "--no-unlock with locked=0 did not start locked"
  if fb flashing unlock >"$work/fb.out" 2>&1; then die "--no-unlock allowed an unlock"; fi
  stop_daemon
  pass "--no-unlock always starts locked"

  rm -f "$STATE"
  start_daemon "${PARTS[@]}"
  unlocked_is yes || die "first start not unlocked by default"
  stop_daemon
  grep -qx "locked=0" "$STATE" || die "first start did not write the state file"
  start_daemon "${PARTS[@]}" --initial-lock locked
  unlocked_is yes || die "--initial-lock overrode an existing state file"
  stop_daemon
  rm -f "$STATE"
  start_daemon "${PARTS[@]}" --initial-lock locked
  unlocked_is no || die "--initial-lock locked: first start not locked"
  stop_daemon
  pass "first start follows --initial-lock (default unlocked) and writes the state file"

  mkdir -p "$work/shared"; chmod 1777 "$work/shared"
  ln -s "$work/victim" "$work/shared/state"
  refuses_start "symbolic link" "${PARTS[@]}" --state "$work/shared/state"
  chmod 0777 "$work/shared"; rm "$work/shared/state"
  refuses_start "no sticky bit" "${PARTS[@]}" --state "$work/shared/state"
  [ "$(cat "$work/victim")" = precious ] || die "victim changed"
  unset STATE
  pass "state file: a symlink in a sticky shared directory, or a world-writable directory, is refused"
}

# Locked means locked for everything that changes the device (real client).
locked_checks() {
  TRANSPORT=tcp; make_parts; rm -f "$work/state"
  start_daemon "${PARTS[@]}" --oem "touch=touch $work/marker" --oem-safe "hello=echo hello from oem"
  fb_ok flashing lock
  local cmd
  for cmd in "set_active b" "flashing unlock_critical" "oem touch" "erase data" "stage $work/small" \
             "flash data $work/small"; do
    # shellcheck disable=SC2086
    if fb $cmd >"$work/fb.out" 2>&1; then die "'fastboot $cmd' succeeded while locked"; fi
    grep -q "locked" "$work/fb.out" || die "'fastboot $cmd' refused without saying locked: $(cat "$work/fb.out")"
  done
  [ ! -e "$work/marker" ] || die "an oem command ran while locked"
  getvar_is current-slot a || die "set_active changed the slot while locked"
  fb_ok oem hello
  grep -q "hello from oem" "$work/fb.out" || die "oem --oem-safe: $(cat "$work/fb.out")"
  data_is_zero || die "a locked device was written"
  fb_ok flashing unlock
  fb_ok set_active b
  fb_ok oem touch
  [ -e "$work/marker" ] || die "oem touch did not run once unlocked"
  stop_daemon
  pass "locked: set_active, unlock_critical, oem (unless --oem-safe), erase, download, flash FAIL"
}

# A download belongs to its session: another UDP client, or a TCP client
# after a UDP one, cannot flash it.
ownership_checks() {
  TRANSPORT=udp; make_parts; rm -f "$work/state"
  start_daemon "${PARTS[@]}" --tcp 127.0.0.1:0
  local tport; tport=$(listening_port tcp)
  $WIRE udp-download 127.0.0.1 "$PORT" 65536 >"$work/w.out" || die "udp download: $(cat "$work/w.out")"
  $WIRE udp-command 127.0.0.1 "$PORT" flash:data "FAILno image downloaded" >"$work/w.out" ||
    die "a second udp client flashed the first one's download: $(cat "$work/w.out")"
  $WIRE udp-download 127.0.0.1 "$PORT" 65536 >"$work/w.out" || die "udp download: $(cat "$work/w.out")"
  $WIRE tcp-command 127.0.0.1 "$tport" flash:data "FAILno image downloaded" >"$work/w.out" ||
    die "a tcp client flashed a udp client's download: $(cat "$work/w.out")"
  $WIRE tcp-download 127.0.0.1 "$tport" 65536 >"$work/w.out" || die "tcp download: $(cat "$work/w.out")"
  $WIRE tcp-command 127.0.0.1 "$tport" flash:data "FAILno image downloaded" >"$work/w.out" ||
    die "a second tcp client flashed the first one's download: $(cat "$work/w.out")"
  stop_daemon
  data_is_zero || die "another session's download was written"
  pass "a new session (udp after udp, tcp after udp, tcp after tcp) starts without a download"
}

proc_gone() {  # pid: gone or a zombie, within 3 s
  for _ in $(seq 30); do
    local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
    [ -z "$st" ] || [ "$st" = Z ] && return 0
    sleep 0.1
  done
  return 1
}

oem_checks() {
  TRANSPORT=tcp; make_parts; rm -f "$work/state"
  local chatty='i=0; while [ $i -lt 200 ]; do printf "%099d\n" $i; i=$((i+1)); done'
  start_daemon "${PARTS[@]}" --oem "chatty=$chatty" --oem "hang=sleep 100 & echo \$! >$work/hang.pid; wait" \
    --oem-timeout 2
  fb_ok oem chatty
  grep -q "oem chatty: 16000 more bytes of output dropped" "$work/fb.out" || die "oem output not capped: $(tail -3 "$work/fb.out")"
  local lines; lines=$(grep -c "(bootloader)" "$work/fb.out")
  [ "$lines" -le 81 ] || die "oem sent $lines INFO lines"
  local t0=$SECONDS
  if fb oem hang >"$work/fb.out" 2>&1; then die "oem hang succeeded"; fi
  grep -q "killed after 2 s" "$work/fb.out" || die "oem timeout: $(cat "$work/fb.out")"
  [ $((SECONDS - t0)) -le 10 ] || die "oem timeout took $((SECONDS - t0)) s"
  proc_gone "$(cat "$work/hang.pid")" || die "the hook's background process outlived its timeout"
  stop_daemon
  pass "oem: output capped at 4 KiB (the rest counted), --oem-timeout kills the whole process group"

  rm -f "$work/hang.pid"
  start_daemon "${PARTS[@]}" --oem "hang=sleep 100 & echo \$! >$work/hang.pid; wait" --oem-timeout 60
  fastboot -s "tcp:127.0.0.1:$PORT" oem hang >/dev/null 2>&1 & local fpid=$!  # killed below
  bg_pids+=("$fpid")
  for _ in $(seq 50); do [ -s "$work/hang.pid" ] && break; sleep 0.1; done
  [ -s "$work/hang.pid" ] || die "oem hang did not start"
  kill -9 "$fpid"; wait "$fpid" 2>/dev/null || true
  proc_gone "$(cat "$work/hang.pid")" || die "the hook kept running after its client was killed"
  getvar_is product flashpipe || die "daemon not serving after the oem client left"
  stop_daemon
  pass "oem: the hook is killed when its client goes away"
}

deadline_checks() {
  local t
  for t in tcp udp; do
    TRANSPORT=$t; make_parts; rm -f "$work/state"
    start_daemon "${PARTS[@]}" --min-download-rate 64K --download-rate-window 1
    $WIRE "$t-trickle" 127.0.0.1 "$PORT" 8 >"$work/w.out" || die "$t trickle: $(cat "$work/w.out")"
    grep -q "download too slow" "$work/daemon.log" || die "$t: no log line for the slow download: $(cat "$work/daemon.log")"
    [ "$t" = udp ] && sleep 0.3
    getvar_is product flashpipe || die "$t: device not free after a slow download"
    stop_daemon
    pass "$t: a download below --min-download-rate FAILs and ends the session"

    start_daemon "${PARTS[@]}" --session-timeout 2 --min-download-rate 0
    rm -f "$work/hold.out"
    $WIRE "$t-hold" 127.0.0.1 "$PORT" 6 >"$work/hold.out" & local hold=$!
    for _ in $(seq 50); do grep -q "ok:" "$work/hold.out" && break; sleep 0.1; done
    sleep 2.5
    out=$(timeout 20 fastboot -s "$t:127.0.0.1:$PORT" getvar product 2>&1 || true)
    grep -q "product: flashpipe" <<<"$out" || die "$t: a session held past --session-timeout still blocks: $out"
    grep -q "session time limit of 2 s reached" "$work/daemon.log" || die "$t: no log line for the session limit"
    kill "$hold" 2>/dev/null || true; wait "$hold" 2>/dev/null || true
    stop_daemon
    pass "$t: a session held past --session-timeout ends; the next client is served"
  done
}

reboot_checks() {
  TRANSPORT=tcp; make_parts; rm -f "$work/state"
  start_daemon "${PARTS[@]}" --on-reboot "echo \$1 >>$work/reboots" --udp 127.0.0.1:0
  local uport; uport=$(listening_port udp)
  $WIRE tcp-command 127.0.0.1 "$PORT" "reboot:evil" "FAILreboot: unknown target 'evil'" >/dev/null || die "reboot:evil accepted"
  $WIRE tcp-command 127.0.0.1 "$PORT" "reboot-bootloader:x" "FAILreboot-bootloader takes no argument" >/dev/null ||
    die "reboot-bootloader:x accepted"
  $WIRE udp-command 127.0.0.1 "$uport" "reboot:edl" "FAILreboot: unknown target 'edl'" >/dev/null || die "udp reboot:edl accepted"
  $WIRE tcp-command 127.0.0.1 "$PORT" "reboot:recovery" "OKAY" >/dev/null || die "reboot:recovery refused"
  sleep 0.3
  [ "$(cat "$work/reboots")" = recovery ] || die "reboot hook ran with: $(cat "$work/reboots")"
  stop_daemon
  pass "reboot:TARGET accepts bootloader, fastboot, recovery only; the hook sees only those"
}

write_behind_failure_check() {
  TRANSPORT=tcp; rm -f "$work/state"
  mnt="$work/tiny"; mkdir -p "$mnt"
  mount -t tmpfs -o size=4M tmpfs "$mnt" || { mnt=""; die "cannot mount a 4 MiB tmpfs for the write-behind failure check (needs root)"; }
  truncate -s 32M "$mnt/p.img"
  head -c 12M /dev/urandom >"$work/big"
  start_daemon --partition "data=$mnt/p.img" --no-prefault --max-download-size 16M --write-behind
  fb_ok flash data "$work/big"
  if fb getvar version >"$work/fb.out" 2>&1; then :; fi
  grep -q "write-behind to 'data' failed (No space left on device)" "$work/fb.out" ||
    die "the next command's FAIL does not name the partition and the error: $(cat "$work/fb.out")"
  grep -q "write failed" "$work/daemon.log" || die "log does not say 'write failed': $(cat "$work/daemon.log")"
  stop_daemon
  umount "$mnt"; mnt=""
  pass "--write-behind on a full tmpfs: log says 'write failed', the next FAIL names partition and error"
}

alignment_checks() {
  make_parts
  refuses_start "multiples of the sector size" --partition "x=$work/p.img:1000:8192" --state "$work/a.state"
  refuses_start "multiples of the sector size" --partition "x=$work/p.img:4096:1000" --state "$work/a.state"
  truncate -s 8M "$work/lo.img"
  if loop2=$(losetup --sector-size 4096 -f --show "$work/lo.img" 2>/dev/null); then
    refuses_start "multiples of the logical block size of $loop2 (4096 bytes)" --partition "x=$loop2:512:4096" \
      --state "$work/a.state"
    TRANSPORT=tcp; STATE="$work/a.state"
    start_daemon --partition "x=$loop2:4096:8192" --no-prefault --max-download-size 1M
    stop_daemon; unset STATE
    losetup -d "$loop2"; loop2=""
    pass "--partition: ranges off the 512-byte sector (files) or the 4096-byte logical block (loop) refused"
  else
    pass "--partition: ranges off the 512-byte sector of a file refused (no loop device for the 4K case)"
  fi
}

# A GPT whose entry names carry a newline and an escape sequence: the
# warning about the unusable name is escaped, no forged log line appears.
gpt_name_check() {
  truncate -s 4M "$work/g.img"
  sgdisk -a 1 -n 1:2048:4095 -c 1:good -n 2:4096:6143 -c 2:bad "$work/g.img" >/dev/null
  python3 - "$work/g.img" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
d = bytearray(open(path, "rb").read())
name = "a\nserve: forged\x1b[2J".encode("utf-16-le").ljust(72, b"\0")
for hdr_lba in (1, len(d) // 512 - 1):
    h = hdr_lba * 512
    entries_lba, count, size = struct.unpack_from("<QII", d, h + 72)
    e = entries_lba * 512
    d[e + size + 56:e + size + 128] = name  # entry 2
    struct.pack_into("<I", d, h + 88, zlib.crc32(bytes(d[e:e + count * size])))
    struct.pack_into("<I", d, h + 16, 0)
    struct.pack_into("<I", d, h + 16, zlib.crc32(bytes(d[h:h + 92])))
open(path, "wb").write(d)
PY
  TRANSPORT=tcp; STATE="$work/g.state"
  start_daemon --storage "$work/g.img" --no-prefault --max-download-size 1M
  stop_daemon; unset STATE
  grep -qF "name 'a\\x0aserve: forged\\x1b[2J' not usable" "$work/daemon.log" ||
    die "GPT name not escaped in the warning: $(cat "$work/daemon.log")"
  if grep -q $'\033' "$work/daemon.log" || grep -q "^serve: forged" "$work/daemon.log"; then
    die "control characters of a GPT name reached the log"
  fi
  pass "GPT names with control characters are escaped in the log"
}

listening_check() {
  make_parts; TRANSPORT=tcp
  start_daemon "${PARTS[@]}" --udp 127.0.0.1:0
  grep -qE "^serve: listening on tcp 127\.0\.0\.1:[1-9][0-9]*$" "$work/daemon.out" || die "tcp line: $(cat "$work/daemon.out")"
  grep -qE "^serve: listening on udp 127\.0\.0\.1:[1-9][0-9]*$" "$work/daemon.out" || die "udp line: $(cat "$work/daemon.out")"
  stop_daemon
  pass "the listening lines give the address and the port the kernel picked"
}

head -c 64K /dev/urandom >"$work/small"
# Arguments select checks (e.g. "oem_checks"); none runs them all.
all=(listening_check state_checks locked_checks ownership_checks oem_checks reboot_checks deadline_checks
     write_behind_failure_check alignment_checks gpt_name_check)
for check in "${@:-${all[@]}}"; do "$check"; done
echo PASS
