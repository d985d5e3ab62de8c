#!/usr/bin/env bash
# `fastboot flashall` of dynamic partitions into `flashpipe serve`: the stock
# client (29.0.6) over TCP loopback flashes a product folder whose logical
# partitions (system, vendor, product: ext4 images made with mkfs.ext4 -d,
# about 80% random files, >= 1.5 GiB of images in all) go into the super of a GPT disk
# on a loop device (--direct-io=on). Compared: the client's "Writing" times of
# the logical partitions, summed, against fio writing the same number of
# bytes (the images' sizes: the client sends every block, as RAW or FILL) to
# the same loop device at the super's offset (goal <= 1.25x). Also printed:
# the whole flashall (update-super, resizes, boot and vbmeta included).
# Medians of RUNS.
#   bench/flashall_bench.sh [RUNS]   (env FLASHPIPE=path/to/flashpipe, TOTAL_MIB=1536)
set -euo pipefail
cd "$(dirname "$0")/.."
FLASHPIPE=${FLASHPIPE:-build/flashpipe}
RUNS=${1:-3}
TOTAL_MIB=${TOTAL_MIB:-1536}
for t in fastboot fio losetup sgdisk mkfs.ext4 python3; do
  command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 0; }
done
work=$(mktemp -d -p "${BENCH_DIR:-/var/tmp}")
daemon_pid=""; loopdev=""
cleanup() {
  [ -n "$daemon_pid" ] && { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
  [ -n "$loopdev" ] && losetup -d "$loopdev"
  rm -rf "$work"
}
trap cleanup EXIT

# Sizes in MiB: system 2/3, vendor 1/4, product the rest.
sys_mib=$((TOTAL_MIB * 2 / 3)); ven_mib=$((TOTAL_MIB / 4)); prod_mib=$((TOTAL_MIB - sys_mib - ven_mib))
out="$work/product"
mkdir -p "$out"
echo "== generating ext4 images: system ${sys_mib} MiB, vendor ${ven_mib} MiB, product ${prod_mib} MiB in $work"
make_fs() {  # name MiB: random files of 4 MiB filling about 80% of the filesystem
  local root="$work/root.$1" files=$(( $2 * 8 / 10 / 4 ))
  mkdir -p "$root"
  python3 - "$root" "$files" <<'PY'
import os, sys
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "f%05d" % i), "wb") as f:
        f.write(os.urandom(4 << 20))
PY
  mkfs.ext4 -q -F -b 4096 -m 0 -d "$root" "$out/$1.img" "${2}M" >"$work/mkfs.log" 2>&1 ||
    { echo "mkfs.ext4 $1: $(cat "$work/mkfs.log")"; exit 1; }
  rm -rf "$root"
}
make_fs system $sys_mib
make_fs vendor $ven_mib
make_fs product $prod_mib
head -c 8M /dev/urandom >"$out/boot.img"
head -c 64K /dev/urandom >"$out/vbmeta.img"
echo "require board=flashpipe" >"$out/android-info.txt"
data_bytes=$(( (sys_mib + ven_mib + prod_mib) << 20 ))
super_mib=$((TOTAL_MIB + 64))
"$FLASHPIPE" lp make -d "${super_mib}M" -m 64K -s 2 -g main_a:$((TOTAL_MIB + 16))M -g main_b:0 \
  -p system_a:readonly:0:main_a -p vendor_a:readonly:0:main_a -p product_a:readonly:0:main_a \
  -p system_b:readonly:0:main_b -p vendor_b:readonly:0:main_b -p product_b:readonly:0:main_b \
  -o "$out/super_empty.img"

# GPT: boot_a/b 16 MiB, vbmeta_a/b 1 MiB, super.
truncate -s $((super_mib + 64))M "$work/disk.img"
super_first=$(( (2048 + 2 * 32768 + 2 * 2048) ))
sgdisk -a 1 -n 1:2048:+16M -c 1:boot_a -n 2:0:+16M -c 2:boot_b -n 3:0:+1M -c 3:vbmeta_a -n 4:0:+1M -c 4:vbmeta_b \
  -n "5:$super_first:+${super_mib}M" -c 5:super "$work/disk.img" >/dev/null
loopdev=$(losetup --direct-io=on -f --show "$work/disk.img")
echo "device $loopdev (direct I/O); logical images $data_bytes bytes"

PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$FLASHPIPE" serve --storage "$loopdev" --tcp "127.0.0.1:$PORT" --state "$work/state" \
  >"$work/daemon.out" 2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 50); do grep -q listening "$work/daemon.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/daemon.out" || { echo "daemon failed: $(cat "$work/daemon.log")"; exit 1; }

sum_logical() {
  grep -E "^Writing '(system|vendor|product)_a'" "$work/fb.out" | sed -n 's/.*OKAY \[ *\([0-9.]*\)s\].*/\1/p' |
    awk '{s+=$1} END {printf "%.3f", s}'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }

echo "== flashall ($RUNS runs, medians)"
w=""; a=""
for _ in $(seq "$RUNS"); do
  t0=$(now)
  ANDROID_PRODUCT_OUT=$out timeout 900 fastboot -s "tcp:127.0.0.1:$PORT" flashall >"$work/fb.out" 2>&1 ||
    { cat "$work/fb.out"; exit 1; }
  t1=$(now)
  grep -q "Writing 'system_a'" "$work/fb.out" || { cat "$work/fb.out"; exit 1; }
  w+="$(sum_logical) "; a+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b-a}') "
done
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""
W=$(echo "$w" | median); A=$(echo "$a" | median)
printf "%-10s logical writing-sum %8.3f s   whole flashall %8.3f s   (runs: writing %s; whole %s)\n" flashall "$W" "$A" "$w" "$a"

f=""
for _ in $(seq "$RUNS"); do
  f+="$(fio --name=w --filename="$loopdev" --rw=write --bs=1M --iodepth=4 --ioengine=io_uring --direct=1 \
    --offset=$((super_first * 512 + (1 << 20))) --size="$data_bytes" --end_fsync=1 --output-format=json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin); print('%.3f' % (j['jobs'][0]['job_runtime']/1000.0))") "
done
FIO=$(echo "$f" | median)
printf "%-10s %8.3f s for %s bytes (bs=1M iodepth=4 io_uring direct, end_fsync)  (runs: %s)\n" fio "$FIO" "$data_bytes" "$f"
awk -v w="$W" -v f="$FIO" 'BEGIN {printf "logical writing-sum / fio = %.2fx (goal <= 1.25x)\n", w/f}'
