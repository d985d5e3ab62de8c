#!/usr/bin/env bash
# Kill soak for `flashpipe serve`: 50 runs in which the real AOSP client
# (29.0.6) changes the slot and flashes a raw or a sparse image of a few MiB
# into a partition of a file or of a loop device (direct I/O), and the daemon
# is killed with SIGKILL at a random point: before, during or after the
# download, during the write, or around the state-file saves of set_active.
# After every kill:
#   - the state file is absent (only if it was before), the old one, or a
#     whole and valid new one;
#   - each byte of the flashed partition is the old byte or the image's byte
#     (old beyond the image's end and in DONT_CARE ranges);
#   - every byte outside that partition (guards, the other slot) is unchanged.
# Bounded: no new run starts after 150 s.
set -euo pipefail

FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
for tool in fastboot img2simg python3 losetup setsid; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not installed"; exit 1; }
done

RUNS=${RUNS:-50}
work=$(mktemp -d)
daemon_pid=""
client_pgid=""
loopdev=""
cleanup() {
  [ -n "$client_pgid" ] && kill_client
  if [ -n "$daemon_pid" ]; then kill -9 "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  [ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; [ -f "$work/daemon.log" ] && tail -5 "$work/daemon.log"; exit 1; }

# Backings of 12 MiB of random bytes; slots data_a at 2 MiB, data_b at
# 6 MiB, 4 MiB each; the first and last 2 MiB are guards.
PART_OFF=$((2 << 20)); PART_SIZE=$((4 << 20))
head -c 12M /dev/urandom >"$work/file.img"
head -c 12M /dev/urandom >"$work/loop.img"
loopdev=$(losetup --direct-io=on -f --show "$work/loop.img") || die "no loop device (the soak needs one; run as root)"

# A raw image of 3 MiB + 1234 bytes and a sparse one (random, zero and
# fill megabytes: RAW and FILL chunks), both below max-download-size.
head -c $((3 * 1048576 + 1234)) /dev/urandom >"$work/raw.img"
python3 - "$work/mixed.raw" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(4):
        f.write(os.urandom(1 << 20) if i % 3 == 0 else (b"\0" * (1 << 20) if i % 3 == 1 else b"\x5a\xa5\x0f\xf0" * (1 << 18)))
PY
img2simg "$work/mixed.raw" "$work/sparse.img"

cat >"$work/check.py" <<'PY'
"""check.py SNAPSHOT NOW PART_OFF PART_SIZE IMAGE STATE OLD_STATE"""
import re, struct, sys

snap_path, now_path, off, size, image, state, old_state = sys.argv[1:8]
off, size = int(off), int(size)

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

# State file: absent only if it was, else old or whole and valid.
def read(p):
    try:
        return open(p, "rb").read()
    except FileNotFoundError:
        return None
st, old = read(state), read(old_state)
valid = re.fullmatch(rb"# flashpipe serve state\nslot=[ab]\nlocked=[01]\ncritical_locked=[01]\n", st or b"")
if st is None and old is not None:
    fail("state file vanished")
if st is not None and st != old and not valid:
    fail("state file neither old nor whole and valid: %r" % st)

snap = open(snap_path, "rb").read()
with open(now_path, "rb") as f:
    now = f.read(len(snap))
if now[:off] != snap[:off] or now[off + size:] != snap[off + size:]:
    i = next(i for i in range(len(snap)) if (i < off or i >= off + size) and now[i] != snap[i])
    fail("byte %d outside the flashed partition changed" % i)

# The partition as the image would leave it: (start, bytes) pieces; the rest old.
img = open(image, "rb").read()
new = bytearray(snap[off:off + size])
if img[:4] == b"\x3a\xff\x26\xed":
    hdr_sz, chunk_hdr_sz, blk_sz, _, total_chunks = struct.unpack_from("<HHIII", img, 8)
    pos, out = hdr_sz, 0
    for _ in range(total_chunks):
        ctype, _, blocks, total = struct.unpack_from("<HHII", img, pos)
        data = img[pos + chunk_hdr_sz:pos + total]
        n = blocks * blk_sz
        if ctype == 0xCAC1:
            new[out:out + n] = data
        elif ctype == 0xCAC2:
            new[out:out + n] = data[:4] * (n // 4)
        pos += total
        out += n
else:
    new[:len(img)] = img
part = now[off:off + size]
old_part = snap[off:off + size]
B = 4096
for b in range(0, size, B):
    p, o, w = part[b:b + B], old_part[b:b + B], new[b:b + B]
    if p == o or p == w:
        continue
    for i in range(len(p)):
        if p[i] != o[i] and p[i] != w[i]:
            fail("partition byte %d is neither old nor new" % (b + i))
# What the kill left: the old content, the new one, or a mix (mid-write).
print("old" if part == old_part else "new" if part == bytes(new) else "mixed")
PY

# Whether a process of group $1 still runs (zombies do not count: an
# orphan may wait for a reaper that a container's init is not).
group_alive() { ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ {f = 1} END {exit !f}'; }

# Kills the client's group, also when the kill comes before its setsid().
kill_client() {
  kill -9 -- "-$client_pgid" 2>/dev/null || true
  kill -9 "$client_pgid" 2>/dev/null || true
  wait "$client_pgid" 2>/dev/null || true
  for _ in $(seq 100); do
    group_alive "$client_pgid" || break
    kill -9 -- "-$client_pgid" 2>/dev/null || true
    sleep 0.01
  done
  client_pgid=""
}

# The backing's bytes as the device holds them (the loop device read with
# O_DIRECT, past any page cache).
read_backing() {
  if [ "$backing" = "$loopdev" ]; then
    dd if="$backing" of="$1" bs=1M count=12 iflag=direct status=none
  else
    cp "$backing" "$1"
  fi
}

# Waits (up to 2 s) for the daemon's listening line; sets PORT.
start_daemon() {
  rm -f "$work/daemon.out" "$work/daemon.log"  # no line of the last run may be read
  "$FLASHPIPE" serve "$@" --tcp 127.0.0.1:0 --state "$work/state" --no-prefault --max-download-size 8M -v \
    >"$work/daemon.out" 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do
    PORT=$(sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/daemon.out" 2>/dev/null || true)
    [ -n "$PORT" ] && return 0
    kill -0 "$daemon_pid" 2>/dev/null || die "daemon did not start: $(cat "$work/daemon.log")"
    sleep 0.01
  done
  die "daemon not listening"
}

start=$SECONDS
runs=0
declare -A left=([old]=0 [new]=0 [mixed]=0)
for i in $(seq "$RUNS"); do
  [ $((SECONDS - start)) -lt 150 ] || break
  if [ $((i % 2)) -eq 0 ]; then backing=$loopdev; else backing=$work/file.img; fi
  if [ $(((i / 2) % 2)) -eq 0 ]; then image=$work/raw.img; else image=$work/sparse.img; fi
  slot=$([ $((RANDOM % 2)) -eq 0 ] && echo a || echo b)
  other=$([ "$slot" = a ] && echo b || echo a)
  off=$([ "$slot" = a ] && echo $PART_OFF || echo $((PART_OFF + PART_SIZE)))
  read_backing "$work/snap"
  rm -f "$work/state.old"; [ -f "$work/state" ] && cp "$work/state" "$work/state.old"

  start_daemon --partition "data_a=$backing:$PART_OFF:$PART_SIZE" \
    --partition "data_b=$backing:$((PART_OFF + PART_SIZE)):$PART_SIZE"
  # A client of a dead daemon waits forever; --foreground keeps it in the group.
  fbs="timeout --foreground 20 fastboot -s tcp:127.0.0.1:$PORT"
  setsid bash -c "$fbs set_active $slot; $fbs flash data_$slot '$image'; $fbs set_active $other" \
    >"$work/client.out" 2>&1 &
  client_pgid=$!
  # Where to kill: at a random time, or a random moment after the download
  # started, or after it completed (in the write).
  case $((RANDOM % 3)) in
    0) sleep "0.$(printf '%03d' $((RANDOM % 150)))" ;;
    *)
      want=$([ $((RANDOM % 2)) -eq 0 ] && echo "download of" || echo "download complete")
      for _ in $(seq 200); do grep -q "$want" "$work/daemon.log" && break; sleep 0.005; done
      jitter=15; [ "$want" = "download of" ] || jitter=8  # ms; writes take a few ms
      sleep "0.0$(printf '%02d' $((RANDOM % jitter)))"
      ;;
  esac
  kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""
  kill_client

  read_backing "$work/now"
  python3 "$work/check.py" "$work/snap" "$work/now" "$off" "$PART_SIZE" "$image" "$work/state" "$work/state.old" \
    >"$work/check.out" || die "run $i ($(basename "$image") into data_$slot of $backing): $(cat "$work/check.out")"
  runs=$((runs + 1))
  outcome=$(cat "$work/check.out"); left[$outcome]=$((left[$outcome] + 1))
done
[ "$runs" -ge 20 ] || die "only $runs runs in the time bound"
leftovers=$(find "$work" -maxdepth 1 -name '.state.flashpipe-*' | wc -l)
[ "$leftovers" -le 1 ] || die "$leftovers temporary state files left behind (a save cleans the dead ones)"
echo "ok: $runs runs in $((SECONDS - start)) s; partition left old ${left[old]}, new ${left[new]}, mixed (killed mid-write) ${left[mixed]} times"
echo "PASS"
