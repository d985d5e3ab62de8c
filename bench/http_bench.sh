#!/usr/bin/env bash
# Images from a URL (issue 23): Debian's nginx on loopback with `limit_rate
# 100m` (100 MB/s per connection, standing for a lab network), a 1 GiB raw
# ext4 image with ~200 MiB of files, its bmap and a zstd copy, written to a
# loop device with direct I/O. Side by side in one run (bench/time_pairs.py:
# rounds alternate the commands, whole-process wall time, medians, ratios
# paired round by round):
#   ranges   flashpipe write URL LOOP       vs  bmaptool copy URL LOOP          (goal >= 3x)
#            (--no-cache, so every round fetches; one connection, so both get
#            the same 100 MB/s, and the default 4 connections besides)
#   zstd     flashpipe write URL.zst LOOP   vs  curl -s URL.zst | flashpipe write - LOOP   (goal >= 1.0x)
#   cache    flashpipe write URL LOOP from a warm cache  vs  flashpipe write FILE LOOP  (goal <= 1.1x)
#   fleet    flashpipe write URL LOOP1..LOOP4 (one run), and four runs at once
#            on a cold cache: the bytes nginx sent, against one download
#
#   FLASHPIPE=build/flashpipe N=3 bash bench/http_bench.sh
#   CASES="ranges zstd cache fleet" ...
# Needs root (loop devices). Everything lives in a temp dir removed on exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
FP=$(realpath "${FLASHPIPE:-$HERE/../build/flashpipe}")
N=${N:-3}
CASES=${CASES:-"ranges zstd cache fleet"}
for t in nginx curl bmaptool mkfs.ext4 zstd losetup python3 jq; do
  command -v "$t" >/dev/null || { echo "http_bench: missing $t (scripts/setup.sh installs it)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "http_bench: needs root (loop devices)"; exit 1; }

T=$(mktemp -d /var/tmp/fp_http_bench.XXXXXX)
LOOPS=()
FLASHPIPE_SOURCE_DIR=$HERE/..
source "$HERE/../tests/e2e/http_lib.sh"
cleanup() {
  http_cleanup
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
loop() {  # a loop device with direct I/O over a new 1 GiB file
  fallocate -l 1G "$T/$1.back"
  local d
  d=$(losetup --direct-io=on --find --show "$T/$1.back")
  LOOPS+=("$d")
  echo "$d"
}

echo "# http_bench: $(date -u +%F), $(nproc) cores, load: $(uptime | sed 's/.*load average: //')"
mkdir -p www tree
for i in $(seq 1 40); do head -c $((5 << 20)) /dev/urandom > tree/f$i; done   # 200 MiB of files
mkfs.ext4 -q -F -b 4096 -d tree www/disk.img 1G
bmaptool -q create www/disk.img -o www/disk.img.bmap
zstd -q -T0 -3 www/disk.img -o www/disk.img.zst
rm -rf tree
MAPPED=$(python3 -c 'import re; t=open("www/disk.img.bmap").read(); print(int(re.search(r"<MappedBlocksCount>\s*(\d+)", t).group(1))*4096)')
echo "# image: 1 GiB ext4, $((MAPPED >> 20)) MiB mapped; zstd $(( $(stat -c %s www/disk.img.zst) >> 20 )) MiB"
start_nginx "$T/www" "limit_rate 100m;"
U=http://127.0.0.1:$NGINX_PORT
L=$(loop target)
pairs() { python3 "$HERE/time_pairs.py" --rounds "$N" "$@"; }

for c in $CASES; do
  case $c in
    ranges)
      echo "## ranges: raw + bmap, bmaptool copy URL vs flashpipe write URL"
      pairs --baseline bmaptool \
        "bmaptool=bmaptool -q copy $U/disk.img $L" \
        "flashpipe_1conn=$FP write --no-progress --no-cache --connections 1 $U/disk.img $L" \
        "flashpipe=$FP write --no-progress --no-cache $U/disk.img $L"
      ;;
    zstd)
      echo "## zstd: curl | flashpipe write - vs flashpipe write URL.zst"
      pairs --baseline pipe \
        "pipe=curl -s $U/disk.img.zst | $FP write --no-progress - $L" \
        "flashpipe_1conn=$FP write --no-progress --no-cache --connections 1 $U/disk.img.zst $L" \
        "flashpipe=$FP write --no-progress --no-cache $U/disk.img.zst $L"
      ;;
    cache)
      echo "## cache: a warm cache vs the local file"
      "$FP" write --no-progress --cache "$T/cache" "$U/disk.img" "$L"
      pairs --baseline local --drop www/disk.img \
        "local=$FP write --no-progress www/disk.img $L" \
        "cached=$FP write --no-progress --cache $T/cache $U/disk.img $L"
      ;;
    fleet)
      echo "## fleet: four devices from one URL, cold cache"
      L2=$(loop t2); L3=$(loop t3); L4=$(loop t4)
      : >"$NGINX_LOG"
      t0=$(date +%s.%N)
      "$FP" write --no-progress --cache "$T/fleet1" "$U/disk.img" "$L" "$L2" "$L3" "$L4"
      t1=$(date +%s.%N)
      echo "one run, four targets: $(python3 -c "print(f'{$t1-$t0:.2f}')") s, nginx sent $(( $(served_bytes "$NGINX_LOG" 2) >> 20 )) MiB (mapped $((MAPPED >> 20)) MiB)"
      : >"$NGINX_LOG"
      t0=$(date +%s.%N)
      pids=()
      for d in "$L" "$L2" "$L3" "$L4"; do
        "$FP" write --no-progress --cache "$T/fleet2" --json="$T/fleet-$(basename "$d").json" "$U/disk.img" "$d" & pids+=($!)
      done
      for p in "${pids[@]}"; do wait "$p"; done
      t1=$(date +%s.%N)
      shared=$(jq -s '[.[] | select(.download.shared)] | length' "$T"/fleet-*.json)
      echo "four runs at once: $(python3 -c "print(f'{$t1-$t0:.2f}')") s, nginx sent $(( $(served_bytes "$NGINX_LOG" 2) >> 20 )) MiB (mapped $((MAPPED >> 20)) MiB), $shared of 4 followed another run's download"
      ;;
  esac
done
