#!/usr/bin/env bash
# Local flashing speed: `flashpipe write` against simg2img + sync, bmaptool
# copy, dd oflag=direct bs=4M, and fio's sequential-write ceiling on the same
# target (--direct=1 --ioengine=io_uring --bs=1M --iodepth=4), on
#   super  a SIZE_MIB (default 1536) MiB image shaped like Android's super:
#          metadata, two random "partitions", a 0xAA fill region, large zero runs
#   ext4   a 1 GiB ext4 image made with mkfs.ext4 -d (~320 MiB of files)
# each written to a loop device with direct I/O on and to a regular file.
# Images are generated at run time in a temp dir and removed afterwards; the
# source files are read once before timing (page-cached for every tool alike).
# N interleaved rounds (default 3); the table shows medians.
#   FLASHPIPE=build/flashpipe N=3 bash bench/write_bench.sh
set -euo pipefail

HERE=$(realpath "$(dirname "$0")")
FP=$(realpath "${FLASHPIPE:-$HERE/../build/flashpipe}")
N=${N:-3}
SIZE_MIB=${SIZE_MIB:-1536}
for t in simg2img img2simg bmaptool fio mkfs.ext4 losetup python3 /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "write_bench: missing $t (scripts/setup.sh installs it)"; exit 1; }
done

T=$(mktemp -d /var/tmp/fp_write_bench.XXXXXX)
LOOP=""
cleanup() {
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
log() { echo "[write_bench] $*" >&2; }

# ---- images
scale() { echo $(( $1 * SIZE_MIB / 1536 )); }
put() {  # put OFFSET_MIB SIZE_MIB random|fill
  local src=/dev/urandom
  if [ "$3" = fill ]; then head -c "$(( $2 ))M" /dev/zero | tr '\0' '\252' | dd of=super.img bs=1M seek="$1" conv=notrunc status=none
  else head -c "$(( $2 ))M" "$src" | dd of=super.img bs=1M seek="$1" conv=notrunc status=none; fi
}
log "generating super.img ($SIZE_MIB MiB) and ext4.img (1 GiB)"
GEN_START=$(date +%s)
truncate -s "${SIZE_MIB}M" super.img
put 0 1 random                                       # metadata
put 1 "$(scale 400)" random                          # system
put "$(scale 657)" "$(scale 64)" fill                # a filled region
put "$(scale 721)" "$(scale 200)" random             # vendor
img2simg super.img super.simg
bmaptool create super.img > super.bmap 2>/dev/null
bash "$HERE/make_ext4_image.sh" ext4.img
img2simg ext4.img ext4.simg
bmaptool create ext4.img > ext4.bmap 2>/dev/null
cat super.img super.simg ext4.img ext4.simg > /dev/null   # warm the page cache for every tool alike

truncate -s "$(( (SIZE_MIB > 1024 ? SIZE_MIB : 1024) + 64 ))M" loop.bin
LOOP=$(losetup --direct-io=on --find --show loop.bin)
log "images ready in $(( $(date +%s) - GEN_START )) s"
log "loop device $LOOP (direct I/O on) over $T/loop.bin; file target $T/out.img"

# ---- one timed run: run IMAGE TARGETKIND TOOL
RESULTS=$T/results.tsv
: > "$RESULTS"
target_path() { if [ "$1" = loop ]; then echo "$LOOP"; else echo "$T/out.img"; fi; }
command_for() {  # command_for IMAGE TOOL TARGET
  local img=$1 tool=$2 dst=$3
  case $tool in
    flashpipe) echo "$FP write --no-progress --json $img.simg $dst > fp.json" ;;
    flashpipe-bmap) echo "$FP write --no-progress --json --bmap $img.bmap $img.img $dst > fp.json" ;;
    flashpipe-no-digest) echo "$FP write --no-progress --json --no-digest $img.simg $dst > fp.json" ;;
    simg2img+sync) echo "simg2img $img.simg $dst && sync" ;;
    bmaptool) echo "bmaptool -q copy --bmap $img.bmap $img.img $dst" ;;
    dd) echo "dd if=$img.img of=$dst oflag=direct bs=4M status=none" ;;
    fio) echo "fio --name=ceiling --filename=$dst --rw=write --bs=1M --iodepth=4 --direct=1 --ioengine=io_uring --size=$(stat -c %s "$img.img") --output-format=json > fio.json" ;;
  esac
}
run() {
  local img=$1 kind=$2 tool=$3 dst cmd
  dst=$(target_path "$kind")
  [ "$kind" = file ] && rm -f "$dst"
  cmd=$(command_for "$img" "$tool" "$dst")
  sync
  /usr/bin/time -f "%e %U %S %M" -o time.txt bash -c "$cmd" 2>err.txt || { log "FAILED: $cmd: $(cat err.txt)"; return 1; }
  local extra=""
  if [[ $tool == flashpipe* ]]; then
    extra=$(python3 -c 'import json;d=json.load(open("fp.json"));print(d["bytes_written"], d["phases"]["digest"] or 0, d["digest_mib_per_s"] or 0, sep=",")')
  fi
  if [ "$tool" = fio ]; then extra=$(python3 -c 'import json;print(json.load(open("fio.json"))["jobs"][0]["write"]["bw_bytes"])'); fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$img" "$kind" "$tool" "$(cat time.txt)" "$extra" >> "$RESULTS"
}

TOOLS="flashpipe flashpipe-no-digest flashpipe-bmap simg2img+sync bmaptool dd fio"
for round in $(seq 1 "$N"); do
  log "round $round of $N"
  for img in super ext4; do
    for kind in loop file; do
      for tool in $TOOLS; do run "$img" "$kind" "$tool"; done
    done
  done
done

# ---- table
python3 - "$RESULTS" "$(stat -c %s super.img)" "$(stat -c %s ext4.img)" "$N" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
size = {"super": int(sys.argv[2]), "ext4": int(sys.argv[3])}
runs = {}
for img, kind, tool, t, extra in rows:
    wall, user, sys_, rss = t.split()
    runs.setdefault((img, kind, tool), []).append((float(wall), float(user) + float(sys_), int(rss), extra))
MiB, GiB = 1 << 20, 1 << 30
waits = {}
for (img, kind, tool), rs in runs.items():
    if tool in ("flashpipe", "flashpipe-bmap"):
        w = [float(r[3].split(",")[1]) for r in rs]
        rate = [float(r[3].split(",")[2]) for r in rs]
        waits[(img, kind, tool)] = (statistics.median(w), statistics.median(rate))
print(f"| image | target | tool | median s | image MiB/s | vs flashpipe | data MiB/s | peak RSS MiB | CPU s/GiB |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for img in ("super", "ext4"):
    for kind in ("loop", "file"):
        base = statistics.median(r[0] for r in runs[(img, kind, "flashpipe")])
        for tool in ("flashpipe", "flashpipe-no-digest", "flashpipe-bmap", "simg2img+sync", "bmaptool", "dd", "fio"):
            rs = runs[(img, kind, tool)]
            wall = statistics.median(r[0] for r in rs)
            cpu = statistics.median(r[1] for r in rs)
            rss = max(r[2] for r in rs) / 1024
            data = ""
            if tool.startswith("flashpipe"):
                data = f"{statistics.median(int(r[3].split(',')[0]) / r[0] for r in rs) / MiB:.0f}"
            if tool == "fio":
                data = f"{statistics.median(int(r[3]) for r in rs) / MiB:.0f} (ceiling)"
            print(f"| {img} | {kind} | {tool} | {wall:.2f} | {size[img] / wall / MiB:.0f} | "
                  f"{wall / base:.2f}x | {data} | {rss:.0f} | {cpu / (size[img] / GiB):.2f} |")
print()
print("| image | target | tool | waited for the digest, median s | digest MiB/s (zeros included) |")
print("|---|---|---|---:|---:|")
for (img, kind, tool), (w, rate) in sorted(waits.items()):
    print(f"| {img} | {kind} | {tool} | {w:.2f} | {rate:.0f} |")
PY
echo
echo "SHA-256 on this CPU (openssl speed -evp sha256, 1 MiB blocks, one thread): $(openssl speed -seconds 2 -bytes 1048576 -evp sha256 2>/dev/null | awk '/^sha256/ {printf "%.0f MB/s", $2 / 1000}')"
echo "command: FLASHPIPE=$FP N=$N SIZE_MIB=$SIZE_MIB bash bench/write_bench.sh"
echo "image MiB/s = image size / wall time; data MiB/s = bytes flashpipe wrote (RAW+FILL data, not zeroout) / wall time;"
echo "vs flashpipe = wall time / flashpipe's wall time on the same image and target; RSS = max over runs (GNU time %M)."
