#!/usr/bin/env python3
"""Kill soak of the sparse tools (issue 14), run by sparse_safety_test.sh.

For each of img2simg, simg2img and resparse: run the tool N times with
inputs that alternate between two images, and kill -9 each run at a random
point in [0, 1.25 x its usual duration]. After every kill the output must be
absent (only if there was none before, or, for resparse, while the set was
being switched: then PREFIX.0 is missing and the parts present are all old or
all new), the old content, or complete and valid (expanded by AOSP simg2img
and compared with the raw image); the temp files left must all belong to one
run (a run that gets as far as creating its own removes those of dead runs). At the end one
complete run must leave the new output and no temp file.

  sparse_soak.py FLASHPIPE WORKDIR KILLS SEED
"""
import glob
import os
import random
import signal
import subprocess
import sys
import time

FP, WORK, KILLS, SEED = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
AOSP_SIMG2IMG = "/usr/bin/simg2img"
rng = random.Random(SEED)
failures = []


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make_raw(path, mib, seed):
    r = random.Random(seed)
    with open(path, "wb") as f:
        for i in range(mib * 16):  # 64 KiB pieces: random data, zero runs, fill runs
            kind = r.randrange(4)
            if kind == 0:
                f.write(bytes(65536))
            elif kind == 1:
                f.write(r.getrandbits(32).to_bytes(4, "little") * 16384)
            else:
                f.write(r.randbytes(65536))


def run(args):
    subprocess.run([FP] + args, check=True, stderr=subprocess.DEVNULL)


def aosp_expands_to(parts, raw):
    out = os.path.join(WORK, "aosp.out")
    if subprocess.run([AOSP_SIMG2IMG] + parts + [out], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        return False
    ok = read(out) == read(raw)
    os.unlink(out)
    return ok


def temps(d):
    return glob.glob(os.path.join(d, ".*.flashpipe-*"))


def temp_pid(path):
    return int(os.path.basename(path).split(".flashpipe-")[1].split("-")[0])


def usual_duration(cmd, reset):
    times = []
    for _ in range(3):
        reset()
        t = time.monotonic()
        run(cmd)
        times.append(time.monotonic() - t)
    return sorted(times)[1]


def soak(name, cmd_for, classify, reset, outdir, is_output):
    """cmd_for(i) -> (argv, new_state); classify(prev, new) -> (state, how) or
    raises AssertionError; is_output(file name) tells the output's names."""
    duration = usual = usual_duration(cmd_for(0)[0], reset)
    reset()
    prev = None
    counts = {}
    for i in range(KILLS):
        argv, new = cmd_for(i)
        p = subprocess.Popen([FP] + argv, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, duration * 1.25))
        p.send_signal(signal.SIGKILL)
        p.wait()
        try:
            state, how = classify(prev, new)
        except AssertionError as e:
            failures.append(f"{name} kill {i}: {e}")
            return
        counts[how] = counts.get(how, 0) + 1
        # Keep the kills spread over the run whatever the machine's load does
        # to its length: a kill after the end shortens the next wait's range,
        # one before it lengthens it (the range settles about the run's length).
        duration *= 0.85 if how == "new" else 1.1
        stray = [n for n in os.listdir(outdir) if not is_output(n) and ".flashpipe-" not in n]
        if stray:  # a temp must be recognisable as one
            failures.append(f"{name} kill {i}: files left that are neither output nor a flashpipe temp: {stray}")
            return
        runs_with_temps = {temp_pid(t) for t in temps(outdir)}
        if len(runs_with_temps) > 1:  # a run that gets as far as creating its temps removes those of dead runs
            failures.append(f"{name} kill {i}: temps of several runs left: {temps(outdir)}")
            return
        prev = state
    argv, new = cmd_for(KILLS)
    run(argv)
    state, how = classify(prev, new)
    if state != new or temps(outdir):
        failures.append(f"{name}: a complete run left {how} output, temps {temps(outdir)}")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f"ok   kill soak {name}: {KILLS} kills at random points in {usual * 1000:.0f} ms runs: {summary}")
    if counts.get("old", 0) + counts.get("absent", 0) + counts.get("switching", 0) < KILLS // 5:
        failures.append(f"{name}: too few kills landed before the end of a run ({summary})")


def main():
    print(f"kill soak: seed {SEED} (SPARSE_SOAK_SEED={SEED} repeats it)")
    os.makedirs(WORK, exist_ok=True)
    raws = [os.path.join(WORK, n) for n in ("a.raw", "b.raw")]
    make_raw(raws[0], 4, SEED)
    make_raw(raws[1], 2, SEED + 1)
    simgs = [r + ".simg" for r in raws]
    for r, s in zip(raws, simgs):
        run(["img2simg", r, s])
        assert aosp_expands_to([s], r), f"reference {s} does not expand to {r}"
    refs = []  # resparse reference part sets
    for k, s in enumerate(simgs):
        d = os.path.join(WORK, f"ref{k}")
        os.makedirs(d)
        run(["resparse", "--max-size", "700K", s, os.path.join(d, "p")])
        refs.append([read(os.path.join(d, f"p.{j}")) for j in range(len(glob.glob(os.path.join(d, "p.*"))))])
    assert len(refs[0]) != len(refs[1]), "the two inputs should resparse to different part counts"

    # img2simg: the output is absent, the old image, or the new one complete.
    d = os.path.join(WORK, "img2simg")
    os.makedirs(d)
    out = os.path.join(d, "out.simg")

    def img2simg_classify(prev, new):
        if not os.path.exists(out):
            assert prev is None, "the old output disappeared"
            return None, "absent"
        data = read(out)
        if prev is not None and data == read(simgs[prev]):
            return prev, "old" if prev != new else "old=new"
        assert aosp_expands_to([out], raws[new]), "the output is neither the old image nor the new one complete"
        return new, "new"

    soak("img2simg", lambda i: (["img2simg", raws[i % 2], out], i % 2), img2simg_classify,
         lambda: os.path.exists(out) and os.unlink(out), d, lambda n: n == "out.simg")

    # simg2img: the raw output is absent, the old expansion, or the new one.
    d = os.path.join(WORK, "simg2img")
    os.makedirs(d)
    out2 = os.path.join(d, "out.img")

    def simg2img_classify(prev, new):
        if not os.path.exists(out2):
            assert prev is None, "the old output disappeared"
            return None, "absent"
        data = read(out2)
        if prev is not None and data == read(raws[prev]):
            return prev, "old" if prev != new else "old=new"
        assert data == read(raws[new]), "the output is neither the old expansion nor the new one"
        return new, "new"

    soak("simg2img", lambda i: (["simg2img", simgs[i % 2], out2], i % 2), simg2img_classify,
         lambda: os.path.exists(out2) and os.unlink(out2), d, lambda n: n == "out.img")

    # resparse: the set of parts PREFIX.N.
    d = os.path.join(WORK, "resparse")
    os.makedirs(d)
    prefix = os.path.join(d, "p")

    def present():
        return {int(p.rsplit(".", 1)[1]): read(p) for p in glob.glob(prefix + ".*")}

    def resparse_classify(prev, new):
        parts = present()
        if 0 not in parts:
            # Absent: before the first run, or killed while a set was being
            # switched: then the parts still present are all of one run.
            if not parts:
                return None, "absent" if prev is None else "switching"
            for ref in refs:
                if all(n < len(ref) and data == ref[n] for n, data in parts.items()):
                    return None, "switching"
            raise AssertionError(f"no PREFIX.0, and parts {sorted(parts)} mix two runs")
        got = [parts.get(n) for n in range(max(parts) + 1)]
        if prev is not None and got == refs[prev]:
            return prev, "old" if prev != new else "old=new"
        assert got == refs[new], f"parts {sorted(parts)} are neither the old set nor the new one"
        assert aosp_expands_to([f"{prefix}.{n}" for n in range(len(got))], raws[new]), "new parts do not expand"
        return new, "new"

    soak("resparse", lambda i: (["resparse", "--max-size", "700K", simgs[i % 2], prefix], i % 2),
         resparse_classify, lambda: [os.unlink(p) for p in glob.glob(prefix + ".*")], d,
         lambda n: n.startswith("p.") and n[2:].isdigit())

    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
