#!/usr/bin/env bash
# The host side against a device flashpipe did not write: the U-Boot-like
# fake bootloader of the tests (tests/e2e/fake_bootloader.py: 1024-byte UDP
# packets, TCP, no oem digest), on loopback. Side by side, interleaved, N
# rounds (default 5), medians, as a user types the commands:
#   aosp-udp / fp-udp   fastboot -s udp:... flash system dense.raw   vs   flashpipe flash -s udp:... system=dense.raw
#   aosp-tcp / fp-tcp   the same over TCP
# dense.raw: 48 MiB of random data (nothing to skip: the link and the
# clients are measured). Goal (issue 21): flashpipe no slower than the AOSP
# client (AOSP / flashpipe >= 1.0). Also: a partition the device does not
# have, 64 MiB image: how long each client takes to fail (goal for
# flashpipe: under 1 s; the AOSP client sends the whole image first).
#   FLASHPIPE=build/flashpipe N=5 bash bench/foreign_device_bench.sh
set -euo pipefail
HERE=$(realpath "$(dirname "$0")")
FP=$(realpath "${FLASHPIPE:-$HERE/../build/flashpipe}")
N=${N:-5}
for t in fastboot python3; do command -v $t >/dev/null || { echo "foreign_device_bench: missing $t"; exit 1; }; done
work=$(mktemp -d /var/tmp/fp_foreign_bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
head -c 48M /dev/urandom >dense.raw
head -c 64M /dev/urandom >big.raw
start() {  # start TRANSPORT: the device, its port in port.TRANSPORT
  python3 "$HERE/../tests/e2e/fake_bootloader.py" --"$1" 127.0.0.1:0 --uboot --max-download-size 128M \
    --exit-after 1800 "system=$work/system.$1:64M" >"dev.$1.out" 2>"dev.$1.log" &
  pids+=($!)
  for _ in $(seq 100); do
    sed -n "s/^fakeboot: listening on $1 127\.0\.0\.1:\([0-9]*\)\$/\1/p" "dev.$1.out" | head -1 >"port.$1"
    [ -s "port.$1" ] && return 0
    sleep 0.1
  done
  echo "foreign_device_bench: the device did not start: $(cat "dev.$1.log")" >&2
  exit 1
}
start udp
start tcp
UDP=$(cat port.udp)
TCP=$(cat port.tcp)
python3 "$HERE/time_pairs.py" --rounds "$N" --json times.json \
  "aosp-udp=fastboot -s udp:127.0.0.1:$UDP flash system dense.raw 2>/dev/null" \
  "fp-udp=$FP flash -s udp:127.0.0.1:$UDP --no-progress system=dense.raw 2>/dev/null" \
  "aosp-tcp=fastboot -s tcp:127.0.0.1:$TCP flash system dense.raw 2>/dev/null" \
  "fp-tcp=$FP flash -s tcp:127.0.0.1:$TCP --no-progress system=dense.raw 2>/dev/null" | grep -v "^round"
t0=$(date +%s.%N); fastboot -s udp:127.0.0.1:$UDP flash nosuch big.raw >/dev/null 2>&1 || true; t1=$(date +%s.%N)
"$FP" flash -s udp:127.0.0.1:$UDP --no-progress nosuch=big.raw >/dev/null 2>&1 || true; t2=$(date +%s.%N)
python3 - times.json "$t0" "$t1" "$t2" <<'PY'
import json, statistics, sys
t = json.load(open(sys.argv[1]))
med = {k: statistics.median(v["wall"]) for k, v in t.items()}
for tr in ("udp", "tcp"):
    a, f = med[f"aosp-{tr}"], med[f"fp-{tr}"]
    print(f"{tr}: AOSP {a:.2f} s, flashpipe {f:.2f} s: AOSP / flashpipe {a / f:.2f}x (goal >= 1.0: {'met' if a / f >= 1.0 else 'NOT met'})")
t0, t1, t2 = map(float, sys.argv[2:5])
print(f"a partition the device lacks, 64 MiB over UDP: AOSP fails after {t1 - t0:.2f} s, flashpipe after {t2 - t1:.2f} s "
      f"(goal < 1 s: {'met' if t2 - t1 < 1 else 'NOT met'})")
PY
echo "command: FLASHPIPE=$FP N=$N bash bench/foreign_device_bench.sh"
