#!/usr/bin/env bash
# The studies behind `flashpipe bench`, run side by side on this machine, and
# the report bench/results/bench.md (+ two small SVG plots):
#   1. transfer tests (mmc_test 37-40 generalised) on a loop device with direct
#      I/O: write and read, 4 KiB..4 MiB, blocking / non-blocking / queued(4);
#   2. the same on a simulated eMMC (45 MB/s, 300 us per command) with a fixed
#      host cost per request, against the model's arithmetic;
#   3. the bounce-buffer study on a 1.5 GiB super-like sparse image (zero
#      runs, fills, random data, a long empty tail), generated at run time,
#      on a loop device with direct I/O and on the simulated eMMC.
# Every measurement is the median of $REPEAT runs; the exact commands are in
# the report. Nothing large is kept: the work dir is removed at the end.
#   bench/bench_study.sh [BUILD_DIR]        (default: build; env TOTAL, REPEAT, PREP_US)
set -euo pipefail
cd "$(dirname "$0")/.."
FP=${FLASHPIPE:-$PWD/${1:-build}/flashpipe}
[ -x "$FP" ] || { echo "no flashpipe binary at $FP (build first: scripts/setup.sh)" >&2; exit 1; }
TOTAL=${TOTAL:-64M}
REPEAT=${REPEAT:-3}
PREP_US=${PREP_US:-200}
SIM=sim:size=8G,bw=45M,cmd_us=300
out=bench/results
mkdir -p "$out"
work=$(mktemp -d /tmp/fp-bench-study.XXXXXX)
loops=()
cleanup() {
  for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# attach FILE SIZE: a loop device with direct I/O on FILE, written out in full
# first -- a sparse backing file would charge the first timed writes for the
# host filesystem's block allocation (mmc_test erases its area for the same
# reason).
attach() {
  dd if=/dev/zero of="$1" bs=1M count=$(($2 >> 20)) conv=fsync status=none
  DEV=$(losetup --find --show --direct-io=on "$1"); loops+=("$DEV")
}
# run NAME CMD...: runs CMD, keeps its output in $work/NAME.txt and the command line in $work/NAME.cmd
run() {
  local name=$1; shift
  echo "== $name: $*" >&2
  echo "$*" | sed "s|$FP|flashpipe|; s|$work|\$WORK|g" >"$work/$name.cmd"
  "$@" >"$work/$name.txt" 2>&1 || { cat "$work/$name.txt" >&2; exit 1; }
}

# 1. Transfer tests on a 1 GiB loop device with direct I/O.
attach "$work/loop.bin" $((1 << 30)); L=$DEV
run loop timeout 1800 "$FP" bench "$L" --total "$TOTAL" --repeat "$REPEAT" --prep copy \
  --json="$work/loop.json" --plot "$out/bench_loop.svg"

# 2. The same on the simulated eMMC, with a fixed host cost per request.
run sim timeout 600 "$FP" bench "$SIM" --prep "spin:$PREP_US" --json="$work/sim.json" --plot "$out/bench_sim.svg"

# 3. A 1.5 GiB super-like image: metadata, two partitions of random data with
#    zero runs and pattern fills inside, a long empty (hole) tail.
python3 - "$work/super.raw" <<'PY'
import random, sys
MiB = 1 << 20
rng = random.Random(20261130)
with open(sys.argv[1], "wb") as f:
    f.truncate(1536 * MiB)
    def data(off, n): f.seek(off); f.write(rng.randbytes(n))
    def fill(off, n, b): f.seek(off); f.write(b * (n // len(b)))
    data(4096, 8192)                                       # metadata
    off = 1 * MiB                                          # "system": 1..641 MiB
    while off < 641 * MiB:
        n = rng.choice((4, 8, 16, 32, 48)) * MiB
        data(off, min(n, 641 * MiB - off)); off += n
        z = rng.choice((0, 1, 2, 4)) * MiB                 # zeros written out
        fill(off, z, b"\0"); off += z
        if rng.random() < 0.2:
            fill(off, MiB, b"\xde\xad\xbe\xef"); off += MiB
    off = 700 * MiB                                        # "vendor": 700..860 MiB
    while off < 860 * MiB:
        n = rng.choice((1, 2, 8)) * MiB
        data(off, n); off += n + rng.choice((0, 1)) * MiB  # holes between
PY
if "$FP" img2simg -s "$work/super.raw" "$work/super.simg" 2>/dev/null; then conv="flashpipe img2simg -s"
else img2simg "$work/super.raw" "$work/super.simg"; conv="img2simg (AOSP)"; fi
rm -f "$work/super.raw"
attach "$work/study.bin" $((2 << 30)); S=$DEV
run study_loop timeout 1800 "$FP" bench --sparse "$work/super.simg" "$S" --buffer-blocks 100,16384,chunk \
  --repeat "$REPEAT"
run study_sim timeout 1800 "$FP" bench --sparse "$work/super.simg" "$SIM" --buffer-blocks 100,16384,chunk \
  --repeat "$REPEAT"

# The report.
python3 - "$work" "$out/bench.md" "$conv" "$PREP_US" <<'PY'
import json, math, os, platform, subprocess, sys
work, dest, conv, prep_us = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
txt = lambda n: open(f"{work}/{n}.txt").read().rstrip()
cmd = lambda n: open(f"{work}/{n}.cmd").read().strip()
def section(n):  # the run's header lines and its summary, not every mmc_test line
    t = txt(n).splitlines()
    head = [l for l in t[:4] if l]
    summ = t[next(i for i, l in enumerate(t) if l.startswith("Write throughput")):]
    return "\n".join(head + [""] + summ)
def lines(n, prefix):
    return "\n".join(l for l in txt(n).splitlines() if l.startswith(prefix))

sim = json.load(open(f"{work}/sim.json"))["results"]
p = prep_us * 1000
rows = []
for r in sim:
    s = 300_000 + math.ceil(r["request_bytes"] * 1e9 / 45e6)
    n = r["count"]
    want = n * (p + s) if r["mode"] == "blocking" else p + s + (n - 1) * max(p, s)
    rows.append((r, want))
def gain(d, size, mode):
    m = {x["mode"]: x for x, _ in rows if x["direction"] == d and x["request_bytes"] == size}
    w = {x["mode"]: want for x, want in rows if x["direction"] == d and x["request_bytes"] == size}
    return m["blocking"]["ns"] / m[mode]["ns"] - 1, w["blocking"] / w[mode] - 1
model_tab = ["| request | mode | measured (virtual) | model | error | gain over blocking: measured / model |",
             "|---|---|---|---|---|---|"]
for r, want in rows:
    if r["direction"] != "write": continue
    g = "" if r["mode"] == "blocking" else "{:+.1f}% / {:+.1f}%".format(*(100 * x for x in gain("write", r["request_bytes"], r["mode"])))
    kib = r["request_bytes"] // 1024
    size = f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"
    model_tab.append(f"| {size} | {r['mode']} | {r['ns'] / 1e9:.4f} s | {want / 1e9:.4f} s | "
                     f"{100 * (r['ns'] - want) / want:+.2f}% | {g} |")

uname = platform.uname()
rev = subprocess.run(["git", "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
load = open("/proc/loadavg").read().split()[:3]
md = f"""# flashpipe bench: results on this machine

Generated by `bench/bench_study.sh` ({uname.system} {uname.release}, {os.cpu_count()} vCPU,
load average {' '.join(load)} when the report was written -- a shared, noisy VM: loop-device
figures move by tens of percent from run to run; the simulated device's do not).
Each figure is the median of the runs given by `--repeat`. `$WORK` is a temp dir (removed).
flashpipe at commit {rev}. Below, the summaries; every mmc_test-format line
(`Transfer of C x S sectors (C x K KiB) took T seconds (kB/s, KiB/s, IOPS)`) is in the "all lines"
sections.

## 1. Transfer tests on a loop device with direct I/O

`losetup --direct-io=on` on a 1 GiB file written out with zeros first, then

    {cmd('loop')}

```
{section('loop')}
```

![throughput vs request size, loop dio](bench_loop.svg)

<details><summary>all lines</summary>

```
{txt('loop')}
```
</details>

## 2. The same on a simulated eMMC (45 MB/s, 300 us per command)

Each request costs the device 300 us + bytes / 45 MB/s, one at a time; the host spends a fixed
{prep_us} us preparing each request (`--prep spin:{prep_us}`). The model (docs/bench.md):
blocking takes n(p+s), non-blocking and queued p + s + (n-1)max(p,s).

    {cmd('sim')}

```
{section('sim')}
```

Writes against the model (virtual time; the only difference is the host's own bookkeeping):

{chr(10).join(model_tab)}

![throughput vs request size, simulated eMMC](bench_sim.svg)

<details><summary>all lines</summary>

```
{txt('sim')}
```
</details>

## 3. The bounce-buffer study: a 1.5 GiB super-like sparse image

The raw image (metadata, a 640 MiB "system" of random data with zero runs and 0xdeadbeef fills,
a 160 MiB "vendor" with holes, an empty tail) is generated at run time and converted with
{conv}. The bootloader model (`io::BounceWriter`, U-Boot's lib/image-sparse.c) copies each RAW chunk
through a bounce buffer of N 512-byte blocks and writes each buffer with one blocking request (FILL
from a 512 KiB fill buffer in requests of up to 512 KiB, zeros included; DONT_CARE skipped), then the
pipelined engine (`io::ImageWriter`, depth 4) writes the same image. MB/s are 10^6 bytes of image
data (RAW + FILL) per second.

On a 2 GiB loop device with direct I/O (backing file written out first):

    {cmd('study_loop')}

```
{lines('study_loop', 'image:')}

{chr(10).join(l for l in txt('study_loop').splitlines() if ': ' in l and ' s, ' in l)}
```

On the simulated eMMC (device busy time and requests per variant from the model):

    {cmd('study_sim')}

```
{chr(10).join(l for l in txt('study_sim').splitlines() if ': ' in l and ' s, ' in l)}
```
"""
open(dest, "w").write(md)
print(f"wrote {dest}")
PY
echo "report: $out/bench.md"
