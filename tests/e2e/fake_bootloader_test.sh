#!/usr/bin/env bash
# The host side against a device flashpipe did not write: fake_bootloader.py,
# a U-Boot-like fastboot device (UDP with 1024-byte packets, TCP; no `oem
# digest`, no fetch/upload; a stray INFO line inside the command after each
# flash; raw images written in whole 512-byte blocks from its download
# buffer), on loopback. Issue 21's Tests section.
#   - Every image kind (raw of odd size, raw of whole 4 KiB blocks, sparse
#     with DONT_CARE from img2simg + simg2simg, sparse with FILL, a sparse
#     with a CRC32 chunk, a sparse and raws larger than max-download-size)
#     through the AOSP client 29.0.6, `flashpipe fastboot` and `flashpipe
#     flash`, over UDP and TCP; each partition compared with simg2img's
#     expansion (DONT_CARE blocks keep the partition's old bytes) or the raw
#     file, and the bytes past the image with the old ones.
#   - What the AOSP client really does, asserted as such: an odd-size raw
#     above max-download-size is cut into parts lacking their last DONT_CARE
#     (`write_sparse_skip_chunk: don't care size ... is not a multiple of the
#     block size 4096`); the device reads its stale buffer as the missing
#     chunk, answers `FAILUnknown chunk type`, the client exits 1 and
#     everything after part 1 is untouched. A raw image sent whole has its
#     last 512-byte block finished with the device's stale buffer bytes (no
#     client pads it).
#   - Issue 21's three failures, fixed, as checks:
#     `flash` waits for a device whose port is still closed; `flash --verify`
#     on a device without a digest writes every partition and reports them
#     written, not verified; a partition the device does not have is refused
#     before a byte is sent.
#   - Read-back: the device with --fetch (as fastbootd: fetch:, max-fetch-size)
#     is verified by reading every range back, over UDP and TCP, in fetches
#     no larger than its max-fetch-size; one that flips a byte after each
#     flash (--corrupt-byte) is a mismatch naming the partition, exit 1, the
#     partition still reported written.
# Every check runs (each in a subshell, its devices killed by pid file) and a
# summary says pass/FAIL per check; exit 1 if any check failed.
# FAKEBOOT_CHECKS="NAME..." runs only those checks (the names in the summary).
set -uo pipefail

FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DEVICE="python3 $SRC/tests/e2e/fake_bootloader.py"
for tool in fastboot img2simg simg2img simg2simg mkfs.ext4 python3 timeout; do
  command -v $tool >/dev/null || { echo "FAIL: $tool missing (scripts/setup.sh installs it)"; exit 1; }
done
[ -x "$FLASHPIPE" ] || { echo "FAIL: no flashpipe binary at $FLASHPIPE"; exit 1; }

work=$(mktemp -d)
cleanup() {
  local f
  for f in "$work"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 0.2
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }
note() { echo "note: $*"; }

MDS=8M                 # the device's download buffer: the larger images are cut into parts
BUFFER_FILL=b5         # its bytes before any download (fake_bootloader.py's default)

# --- Devices ----------------------------------------------------------------
# start_device NAME TRANSPORT ARGS...: a fake bootloader at a port the kernel
# picks; sets PORT. Its stderr (one line per command) is $work/NAME.log.
start_device() {
  local name=$1 transport=$2; shift 2
  rm -f "$work/$name.out" "$work/$name.log"
  $DEVICE --"$transport" 127.0.0.1:0 --pid-file "$work/$name.pid" --exit-after 600 "$@" \
    >"$work/$name.out" 2>"$work/$name.log" &
  local pid=$!
  for _ in $(seq 100); do
    PORT=$({ sed -n "s/^fakeboot: listening on $transport 127\.0\.0\.1:\([0-9]*\)\$/\1/p" "$work/$name.out" 2>/dev/null || true; } | head -1)
    [ -n "$PORT" ] && [ -f "$work/$name.pid" ] && return 0
    kill -0 $pid 2>/dev/null || fail "device $name did not start: $(cat "$work/$name.log")"
    sleep 0.1
  done
  fail "device $name not listening"
}
# stop_device NAME: SIGTERM; the device removes its pid file as it exits.
stop_device() {
  [ -f "$work/$1.pid" ] || return 0
  local pid; pid=$(cat "$work/$1.pid")
  kill "$pid" 2>/dev/null
  for _ in $(seq 50); do
    [ -f "$work/$1.pid" ] || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.1
  done
  fail "device $1 did not exit on SIGTERM"
}
# How many times the device NAME was sent COMMAND-PREFIX.
commands_seen() { grep -c "^fakeboot: cmd $2" "$work/$1.log"; }

# --- Images -----------------------------------------------------------------
img=$work/img
mkdir -p "$img"
# mixed FILE MIB [EXTRA]: MiB of random data, zeros and a 4-byte pattern in
# turn, then EXTRA random bytes.
mixed() {
  python3 - "$@" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2])):
        k = i % 4
        f.write(os.urandom(1 << 20) if k < 2 else (b"\0" * (1 << 20) if k == 2 else b"ABCD" * (1 << 18)))
    f.write(os.urandom(int(sys.argv[3]) if len(sys.argv) > 3 else 0))
PY
}
make_images() {
  head -c $((3 << 20 | 1234)) /dev/urandom >"$img/odd.raw"       # raw, odd size, below MDS
  mixed "$img/r4k.raw" 5                                          # raw, whole 4 KiB blocks
  mixed "$img/big.raw" 20                                         # raw above MDS: parts
  mixed "$img/oddbig.raw" 20 1234                                 # odd raw above MDS
  mixed "$img/fill.raw" 6; img2simg "$img/fill.raw" "$img/fill.simg"        # RAW + FILL chunks
  img2simg "$img/big.raw" "$img/bigsparse.simg"                   # a sparse above MDS
  # DONT_CARE: img2simg (Debian's, 29.x) writes zeros as FILL, never
  # DONT_CARE; simg2simg's parts of its output start with one.
  mkdir -p "$work/root/dir"
  head -c 5M /dev/urandom >"$work/root/dir/blob"
  seq 100000 >"$work/root/numbers"
  mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/ext4.img" 16M
  img2simg "$work/ext4.img" "$work/ext4.simg"
  simg2simg "$work/ext4.simg" "$work/ext4part.simg" $((2 << 20))
  cp "$work/ext4part.simg.1" "$img/dc.simg"
  make_crc_image "$img/crc.simg"
  local f
  for f in "$img"/*.simg; do simg2img "$f" "${f%.simg}.oracle" || fail "simg2img $f"; done
  python3 - "$img/dc.simg" "$img/crc.simg" <<'PY' || fail "test images lack their chunk kinds"
import struct, sys
def kinds(path):
    b = open(path, "rb").read()
    off, seen = struct.unpack_from("<H", b, 8)[0], set()
    for _ in range(struct.unpack_from("<I", b, 20)[0]):
        t, _, _, total = struct.unpack_from("<HHII", b, off)
        seen.add(t); off += total
    return seen
assert 0xCAC3 in kinds(sys.argv[1]), "dc.simg has no DONT_CARE"
assert {0xCAC1, 0xCAC2, 0xCAC3, 0xCAC4} <= kinds(sys.argv[2]), "crc.simg lacks a chunk kind"
PY
}
# A sparse image written here (no AOSP tool writes CRC32 chunks): RAW, FILL,
# DONT_CARE, RAW, CRC32 (of the blocks so far, DONT_CARE as zeros, as
# libsparse), FILL of zeros, a long DONT_CARE; 6 MiB.
make_crc_image() {
  python3 - "$1" <<'PY'
import os, struct, sys, zlib
B = 4096
chunks, out = [], b""
def raw(n):
    global out
    d = os.urandom(n * B); out += d
    chunks.append(struct.pack("<HHII", 0xCAC1, 0, n, 12 + len(d)) + d)
def fill(n, word):
    global out
    out += word * (n * B // 4)
    chunks.append(struct.pack("<HHII", 0xCAC2, 0, n, 16) + word)
def dont_care(n):
    global out
    out += b"\0" * (n * B)
    chunks.append(struct.pack("<HHII", 0xCAC3, 0, n, 12))
raw(64); fill(32, b"\xef\xbe\xad\xde"); dont_care(16); raw(8)
chunks.append(struct.pack("<HHII", 0xCAC4, 0, 0, 16) + struct.pack("<I", zlib.crc32(out)))
fill(16, b"\0\0\0\0"); dont_care(1536 - 136)
hdr = struct.pack("<IHHHHIIII", 0xED26FF3A, 1, 0, 28, 12, B, 1536, len(chunks), 0)
open(sys.argv[1], "wb").write(hdr + b"".join(chunks))
PY
}

# Images flashed in every run, in this order, as PARTITION:IMAGE:KIND. The
# odd raw comes first, so the device's buffer past it still holds 0xb5; the
# odd raw in parts second, so the AOSP client's first part (8 MiB) meets
# 0xb5 where its missing chunk should be (what the device then answers
# depends on what its buffer held before). Kinds: raw (sent whole), rawparts
# (above MDS), oddparts (odd size above MDS), sparse.
IMAGES=(p_odd:odd.raw:raw p_oddbig:oddbig.raw:oddparts p_4k:r4k.raw:raw p_dc:dc.simg:sparse
        p_fill:fill.simg:sparse p_crc:crc.simg:sparse p_bigsparse:bigsparse.simg:sparse
        p_big:big.raw:rawparts)
# Partitions (MiB), filled with noise: the old bytes.
declare -A PART_MIB=([p_odd]=4 [p_4k]=8 [p_dc]=24 [p_fill]=8 [p_crc]=8 [p_bigsparse]=24 [p_big]=24 [p_oddbig]=24)
head -c 24M /dev/urandom >"$work/noise"
# new_parts DIR: the partition files, and the device's NAME=FILE:SIZE arguments in PARTS.
new_parts() {
  mkdir -p "$1"; PARTS=()
  local p
  for p in "${!PART_MIB[@]}"; do
    head -c "${PART_MIB[$p]}M" "$work/noise" >"$1/$p"
    PARTS+=("$p=$1/$p:${PART_MIB[$p]}M")
  done
}

# check_part PARTFILE IMAGE KIND TAIL: the partition holds the image (raw:
# the file; sparse: simg2img's output, DONT_CARE blocks the old bytes) and
# the old bytes past it. TAIL says what the bytes from the image's end to the
# next BLOCK hold: buffer:512 (the device's stale 0xb5), zeros:4096, ...
# Prints the first difference and exits 1 on a mismatch.
check_part() {
  python3 - "$1" "$work/noise" "$2" "$3" "$4" "$BUFFER_FILL" <<'PY'
import struct, sys
part_path, noise_path, image, kind, tail, fill = sys.argv[1:]
part, old = open(part_path, "rb").read(), open(noise_path, "rb").read()
def first_diff(a, b, base):
    for i in range(0, len(a), 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            j = next(k for k in range(i, min(i + 4096, len(a))) if a[k] != b[k])
            return base + j
    return None
def expect(start, want, what):
    got = part[start:start + len(want)]
    if len(got) != len(want):
        sys.exit("%s: partition ends at %d" % (what, len(part)))
    d = first_diff(got, want, start)
    if d is not None:
        sys.exit("%s: first difference at byte %d (0x%x): %02x, want %02x" % (what, d, d, part[d], want[d - start]))
if kind == "sparse":
    b = open(image, "rb").read()
    want = bytearray(open(image[:-len(".simg")] + ".oracle", "rb").read())
    blk = struct.unpack_from("<I", b, 12)[0]
    off, pos = struct.unpack_from("<H", b, 8)[0], 0
    for _ in range(struct.unpack_from("<I", b, 20)[0]):
        t, _, n, total = struct.unpack_from("<HHII", b, off)
        if t == 0xCAC3:  # DONT_CARE: the device keeps the old bytes
            want[pos * blk:(pos + n) * blk] = old[pos * blk:(pos + n) * blk]
        pos += 0 if t == 0xCAC4 else n
        off += total
    expect(0, bytes(want), "content (simg2img output, DONT_CARE blocks old)")
    end = len(want)
else:
    data = open(image, "rb").read()
    expect(0, data, "content")
    end = len(data)
    what, block = tail.split(":")
    pad = -end % int(block)
    want = {"buffer": bytes([int(fill, 16)]) * pad, "zeros": b"\0" * pad, "old": old[end:end + pad]}[what]
    expect(end, want, "the %d bytes after the image (%s)" % (pad, what))
    end += pad
expect(end, old[end:len(part)], "the old bytes past the image")
PY
}

# --- Flashing every kind -------------------------------------------------------
# client_flash CLIENT TRANSPORT PARTITION IMAGE > output: one flash by
# aosp (fastboot), fpfastboot (flashpipe fastboot).
client_flash() {
  case $1 in
    aosp) timeout 120 fastboot -s "$2:127.0.0.1:$PORT" flash "$3" "$4" ;;
    fpfastboot) timeout 120 "$FLASHPIPE" fastboot -s "$2:127.0.0.1:$PORT" flash "$3" "$4" ;;
  esac
}
# What each client leaves after a raw image's end (see check_part's TAIL).
raw_tail() {
  case $1:$2 in
    *:raw) echo buffer:512 ;;         # sent whole: the device pads from its buffer
    *:rawparts) echo old:4096 ;;      # whole blocks
    fpfastboot:oddparts | fpflash:oddparts) echo zeros:4096 ;;  # the last block padded with zeros
  esac
}

# flash_every_kind CLIENT TRANSPORT: a fresh device, every image, content checked.
flash_every_kind() {
  local client=$1 transport=$2 dev=$1_$2 entry part image kind rc out bad=0
  new_parts "$work/$dev"
  start_device "$dev" "$transport" --uboot --max-download-size $MDS "${PARTS[@]}"
  if [ "$client" = fpflash ]; then
    local args=()
    for entry in "${IMAGES[@]}"; do IFS=: read -r part image kind <<<"$entry"; args+=("$part=$img/$image"); done
    rc=0
    timeout 300 "$FLASHPIPE" flash -s "$transport:127.0.0.1:$PORT" --no-progress --json="$work/$dev.json" \
      "${args[@]}" >"$work/$dev.flash.txt" 2>&1 || rc=$?
    [ $rc = 0 ] || fail "flashpipe flash: exit $rc: $(tail -5 "$work/$dev.flash.txt")"
    pass "flashpipe flash of ${#IMAGES[@]} images: exit 0"
  fi
  for entry in "${IMAGES[@]}"; do
    IFS=: read -r part image kind <<<"$entry"
    out=$work/out.$client.$transport.$image.txt
    if [ "$client" != fpflash ]; then
      rc=0; client_flash "$client" "$transport" "$part" "$img/$image" >"$out" 2>&1 || rc=$?
    fi
    if [ "$client" = aosp ] && [ "$kind" = oddparts ]; then
      aosp_odd_parts_check "$work/$dev/$part" "$rc" "$out" || bad=1
      continue
    fi
    if [ "$client" != fpflash ] && [ $rc != 0 ]; then
      echo "FAIL: $image: exit $rc: $(tail -3 "$out")"; bad=1; continue
    fi
    if ! why=$(check_part "$work/$dev/$part" "$img/$image" "$kind" "$(raw_tail "$client" "$kind")" 2>&1); then
      echo "FAIL: $image ($kind) on $part: $why"; bad=1; continue
    fi
    local parts; parts=$(commands_seen "$dev" "flash:$part ")
    if [ "$(stat -c %s "$img/$image")" -gt $((8 << 20)) ] && [ "$parts" -lt 2 ]; then
      echo "FAIL: $image is larger than max-download-size but was flashed in $parts part(s)"; bad=1; continue
    fi
    pass "$image ($kind, $(stat -c %s "$img/$image") bytes) on $part: content as expected ($parts part(s))"
  done
  # The stray INFO after each flash reached the client inside the next command.
  [ "$(grep -c "INFOwriting" "$work/$dev.log")" -ge 5 ] || { echo "FAIL: the device sent too few stray INFO lines"; bad=1; }
  if [ "$client" = aosp ] || [ "$client" = fpfastboot ]; then
    grep -qh "^(bootloader) writing" "$work"/out.$client.$transport.*.txt || { echo "FAIL: no stray INFO shown as (bootloader) writing"; bad=1; }
  else
    grep -q "(bootloader) writing" "$work/$dev.flash.txt" || note "flash --no-progress does not show the device's INFO lines"
    python3 - "$work/$dev.json" "${#IMAGES[@]}" <<'PY' || bad=1
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
if d["result"] != "ok" or len(d["written"]) != int(sys.argv[2]) or d["partly_written"]:
    sys.exit("FAIL: report: %s %s %s" % (d["result"], d["written"], d["partly_written"]))
PY
  fi
  grep "^fakeboot: flash p_crc" "$work/$dev.log" | grep -q "crc32=1" || note "$client over $transport: the CRC32 chunk did not reach the device ($(grep "^fakeboot: flash p_crc" "$work/$dev.log"))"
  stop_device "$dev"
  rm -rf "${work:?}/$dev"
  [ $bad = 0 ] || fail "$client over $transport: some images were not flashed as expected"
}

# The AOSP client 29.0.6, an odd-size raw cut into parts for max-download-size
# (issue 21): part 1 lacks its last DONT_CARE, the device reads its stale
# buffer as that chunk (`FAILUnknown chunk type`), the client stops with exit
# 1; part 1's data are written (up to a block boundary: with FILL chunks part
# 1 covers more than 8 MiB of the image), nothing after them.
aosp_odd_parts_check() {
  local partfile=$1 rc=$2 out=$3
  [ "$rc" = 1 ] || { echo "FAIL: AOSP odd raw in parts: exit $rc, expected 1"; return 1; }
  grep -q "don't care size [0-9]* is not a multiple of the block size 4096" "$out" &&
    grep -q "FAILED (remote: 'Unknown chunk type')" "$out" ||
    { echo "FAIL: AOSP odd raw in parts: output changed: $(grep -v write_sparse_skip "$out")"; return 1; }
  python3 - "$partfile" "$img/oddbig.raw" "$work/noise" <<'PY' || return 1
import sys
part, image, old = (open(p, "rb").read() for p in sys.argv[1:])
d = next(i for i in range(0, len(image), 4096) if part[i:i + 4096] != image[i:i + 4096])
d = next(i for i in range(d, d + 4096) if part[i] != image[i])
if d < 4 << 20 or d % 4096:
    sys.exit("FAIL: AOSP odd raw in parts: first difference at %d, not a block boundary past 4 MiB" % d)
if part[d:] != old[d:len(part)]:
    sys.exit("FAIL: AOSP odd raw in parts: bytes after part 1's data (%d) changed" % d)
print("ok: AOSP client, odd raw in parts: 'Unknown chunk type', exit 1, part 1 written up to byte %d, the rest untouched (the client's padding bug)" % d)
PY
}

check_aosp_udp() { flash_every_kind aosp udp; }
check_aosp_tcp() { flash_every_kind aosp tcp; }
check_fastboot_udp() { flash_every_kind fpfastboot udp; }
check_fastboot_tcp() { flash_every_kind fpfastboot tcp; }
check_flash_udp() { flash_every_kind fpflash udp; }
check_flash_tcp() { flash_every_kind fpflash tcp; }

# The device itself: what it answers (as U-Boot), erase, reboot, continue,
# SIGTERM; and a device that answers no partition variables still flashed.
check_device_answers() {
  mkdir -p "$work/ans"
  start_device ans udp --uboot --max-download-size $MDS "boot=$work/ans/boot:4M" "system=$work/ans/system:8M"
  local out
  out=$(timeout 20 fastboot -s udp:127.0.0.1:$PORT getvar max-download-size 2>&1)
  grep -q "^max-download-size: 0x00800000" <<<"$out" || fail "max-download-size: $out"
  out=$(timeout 20 fastboot -s udp:127.0.0.1:$PORT getvar partition-size:system 2>&1)
  grep -q "^partition-size:system: 0x0000000000800000" <<<"$out" || fail "partition-size: $out"
  out=$(timeout 20 fastboot -s udp:127.0.0.1:$PORT getvar partition-size:nosuch 2>&1)
  grep -q "failed to get partition info" <<<"$out" || fail "partition-size of an unknown partition: $out"
  out=$(timeout 20 fastboot -s udp:127.0.0.1:$PORT getvar current-slot 2>&1)
  grep -q "Variable not implemented" <<<"$out" || fail "an unknown variable: $out"
  local rc=0; out=$(timeout 20 fastboot -s udp:127.0.0.1:$PORT oem digest boot:0:4096 2>&1) || rc=$?
  [ $rc = 1 ] && grep -q "unrecognized command" <<<"$out" || fail "oem digest: exit $rc: $out"
  pass "getvar as U-Boot (hex max-download-size, partition-size, FAIL for unknown names), no oem digest"
  rc=0; out=$(timeout 60 fastboot -s udp:127.0.0.1:$PORT flash boot "$img/r4k.raw" 2>&1) || rc=$?
  [ $rc = 1 ] && grep -q "too large for partition" <<<"$out" || fail "raw image above the partition: exit $rc: $out"
  rc=0; out=$(timeout 60 fastboot -s udp:127.0.0.1:$PORT flash boot "$img/fill.simg" 2>&1) || rc=$?
  [ $rc = 1 ] && grep -q "Request would exceed partition size!" <<<"$out" || fail "sparse image above the partition: exit $rc: $out"
  pass "images larger than the partition refused as U-Boot does"
  python3 - "$PORT" <<'PY' || fail "UDP wire"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.connect(("127.0.0.1", int(sys.argv[1])))
def ask(pkt):
    s.send(pkt)
    return s.recv(2048)
seq = struct.unpack(">H", ask(b"\x01\x00\x00\x00")[4:6])[0]
r = ask(bytes([2, 0]) + struct.pack(">HHH", seq, 1, 8192))
assert r[4:8] == b"\x00\x01\x04\x00", "init answer %r: want version 1, 1024-byte packets" % r
def command(cmd):
    """The final answer (INFO lines, one per poll, skipped)."""
    global seq
    seq += 1
    assert ask(bytes([3, 0]) + struct.pack(">H", seq) + cmd)[4:] == b"", "no empty ACK"
    while True:
        seq += 1
        poll = bytes([3, 0]) + struct.pack(">H", seq)
        r = ask(poll)
        assert ask(poll) == r, "a retransmitted poll did not get the same answer"
        if not r[4:].startswith(b"INFO"):
            return r[4:]
r = command(b"getvar:version")
assert r == b"OKAY0.4", "getvar:version: %r" % r
for cmd in (b"fetch:boot:0:4096", b"upload", b"oem digest boot"):
    r = command(cmd)
    assert r == b"FAILunrecognized command", "%s: %r" % (cmd, r)
print("ok: UDP: 1024-byte packets whatever the host offers, saved answer on retransmit; fetch, upload, oem digest unrecognized")
PY
  head -c 4M /dev/urandom >"$work/ans/boot"
  timeout 60 fastboot -s udp:127.0.0.1:$PORT erase boot >/dev/null 2>&1 || fail "erase"
  cmp -s "$work/ans/boot" <(head -c 4M /dev/zero) || fail "erase did not zero boot"
  timeout 20 fastboot -s udp:127.0.0.1:$PORT reboot >/dev/null 2>&1 || fail "reboot"
  timeout 20 fastboot -s udp:127.0.0.1:$PORT continue >/dev/null 2>&1 || fail "continue"
  for _ in $(seq 30); do [ -f "$work/ans.pid" ] || break; sleep 0.1; done
  [ ! -f "$work/ans.pid" ] || fail "the device did not leave fastboot after continue"
  pass "erase zeroes, reboot OKAY, continue: the device leaves fastboot"
  start_device quiet tcp --answer none --max-download-size $MDS "boot=$work/ans/boot:4M"
  timeout 60 "$FLASHPIPE" flash -s tcp:127.0.0.1:$PORT --no-progress boot="$img/odd.raw" >"$work/quiet.txt" 2>&1 ||
    fail "flash to a device answering no partition variables: $(cat "$work/quiet.txt")"
  cmp -s -n "$(stat -c %s "$img/odd.raw")" "$work/ans/boot" "$img/odd.raw" || fail "quiet device: content"
  stop_device quiet
  pass "a device that answers no partition variables is flashed; the device exits on SIGTERM"
}

# Both fastboot clients wait for a device whose port is still closed (U-Boot
# binds its socket late) and go on; the AOSP client says so first.
check_late_bind_fastboot_clients() {
  local client transport out
  mkdir -p "$work/lb"
  for client in aosp fpfastboot; do
    for transport in udp tcp; do
      start_device lb "$transport" --late-bind 2 --max-download-size $MDS "p_odd=$work/lb/p_odd:4M"
      out=$(client_flash $client $transport p_odd "$img/odd.raw" 2>&1) || fail "$client over $transport, late bind: $out"
      grep -q "< waiting for $transport:127.0.0.1:$PORT >" <<<"$out" || fail "$client over $transport: no waiting line: $out"
      stop_device lb
      note "$client over $transport, late bind: $(head -2 <<<"$out" | tr '\n' '|')"
    done
  done
  pass "AOSP fastboot and flashpipe fastboot wait for a late-bound device (udp, tcp) and flash it"
}

# --- Issue 21: the behaviour once fixed --------------------------------------
# (1) `flashpipe flash` waits for a device whose port is closed at first,
# says `< waiting for DEVICE >` and flashes it.
check_late_bind_flash_waits() {
  local transport out rc bad=0
  mkdir -p "$work/lbf"
  for transport in udp tcp; do
    start_device lbf "$transport" --late-bind 2 --max-download-size $MDS "p_odd=$work/lbf/p_odd:4M"
    rc=0; out=$(timeout 60 "$FLASHPIPE" flash -s "$transport:127.0.0.1:$PORT" --no-progress p_odd="$img/odd.raw" 2>&1) || rc=$?
    stop_device lbf
    if [ $rc != 0 ]; then echo "FAIL: flash over $transport to a late-bound device: exit $rc: $out"; bad=1; continue; fi
    grep -q "< waiting for $transport:127.0.0.1:$PORT >" <<<"$out" || { echo "FAIL: $transport: no waiting line: $out"; bad=1; continue; }
    cmp -s -n "$(stat -c %s "$img/odd.raw")" "$work/lbf/p_odd" "$img/odd.raw" || { echo "FAIL: $transport: content"; bad=1; continue; }
    pass "flash over $transport waited for the late-bound device and flashed it"
  done
  [ $bad = 0 ] || fail "flash does not wait for a device whose port is still closed"
}

# (2) --verify on a device without oem digest/fetch/upload: every partition
# written, the report lists them written and not verified, exit 0.
check_verify_without_digest() {
  mkdir -p "$work/vf"
  start_device vf udp --uboot --max-download-size $MDS "boot=$work/vf/boot:4M" "system=$work/vf/system:8M"
  local rc=0
  timeout 120 "$FLASHPIPE" flash -s udp:127.0.0.1:$PORT --no-progress --verify --json="$work/vf.json" \
    boot="$img/odd.raw" system="$img/fill.simg" >"$work/vf.txt" 2>&1 || rc=$?
  stop_device vf
  cat "$work/vf.txt"
  local flashed; flashed=$(grep -c "^fakeboot: flash " "$work/vf.log")
  python3 - "$work/vf.json" "$rc" "$flashed" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
d = r["devices"][0]
steps = [(s["partition"], s["result"], s["verify"]) for s in d["steps"]]
problems = []
if sys.argv[2] != "0": problems.append("exit %s" % sys.argv[2])
if sys.argv[3] != "2": problems.append("the device flashed %s of 2 partitions" % sys.argv[3])
if sorted(d["written"]) != ["boot", "system"]: problems.append("written %s" % d["written"])
if d["partly_written"]: problems.append("partly_written %s" % d["partly_written"])
if d["result"] != "ok": problems.append("result %s (%s)" % (d["result"], d["error"]))
if len(steps) != 2 or any(res != "ok" or v != "not_run" for _, res, v in steps):
    problems.append("steps (partition, result, verify) %s" % steps)
if sorted(d["not_verified"]) != ["boot", "system"]: problems.append("not_verified %s" % d["not_verified"])
if any("device has no digest or read-back command: oem digest: remote: 'unrecognized command'; fetch: "
       "remote: 'unrecognized command'" not in s["verify_note"] or s["verify_method"] != "" for s in d["steps"]):
    problems.append("verify_note, verify_method %s" % [(s["verify_note"], s["verify_method"]) for s in d["steps"]])
if problems:
    sys.exit("FAIL: --verify on a device without a digest: " + "; ".join(problems))
print("ok: --verify without a digest: exit 0, written %s, steps %s" % (d["written"], steps))
PY
  grep -qi "not verified" "$work/vf.txt" || fail "the output does not say the partitions were not verified"
  pass "--verify on a device without a digest: every partition written, reported not verified"
  # --verify=required: both still flashed, then the device fails as unverified.
  mkdir -p "$work/vr"
  start_device vr udp --uboot --max-download-size $MDS "boot=$work/vr/boot:4M" "system=$work/vr/system:8M"
  rc=0
  timeout 120 "$FLASHPIPE" flash -s udp:127.0.0.1:$PORT --no-progress --verify=required --json="$work/vr.json" \
    boot="$img/odd.raw" system="$img/fill.simg" >"$work/vr.txt" 2>&1 || rc=$?
  stop_device vr
  [ $rc = 1 ] || fail "--verify=required on a device without a digest: exit $rc: $(cat "$work/vr.txt")"
  [ "$(grep -c "^fakeboot: flash " "$work/vr.log")" = 2 ] || fail "--verify=required: not every partition flashed"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['devices'][0]; assert d['result']=='unverified' and sorted(d['written'])==['boot','system'], d" \
    "$work/vr.json" || fail "--verify=required: report $(cat "$work/vr.json")"
  pass "--verify=required on a device without a digest: every partition flashed, then the device fails as unverified"
}

# (2b) --verify on a device with fetch: and no oem digest: every partition
# verified by read-back (verify_method "readback"), over UDP and TCP, each
# fetch at most max-fetch-size; the report valid against its schema.
check_verify_by_readback() {
  local transport rc bad=0
  for transport in udp tcp; do
    mkdir -p "$work/rb$transport"
    start_device rb$transport $transport --uboot --fetch --max-fetch-size 2M --max-download-size $MDS \
      "boot=$work/rb$transport/boot:4M" "system=$work/rb$transport/system:24M"
    rc=0
    timeout 120 "$FLASHPIPE" flash -s $transport:127.0.0.1:$PORT --no-progress --verify=required \
      --json="$work/rb$transport.json" boot="$img/odd.raw" system="$img/bigsparse.simg" \
      >"$work/rb$transport.txt" 2>&1 || rc=$?
    stop_device rb$transport
    python3 - "$work/rb$transport.json" "$rc" "$work/rb$transport.log" "$SRC/docs/schema/flash-report.schema.json" <<'PY' || bad=1
import json, re, sys, jsonschema
r = json.load(open(sys.argv[1]))
jsonschema.validate(r, json.load(open(sys.argv[4])))
d = r["devices"][0]
steps = [(s["partition"], s["result"], s["verify"], s["verify_method"], s["written"]) for s in d["steps"]]
fetches = [int(m.group(1), 16) for m in re.finditer(r"cmd fetch:\w+:0x[0-9a-f]+:(0x[0-9a-f]+) -> DATA", open(sys.argv[3]).read())]
problems = []
if sys.argv[2] != "0": problems.append("exit %s: %s" % (sys.argv[2], d["error"]))
if d["result"] != "ok" or sorted(d["written"]) != ["boot", "system"] or d["partly_written"] or d["not_verified"]:
    problems.append("result %s written %s partly %s not_verified %s" % (d["result"], d["written"], d["partly_written"], d["not_verified"]))
if steps != [("boot", "ok", "ok", "readback", True), ("system", "ok", "ok", "readback", True)]:
    problems.append("steps %s" % steps)
if len(fetches) < 3 or max(fetches) > 2 << 20:
    problems.append("fetch sizes %s (max-fetch-size 2 MiB)" % fetches)
if problems:
    sys.exit("FAIL: read-back verify: " + "; ".join(problems))
print("ok: %d fetches of at most %d bytes, %d bytes read back" % (len(fetches), max(fetches), sum(fetches)))
PY
    [ $bad = 0 ] || break
    pass "--verify over $transport on a device with fetch: and no digest: every partition verified by read-back"
  done
  [ $bad = 0 ] || fail "--verify by read-back"
  # A device that stores other bytes than it took: mismatch, exit 1, boot
  # still reported written (and system, flashed after boot's failed check,
  # not at all).
  mkdir -p "$work/rc"
  start_device rc udp --uboot --fetch --corrupt-byte 0x12345 --max-download-size $MDS \
    "boot=$work/rc/boot:4M" "system=$work/rc/system:24M"
  rc=0
  timeout 120 "$FLASHPIPE" flash -s udp:127.0.0.1:$PORT --no-progress --verify --json="$work/rc.json" \
    boot="$img/odd.raw" system="$img/fill.simg" >"$work/rc.txt" 2>&1 || rc=$?
  stop_device rc
  [ $rc = 1 ] || fail "--verify on a corrupting device: exit $rc: $(cat "$work/rc.txt")"
  python3 - "$work/rc.json" <<'PY' || fail "--verify on a corrupting device: report $(cat "$work/rc.json")"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
s = d["steps"][0]
assert d["result"] == "mismatch" and d["error_class"] == "verify_mismatch", d
assert d["written"] == ["boot"] and d["partly_written"] == [] and len(d["steps"]) == 1, d
assert (s["verify"], s["verify_method"], s["written"]) == ("mismatch", "readback", True), s
assert "verify: boot bytes 0..%d: read back sha256" % (3 << 20 | 1234) in s["error"], s["error"]
PY
  grep -q "mismatch" "$work/rc.txt" || fail "the output does not say mismatch: $(cat "$work/rc.txt")"
  pass "--verify on a device that flips a byte: mismatch naming boot and its range, exit 1, boot reported written"
}

# (3) A partition the device does not have (it answers partition-size):
# refused before a byte is sent, in under 1 s for a 64 MiB image, with the
# device's answer in the message.
check_missing_partition_refused_early() {
  mkdir -p "$work/mp"
  head -c 64M /dev/urandom >"$work/mp/big64.raw"
  start_device mp udp --uboot --max-download-size 128M "boot=$work/mp/boot:4M"
  local rc=0 t0 t1 out
  t0=$(date +%s.%N)
  out=$(timeout 120 "$FLASHPIPE" flash -s udp:127.0.0.1:$PORT --no-progress nosuch="$work/mp/big64.raw" 2>&1) || rc=$?
  t1=$(date +%s.%N)
  local secs; secs=$(python3 -c "print('%.2f' % ($t1 - $t0))")
  local downloads; downloads=$(commands_seen mp download:)
  stop_device mp
  echo "flash nosuch=64 MiB: exit $rc in $secs s, the device saw $downloads download(s): $out"
  [ $rc = 1 ] || fail "exit $rc, expected 1"
  grep -q "failed to get partition info" <<<"$out" || fail "the device's answer is not in the message"
  [ "$downloads" = 0 ] || fail "the device saw $downloads download(s) before the refusal"
  python3 -c "import sys; sys.exit(0 if $secs < 1 else 1)" || fail "refused after $secs s, not under 1 s"
  pass "a missing partition refused in $secs s, nothing sent"
}

# For the record (not a check): the AOSP client against the same device.
note_aosp_missing_partition() {
  mkdir -p "$work/mpa"
  head -c 64M /dev/urandom >"$work/mpa/big64.raw"
  start_device mpa udp --max-download-size 128M "boot=$work/mpa/boot:4M"
  local rc=0 t0 out
  t0=$(date +%s.%N)
  out=$(timeout 120 fastboot -s udp:127.0.0.1:$PORT flash nosuch "$work/mpa/big64.raw" 2>&1) || rc=$?
  note "AOSP fastboot flash nosuch (64 MiB, udp): exit $rc after $(python3 -c "print('%.2f' % ($(date +%s.%N) - $t0))") s, $(commands_seen mpa download:) download(s): $(tail -2 <<<"$out" | tr '\n' '|')"
  stop_device mpa
  rm -rf "$work/mpa"
}

# Informational: the AOSP client's and flashpipe fastboot's output for the
# same flashes, times cut.
note_output_differences() {
  local f g image transport
  for transport in udp tcp; do
    for f in "$work"/out.aosp.$transport.*.txt; do
      [ -f "$f" ] || continue
      image=${f#"$work"/out.aosp.$transport.}; image=${image%.txt}
      g=$work/out.fpfastboot.$transport.$image.txt
      [ -f "$g" ] || continue
      if ! d=$(diff <(sed -E 's/\[ *[0-9.]+s\]//; s/Total time: [0-9.]+s//' "$f" | grep -v write_sparse_skip) \
                    <(sed -E 's/\[ *[0-9.]+s\]//; s/Total time: [0-9.]+s//' "$g")); then
        note "$transport $image: AOSP (<) vs flashpipe fastboot (>): $(tr '\n' '|' <<<"$d")"
      fi
    done
  done
}

# --- Run ----------------------------------------------------------------------
declare -a RESULTS
failed=0
run_check() {
  local name=$1
  [ -z "${FAKEBOOT_CHECKS:-}" ] || [[ " $FAKEBOOT_CHECKS " == *" $name "* ]] || return 0
  echo "== $name"
  local rc=0 t0=$SECONDS
  ( "$name" ) 2>&1 | tee "$work/check.$name.txt"
  rc=${PIPESTATUS[0]}
  local verdict
  if [ $rc = 0 ]; then
    verdict=pass
  else
    verdict=FAIL; failed=$((failed + 1))
  fi
  RESULTS+=("$(printf '%-40s %s (%d s)' "$name" "$verdict" $((SECONDS - t0)))")
}

echo "== images"
make_images
run_check check_device_answers
for c in check_aosp_udp check_aosp_tcp check_fastboot_udp check_fastboot_tcp check_flash_udp check_flash_tcp; do
  run_check $c
done
run_check check_late_bind_fastboot_clients
run_check check_late_bind_flash_waits
run_check check_verify_without_digest
run_check check_verify_by_readback
run_check check_missing_partition_refused_early
echo "== notes"
( note_aosp_missing_partition )
note_output_differences
echo "== summary"
printf '%s\n' "${RESULTS[@]}"
[ $failed = 0 ] || { echo "FAIL: $failed check(s) failed"; exit 1; }
echo PASS
