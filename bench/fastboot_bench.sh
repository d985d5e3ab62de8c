#!/usr/bin/env bash
# fastboot flash speed of `flashpipe serve`, side by side in one run:
#   1. default: the client's per-part "Writing" times, summed, vs fio writing
#      the same bytes (RAW + FILL data) to the same loop device (goal <= 1.25x);
#   2. --write-behind: the whole flash (until a final getvar, which waits for
#      the writes and their sync) vs sending alone (daemon with
#      --discard-writes; goal <= 1.2x), on two loop devices: one over a file on
#      the disk (here slower to write than TCP loopback is to send: the floor
#      is then the device, fio's time), and one over a file in /dev/shm (faster
#      than the link: the case write-behind is for);
#   3. --bounce-blocks 100: the U-Boot sparse writer before b1aade87ca1 (one
#      51200-byte synchronous request at a time), summed "Writing" times.
#   4. a fresh daemon's first flash, as a board flashes (a new `serve` per
#      session), --write-behind, on the disk loop device: by default (each
#      download's pages faulted in on another thread just ahead of its bytes)
#      vs --prefault (every page at start) vs warm (the default daemon's
#      second flash, its buffers' pages already there): the whole flash, the
#      first part's "Sending" time (goal: fresh within 1.1x of warm) and the
#      daemon's RSS once idle; the three interleaved in each run; then the
#      same with --write-model discard (the download path alone).
#   5. the clients on fresh daemons: `flashpipe flash` (which streams each
#      part into the writer as it arrives, stream-flash) to the default and
#      the --write-behind daemon, and to a discarding one (its send alone),
#      against the AOSP client to --write-behind and discard; each whole
#      flash over max(send alone, fio) (goal <= 1.15x). CLIENT_ONLY=1 runs it alone.
# Sections 1-3 start their daemons as a user does (no speed flags) and flash RUNS times on
# one daemon (the first flash warms it); FRESH_ONLY=1 runs section 4 alone.
# Image: 1.5 GiB, super-like (zero runs, fills, random data), generated here,
# sparse, split by the client into 256 MiB parts (max-download-size 256M),
# over TCP loopback, to a loop device with --direct-io=on. Medians of RUNS.
#   bench/fastboot_bench.sh [RUNS]   (env FLASHPIPE=path/to/flashpipe,
#   MAX_DOWNLOAD=SIZE for another part size than 256M)
set -euo pipefail
cd "$(dirname "$0")/.."
FLASHPIPE=${FLASHPIPE:-build/flashpipe}
RUNS=${1:-3}
MAX_DOWNLOAD=${MAX_DOWNLOAD:-256M}   # the daemon's max-download-size: the client's part size
for t in fastboot img2simg fio losetup python3; do command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 0; }; done
work=$(mktemp -d -p "${BENCH_DIR:-/var/tmp}")
shm=""
daemon_pid=""; loopdev=""; fastdev=""
cleanup() {
  [ -n "$daemon_pid" ] && { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
  [ -n "$loopdev" ] && losetup -d "$loopdev"
  [ -n "$fastdev" ] && losetup -d "$fastdev"
  rm -rf "$work"
  [ -n "$shm" ] && rm -rf "$shm"
}
trap cleanup EXIT

echo "== generating a 1.5 GiB super-like image in $work"
python3 - "$work/super.raw" <<'PY'
import os, sys
# Per 32 MiB: 12 MiB random, 8 MiB zeros, 4 MiB fill, 8 MiB random.
with open(sys.argv[1], "wb") as f:
    for i in range(48):
        f.write(os.urandom(12 << 20)); f.write(bytes(8 << 20))
        f.write(b"\x5a\xa5\x00\xff" * (1 << 20)); f.write(os.urandom(8 << 20))
PY
img2simg "$work/super.raw" "$work/super.simg"
rm "$work/super.raw"
# Bytes the image asks to be written (RAW + FILL), what fio writes.
data_bytes=$(python3 - "$work/super.simg" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb")
magic, _, _, fh, ch, blk, blocks, chunks, _ = struct.unpack("<IHHHHIIII", f.read(28))
f.seek(fh)
total = 0
for _ in range(chunks):
    t, _, n, sz = struct.unpack("<HHII", f.read(12))
    if t in (0xCAC1, 0xCAC2): total += n * blk
    f.seek(sz - ch, 1)
print(total)
PY
)
truncate -s 1600M "$work/disk.img"
loopdev=$(losetup --direct-io=on -f --show "$work/disk.img")
echo "image: $(stat -c %s "$work/super.simg") bytes sparse, $data_bytes bytes of RAW+FILL data; device $loopdev (direct I/O)"
# The fast device: a loop device over a file in memory (needs 1.6 GiB free in /dev/shm).
if [ "$(df --output=avail -B1M /dev/shm 2>/dev/null | tail -1)" -gt 2400 ] 2>/dev/null; then
  shm=$(mktemp -d -p /dev/shm)
  truncate -s 1600M "$shm/disk.img"
  fastdev=$(losetup --direct-io=on -f --show "$shm/disk.img")
  echo "fast device: $fastdev over $shm/disk.img (tmpfs)"
else
  echo "fast device: SKIPPED (less than 2400 MiB free in /dev/shm)"
fi

PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
dev=$loopdev
start() {
  "$FLASHPIPE" serve --partition "super=$dev" --tcp "127.0.0.1:$PORT" --state "$work/state" \
    --max-download-size "$MAX_DOWNLOAD" "$@" \
    >"$work/daemon.out" 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 50); do grep -q listening "$work/daemon.out" 2>/dev/null && return; sleep 0.1; done
  echo "daemon failed: $(cat "$work/daemon.log")"; exit 1
}
stop() { kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""; }
fb() { timeout 600 fastboot -s "tcp:127.0.0.1:$PORT" "$@"; }
sum_of() { grep "^$1" "$work/fb.out" | sed -n 's/.*OKAY \[ *\([0-9.]*\)s\].*/\1/p' | awk '{s+=$1} END {printf "%.3f", s}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }

# One flash; prints "writing_sum sending_sum wall" (wall includes a final getvar).
flash_once() {
  local t0 t1
  t0=$(now)
  fb flash super "$work/super.simg" >"$work/fb.out" 2>&1 || { cat "$work/fb.out"; exit 1; }
  fb getvar version >/dev/null 2>&1
  t1=$(now)
  grep -q "Sending sparse 'super' 2/" "$work/fb.out" || { echo "image was not split"; cat "$work/fb.out"; exit 1; }
  echo "$(sum_of Writing) $(sum_of Sending) $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b-a}')"
}

declare -A W S A
run_mode() {  # name, daemon flags...
  local name=$1; shift
  start "$@"  # as a user starts it: downloads fault their pages in ahead (base/prefaulter)
  local w="" s="" a=""
  for _ in $(seq "$RUNS"); do
    read -r ws ss wall < <(flash_once)
    w+="$ws "; s+="$ss "; a+="$wall "
  done
  stop
  W[$name]=$(echo "$w" | median); S[$name]=$(echo "$s" | median); A[$name]=$(echo "$a" | median)
  printf "%-14s writing-sum %8.3f s  sending-sum %8.3f s  whole flash %8.3f s   (runs: writing %s)\n" \
    "$name" "${W[$name]}" "${S[$name]}" "${A[$name]}" "$w"
}

fio_once() {
  fio --name=w --filename="$dev" --rw=write --bs=1M --iodepth=4 --ioengine=io_uring --direct=1 \
    --size="$data_bytes" --end_fsync=1 --output-format=json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin); print('%.3f' % (j['jobs'][0]['job_runtime']/1000.0))"
}

rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$daemon_pid/status"; }
# Until the daemon's RSS holds still for 0.2 s (the --prefault thread is done), at most 5 s.
settle() {
  local a=-1 b=-2 c
  for _ in $(seq 50); do c=$(rss_mib); [ "$a" = "$b" ] && [ "$b" = "$c" ] && return; a=$b; b=$c; sleep 0.1; done
}
part1_of() { sed -n "s/^Sending sparse 'super' 1\/.*OKAY \[ *\([0-9.]*\)s\].*/\1/p" "$work/fb.out"; }
fresh_record() {  # name, "writing sending wall", idle RSS
  local ws ss wall
  read -r ws ss wall <<<"$2"
  FA[$1]+="$wall "; FS[$1]+="$ss "; FP[$1]+="$(part1_of) "; FR[$1]+="$3 "
}
fresh_section() {  # daemon flags (besides --prefault)
  echo "== fresh daemons vs warm, $* on $dev ($RUNS runs, interleaved, ${FRESH_GAP} s before each fresh daemon, medians)"
  declare -gA FA=() FS=() FP=() FR=()
  local idle out
  for _ in $(seq "$RUNS"); do
    sleep "$FRESH_GAP"; start "$@"; settle; idle=$(rss_mib)
    out=$(flash_once); fresh_record fresh-default "$out" "$idle"
    idle=$(rss_mib)  # what the first flash left: its buffers' pages
    out=$(flash_once); fresh_record warm "$out" "$idle"
    stop
    sleep "$FRESH_GAP"; start "$@" --prefault; settle; idle=$(rss_mib)
    out=$(flash_once); fresh_record fresh-prefault "$out" "$idle"
    stop
  done
  local n
  for n in fresh-default fresh-prefault warm; do
    printf "%-15s whole flash %7.3f s  sending-sum %7.3f s  part 1 sending %6.3f s  RSS before %5s MiB   (runs: whole %s; part 1 %s)\n" \
      "$n" "$(echo "${FA[$n]}" | median)" "$(echo "${FS[$n]}" | median)" "$(echo "${FP[$n]}" | median)" \
      "$(echo "${FR[$n]}" | median)" "${FA[$n]}" "${FP[$n]}"
  done
  local fa fp wa wp pa pp
  fa=$(echo "${FA[fresh-default]}" | median); fp=$(echo "${FP[fresh-default]}" | median)
  pa=$(echo "${FA[fresh-prefault]}" | median); pp=$(echo "${FP[fresh-prefault]}" | median)
  wa=$(echo "${FA[warm]}" | median); wp=$(echo "${FP[warm]}" | median)
  awk -v f="$fp" -v w="$wp" 'BEGIN {printf "fresh default part 1 / warm part 1 = %.2fx (goal <= 1.1x)\n", f/w}'
  awk -v f="$fa" -v w="$wa" 'BEGIN {printf "fresh default whole / warm whole   = %.2fx\n", f/w}'
  awk -v f="$pp" -v w="$wp" 'BEGIN {printf "fresh --prefault part 1 / warm     = %.2fx\n", f/w}'
  awk -v f="$pa" -v w="$wa" 'BEGIN {printf "fresh --prefault whole / warm      = %.2fx\n", f/w}'
}
# Before each fresh daemon, FRESH_GAP seconds (default 3) for the memory the
# last one freed to go back to the hypervisor (free page reporting, after
# 2 s on this VM), so that the fresh daemon's memory is cold as a board's is
# after boot; with 0 it reuses pages still backed, and faults cost less.
FRESH_GAP=${FRESH_GAP:-3}
# Section 4: as a board flashes (write-behind, the disk), then the download
# path alone (nothing written), where the writer's CPU and the disk add no noise.
fresh_sections() {
  dev=$loopdev
  fresh_section --write-behind
  fresh_section --write-model discard
}
# Section 5: the client. `flashpipe flash` announces each part with
# stream-flash, so serve writes it while it arrives and the flash ends with
# its send, in either write model; the AOSP client names the partition only
# after each part's last byte. Fresh daemons (FRESH_GAP before each), one
# flash each, the modes interleaved in every run.
flash_fp_once() {
  local t0 t1
  t0=$(now)
  timeout 600 "$FLASHPIPE" flash --no-progress -s "tcp:127.0.0.1:$PORT" super="$work/super.simg" \
    >"$work/fp.out" 2>&1 || { cat "$work/fp.out"; exit 1; }
  fb getvar version >/dev/null 2>&1
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b-a}'
}
client_section() {
  dev=$loopdev
  echo "== clients on fresh daemons on $dev ($RUNS runs, interleaved, ${FRESH_GAP} s before each daemon, medians of the whole flash incl. a final getvar)"
  declare -gA CA=()
  local r f=""
  for _ in $(seq "$RUNS"); do
    sleep "$FRESH_GAP"; start --write-model discard; CA[fp-send-only]+="$(flash_fp_once) "; stop
    sleep "$FRESH_GAP"; start; CA[fp-default]+="$(flash_fp_once) "; stop
    sleep "$FRESH_GAP"; start --write-behind; CA[fp-write-behind]+="$(flash_fp_once) "; stop
    sleep "$FRESH_GAP"; start --write-behind; read -r _ _ r < <(flash_once); CA[aosp-write-behind]+="$r "; stop
    sleep "$FRESH_GAP"; start --write-model discard; read -r _ _ r < <(flash_once); CA[aosp-send-only]+="$r "; stop
    f+="$(fio_once) "
  done
  local n
  for n in fp-send-only fp-default fp-write-behind aosp-send-only aosp-write-behind; do
    printf "%-18s whole flash %7.3f s   (runs: %s)\n" "$n" "$(echo "${CA[$n]}" | median)" "${CA[$n]}"
  done
  CFIO=$(echo "$f" | median)
  printf "%-18s %7.3f s   (runs: %s)\n" fio "$CFIO" "$f"
  local so d wb aso awb
  so=$(echo "${CA[fp-send-only]}" | median); d=$(echo "${CA[fp-default]}" | median)
  wb=$(echo "${CA[fp-write-behind]}" | median); aso=$(echo "${CA[aosp-send-only]}" | median)
  awb=$(echo "${CA[aosp-write-behind]}" | median)
  awk -v a="$d" -v s="$so" -v f="$CFIO" 'BEGIN {m = s > f ? s : f; printf "flashpipe flash, default daemon: whole / max(its send-only, fio) = %.2fx (goal <= 1.15x)\n", a/m}'
  awk -v a="$wb" -v s="$so" -v f="$CFIO" 'BEGIN {m = s > f ? s : f; printf "flashpipe flash, --write-behind: whole / max(its send-only, fio) = %.2fx (goal <= 1.15x)\n", a/m}'
  awk -v a="$awb" -v s="$aso" -v f="$CFIO" 'BEGIN {m = s > f ? s : f; printf "AOSP client, --write-behind:     whole / max(its send-only, fio) = %.2fx\n", a/m}'
}
if [ "${CLIENT_ONLY:-0}" = 1 ]; then
  client_section
  echo "command: CLIENT_ONLY=1 FRESH_GAP=$FRESH_GAP MAX_DOWNLOAD=$MAX_DOWNLOAD FLASHPIPE=$FLASHPIPE bench/fastboot_bench.sh $RUNS"
  exit 0
fi
if [ "${FRESH_ONLY:-0}" = 1 ]; then
  fresh_sections
  echo "command: FRESH_ONLY=1 FRESH_GAP=$FRESH_GAP MAX_DOWNLOAD=$MAX_DOWNLOAD FLASHPIPE=$FLASHPIPE bench/fastboot_bench.sh $RUNS"
  exit 0
fi

echo "== flashes ($RUNS runs each, medians)"
run_mode default
run_mode write-behind --write-behind
run_mode send-only --write-model discard
run_mode bounce-100 --write-model bounce:100
f=""
for _ in $(seq "$RUNS"); do f+="$(fio_once) "; done
FIO=$(echo "$f" | median)
printf "%-14s %8.3f s for %s bytes (bs=1M iodepth=4 io_uring direct, end_fsync)  (runs: %s)\n" fio "$FIO" "$data_bytes" "$f"
if [ -n "$fastdev" ]; then
  echo "== fast device $fastdev (loop over tmpfs)"
  dev=$fastdev
  run_mode fast-send-only --write-model discard
  run_mode fast-behind --write-behind
  run_mode fast-default
  f=""
  for _ in $(seq "$RUNS"); do f+="$(fio_once) "; done
  FASTFIO=$(echo "$f" | median)
  printf "%-14s %8.3f s (runs: %s)\n" fast-fio "$FASTFIO" "$f"
fi

fresh_sections
client_section

echo "== ratios"
awk -v w="${W[default]}" -v f="$FIO" 'BEGIN {printf "default writing-sum / fio        = %.2fx (goal <= 1.25x)\n", w/f}'
awk -v a="${A[write-behind]}" -v s="${A[send-only]}" 'BEGIN {printf "write-behind whole / send-only  = %.2fx (goal <= 1.2x)\n", a/s}'
awk -v a="${A[write-behind]}" -v s="${A[send-only]}" -v f="$FIO" \
  'BEGIN {m = s > f ? s : f; printf "write-behind whole / max(send-only whole, fio) = %.2fx (fio > sending here: the device is the floor)\n", a/m}'
if [ -n "$fastdev" ]; then
  awk -v a="${A[fast-behind]}" -v s="${A[fast-send-only]}" 'BEGIN {printf "fast device: write-behind whole / send-only = %.2fx (goal <= 1.2x)\n", a/s}'
  awk -v a="${A[fast-default]}" -v s="${A[fast-send-only]}" 'BEGIN {printf "fast device: default whole / send-only = %.2fx (without write-behind)\n", a/s}'
fi
awk -v a="${A[write-behind]}" -v d="${A[default]}" 'BEGIN {printf "write-behind whole / default whole = %.2fx\n", a/d}'
awk -v b="${W[bounce-100]}" -v w="${W[default]}" 'BEGIN {printf "bounce-100 writing-sum / default = %.2fx\n", b/w}'
echo "command: FRESH_GAP=$FRESH_GAP MAX_DOWNLOAD=$MAX_DOWNLOAD FLASHPIPE=$FLASHPIPE bench/fastboot_bench.sh $RUNS"
