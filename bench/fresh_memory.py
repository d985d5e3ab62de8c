#!/usr/bin/env python3
"""What a fresh daemon's download buffer costs before its first byte lands:
the time to make 256 MiB of anonymous memory present (MADV_POPULATE_WRITE,
huge pages advised, as fastboot/download.cc maps it), in a new process after
GAP seconds of idle (the memory the last process freed, given back to a
hypervisor by free page reporting when GAP is 2 s or more on a VM), and again
in the same process after MADV_DONTNEED (pages the kernel still holds: what a
board pays, the kernel zeroing them). Medians of RUNS.
  python3 bench/fresh_memory.py [RUNS] [GAP]
"""
import mmap, statistics, subprocess, sys, time

MADV_POPULATE_WRITE = 23
SIZE = 256 << 20

def child():
    m = mmap.mmap(-1, SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_HUGEPAGE)
    t0 = time.perf_counter(); m.madvise(MADV_POPULATE_WRITE); t1 = time.perf_counter()
    m.madvise(mmap.MADV_DONTNEED)
    t2 = time.perf_counter(); m.madvise(MADV_POPULATE_WRITE); t3 = time.perf_counter()
    print(f"{t1 - t0:.4f} {t3 - t2:.4f}")

if len(sys.argv) > 1 and sys.argv[1] == "--child":
    child(); sys.exit(0)
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
gap = float(sys.argv[2]) if len(sys.argv) > 2 else 3
cold, warm = [], []
for _ in range(runs):
    time.sleep(gap)
    a, b = map(float, subprocess.check_output([sys.executable, __file__, "--child"]).split())
    cold.append(a); warm.append(b)
c, w = statistics.median(cold), statistics.median(warm)
print(f"256 MiB made present: fresh process after {gap:g} s idle {c:.3f} s ({SIZE / c / 1e6:.0f} MB/s), "
      f"pages the kernel holds {w:.3f} s ({SIZE / w / 1e6:.0f} MB/s), ratio {c / w:.1f}x")
print("runs fresh:", " ".join(f"{x:.3f}" for x in cold), "| held:", " ".join(f"{x:.3f}" for x in warm))
print(f"command: python3 bench/fresh_memory.py {runs} {gap:g}")
