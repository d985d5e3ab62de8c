#!/usr/bin/env bash
# The host side over USB: `flashpipe flash` against the AOSP client
# (`fastboot flash`, 29.0.6) sending the same 40 MiB random raw image into
# the same `flashpipe serve --usb --write-model discard` daemon (one
# download: writes discarded, so the link and the two clients are what is
# timed), inside the VM of tests/vm (Debian 6.1 under QEMU TCG, dummy_hcd).
# Runs alternate within each round: aosp, flashpipe (default queue), then
# flashpipe with each FLASHPIPE_USB_QUEUE=BYTES:DEPTH of QUEUES (transfer
# size and depth tried for the defaults, usb_queue.h). Time: the client
# command, start to exit. Prints medians of RUNS rounds and the ratio
# aosp / flashpipe (goal from issue 21: >= 2).
#   FLASHPIPE=build/flashpipe bash bench/usb_host_bench.sh [RUNS]
#   QUEUES="16K:1 256K:4 1M:2 1M:8 4M:2"  variants (default below)
#   SPEED=super|high                      dummy_hcd speed (default super)
#   LIBS=9p|tmpfs   where both clients load their shared libraries from
#                   (default 9p, the harness's root: slow, see below)
set -euo pipefail
cd "$(dirname "$0")/.."
FLASHPIPE=${FLASHPIPE:-build/flashpipe}
RUNS=${1:-5}
QUEUES=${QUEUES:-16K:1 1M:1 256K:4 256K:8 1M:2 1M:8 4M:2}
SPEED=${SPEED:-super}
LIBS=${LIBS:-9p}
source tests/vm/vm_lib.sh
for t in qemu-system-x86_64 busybox python3 fastboot; do command -v $t >/dev/null || { echo "FAIL: $t missing"; exit 1; }; done
vm_prepare "${FLASHPIPE_VM_CACHE:-$(dirname "$FLASHPIPE")/vm-cache}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

head -c 40M /dev/urandom >"$work/img.raw"
cp "$FLASHPIPE" "$work/flashpipe"
printf 'RUNS=%s\nQUEUES="%s"\nLIBS=%s\n' "$RUNS" "$QUEUES" "$LIBS" >"$work/bench.sh"
cat >>"$work/bench.sh" <<'GUEST'
cd /tmp/work
cp img.raw /tmp/img.raw  # the clients map or read it: page faults over 9p are slow
truncate -s 64M /tmp/target.img
now() { date +%s.%N; }
if [ "$LIBS" = tmpfs ]; then
  # Both clients' shared libraries from tmpfs, as from a warm page cache:
  # over the 9p root every library open is several round trips to QEMU, and
  # flashpipe links 50 libraries where the AOSP client links 16.
  mkdir -p /tmp/lib
  for b in ./flashpipe "$(command -v fastboot)"; do
    ldd "$b" | awk '$3 ~ /^\// {print $3}' | xargs -r cp -Lt /tmp/lib
  done
  export LD_LIBRARY_PATH=/tmp/lib
fi
cp "$(command -v fastboot)" /tmp/fastboot
cp ./flashpipe /tmp/flashpipe
./flashpipe serve --usb --no-tcp --serialno BENCH --write-model discard -v --partition data=/tmp/target.img \
  --state /tmp/state >d.out 2>d.log &
daemon=$!
trap 'kill $daemon 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "serving" d.out && break; sleep 0.1; done
for _ in $(seq 300); do fastboot devices | grep -q BENCH && break; sleep 0.1; done
fastboot devices | grep -q BENCH || { echo "FAILED: no device: $(tail -3 d.log)"; exit 1; }
# The daemon's -v lines carry its clock: the last download's data phase.
data_phase() {
  awk '/: download of/ {a = $2} /: download complete/ {b = $2} END {printf "%.3f", b - a}' d.log
}
run() {  # NAME COMMAND...: one flash, prints a RESULT line (wall s, data phase s)
  local name=$1 t0 t1; shift
  t0=$(now)
  timeout 300 "$@" >f.out 2>&1 || echo "FAILED $name: $(tail -2 f.out)"
  t1=$(now)
  echo "RESULT $name $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') $(data_phase)"
}
run warmup /tmp/fastboot -s BENCH flash data /tmp/img.raw  # the daemon's buffer faulted in once
for i in $(seq $RUNS); do
  run aosp /tmp/fastboot -s BENCH flash data /tmp/img.raw
  run flashpipe /tmp/flashpipe flash --no-progress -s BENCH data=/tmp/img.raw
  for q in $QUEUES; do
    run "flashpipe-$q" env FLASHPIPE_USB_QUEUE=$q /tmp/flashpipe flash --no-progress -s BENCH data=/tmp/img.raw
  done
done
GUEST
hcd="num=1,is_super_speed=1"
[ "$SPEED" = high ] && hcd="num=1"
echo "== 40 MiB raw; booting the VM (RUNS=$RUNS, QUEUES=$QUEUES, dummy_hcd $hcd)"
rc=0
VM_MEM=2048 VM_DUMMY_HCD=$hcd vm_run "$work" bench.sh 1500 "$work/console.log" || rc=$?
grep -E "^(RESULT|FAILED)" "$work/console.log" || true
[ $rc = 0 ] || { echo "FAIL: VM run (status $rc)"; tail -20 "$work/console.log"; exit 1; }
python3 - "$work/console.log" <<'PY'
import statistics, sys
runs, order = {}, []
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("RESULT ") and not line.startswith("RESULT warmup"):
        _, name, secs, data = line.split()
        if name not in runs: order.append(name)
        runs.setdefault(name, []).append((float(secs), float(data)))
med = {k: (statistics.median(s for s, _ in v), statistics.median(d for _, d in v)) for k, v in runs.items()}
print("| client | median s, whole command | median s, data phase | data MiB/s | all runs s (command/data) |")
print("|---|---:|---:|---:|---|")
for k in order:
    print("| %s | %.2f | %.2f | %.1f | %s |" % (k, med[k][0], med[k][1], 40 / med[k][1],
                                             " ".join("%.2f/%.2f" % r for r in runs[k])))
print()
print("aosp / flashpipe, whole command: %.2fx (goal >= 2.0x)" % (med["aosp"][0] / med["flashpipe"][0]))
print("aosp / flashpipe, data phase:    %.2fx" % (med["aosp"][1] / med["flashpipe"][1]))
PY
