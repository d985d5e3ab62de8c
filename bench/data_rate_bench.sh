#!/usr/bin/env bash
# Data rate of `flashpipe write` against fio on the same loop device, for an
# image that is all data (random bytes, raw): what the engine reaches when
# there is nothing to skip or zero. Both include their final flush: flashpipe
# its fdatasync, fio end_fsync=1 (job_runtime). fio: --rw=write --bs=1M
# --iodepth=4 --ioengine=io_uring --direct=1. N interleaved rounds, medians.
#   FLASHPIPE=build/flashpipe N=5 SIZE_MIB=1024 bash bench/data_rate_bench.sh
set -euo pipefail
FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../build/flashpipe}")
N=${N:-5}
SIZE_MIB=${SIZE_MIB:-1024}
for t in fio losetup python3; do command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 0; }; done
T=$(mktemp -d /var/tmp/fp_rate_bench.XXXXXX)
LOOP=""
cleanup() { [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true; rm -rf "$T"; }
trap cleanup EXIT
head -c "$((SIZE_MIB << 20))" /dev/urandom >"$T/rand.raw"
truncate -s "$(((SIZE_MIB + 64) << 20))" "$T/disk.img"
LOOP=$(losetup --direct-io=on -f --show "$T/disk.img")
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
fp="" fio_t=""
for _ in $(seq "$N"); do
  s=$(date +%s.%N)
  "$FP" write --force --no-progress "$T/rand.raw" "$LOOP" >/dev/null
  e=$(date +%s.%N)
  fp+="$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.3f", b-a}') "
  fio_t+="$(fio --name=w --filename="$LOOP" --rw=write --bs=1M --iodepth=4 --ioengine=io_uring --direct=1 \
    --size="${SIZE_MIB}M" --end_fsync=1 --output-format=json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin); print('%.3f' % (j['jobs'][0]['job_runtime']/1000.0))") "
done
FPM=$(echo "$fp" | median); FIOM=$(echo "$fio_t" | median)
echo "image: $SIZE_MIB MiB of random bytes (raw); device $LOOP (loop, direct I/O)"
printf "flashpipe write  %7.3f s  %6.0f MB/s  (runs: %s) wall time, process start included\n" "$FPM" \
  "$(awk -v m="$SIZE_MIB" -v t="$FPM" 'BEGIN {print m*1048576/t/1e6}')" "$fp"
printf "fio              %7.3f s  %6.0f MB/s  (runs: %s) job_runtime\n" "$FIOM" \
  "$(awk -v m="$SIZE_MIB" -v t="$FIOM" 'BEGIN {print m*1048576/t/1e6}')" "$fio_t"
awk -v a="$FPM" -v b="$FIOM" 'BEGIN {printf "flashpipe data rate = %.0f %% of fio'"'"'s (goal >= 90 %%)\n", 100*b/a}'
echo "command: FLASHPIPE=$FLASHPIPE N=$N SIZE_MIB=$SIZE_MIB bash bench/data_rate_bench.sh"
