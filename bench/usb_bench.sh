#!/usr/bin/env bash
# fastboot over USB against TCP loopback, measured inside the VM of tests/vm
# (Debian 6.1 under QEMU TCG, dummy_hcd at SuperSpeed), all in one VM run:
#   usb-wb:   flash over USB with --write-behind, until a final getvar (which
#             waits for the writes and their sync);
#   usb-send: the same with --write-model discard: sending alone (goal: usb-wb
#             within 1.2x of it);
#   tcp-wb:   the same flash over TCP loopback in the same VM (goal: USB no
#             slower than TCP).
# Image: 256 MiB super-like (random data, zero runs, fills), sparse, split
# by the client into parts of up to 32 MiB (max-download-size 32M: one
# download could not overlap anything, write-behind needs parts), to a file
# in the guest's tmpfs.
# Reports medians of RUNS interleaved runs, ratios, and the daemon's CPU
# seconds (user + system, from /proc) per GiB sent. TCG makes every figure
# slow; only the ratios carry over.
#   FLASHPIPE=build/flashpipe bash bench/usb_bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
FLASHPIPE=${FLASHPIPE:-build/flashpipe}
RUNS=${1:-3}
source tests/vm/vm_lib.sh
for t in qemu-system-x86_64 busybox img2simg python3; do command -v $t >/dev/null || { echo "FAIL: $t missing"; exit 1; }; done
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work/img.raw" <<'PY'
import os, sys
# Per 16 MiB: 8 MiB random, 4 MiB zeros, 2 MiB fill, 2 MiB random.
with open(sys.argv[1], "wb") as f:
    for i in range(16):
        f.write(os.urandom(8 << 20)); f.write(bytes(4 << 20))
        f.write(b"\xa5\x5a\x0f\xf0" * (1 << 19)); f.write(os.urandom(2 << 20))
PY
img2simg "$work/img.raw" "$work/img.simg"
rm "$work/img.raw"
cp "$FLASHPIPE" "$work/flashpipe"
cat >"$work/bench.sh" <<GUEST
RUNS=$RUNS
GUEST
cat >>"$work/bench.sh" <<'GUEST'
cd /tmp/work
cp img.simg /tmp/img.simg
truncate -s 256M /tmp/target.img
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }  # clock ticks, user + system
now() { date +%s.%N; }
run() {  # NAME ARGS...: one flash, prints a RESULT line
  local name=$1; shift
  ./flashpipe serve "$@" --partition data=/tmp/target.img --state /tmp/state --max-download-size 32M \
    >d.out 2>d.log &
  local pid=$! dev
  for _ in $(seq 300); do grep -qE "serving|listening" d.out && break; sleep 0.1; done
  if [ "$name" = tcp-wb ]; then dev=tcp:127.0.0.1; else
    dev=BENCH; for _ in $(seq 300); do fastboot devices | grep -q BENCH && break; sleep 0.1; done; fi
  # Until the download buffers are faulted in (the resident size stops
  # growing): that CPU time is not the flash's.
  local rss=0 last=-1
  for _ in $(seq 120); do
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    [ "$rss" = "$last" ] && break
    last=$rss; sleep 1
  done
  local c0 t0 t1 c1
  c0=$(cpu $pid) t0=$(now)
  timeout 600 fastboot -s $dev flash data /tmp/img.simg >f.out 2>&1 || echo "FAILED $name: $(tail -2 f.out)"
  timeout 600 fastboot -s $dev getvar version >/dev/null 2>&1
  t1=$(now) c1=$(cpu $pid)
  kill $pid; wait $pid
  echo "RESULT $name $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') $((c1 - c0))"
}
for i in $(seq $RUNS); do
  run usb-wb --usb --serialno BENCH --write-behind
  run usb-send --usb --serialno BENCH --write-model discard
  run tcp-wb --tcp 127.0.0.1:5554 --write-behind
done
GUEST
echo "== $(stat -c %s "$work/img.simg") bytes sparse; booting the VM (RUNS=$RUNS)"
rc=0
VM_MEM=2560 VM_DUMMY_HCD="num=1,is_super_speed=1" vm_run "$work" bench.sh 1500 "$work/console.log" || rc=$?
grep -E "^(RESULT|FAILED)" "$work/console.log" || true
[ $rc = 0 ] || { echo "FAIL: VM run (status $rc)"; tail -20 "$work/console.log"; exit 1; }
python3 - "$work/console.log" "$(stat -c %s "$work/img.simg")" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("RESULT "):
        _, name, secs, ticks = line.split()
        runs.setdefault(name, []).append((float(secs), int(ticks) / 100.0))
gib = int(sys.argv[2]) / (1 << 30)
med = {k: (statistics.median(s for s, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
print("| run | median s | all runs s | daemon CPU s per GiB sent |")
print("|---|---:|---|---:|")
for k in ("usb-wb", "usb-send", "tcp-wb"):
    print("| %s | %.2f | %s | %.1f |" % (k, med[k][0], " ".join("%.2f" % s for s, _ in runs[k]), med[k][1] / gib))
print()
print("USB --write-behind / USB sending alone: %.2fx (goal <= 1.2x)" % (med["usb-wb"][0] / med["usb-send"][0]))
print("USB / TCP loopback, both --write-behind: %.2fx (goal <= 1.0x)" % (med["usb-wb"][0] / med["tcp-wb"][0]))
PY
