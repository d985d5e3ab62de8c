#!/usr/bin/env python3
"""Helpers of write_ux_test.sh: JSON Schema checks of the reports and of the
--progress json events, a run under a pseudo-terminal, a run stopped by a
signal, and a slow stdin feeder.

  ux_check.py validate SCHEMA FILE                 one JSON object in FILE
  ux_check.py events SCHEMA_DIR FILE PHASES NTARGETS MIN_PROGRESS
        every line an event of progress-events.schema.json, phases in the
        order PHASES (comma-separated), bytes monotonic within a phase,
        NTARGETS target events, at least MIN_PROGRESS progress events, the
        report last and valid against its schema
  ux_check.py pty OUT -- CMD...                     CMD with stderr on a pty;
        what it printed there goes to OUT; exits with CMD's status
  ux_check.py signal SIG WAIT_FILE WAIT_TEXT STDIN_FEED -- CMD...
        runs CMD (stdout to CMD_OUT, stderr to CMD_ERR from the environment),
        its stdin fed by `feed` STDIN_FEED ("N,DELAY" or "-": none), sends SIG
        once WAIT_TEXT appears in WAIT_FILE (or CMD's stdout for "-"),
        prints CMD's exit status
  ux_check.py feed N DELAY                          N MiB of random bytes on
        stdout, one MiB every DELAY seconds
"""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import jsonschema


def load_schema(path):
    with open(path) as f:
        return json.load(f)


def validate(schema_path, file_path):
    with open(file_path) as f:
        doc = json.load(f)
    jsonschema.validate(doc, load_schema(schema_path))
    return doc


def check_events(schema_dir, file_path, phases, ntargets, min_progress):
    events_schema = load_schema(os.path.join(schema_dir, "progress-events.schema.json"))
    reports = {"flashpipe-write": load_schema(os.path.join(schema_dir, "write-report.schema.json")),
               "flashpipe-read": load_schema(os.path.join(schema_dir, "read-report.schema.json"))}
    with open(file_path) as f:
        lines = f.read().splitlines()
    events = []
    for n, line in enumerate(lines, 1):
        try:
            e = json.loads(line)
        except ValueError as err:
            sys.exit(f"line {n} is not JSON ({err}): {line!r}")
        jsonschema.validate(e, events_schema)
        events.append(e)
    seen, current, last_bytes, last_t = [], None, 0, 0.0
    for e in events:
        if e["t"] < last_t:
            sys.exit(f"time goes back: {e}")
        last_t = e["t"]
        if e["event"] == "phase_start":
            if current is not None:
                sys.exit(f"phase {e['phase']} starts inside {current}")
            current, last_bytes = e["phase"], 0
            seen.append(current)
        elif e["event"] in ("progress", "phase_end"):
            if e["phase"] != current:
                sys.exit(f"{e['event']} of {e['phase']} inside {current}")
            if e["bytes"] < last_bytes:
                sys.exit(f"bytes go back in {current}: {last_bytes} then {e['bytes']}")
            last_bytes = e["bytes"]
            if e["event"] == "phase_end":
                current = None
    want = [p for p in phases.split(",") if p]
    if seen != want:
        sys.exit(f"phases {seen}, want {want}")
    if events[-1]["event"] != "report":
        sys.exit(f"the last event is {events[-1]['event']}, not the report")
    targets = [e for e in events if e["event"] == "target"]
    if len(targets) != ntargets:
        sys.exit(f"{len(targets)} target events, want {ntargets}")
    report = events[-1]["report"]
    jsonschema.validate(report, reports[report["schema"]])
    progress = sum(1 for e in events if e["event"] == "progress")
    if progress < min_progress:
        sys.exit(f"{progress} progress events, want at least {min_progress}")
    return report


def run_pty(out_path, cmd):
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    data = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            p.kill()
            sys.exit("pty: no output for 60 s")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        data += chunk
    rc = p.wait(timeout=60)
    with open(out_path, "wb") as f:
        f.write(data)
    return rc


def feed(n, delay):
    block = os.urandom(1 << 20)
    out = sys.stdout.buffer
    try:
        for _ in range(n):
            out.write(block)
            out.flush()
            time.sleep(delay)
    except BrokenPipeError:
        pass


def run_signal(sig_name, wait_file, wait_text, stdin_feed, cmd):
    sig = getattr(signal, sig_name)
    feeder = None
    stdin = subprocess.DEVNULL
    if stdin_feed != "-":
        n, delay = stdin_feed.split(",")
        feeder = subprocess.Popen([sys.executable, __file__, "feed", n, delay], stdout=subprocess.PIPE)
        stdin = feeder.stdout
    out_path, err_path = os.environ["CMD_OUT"], os.environ["CMD_ERR"]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        # SIGINT may be ignored by whoever started us (a background job of a
        # script): the command gets the default disposition, as from a terminal.
        p = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if feeder:
        feeder.stdout.close()
    watch = out_path if wait_file == "-" else wait_file
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        try:
            with open(watch, "rb") as f:
                if wait_text.encode() in f.read():
                    break
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    if p.poll() is not None:
        print(f"exited {p.returncode} before the signal", file=sys.stderr)
    p.send_signal(sig)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "hung"
    if feeder:
        feeder.kill()
        feeder.wait()
    print(rc)


def main():
    cmd = sys.argv[1]
    if cmd == "validate":
        validate(sys.argv[2], sys.argv[3])
    elif cmd == "events":
        check_events(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif cmd == "pty":
        sys.exit(run_pty(sys.argv[2], sys.argv[4:]))
    elif cmd == "signal":
        run_signal(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[7:])
    elif cmd == "feed":
        feed(int(sys.argv[2]), float(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
