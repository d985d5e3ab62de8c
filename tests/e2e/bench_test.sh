#!/usr/bin/env bash
# End-to-end test of `flashpipe bench`: every mode in both directions on a
# loop device with direct I/O (output parsed back, data really written inside
# the printed area and nowhere else), refusal without --force on a loop device
# holding ext4, files created and removed, buffered reads, a simulated eMMC
# whose figures match the model, the bounce-buffer study on a small image, and
# the machine output (CSV parsed back with Python's csv module, the study's
# JSON, CSV and plot).
set -euo pipefail
FP=${FLASHPIPE:?set FLASHPIPE to the flashpipe binary}
work=$(mktemp -d /tmp/fp-bench-e2e.XXXXXX)
loops=()
cleanup() {
  for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
# attach [OPTIONS] FILE: attaches a loop device, sets $DEV (no subshell, so
# the trap sees every device).
attach() { DEV=$(losetup --find --show "$@"); loops+=("$DEV"); }
LINE='^Transfer of [0-9]+ x [0-9]+ sectors \([0-9]+ x [0-9]+(\.5)? KiB\) took [0-9]+\.[0-9]{9} seconds \([0-9]+ kB/s, [0-9]+ KiB/s, [0-9]+\.[0-9]{2} IOPS\)$'

step "every mode on a blank loop device (direct I/O)"
truncate -s 64M "$work/blank.img"
attach --direct-io=on "$work/blank.img"; L=$DEV
timeout 300 "$FP" bench "$L" --total 8M --sizes 4k,64k,1M --csv "$work/out.csv" --json="$work/out.json" \
  --plot "$work/plot.svg" >"$work/out.txt"
cat "$work/out.txt"
[ "$(grep -cE "$LINE" "$work/out.txt")" -eq 18 ] || fail "want 18 mmc_test lines (2 directions x 3 modes x 3 sizes)"
for h in "Write, blocking (depth 1)" "Write, non-blocking (depth 2)" "Write, queued (depth 4)" \
         "Read, blocking (depth 1)" "Read, non-blocking (depth 2)" "Read, queued (depth 4)"; do
  grep -q "^$h, prep copy:" "$work/out.txt" || fail "missing series '$h'"
done
grep -q "Transfer of 2048 x 8 sectors (2048 x 4 KiB)" "$work/out.txt" || fail "8 MiB of 4 KiB requests"
grep -q "^area:   offset 16777216 (16.0 MiB) .. 25165824, 8.0 MiB" "$work/out.txt" || fail "area at capacity/4"
grep -q "Write throughput, MiB/s (gain over blocking):" "$work/out.txt" || fail "summary"
[ "$(wc -l <"$work/out.csv")" -eq 19 ] || fail "csv rows"
python3 - "$work/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
assert len(rs) == 18, len(rs)
assert {r["mode"] for r in rs} == {"blocking", "non-blocking", "queued"}
assert all(r["bytes"] == 8 << 20 and r["ns"] > 0 for r in rs)
assert d["area_offset"] == 16 << 20 and d["area_size"] == 8 << 20
PY
[ "$(grep -c '<polyline' "$work/plot.svg")" -eq 6 ] || fail "plot lines"
# The write tests wrote inside the area and nowhere else.
[ "$(dd if="$L" bs=1M skip=16 count=8 status=none | tr -d '\0' | head -c 1 | wc -c)" -eq 1 ] || fail "area not written"
[ "$(dd if="$L" bs=1M count=16 status=none | tr -d '\0' | head -c 1 | wc -c)" -eq 0 ] || fail "wrote before the area"
[ "$(dd if="$L" bs=1M skip=24 status=none | tr -d '\0' | head -c 1 | wc -c)" -eq 0 ] || fail "wrote after the area"

step "backends and prep kinds"
for b in sync threads io_uring; do
  timeout 120 "$FP" bench "$L" --total 2M --sizes 64k --modes queued --backend "$b" --prep crc >"$work/b.txt"
  [ "$(grep -cE "$LINE" "$work/b.txt")" -eq 2 ] || fail "backend $b"
done
timeout 120 "$FP" bench "$L" --total 2M --sizes 1M --tests write --prep spin:100 --modes blocking >"$work/b.txt"
[ "$(grep -cE "$LINE" "$work/b.txt")" -eq 1 ] || fail "prep spin"

step "refuses a loop device holding ext4 without --force"
truncate -s 64M "$work/fs.img"
mkfs.ext4 -q -F "$work/fs.img"
attach "$work/fs.img"; F=$DEV
if timeout 60 "$FP" bench "$F" --total 4M --sizes 1M >"$work/r.txt" 2>&1; then fail "wrote over ext4"; fi
grep -q "flashpipe bench: error: $F: holds ext4 filesystem; the write tests would destroy part of it (--force to write anyway)" \
  "$work/r.txt" || { cat "$work/r.txt"; fail "refusal message"; }
blkid -p "$F" | grep -q ext4 || fail "ext4 damaged by a refused run"
timeout 60 "$FP" bench "$F" --total 4M --sizes 1M --tests read >"$work/r.txt" || fail "read-only run refused"
timeout 60 "$FP" bench "$F" --total 4M --sizes 1M --force >"$work/r.txt" || fail "--force did not write"
[ "$(grep -cE "$LINE" "$work/r.txt")" -eq 6 ] || fail "--force run lines"

step "regular files: a new path is created and removed, an existing file refused"
timeout 120 "$FP" bench "$work/new.bin" --total 4M --sizes 64k,1M --modes blocking,queued >"$work/f.txt"
[ "$(grep -cE "$LINE" "$work/f.txt")" -eq 8 ] || fail "file lines"
grep -q "new regular file $work/new.bin" "$work/f.txt" || fail "file description"
[ ! -e "$work/new.bin" ] || fail "created file not removed"
echo keep >"$work/existing.bin"
if "$FP" bench "$work/existing.bin" --total 4M --sizes 1M 2>"$work/e.txt"; then fail "overwrote an existing file"; fi
grep -q "is an existing file" "$work/e.txt" || fail "existing file message"
[ "$(cat "$work/existing.bin")" = keep ] || fail "existing file touched"

step "buffered reads report the read-ahead"
timeout 120 "$FP" bench "$L" --total 4M --sizes 1M --tests read --buffered --modes blocking >"$work/ra.txt"
grep -q "read-ahead: BLKRAGET [0-9]* sectors" "$work/ra.txt" || { cat "$work/ra.txt"; fail "read-ahead"; }

step "simulated eMMC: figures match the model"
timeout 120 "$FP" bench sim:size=8G,bw=45M,cmd_us=300 --sizes 4k,1M --total 16M --prep spin:200 --tests write \
  --modes blocking,non-blocking --json="$work/sim.json" >/dev/null 2>"$work/sim.txt"
python3 - "$work/sim.json" <<'PY'
import json, math, sys
rs = json.load(open(sys.argv[1]))["results"]
for r in rs:
    p, n = 200e3, r["count"]
    s = 300e3 + math.ceil(r["request_bytes"] * 1e9 / 45e6)
    want = n * (p + s) if r["mode"] == "blocking" else p + s + (n - 1) * max(p, s)
    # virtual time: only the host's own bookkeeping adds to the model
    assert want <= r["ns"] < want * 1.05 + 5e6, (r, want)
PY

step "bounce-buffer study on a loop device and on the sim"
python3 - "$work/raw.img" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    f.truncate(24 << 20)
    for off, n in ((0, 3 << 20), (8 << 20, 2 << 20), (16 << 20, 5 << 20)):
        f.seek(off); f.write(os.urandom(n))
    f.seek(12 << 20); f.write(b"\xff" * (1 << 20))
PY
img2simg "$work/raw.img" "$work/img.simg"
truncate -s 64M "$work/study.img"
attach --direct-io=on "$work/study.img"; S=$DEV
timeout 300 "$FP" bench --sparse "$work/img.simg" "$S" --buffer-blocks 100,2048,chunk >"$work/s.txt"
cat "$work/s.txt"
for v in "buffer 100 blocks" "buffer 2048 blocks" "buffer = chunk" "pipelined"; do
  grep -qE "^$v: [0-9]+\.[0-9]{3} s, [0-9]+\.[0-9] MB/s \((fastest|[0-9]+\.[0-9]{2}x the fastest)\)$" "$work/s.txt" \
    || fail "study line '$v'"
done
[ "$(grep -c '(fastest)' "$work/s.txt")" -eq 1 ] || fail "one fastest"
off=$(sed -n 's/^area:   offset \([0-9]*\) .*/\1/p' "$work/s.txt")
cmp -n $((24 << 20)) "$work/raw.img" <(dd if="$S" bs=1M skip=$((off >> 20)) status=none) || fail "study image content"
timeout 120 "$FP" bench --sparse "$work/img.simg" sim:size=1G,bw=45M,cmd_us=300 --buffer-blocks 100,16384 >"$work/ss.txt"
cat "$work/ss.txt"
# One request at a time: pipelining hides only host time, so the engine ties
# with the largest buffer. The model (io/bounce_writer.h): RAW (3, 2 and
# 5 MiB chunks) goes out in 51200-byte requests with 100 blocks (62 + 41 +
# 103) or one per chunk with 16384; the 14 MiB of FILL in 512 KiB requests
# (28) either way. At 300 us per request on 24 MiB at 45 MB/s (0.559 s):
# 0.629 s against 0.569 s, 1.10x.
python3 - "$work/ss.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
t = {m[1]: float(m[2]) for m in re.finditer(r"^(.+?): ([0-9.]+) s,", text, re.M)}
n = {m[1]: int(m[2]) for m in re.finditer(r"^(.+?): .* ([0-9]+) requests$", text, re.M)}
best = min(t.values())
# Real time on a shared 2-core machine: the request counts are the model's
# substance; the times only have to lean the way the model says (1.10x).
assert t["pipelined"] <= best * 1.08, t
assert n["buffer 100 blocks"] == 234 and n["buffer 16384 blocks"] == 31, n
assert t["buffer 100 blocks"] >= t["buffer 16384 blocks"] * 1.03, t
PY
step "machine output: CSV of a sim: target parses back, the study honours --json, --csv and --plot"
# The target holds commas: the CSV must quote it (RFC 4180) so every column stays in place.
timeout 120 "$FP" bench sim:size=8G,bw=45M,cmd_us=300 --sizes 4k,1M --total 4M --tests write \
  --modes blocking,queued --csv - --json="$work/simq.json" >"$work/simq.csv" 2>"$work/simq.txt"
python3 - "$work/simq.csv" "$work/simq.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
runs = json.load(open(sys.argv[2]))["results"]
assert len(rows) == len(runs) == 4, (len(rows), len(runs))
for row, run in zip(rows, runs):
    assert None not in row and len(row) == 14, row           # no extra columns
    assert row["target"] == "sim:size=8G,bw=45M,cmd_us=300", row
    assert row["backend"] and row["prep"] == "copy", row
    for k in ("mode", "direction"):
        assert row[k] == run[k], (row, run)
    for k in ("request_bytes", "count", "bytes", "ns"):
        assert int(row[k]) == run[k], (k, row, run)
    assert abs(float(row["MiB_per_s"]) - run["MiB_per_s"]) < 0.001, (row, run)
PY
grep -q "^Transfer of" "$work/simq.txt" || fail "human text not on stderr with --csv -"
timeout 120 "$FP" bench --sparse "$work/img.simg" sim:size=1G,bw=45M,cmd_us=300 --buffer-blocks 100,16384 \
  --json --csv "$work/study.csv" --plot "$work/study.svg" >"$work/study.json" 2>"$work/study.txt"
grep -q "^pipelined: " "$work/study.txt" || fail "study text not on stderr with --json"
python3 - "$work/study.json" "$work/study.csv" "$work/study.svg" "$work/img.simg" <<'PY'
import csv, json, re, sys
j = json.load(open(sys.argv[1]))
assert j["target"].startswith("sim:size=1G,bw=45M,cmd_us=300"), j["target"]
assert j["image"] == sys.argv[4] and j["image_size"] == 24 << 20, j
assert j["raw_bytes"] == 10 << 20 and j["fill_bytes"] == 14 << 20 and j["skip_bytes"] == 0, j
variants = [r["variant"] for r in j["results"]]
assert variants == ["buffer 100 blocks", "buffer 16384 blocks", "pipelined"], variants
assert [r["buffer_blocks"] for r in j["results"]] == [100, 16384, 0]
assert [r["pipelined"] for r in j["results"]] == [False, False, True]
assert min(r["x_fastest"] for r in j["results"]) == 1.0
for r in j["results"]:
    assert r["ns"] > 0 and r["requests"] > 0 and r["data_bytes"] == j["raw_bytes"] + j["fill_bytes"], r
    assert abs(r["MB_per_s"] - r["data_bytes"] * 1e3 / r["ns"]) < 0.01, r
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
assert [r["variant"] for r in rows] == variants, rows
for row, r in zip(rows, j["results"]):
    assert None not in row and row["target"] == j["target"], row
    assert int(row["ns"]) == r["ns"] and int(row["requests"]) == r["requests"], (row, r)
svg = open(sys.argv[3]).read()
assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
assert len(re.findall(r'<rect class="bar"', svg)) == 3, svg
for v in variants:
    assert ">%s<" % v in svg, v
PY
# The text lines agree with the JSON.
python3 - "$work/study.txt" "$work/study.json" <<'PY'
import json, re, sys
t = {m[1]: float(m[2]) for m in re.finditer(r"^(.+?): ([0-9.]+) s,", open(sys.argv[1]).read(), re.M)}
for r in json.load(open(sys.argv[2]))["results"]:
    assert abs(t[r["variant"]] - r["ns"] / 1e9) < 0.0006, (t, r)
PY
cp "$work/img.simg" "$work/img.keep"
rc=0; "$FP" bench --sparse "$work/img.simg" sim:size=1G --csv "$work/img.simg" >/dev/null 2>"$work/e.txt" || rc=$?
[ "$rc" -eq 2 ] && grep -q "an input is never an output" "$work/e.txt" || fail "--csv naming the image: rc $rc, $(cat "$work/e.txt")"
cmp "$work/img.simg" "$work/img.keep" || fail "the image was touched"
rc=0; "$FP" bench sim:size=1G --csv - --json >/dev/null 2>"$work/e.txt" || rc=$?
[ "$rc" -eq 2 ] && grep -q "both write to -" "$work/e.txt" || fail "--csv - --json: rc $rc"

echo "bench e2e: all passed"
