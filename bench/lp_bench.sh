#!/usr/bin/env bash
# `flashpipe lp make --sparse` of ext4 partition images against reading the
# same images once, both from a cold page cache (echo 3 > drop_caches before
# each run): the goal is lp make within 1.2x of `cat IMAGES > /dev/null`,
# with a peak RSS under 64 MiB (/usr/bin/time -v). A second baseline reads
# them with 16 MiB requests (dd), the fastest single sequential read: cat's
# 128 KiB reads leave the disk idle between requests, lp make reads 16 MiB
# ahead (POSIX_FADV_WILLNEED), so under load cat can be the slower of the two. lp make's time includes
# writing the sparse super and its fsync (the output is committed by rename).
# The images (system, vendor, product; TOTAL_MIB in all, ext4 made with
# mkfs.ext4 -d from random and text files filling ~80 % of each) are made in
# a temp dir at start. N interleaved rounds; medians.
#   sudo FLASHPIPE=build/flashpipe N=5 TOTAL_MIB=1600 bash bench/lp_bench.sh
set -euo pipefail
FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../build/flashpipe}")
N=${N:-5}
TOTAL_MIB=${TOTAL_MIB:-1600}
for t in mkfs.ext4 python3 /usr/bin/time; do command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 0; }; done
[ -w /proc/sys/vm/drop_caches ] || { echo "SKIP: needs root to drop the page cache"; exit 0; }
T=$(mktemp -d /var/tmp/fp_lp_bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T"

# name:share of TOTAL_MIB (percent)
parts=(system:56 vendor:25 product:19)
imgs=() pflags=() iflags=()
for p in "${parts[@]}"; do
  name=${p%%:*} mib=$(( TOTAL_MIB * ${p##*:} / 100 ))
  mkdir -p "src_$name/bin" "src_$name/etc"
  # ~80 % full: half random (incompressible), half text (fills, data runs).
  head -c $(( mib * 2 / 5 << 20 )) /dev/urandom > "src_$name/bin/blob"
  python3 -c "
import sys
with open('src_$name/etc/text.txt', 'w') as f:
    line = 'flashpipe lp bench: a line of text in a file of $name\n'
    f.write(line * ($mib * 2 // 5 * 1048576 // len(line)))"
  mkfs.ext4 -q -F -b 4096 -d "src_$name" "$name.img" "${mib}M"
  rm -rf "src_$name"
  imgs+=("$name.img") pflags+=(-p "$name:readonly:0:main") iflags+=(-i "$name=$name.img")
done
total_bytes=$(du -cb "${imgs[@]}" | tail -1 | cut -f1)
data_bytes=$(du -c --block-size=1 "${imgs[@]}" | tail -1 | cut -f1)
dev_mib=$(( TOTAL_MIB + 64 ))

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
cat_t="" dd_t="" make_t="" rss=""
for _ in $(seq "$N"); do
  cold
  s=$(now); cat "${imgs[@]}" > /dev/null; e=$(now)
  cat_t+="$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.3f", b-a}') "
  cold
  s=$(now); for i in "${imgs[@]}"; do dd if="$i" of=/dev/null bs=16M status=none; done; e=$(now)
  dd_t+="$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.3f", b-a}') "
  rm -f super.simg
  cold
  s=$(now)
  /usr/bin/time -v -o time.txt "$FP" lp make --device-size "${dev_mib}M" --metadata-size 64K --metadata-slots 2 \
    --group "main:${TOTAL_MIB}M" "${pflags[@]}" "${iflags[@]}" --sparse -o super.simg
  e=$(now)
  make_t+="$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.3f", b-a}') "
  rss+="$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' time.txt) "
done
out_bytes=$(stat -c %s super.simg)
CATM=$(echo "$cat_t" | median); DDM=$(echo "$dd_t" | median); MAKEM=$(echo "$make_t" | median); RSSM=$(echo "$rss" | median)
RSSMAX=$(echo "$rss" | tr ' ' '\n' | grep -v '^$' | sort -g | tail -1)
echo "images: ${imgs[*]}: $total_bytes bytes ($((total_bytes >> 20)) MiB), $data_bytes on disk (holes excluded)"
echo "output: sparse super of ${dev_mib} MiB, $out_bytes bytes; $N rounds, cold page cache each run"
printf "cat IMAGES > /dev/null   %7.3f s  (runs: %s)\n" "$CATM" "$cat_t"
printf "dd bs=16M of=/dev/null   %7.3f s  (runs: %s)\n" "$DDM" "$dd_t"
printf "flashpipe lp make -S     %7.3f s  (runs: %s)\n" "$MAKEM" "$make_t"
awk -v a="$MAKEM" -v b="$CATM" -v c="$DDM" 'BEGIN {printf "lp make = %.2fx the time cat takes to read the images once (goal <= 1.2x), %.2fx dd bs=16M'"'"'s\n", a/b, a/c}'
echo "peak RSS of lp make: median $RSSM KiB, max $RSSMAX KiB (goal < 65536 KiB)  (runs: $rss)"
echo "command: FLASHPIPE=$FP N=$N TOTAL_MIB=$TOTAL_MIB bash bench/lp_bench.sh"
