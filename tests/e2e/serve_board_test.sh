#!/usr/bin/env bash
# flashpipe serve on a real board (issue 11), end to end with the real AOSP
# client 29.0.6: option checks before anything is touched (exit 2), bare
# ports, TCP kept with --udp, `fastboot -w` and `fastboot format` through a
# directory that gives the Debian client its mke2fs (contrib/fastboot-mke2fs),
# partition types from the GPT type and from --partition-type, the state a
# lock command reports, and the log line of each flash and erase.
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

cli_checks
format_checks
log_checks
echo "serve_board_test: all passed"
