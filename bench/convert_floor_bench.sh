#!/usr/bin/env bash
# img2simg and simg2img against the naive sequential floor (issue 15):
#   floor  = `cat INPUT > /dev/null`, then `dd if=/dev/zero of=OUT bs=1M
#            conv=fsync` of the output's data size (img2simg: the sparse
#            file's size; simg2img: the bytes flashpipe's raw output
#            allocates, its zero fills being holes)
#   AOSP   = /usr/bin/img2simg or /usr/bin/simg2img, then `sync OUT`
# on two images made at run time in a temp dir (removed on exit):
#   super  SIZE_MIB (default 1536) MiB shaped like Android's super, as in
#          write_bench.sh: metadata, two random "partitions", a 0xAA fill
#          region, large zero runs
#   ext4   a 1 GiB ext4 image made with mkfs.ext4 -d from ~330 MiB of files
# simg2img's inputs are AOSP img2simg's outputs of the two images.
# Every timed command starts with the page cache dropped (sync; echo 3 >
# /proc/sys/vm/drop_caches: needs root) and ends with its output on disk
# (flashpipe fsyncs, dd has conv=fsync, AOSP gets `sync OUT`). N rounds
# (default 5), the three contenders in a rotating order inside each round;
# the table shows medians, ratio = floor / flashpipe (>= 1.0 is the goal),
# and flashpipe's peak RSS (GNU time %M, max over runs).
#   FLASHPIPE=build/flashpipe N=5 bash bench/convert_floor_bench.sh
# FP_ARGS_IMG2SIMG / FP_ARGS_SIMG2IMG add flags to flashpipe's commands;
# BASELINE=PATH adds another flashpipe binary (e.g. main's) as a fourth
# contender, so before and after are measured side by side.
set -euo pipefail

FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../build/flashpipe}")
N=${N:-5}
SIZE_MIB=${SIZE_MIB:-1536}
ONLY=${ONLY:-}  # e.g. "super:simg2img" to run one case
for t in /usr/bin/img2simg /usr/bin/simg2img mkfs.ext4 python3 /usr/bin/time cmp; do
  command -v "$t" >/dev/null || { echo "convert_floor_bench: missing $t (scripts/setup.sh installs it)"; exit 1; }
done
[ -w /proc/sys/vm/drop_caches ] || { echo "convert_floor_bench: needs root to drop caches"; exit 1; }

if [ -n "${WORK:-}" ]; then  # WORK=DIR keeps the images there between runs (for profiling)
  mkdir -p "$WORK"; T=$(realpath "$WORK")
else
  T=$(mktemp -d /var/tmp/fp_convert_floor.XXXXXX)
  trap 'rm -rf "$T"' EXIT
fi
cd "$T"
log() { echo "[convert_floor] $*" >&2; }

# ---- images (the same recipe as write_bench.sh)
scale() { echo $(( $1 * SIZE_MIB / 1536 )); }
put() {  # put OFFSET_MIB SIZE_MIB random|fill
  if [ "$3" = fill ]; then head -c "$(( $2 ))M" /dev/zero | tr '\0' '\252' | dd of=super.img bs=1M seek="$1" conv=notrunc status=none
  else head -c "$(( $2 ))M" /dev/urandom | dd of=super.img bs=1M seek="$1" conv=notrunc status=none; fi
}
make_images() {
  log "generating super.img ($SIZE_MIB MiB) and ext4.img (1 GiB) in $T"
  truncate -s "${SIZE_MIB}M" super.img
  put 0 1 random
  put 1 "$(scale 400)" random
  put "$(scale 657)" "$(scale 64)" fill
  put "$(scale 721)" "$(scale 200)" random
  mkdir tree
  for i in $(seq 1 8); do head -c 40M /dev/urandom > "tree/blob$i"; done
  python3 - <<'PY'   # 2000 small files of 0-128 KiB
import os, random
os.mkdir("tree/small")
rnd = random.Random(7)
pool = os.urandom(1 << 20)
for i in range(2000):
    n = rnd.randrange(0, 128 << 10)
    off = rnd.randrange(0, (1 << 20) - n)
    with open(f"tree/small/f{i}", "wb") as f:
        f.write(pool[off:off + n])
PY
  mkfs.ext4 -q -F -b 4096 -d tree ext4.img 1G > /dev/null
  rm -rf tree
  # A raw image's zero runs are written as data (like an image that came from
  # `dd` of a device), so every contender reads the whole input from disk;
  # HOLES=1 keeps the holes truncate and mkfs.ext4 leave.
  for img in super ext4; do
    [ "${HOLES:-0}" = 1 ] || { cp --sparse=never "$img.img" "$img.full" && mv "$img.full" "$img.img"; }
    /usr/bin/img2simg "$img.img" "$img.simg"
  done
}
[ -f ext4.simg ] || make_images

# ---- what each case reads and writes
input_of() { if [ "$2" = img2simg ]; then echo "$1.img"; else echo "$1.simg"; fi; }
output_of() { if [ "$2" = img2simg ]; then echo "$T/out.simg"; else echo "$T/out.raw"; fi; }
declare -A DATA
for img in super ext4; do
  for tool in img2simg simg2img; do
    out=$(output_of "$img" "$tool")
    # shellcheck disable=SC2086
    if [ "$tool" = img2simg ]; then "$FP" img2simg ${FP_ARGS_IMG2SIMG:-} "$img.img" "$out"
    else "$FP" simg2img ${FP_ARGS_SIMG2IMG:-} "$img.simg" "$out"; fi
    if [ "$tool" = img2simg ]; then
      DATA[$img:$tool]=$(stat -c %s "$out")
      # Not byte-identical to AOSP 29.0.6's when a RAW run exceeds 64 MiB (flashpipe
      # splits it, as upstream libsparse does: docs/sparse_format.md); the expansion is.
      cmp -s "$out" "$img.simg" && same="identical to AOSP's" || same="not byte-identical to AOSP's (64 MiB RAW cap)"
      /usr/bin/simg2img "$out" check.raw
      cmp -s check.raw "$img.img" && same+=", AOSP simg2img expands it to the raw image" || same+=", EXPANDS WRONG"
      rm -f check.raw
    else
      DATA[$img:$tool]=$(( $(stat -c %b "$out") * $(stat -c %B "$out") ))
      cmp -s "$out" "$img.img" && same="identical to the raw image" || same="DIFFERENT from the raw image"
    fi
    log "$img $tool: output $(stat -c %s "$out") bytes, data ${DATA[$img:$tool]} bytes, $same"
    rm -f "$out"
  done
done

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
RESULTS=$T/results.tsv
: > "$RESULTS"
run() {  # run IMAGE TOOL CONTENDER
  local img=$1 tool=$2 who=$3 in out t0 t1 t2 rss=0 extra=""
  in=$(input_of "$img" "$tool")
  out=$(output_of "$img" "$tool")
  rm -f "$out"
  drop
  t0=$(now)
  case $who in
    flashpipe|baseline)
      local bin=$FP args
      [ "$who" = baseline ] && bin=$BASELINE
      if [ "$tool" = img2simg ]; then args=${FP_ARGS_IMG2SIMG:-}; else args=${FP_ARGS_SIMG2IMG:-}; fi
      # shellcheck disable=SC2086
      /usr/bin/time -f %M -o rss.txt "$bin" "$tool" $args "$in" "$out"
      rss=$(cat rss.txt)
      t1=$(now) ;;
    floor)
      cat "$in" > /dev/null
      t1=$(now)
      dd if=/dev/zero of="$out" bs=1M iflag=count_bytes count="${DATA[$img:$tool]}" conv=fsync status=none ;;
    aosp)
      "/usr/bin/$tool" "$in" "$out" > /dev/null
      sync "$out"
      t1=$(now) ;;
  esac
  t2=$(now)
  [ "$who" = floor ] && extra=$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {printf "%.3f %.3f", b - a, c - b}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$img" "$tool" "$who" \
    "$(awk -v a="$t0" -v b="$t2" 'BEGIN {printf "%.3f", b - a}')" "$rss" "$extra" >> "$RESULTS"
  rm -f "$out"
}

WHO=(flashpipe floor aosp)
[ -n "${BASELINE:-}" ] && { BASELINE=$(realpath "$BASELINE"); WHO+=(baseline); }
log "host: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
for round in $(seq 1 "$N"); do
  log "round $round of $N (load $(cut -d' ' -f1 /proc/loadavg))"
  for img in super ext4; do
    for tool in img2simg simg2img; do
      [ -n "$ONLY" ] && [ "$ONLY" != "$img:$tool" ] && continue
      for k in "${!WHO[@]}"; do run "$img" "$tool" "${WHO[$(( (k + round) % ${#WHO[@]} ))]}"; done
    done
  done
done

echo "== convert floor bench: $N rounds, medians, caches dropped before each run, outputs fsynced"
echo "   host: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r), $(df -hT "$T" | awk 'NR==2 {print $2 " on " $1}')"
echo "   images: super $(stat -c %s super.img) bytes, ext4 $(stat -c %s ext4.img) bytes;" \
  "sparse: super $(stat -c %s super.simg), ext4 $(stat -c %s ext4.simg)"
echo "   flashpipe: $FP {img2simg ${FP_ARGS_IMG2SIMG:-}IMG.img|simg2img ${FP_ARGS_SIMG2IMG:-}IMG.simg} OUT"
echo "   floor:     cat IN > /dev/null; dd if=/dev/zero of=OUT bs=1M iflag=count_bytes count=DATA conv=fsync"
echo "   AOSP:      /usr/bin/{img2simg,simg2img} IN OUT; sync OUT"
[ -n "${BASELINE:-}" ] && echo "   baseline:  $BASELINE (same arguments as flashpipe)"
python3 - "$RESULTS" "${DATA[super:img2simg]}" "${DATA[super:simg2img]}" "${DATA[ext4:img2simg]}" \
  "${DATA[ext4:simg2img]}" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
data = dict(zip(["super:img2simg", "super:simg2img", "ext4:img2simg", "ext4:simg2img"], sys.argv[2:]))
runs = {}
for img, tool, who, wall, rss, extra in rows:
    runs.setdefault((img, tool, who), []).append((float(wall), int(rss), extra))
med = lambda xs: statistics.median(xs)
base = any(k[2] == "baseline" for k in runs)
print("| image | tool | output data MiB | flashpipe s | floor s (cat + dd) | AOSP s | floor / flashpipe | AOSP / flashpipe | flashpipe peak RSS MiB |"
      + (" baseline s | floor / baseline |" if base else ""))
print("|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if base else ""))
for img in ("super", "ext4"):
    for tool in ("img2simg", "simg2img"):
        if (img, tool, "flashpipe") not in runs: continue
        fp, fl, ao = (runs[(img, tool, w)] for w in ("flashpipe", "floor", "aosp"))
        f, l, a = med(r[0] for r in fp), med(r[0] for r in fl), med(r[0] for r in ao)
        cat = med(float(r[2].split()[0]) for r in fl)
        dd = med(float(r[2].split()[1]) for r in fl)
        rss = max(r[1] for r in fp) / 1024
        print(f"| {img} | {tool} | {int(data[img + ':' + tool]) / 2**20:.0f} | {f:.2f} | {l:.2f} ({cat:.2f} + {dd:.2f}) | "
              f"{a:.2f} | {l / f:.2f} | {a / f:.2f} | {rss:.1f} |", end="")
        if base:
            b = med(r[0] for r in runs[(img, tool, "baseline")])
            print(f" {b:.2f} | {l / b:.2f} |", end="")
        print()
print()
print("runs (s):")
for (img, tool, who), rs in sorted(runs.items()):
    print(f"  {img} {tool} {who}: " + " ".join(f"{r[0]:.2f}" for r in rs))
PY
