#!/usr/bin/env bash
# One farm host with many boards, simulated on this machine: N discarding
# fastboot daemons (`serve --write-model discard`: every range checked,
# nothing written) on loopback, flashed as LAVA would flash them:
#   per-job  N `flashpipe flash -s tcp:... system=IMAGE` processes started at
#            once, one per job, as N flasher deploys on one worker run them;
#   one      one `flashpipe flash -s tcp:A -s tcp:B ... system=IMAGE` for all
#            (a station, or a job that owns several boards);
#   aosp     N AOSP clients (`fastboot -s tcp:... flash system IMAGE`, 29.0.6)
#            at once, as LAVA's own fastboot deploy runs them (when installed).
# A warm-up flash, then alternating rounds; per round: wall time until the last device finished,
# CPU (user+sys) of the flashpipe clients and of the daemons per device, the
# clients' peak memory (the sum of every process's peak for per-job).
# Bounded: every round is killed after ROUND_SECONDS (default 180).
#   bench/farm_sim_bench.sh [ROUNDS]   (env FLASHPIPE, DEVICES=32,
#   IMAGE_MB=64, MAX_DOWNLOAD=16M, BENCH_DIR=/var/tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
FLASHPIPE=$(realpath "${FLASHPIPE:-build/flashpipe}")
ROUNDS=${1:-3}
DEVICES=${DEVICES:-32}
IMAGE_MB=${IMAGE_MB:-64}
MAX_DOWNLOAD=${MAX_DOWNLOAD:-16M}
ROUND_SECONDS=${ROUND_SECONDS:-180}
for t in sgdisk img2simg /usr/bin/time; do command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }; done
work=$(mktemp -d -p "${BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT

# A sparse ext4-like image: 3/8 random data, the rest zeros and fills, so the
# host sends DATA and FILL chunks as a real system image has them.
/usr/bin/python3 - "$work/system.raw" "$IMAGE_MB" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for _ in range(int(sys.argv[2]) // 8):
        f.write(os.urandom(3 << 20)); f.write(bytes(4 << 20)); f.write(b"\x11\x22\x33\x44" * (1 << 18))
PY
img2simg "$work/system.raw" "$work/system.simg"
rm "$work/system.raw"
# Each daemon's storage: a sparse file with a GPT (discard writes nothing).
truncate -s $(( (IMAGE_MB + 8) << 20 )) "$work/disk.img"
sgdisk -n 1:2048:0 -c 1:system "$work/disk.img" >/dev/null

echo "== $(uptime)"
echo "== $DEVICES daemons, image $(stat -c %s "$work/system.simg") bytes sparse ($IMAGE_MB MiB expanded), max-download-size $MAX_DOWNLOAD"
/usr/bin/python3 - "$FLASHPIPE" "$work" "$DEVICES" "$ROUNDS" "$MAX_DOWNLOAD" "$ROUND_SECONDS" <<'PY'
import os, re, shutil, signal, statistics, subprocess, sys, time

fp, work, n, rounds, mds, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
tick = os.sysconf("SC_CLK_TCK")
daemons, ports = [], []
for i in range(n):
    disk = f"{work}/disk{i}.img"
    shutil.copyfile(f"{work}/disk.img", disk)  # sparse copy is fine: nothing reads it
    out = open(f"{work}/d{i}.out", "w+")
    p = subprocess.Popen([fp, "serve", "--storage", disk, "--state", f"{work}/st{i}", "--tcp", "127.0.0.1:0",
                          "--write-model", "discard", "--max-download-size", mds],
                         stdout=out, stderr=open(f"{work}/d{i}.log", "w"))
    daemons.append((p, out))
for p, out in daemons:
    for _ in range(200):
        out.seek(0)
        m = re.search(r"listening on tcp 127\.0\.0\.1:(\d+)", out.read())
        if m:
            ports.append(m.group(1)); break
        time.sleep(0.05)
    else:
        sys.exit("a daemon did not start")

def daemon_cpu():
    total = 0
    for p, _ in daemons:
        f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        total += (int(f[11]) + int(f[12])) / tick
    return total

def daemon_rss_kib():
    total = 0
    for p, _ in daemons:
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total

image = f"{work}/system.simg"
def flash_cmd(devs):
    cmd = [fp, "flash", "--no-progress"]
    for port in devs:
        cmd += ["-s", f"tcp:127.0.0.1:{port}"]
    return cmd + [f"system={image}"]

aosp = shutil.which("fastboot")
def run(mode):
    if mode == "aosp":  # the AOSP client per job, as LAVA's fastboot deploy runs it
        cmds = [[aosp, "-s", f"tcp:127.0.0.1:{p}", "flash", "system", image] for p in ports]
    else:
        cmds = [flash_cmd([p]) for p in ports] if mode == "per-job" else [flash_cmd(ports)]
    d0, t0 = daemon_cpu(), time.monotonic()
    # GNU time reports each client's own peak RSS (wait4 here would count
    # this python's memory, which a forked child starts with); the CPU from
    # wait4 covers time and what it waited for, the client.
    rss_files = [f"{work}/rss.{mode}.{i}" for i in range(len(cmds))]
    procs = {subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss_files[i], "nice"] + c, stdout=subprocess.DEVNULL,
                              stderr=open(f"{work}/{mode}.err", "a")).pid: c
             for i, c in enumerate(cmds)}
    cpu = rss = 0.0
    while procs:
        left = limit - (time.monotonic() - t0)
        if left <= 0:
            for pid in procs: os.kill(pid, signal.SIGKILL)
            sys.exit(f"{mode}: round over {limit} s")
        pid, status, ru = os.wait4(-1, 0)
        if pid not in procs: continue
        if status != 0:
            sys.exit(f"{mode}: {' '.join(procs[pid][:6])}... exited {status}: {open(f'{work}/{mode}.err').read()[-500:]}")
        cpu += ru.ru_utime + ru.ru_stime
        del procs[pid]
    wall = time.monotonic() - t0
    rss = sum(int(open(f).read().split()[-1]) for f in rss_files)
    return wall, cpu / n, (daemon_cpu() - d0) / n, rss / 1024

# Warm-up, not counted: each daemon's download buffer grows to the largest
# part on its first flash (page faults), which would fall on the first round.
run("one")
modes = ["per-job", "one"] + (["aosp"] if aosp else [])
results = {m: [] for m in modes}
for r in range(rounds):
    for mode in (modes if r % 2 == 0 else modes[::-1]):
        wall, cpu, dcpu, rss = run(mode)
        results[mode].append((wall, cpu, dcpu, rss))
        print(f"round {r + 1} {mode:8s} wall {wall:6.2f} s  client CPU/device {cpu * 1000:6.1f} ms  "
              f"daemon CPU/device {dcpu * 1000:6.1f} ms  client peak RSS {rss:7.1f} MiB", flush=True)
print(f"daemons' RSS after the rounds: {daemon_rss_kib() / 1024 / n:.1f} MiB each")
print("medians:")
med = {}
for mode, rows in results.items():
    med[mode] = [statistics.median(c) for c in zip(*rows)]
    w, c, d, m = med[mode]
    print(f"  {mode:8s} wall {w:6.2f} s  client CPU/device {c * 1000:6.1f} ms  daemon CPU/device {d * 1000:6.1f} ms  "
          f"client peak RSS {m:7.1f} MiB")
b = med["one"]
for mode in modes[:1] + modes[2:]:
    a = med[mode]
    print(f"  {mode} / one: wall {a[0] / b[0]:.2f}x, client CPU {a[1] / b[1]:.2f}x, client memory {a[3] / b[3]:.2f}x")
for p, _ in daemons:
    p.send_signal(signal.SIGTERM)
for p, _ in daemons:
    p.wait(timeout=30)
PY
echo "== $(uptime)"
