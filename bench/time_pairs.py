#!/usr/bin/env python3
"""Times commands side by side, whole process, for the write-floor benchmark.

  time_pairs.py [--rounds N] [--drop FILE]... [--json FILE] LABEL=COMMAND ...

Each round runs every command once, in the order given (A B A B ... across
rounds), so drift on a shared machine hits all of them alike. A run is timed
from just before fork to just after the child is reaped (time.monotonic), so
process start, set-up and the command's own final sync are inside; peak RSS is
the child's ru_maxrss from wait4. Every --drop FILE has its page cache
dropped before every run, outside the timing (fdatasync, then
POSIX_FADV_DONTNEED: cold for that file, as drop_caches would make it, but
without drop_caches' system-wide sync, which one stuck filesystem elsewhere on
a shared machine blocks for good).
COMMAND is run by /bin/sh -c. A command that exits non-zero stops the run.
Prints one line per run, then medians (and the spread) per label; with
--baseline LABEL also, for every other label, BASELINE time / its time taken
round by round (pairing keeps the ratio meaningful when the machine's speed
drifts), median and spread. --json writes
{label: {"wall": [...], "rss_kib": [...]}}.
"""
import argparse
import json
import os
import statistics
import sys
import time


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def run_once(cmd):
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execv("/bin/sh", ["/bin/sh", "-c", cmd])
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss, code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--drop", action="append", default=[], metavar="FILE")
    ap.add_argument("--json")
    ap.add_argument("--baseline", metavar="LABEL")
    ap.add_argument("commands", nargs="+", metavar="LABEL=COMMAND")
    args = ap.parse_args()
    cmds = []
    for item in args.commands:
        label, sep, cmd = item.partition("=")
        if not sep or not label or not cmd:
            ap.error(f"expected LABEL=COMMAND, got {item!r}")
        cmds.append((label, cmd))
    if args.baseline and args.baseline not in [label for label, _ in cmds]:
        ap.error(f"--baseline {args.baseline}: no such label")
    results = {label: {"wall": [], "rss_kib": []} for label, _ in cmds}
    for r in range(1, args.rounds + 1):
        for label, cmd in cmds:
            for path in args.drop:
                drop_cache(path)
            wall, rss, code = run_once(cmd)
            print(f"round {r} {label}: {wall:.3f} s, peak RSS {rss / 1024:.1f} MiB", flush=True)
            if code != 0:
                print(f"time_pairs: {label} exited with {code}: {cmd}", file=sys.stderr)
                return 1
            results[label]["wall"].append(wall)
            results[label]["rss_kib"].append(rss)
    for label, _ in cmds:
        w = results[label]["wall"]
        print(f"median {label}: {statistics.median(w):.3f} s (min {min(w):.3f}, max {max(w):.3f}), "
              f"peak RSS {max(results[label]['rss_kib']) / 1024:.1f} MiB")
    if args.baseline:
        base = results[args.baseline]["wall"]
        for label, _ in cmds:
            if label == args.baseline:
                continue
            ratios = [b / w for b, w in zip(base, results[label]["wall"])]
            print(f"ratio {args.baseline}/{label}: median {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f}; of medians "
                  f"{statistics.median(base) / statistics.median(results[label]['wall']):.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
