#!/usr/bin/env bash
# Reading a device into an image: `flashpipe read` against the tools people
# use today, side by side in one run, on a loop device (direct I/O on)
# holding a 1 GiB ext4 image (mkfs.ext4 -d from ~450 MiB of files, written
# there by `flashpipe write`):
#   raw     flashpipe read DEV out.img      dd iflag=direct bs=1M conv=fsync    fio read, bs 1M, depth 4 (no output)
#   sparse  flashpipe read DEV out.simg     dd ... && img2simg && sync out.simg
#   zstd    flashpipe read DEV out.zst      dd iflag=direct bs=1M | zstd -T0 && sync out.zst
#   bmap    flashpipe bmap create IMG       bmaptool create IMG (the same raw image file)
# Every run starts with `sync; echo 3 > /proc/sys/vm/drop_caches`; every
# output is fsynced before the command ends (flashpipe always does). Runs are
# interleaved (A B C A B C ...), N rounds (default 5); the table shows medians
# of wall time (process start to exit, /usr/bin/time) and the largest peak
# RSS. Needs root (loop device, drop_caches).
#   FLASHPIPE=build/flashpipe N=5 bash bench/read_bench.sh
set -euo pipefail

HERE=$(realpath "$(dirname "$0")")
FP=$(realpath "${FLASHPIPE:-$HERE/../build/flashpipe}")
N=${N:-5}
for t in img2simg bmaptool fio zstd mkfs.ext4 losetup python3 /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "read_bench: missing $t (scripts/setup.sh installs it)"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "read_bench: needs root (loop device, drop_caches)"; exit 1; }

T=$(mktemp -d /var/tmp/fp_read_bench.XXXXXX)
LOOP=""
cleanup() {
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
log() { echo "[read_bench] $*" >&2; }

# ---- the image and the device
log "making a 1 GiB ext4 image from ~450 MiB of files"
bash "$HERE/make_ext4_image.sh" ext4.img
SIZE=$(stat -c %s ext4.img)
truncate -s "$SIZE" loop.bin
LOOP=$(losetup --direct-io=on --find --show loop.bin)
"$FP" write --no-progress ext4.img "$LOOP"
log "loop device $LOOP (direct I/O on) holds the image; outputs go to $T"

# ---- one timed run: run CASE TOOL
RESULTS=$T/results.tsv
: > "$RESULTS"
command_for() {
  case $1 in
    fp-raw) echo "$FP read --no-progress $LOOP out.img" ;;
    dd-raw) echo "dd if=$LOOP of=out.img iflag=direct bs=1M conv=fsync status=none" ;;
    fio-read) echo "fio --name=read --filename=$LOOP --rw=read --bs=1M --iodepth=4 --direct=1 --ioengine=io_uring --size=$SIZE --output=/dev/null" ;;
    fp-sparse) echo "$FP read --no-progress $LOOP out.simg" ;;
    dd-img2simg) echo "dd if=$LOOP of=tmp.img iflag=direct bs=1M conv=fsync status=none && img2simg tmp.img out.simg && sync out.simg" ;;
    fp-zstd) echo "$FP read --no-progress $LOOP out.zst" ;;
    dd-zstd) echo "dd if=$LOOP iflag=direct bs=1M status=none | zstd -T0 -q -f -o out.zst && sync out.zst" ;;
    fp-bmap) echo "$FP bmap create ext4.img -o out.bmap" ;;
    bmaptool) echo "bmaptool -q create ext4.img -o out.bmap" ;;
  esac
}
run() {
  local case=$1 tool=$2 cmd
  cmd=$(command_for "$tool")
  rm -f out.img out.simg out.zst out.bmap tmp.img
  sync
  echo 3 > /proc/sys/vm/drop_caches
  /usr/bin/time -f "%e %M" -o time.txt bash -c "$cmd" 2> err.txt || { log "FAILED: $cmd: $(cat err.txt)"; return 1; }
  printf '%s\t%s\t%s\n' "$case" "$tool" "$(cat time.txt)" >> "$RESULTS"
}

CASES=("raw fp-raw" "raw dd-raw" "raw fio-read" "sparse fp-sparse" "sparse dd-img2simg"
       "zstd fp-zstd" "zstd dd-zstd" "bmap fp-bmap" "bmap bmaptool")
for round in $(seq 1 "$N"); do
  log "round $round of $N"
  for c in "${CASES[@]}"; do run $c; done
done

# ---- the table
python3 - "$RESULTS" "$SIZE" "$N" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
size, n = int(sys.argv[2]), sys.argv[3]
runs = {}
for case, tool, t in rows:
    wall, rss = t.split()
    runs.setdefault((case, tool), []).append((float(wall), int(rss)))
med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
peak = {k: max(r for _, r in v) / 1024 for k, v in runs.items()}
goals = {
    ("raw", "dd-raw"): ("flashpipe >= 1.2x faster", lambda r: r >= 1.2),
    ("raw", "fio-read"): ("flashpipe within 1.15x of fio", lambda r: r >= 1 / 1.15),
    ("sparse", "dd-img2simg"): ("flashpipe >= 2x faster", lambda r: r >= 2.0),
    ("zstd", "dd-zstd"): ("flashpipe no slower", lambda r: r >= 1.0),
    ("bmap", "bmaptool"): ("flashpipe >= 3x faster", lambda r: r >= 3.0),
}
fp = {"raw": "fp-raw", "sparse": "fp-sparse", "zstd": "fp-zstd", "bmap": "fp-bmap"}
print("| output | tool | median s | runs (s) | MiB/s of the device | speed-up of flashpipe | goal | peak RSS MiB |")
print("|---|---|---:|---|---:|---:|---|---:|")
for case, tool in dict.fromkeys((c, t) for c, t, _ in rows):
    key = (case, tool)
    ratio = med[key] / med[(case, fp[case])]
    goal, ok = goals.get(key, ("", None))
    verdict = f"{goal}: {'met' if ok(ratio) else 'NOT met'}" if ok else ""
    times = " ".join(f"{w:.2f}" for w, _ in runs[key])
    print(f"| {case} | {tool} | {med[key]:.2f} | {times} | {size / med[key] / (1 << 20):.0f} | "
          f"{ratio:.2f}x | {verdict} | {peak[key]:.0f} |")
print()
print(f"medians of {n} interleaved runs; speed-up = the tool's median / flashpipe's median on the same output.")
print("flashpipe peak RSS <= 64 MiB:", "met" if all(peak[(c, fp[c])] <= 64 for c in fp) else "NOT met")
PY
echo
echo "command: FLASHPIPE=$FP N=$N bash bench/read_bench.sh"
