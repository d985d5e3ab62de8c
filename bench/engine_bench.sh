#!/usr/bin/env bash
# Engine vs device ceiling on a loop device with direct I/O, side by side:
# fio's sequential-write ceiling (io_uring, O_DIRECT, 1 MiB, depth 4), then
# engine_bench (ImageWriter fed RAW slices, and a plain O_DIRECT pwrite loop),
# alternating for ROUNDS rounds; prints each figure and the medians.
#   bench/engine_bench.sh BUILD_DIR [MIB] [ROUNDS] [extra engine_bench args...]
# Needs root (losetup). Everything lives in a temp dir removed on exit.
set -euo pipefail
build=${1:?usage: engine_bench.sh BUILD_DIR [MIB] [ROUNDS] [args...]}
mib=${2:-1024}
rounds=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
dir=$(mktemp -d)
loop=""
cleanup() { [ -n "$loop" ] && losetup -d "$loop" || true; rm -rf "$dir"; }
trap cleanup EXIT
fallocate -l $((mib + 64))M "$dir/backing"
loop=$(losetup --direct-io=on -f --show "$dir/backing")
echo "target: $loop (losetup --direct-io=on on a preallocated file), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
fio_cmd="fio --name=w --filename=$loop --rw=write --direct=1 --ioengine=io_uring --bs=1M --iodepth=4 --size=${mib}M"
eng_cmd="$build/engine_bench $loop --mib $mib --rounds 1 --request-size 1048576 $*"
echo "fio:    $fio_cmd"
echo "engine: $eng_cmd"
echo "fio+sync: $fio_cmd --end_fsync=1   (the engine's figure includes its final fdatasync too)"
bw() { python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["write"]["bw"]/1024))'; }
fio_v=(); fis_v=(); eng_v=(); ens_v=(); pw_v=()
for r in $(seq "$rounds"); do
  f=$($fio_cmd --output-format=json | bw)
  fs=$($fio_cmd --end_fsync=1 --output-format=json | bw)
  out=$($eng_cmd 2>/dev/null)
  e=$(echo "$out" | awk '/^engine median/ {print $3}')
  p=$(echo "$out" | awk '/^pwrite median/ {print $3}')
  ens=$(echo "$out" | awk '/^engine-nosync median/ {print $3}')
  echo "round $r: fio $f MiB/s, fio+sync $fs MiB/s, engine $e MiB/s (without its fdatasync $ens), plain pwrite $p MiB/s"
  fio_v+=("$f"); fis_v+=("$fs"); eng_v+=("$e"); ens_v+=("$ens"); pw_v+=("$p")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fm=$(median "${fio_v[@]}"); fsm=$(median "${fis_v[@]}"); em=$(median "${eng_v[@]}"); ensm=$(median "${ens_v[@]}"); pm=$(median "${pw_v[@]}")
pct() { awk "BEGIN {printf \"%.0f\", 100*$1/$2}"; }
echo "median: fio $fm MiB/s, fio+sync $fsm MiB/s, engine $em MiB/s, plain pwrite $pm MiB/s"
echo "engine with fdatasync vs fio+sync: $(pct "$em" "$fsm")%; engine without its fdatasync vs fio: $(pct "$ensm" "$fm")% ($ensm MiB/s)"
echo "engine peak memory: $($eng_cmd 2>/dev/null | grep -o 'peak RSS [0-9]* MiB') (includes the bench's own 8 MiB source buffer)"
