#!/usr/bin/env bash
# `flashpipe bmap create` against `bmaptool create` and against the hash
# floor, side by side in one run, on the read benchmark's 1 GiB ext4 image
# file (mkfs.ext4 -d from ~450 MiB of files; its holes are the free space):
#   fp-bmap           flashpipe bmap create ext4.img -o out.bmap     (as a user types it)
#   fp-bmap-1-thread  the same with --threads 1                      (what the threads buy)
#   bmaptool          bmaptool -q create ext4.img -o out.bmap
#   floor             bench/hash_floor.py ext4.img 2: read the stored bytes and
#                     SHA-256 them split in two halves hashed at once (OpenSSL)
# The image's page cache is dropped before every run (time_pairs.py --drop:
# cold, as after a copy from elsewhere; WARM=1: kept, so hashing is all that
# is left). Runs interleave, N rounds (default 5); medians, and the goal of
# issue 26: flashpipe >= 3x faster than bmaptool, or within 1.1x of the
# floor, whichever is the slower time.
#   FLASHPIPE=build/flashpipe N=5 [WARM=1] bash bench/bmap_bench.sh
set -euo pipefail

HERE=$(realpath "$(dirname "$0")")
FP=$(realpath "${FLASHPIPE:-$HERE/../build/flashpipe}")
N=${N:-5}
for t in bmaptool mkfs.ext4 python3 openssl; do
  command -v "$t" >/dev/null || { echo "bmap_bench: missing $t (scripts/setup.sh installs it)"; exit 1; }
done
T=$(mktemp -d /var/tmp/fp_bmap_bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T"
log() { echo "[bmap_bench] $*" >&2; }

log "making a 1 GiB ext4 image from ~450 MiB of files"
bash "$HERE/make_ext4_image.sh" "$T/ext4.img"
sync

DROP=(--drop ext4.img)
[ "${WARM:-0}" = 1 ] && { DROP=(); cat ext4.img > /dev/null; }
python3 "$HERE/time_pairs.py" --rounds "$N" "${DROP[@]}" --json times.json \
  "fp-bmap=$FP bmap create ext4.img -o out.bmap" \
  "fp-bmap-1-thread=$FP bmap create --threads 1 ext4.img -o out.bmap" \
  "bmaptool=bmaptool -q create ext4.img -o out.bmap" \
  "floor=python3 $HERE/hash_floor.py ext4.img 2 > floor.txt"

"$FP" bmap create ext4.img -o out.bmap --json=fp.json
bmaptool -q create ext4.img -o bt.bmap
SHA=$(openssl speed -evp sha256 -bytes 1048576 -seconds 1 2>/dev/null | awk '/^sha256/ {sub(/k$/, "", $2); print $2}')
python3 - times.json fp.json bt.bmap floor.txt "$SHA" <<'PY'
import json, re, statistics, sys
t = json.load(open(sys.argv[1]))
fp = json.load(open(sys.argv[2]))
bt_mapped = int(re.search(r"<MappedBlocksCount>\s*(\d+)", open(sys.argv[3]).read()).group(1))
floor_bytes = int(open(sys.argv[4]).read())
med = {k: statistics.median(v["wall"]) for k, v in t.items()}
print("| command | median s | runs (s) | peak RSS MiB |")
print("|---|---:|---|---:|")
for k, v in t.items():
    print(f"| {k} | {med[k]:.3f} | {' '.join(f'{w:.2f}' for w in v['wall'])} | {max(v['rss_kib']) / 1024:.0f} |")
print()
vs_bt = med["bmaptool"] / med["fp-bmap"]
vs_floor = med["fp-bmap"] / med["floor"]
goal = max(med["bmaptool"] / 3, 1.1 * med["floor"])
print(f"bmaptool / flashpipe: {vs_bt:.2f}x (goal 3x); flashpipe / floor: {vs_floor:.2f}x (goal 1.1x); "
      f"--threads 1 / default: {med['fp-bmap-1-thread'] / med['fp-bmap']:.2f}x")
print(f"goal (the slower of bmaptool/3 = {med['bmaptool'] / 3:.3f} s and 1.1 x floor = {1.1 * med['floor']:.3f} s): "
      f"{goal:.3f} s: {'met' if med['fp-bmap'] <= goal else 'NOT met'}")
print(f"flashpipe mapped {fp['mapped_blocks'] * 4096 >> 20} MiB in {fp['ranges']} ranges, {fp['segments']} segments; "
      f"bmaptool {bt_mapped * 4096 >> 20} MiB; the floor hashed {floor_bytes >> 20} MiB")
print(f"SHA-256 on this CPU (openssl speed -evp sha256, 1 MiB blocks): {float(sys.argv[5]) / 1e3 if sys.argv[5] else 0:.0f} MB/s")
PY
echo
echo "command: FLASHPIPE=$FP N=$N WARM=${WARM:-0} bash bench/bmap_bench.sh"
