#!/usr/bin/env bash
# The host side against the AOSP client (fastboot 29.0.6), over TCP loopback,
# to `flashpipe serve --write-model discard` daemons (they validate and write
# nothing, so the client and the link are what is measured):
#   1. one device, a super-like sparse image (zero runs, fills, random data):
#      `flashpipe flash` whole time vs `fastboot flash` (goal: ratio <= 1.0);
#   2. one device, a raw 1 GiB ext4 image holding 200 MiB of files (goal:
#      flashpipe at least 3x faster; its zero blocks are not sent);
#   3. four daemons at once vs one, the sparse image (goal <= 1.5x), with the
#      client's CPU time per device per GiB and its peak RSS (goal under
#      64 MiB + 16 MiB per device).
# Wall time, client CPU (user+sys) and peak RSS from /usr/bin/time; medians
# of RUNS. SUPER_MIB sets the sparse image's size (default 1536). BASELINE
# (another flashpipe binary, e.g. main's) adds its runs of the three
# flashpipe cases (base_*) in the same rounds, and WINDOW=1 those of
# FLASHPIPE with --no-sendfile (win_*), for a before/after in one run.
#   bench/host_bench.sh [RUNS]   (env FLASHPIPE=path/to/flashpipe)
set -euo pipefail
cd "$(dirname "$0")/.."
FLASHPIPE=${FLASHPIPE:-build/flashpipe}
RUNS=${1:-3}
SUPER_MIB=${SUPER_MIB:-1536}
for t in fastboot img2simg mkfs.ext4 python3 /usr/bin/time; do
  command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 0; }
done
work=$(mktemp -d -p "${BENCH_DIR:-/var/tmp}")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== images in $work: super-like sparse ($SUPER_MIB MiB), raw ext4 1 GiB with 200 MiB of files"
python3 - "$work/super.raw" "$SUPER_MIB" <<'PY'
import os, sys
# Per 32 MiB: 12 MiB random, 8 MiB zeros, 4 MiB fill, 8 MiB random.
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2]) // 32):
        f.write(os.urandom(12 << 20)); f.write(bytes(8 << 20))
        f.write(b"\x5a\xa5\x00\xff" * (1 << 20)); f.write(os.urandom(8 << 20))
PY
img2simg "$work/super.raw" "$work/super.simg"
rm "$work/super.raw"
mkdir -p "$work/root"
for i in $(seq 20); do head -c 10M /dev/urandom >"$work/root/f$i"; done
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/ext4.img" 1G
rm -rf "$work/root"

# start: a discarding daemon on a 2 GiB sparse file of its own; its port is
# appended to ports (not run in a $(...) subshell: pids must reach cleanup).
ports=()
start() {
  local n=${#pids[@]} p=""
  truncate -s 2G "$work/part$n"
  "$FLASHPIPE" serve --partition "system=$work/part$n" --write-model discard --max-download-size 256M \
    --tcp 127.0.0.1:0 --state "$work/state$n" >"$work/d$n.out" 2>"$work/d$n.log" &
  pids+=($!)
  for _ in $(seq 100); do
    p=$({ sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/d$n.out" 2>/dev/null || true; })
    [ -n "$p" ] && { ports+=("$p"); return; }
    sleep 0.1
  done
  echo "daemon did not start" >&2; exit 1
}
for _ in 1 2 3 4; do start; done

# measure LABEL CMD...: one run; appends "wall cpu rss_kib" to $work/LABEL.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/t" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
  awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$work/t" >>"$work/$label"
}
median() { sort -n -k"$2" "$work/$1" | awk -v k="$2" '{a[NR]=$k} END {print a[int((NR + 1) / 2)]}'; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

# flashpipe_cases PREFIX CMD...: its three cases, one run each.
flashpipe_cases() {
  local p=$1; shift
  measure ${p}_super "$@" -s tcp:127.0.0.1:${ports[0]} system="$work/super.simg"
  measure ${p}_ext4 "$@" -s tcp:127.0.0.1:${ports[0]} system="$work/ext4.img"
  measure ${p}_four "$@" -s tcp:127.0.0.1:${ports[0]} -s tcp:127.0.0.1:${ports[1]} \
    -s tcp:127.0.0.1:${ports[2]} -s tcp:127.0.0.1:${ports[3]} system="$work/super.simg"
}
prefixes=(ours)
if [ -n "${BASELINE:-}" ]; then prefixes+=(base); fi
if [ "${WINDOW:-0}" = 1 ]; then prefixes+=(win); fi
for _ in $(seq "$RUNS"); do
  measure aosp_super fastboot -s tcp:127.0.0.1:${ports[0]} flash system "$work/super.simg"
  measure aosp_ext4 fastboot -s tcp:127.0.0.1:${ports[0]} flash system "$work/ext4.img"
  flashpipe_cases ours "$FLASHPIPE" flash --no-progress
  if [ -n "${BASELINE:-}" ]; then flashpipe_cases base "$BASELINE" flash --no-progress; fi
  if [ "${WINDOW:-0}" = 1 ]; then flashpipe_cases win "$FLASHPIPE" flash --no-progress --no-sendfile; fi
done
gib=$(python3 -c "print($(stat -c %s "$work/super.simg") / 2**30)")
echo "== medians of $RUNS runs (wall s, client CPU s, peak RSS KiB)"
for l in aosp_super aosp_ext4; do
  printf '%-11s wall %6s  cpu %6s  rss %7s\n' "$l" "$(median $l 1)" "$(median $l 2)" "$(median $l 3)"
done
for p in "${prefixes[@]}"; do
  for c in super ext4 four; do
    l=${p}_$c
    printf '%-11s wall %6s  cpu %6s  rss %7s\n' "$l" "$(median $l 1)" "$(median $l 2)" "$(median $l 3)"
  done
done
for p in "${prefixes[@]}"; do
  echo "== $p"
  echo "sparse super, flashpipe / AOSP: $(ratio "$(median ${p}_super 1)" "$(median aosp_super 1)") (goal <= 1.0)"
  echo "raw ext4, AOSP / flashpipe: $(ratio "$(median aosp_ext4 1)" "$(median ${p}_ext4 1)") (goal >= 3)"
  echo "four devices / one: $(ratio "$(median ${p}_four 1)" "$(median ${p}_super 1)") (goal <= 1.5)"
  echo "client CPU per device per GiB, four devices: $(python3 -c "print(f'{$(median ${p}_four 2) / 4 / $gib:.2f}')") s"
  echo "peak RSS, four devices: $(( $(median ${p}_four 3) / 1024 )) MiB (goal < $((64 + 4 * 16)) MiB)"
done
