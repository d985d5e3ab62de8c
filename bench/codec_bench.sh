#!/usr/bin/env bash
# Sparse codec benchmark: flashpipe vs AOSP img2simg / simg2img (29.0.6), side
# by side, interleaved, on the same input and output paths (regular files),
# final fsync included; then peak RSS at SIZE and 2*SIZE, and decode_bench.
#   bench/codec_bench.sh [SIZE_GIB=1] [RUNS=5] [BUILD_DIR=build]
# The image is generated at run time in a temp dir (removed on exit): 4 MiB..16
# MiB segments of random data (40%), zeros (35%), 32-bit fills (5%) and
# ext4-like text/metadata (20%), deterministic given the seed.
set -euo pipefail
cd "$(dirname "$0")/.."
size_gib=${1:-1}
runs=${2:-5}
build=${3:-build}
FP=${FLASHPIPE:-$build/flashpipe}
DB=$build/decode_bench
if [ ! -x "$FP" ] || [ ! -x "$DB" ]; then
  [ -f "$build/build.ninja" ] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$build" -j2 flashpipe decode_bench >/dev/null
fi
FP=$(realpath "$FP"); DB=$(realpath "$DB")
for t in img2simg simg2img python3 /usr/bin/time; do command -v $t >/dev/null || { echo "missing $t"; exit 1; }; done
work=$(mktemp -d "${TMPDIR:-/var/tmp}/fp_codec_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

gen() {  # gen PATH BYTES
  python3 - "$1" "$2" <<'PY'
import os, random, struct, sys
path, size = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
text = b"".join(b"%08d inode 0x%06x dir entry lost+found etc/passwd usr/lib ext4 extent\n" % (i, i * 7) for i in range(20000))
with open(path, "wb") as f:
    done = 0
    while done < size:
        k, n = rnd.random(), min(rnd.choice([64 << 10, 1 << 20, 4 << 20, 16 << 20]), size - done)
        if k < 0.40: f.write(os.urandom(n))
        elif k < 0.75: f.write(bytes(n))
        elif k < 0.80: f.write(struct.pack("<I", rnd.getrandbits(32)) * (n // 4) + bytes(n % 4))
        else: f.write((text * (n // len(text) + 1))[:n])
        done += n
PY
}

# timed LABEL CMD...: runs CMD then fsyncs its output ($out), prints wall seconds.
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  sync "$out"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

img=$work/image.raw
gen "$img" $((size_gib << 30))
bytes=$(stat -c %s "$img")
img2simg "$img" "$work/aosp.simg"   # the simg2img input, the same for both
echo "== sparse codec bench: $(numfmt --to=iec "$bytes") image, $runs interleaved runs, median wall time incl. fsync"
echo "   host: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "   commands (each followed by: sync OUTPUT):"
echo "     AOSP:      img2simg $img $work/out.simg"
echo "     flashpipe: $FP img2simg $img $work/out.simg"
echo "     AOSP:      simg2img $work/aosp.simg $work/out.raw"
echo "     flashpipe: $FP simg2img $work/aosp.simg $work/out.raw"

declare -A T
for ((i = 0; i < runs; i++)); do
  out=$work/out.simg
  T[aosp_i]+="$(timed img2simg "$img" "$out") "; rm -f "$out"
  T[fp_i]+="$(timed "$FP" img2simg "$img" "$out") "; rm -f "$out"
  out=$work/out.raw
  T[aosp_s]+="$(timed simg2img "$work/aosp.simg" "$out") "; rm -f "$out"
  T[fp_s]+="$(timed "$FP" simg2img "$work/aosp.simg" "$out") "; rm -f "$out"
done
report() {  # report NAME AOSP_KEY FP_KEY
  local a f
  a=$(tr ' ' '\n' <<<"${T[$2]}" | grep . | median)
  f=$(tr ' ' '\n' <<<"${T[$3]}" | grep . | median)
  awk -v n="$1" -v a="$a" -v f="$f" -v b="$bytes" 'BEGIN {
    printf "   %-9s AOSP %7.3f s (%6.0f MB/s)   flashpipe %7.3f s (%6.0f MB/s)   ratio %.2fx\n", n, a, b / a / 1e6, f, b / f / 1e6, a / f }'
  echo "             runs: AOSP ${T[$2]}| flashpipe ${T[$3]}"
}
report img2simg aosp_i fp_i
report simg2img aosp_s fp_s

echo "== peak RSS (/usr/bin/time -v), KiB"
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ {print $2}'; }
for g in "$size_gib" $((size_gib * 2)); do
  if [ "$g" != "$size_gib" ]; then gen "$img" $((g << 30)); img2simg "$img" "$work/aosp.simg"; fi
  printf "   %s GiB: img2simg AOSP %s flashpipe %s | simg2img AOSP %s flashpipe %s\n" "$g" \
    "$(rss img2simg "$img" "$work/o.simg")" "$(rss "$FP" img2simg "$img" "$work/o.simg")" \
    "$(rss simg2img "$work/aosp.simg" "$work/o.raw")" "$(rss "$FP" simg2img "$work/aosp.simg" "$work/o.raw")"
  rm -f "$work/o.simg" "$work/o.raw"
done

echo "== decode from memory: $DB 1024 $runs"
"$DB" 1024 "$runs"
