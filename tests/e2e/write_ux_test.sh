#!/usr/bin/env bash
# End-to-end test of what people and programs see of `flashpipe write`, and of
# every command's --json: the block map found beside the image (IMAGE.bmap,
# and with the compression suffix removed), --no-bmap, a bmap that does not
# match refused before anything is written; the phase lines and the summary
# line (with and without a terminal); --progress=json events; SIGINT and
# SIGTERM in the middle of a write (exit 130/143, the "interrupted" report
# naming what was partly written, bytes after that offset untouched; read's
# interrupted report; bench removing its file); and the --json of write, read,
# bench, bench --sparse, dump, bmap create and lp dump, on success and on
# failure, validated against docs/schema/*.schema.json.
#   FLASHPIPE=build/flashpipe bash tests/e2e/write_ux_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
SRC=$(realpath "${FLASHPIPE_SOURCE_DIR:-$(dirname "$0")/../..}")
SCHEMA=$SRC/docs/schema
UX=$SRC/tests/e2e/ux_check.py
for tool in bmaptool img2simg xz python3; do
  command -v "$tool" >/dev/null || { echo "write_ux_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done
python3 -c 'import jsonschema' || { echo "write_ux_test: missing python3-jsonschema (scripts/setup.sh installs it)"; exit 1; }

T=$(mktemp -d /tmp/fp_write_ux.XXXXXX)
LOOP=""
cleanup() {
  if [ -n "$LOOP" ]; then losetup -d "$LOOP" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }
# check FILE PYTHON_EXPR WHAT: the expression, over the JSON object d of FILE, holds.
check() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" ||
    fail "$3: not ($2) in $(cat "$1")"
}
# valid SCHEMA_NAME FILE WHAT: FILE is one JSON object valid against docs/schema/SCHEMA_NAME.schema.json.
valid() { python3 "$UX" validate "$SCHEMA/$1.schema.json" "$2" || fail "$3: $2 is not a valid $1 ($(head -c 2000 "$2"))"; }
# run EXPECTED_RC OUT ERR CMD...: CMD's exit status is EXPECTED_RC.
run() {
  local want=$1 out=$2 err=$3 rc=0
  shift 3
  timeout 120 "$@" >"$out" 2>"$err" || rc=$?
  [ "$rc" = "$want" ] || fail "exit $rc, want $want: $* ($(cat "$err"))"
}
has() { grep -q -- "$2" "$1" || fail "$3: '$2' not in $1: $(cat "$1")"; }
lacks() { if grep -q -- "$2" "$1"; then fail "$3: '$2' in $1: $(cat "$1")"; fi; }
no_temp() { [ -z "$(ls -A "$1" | grep -v -x -F -f "$2")" ] || fail "$3: left behind: $(ls -A "$1" | grep -v -x -F -f "$2")"; }

MiB=1048576
# ---- fixtures: a 16 MiB raw image with holes and 3 MiB of data at 0, 3 and 9 MiB; its bmap
truncate -s 16M img.raw
for o in 0 3 9; do head -c 1M /dev/urandom | dd of=img.raw bs=1M seek=$o conv=notrunc status=none; done
bmaptool create -o img.raw.bmap img.raw 2>/dev/null
img2simg img.raw img.simg
head -c 64K /dev/urandom >keep

# ---- the block map beside the image
run 0 a1.out a1.err "$FP" write --json=a1.json --no-progress img.raw a1.img
check a1.json "d['bmap'] == 'img.raw.bmap' and d['bmap_found'] and d['kind'] == 'raw+bmap'" "IMAGE.bmap found"
check a1.json "d['bytes_skipped'] == 13 * $MiB and d['bytes_written'] == 3 * $MiB and d['bytes_zeroed'] == 0" "IMAGE.bmap used"
has a1.err "using block map img.raw.bmap (found beside the image; --no-bmap" "IMAGE.bmap said"
cmp -s a1.img img.raw || fail "IMAGE.bmap: a1.img differs from the image"
valid write-report a1.json "write report"
ok "IMAGE.bmap found, said and used (13 MiB skipped); the target is the image"

cp img.raw z.raw && xz -T1 -0 z.raw && cp img.raw.bmap z.raw.bmap
run 0 a2.out a2.err "$FP" write --json=a2.json --no-progress z.raw.xz a2.img
check a2.json "d['bmap'] == 'z.raw.bmap' and d['bmap_found'] and d['kind'] == 'xz+raw+bmap'" "IMAGE without .xz + .bmap found"
check a2.json "d['bytes_skipped'] == 13 * $MiB" "IMAGE without .xz + .bmap used"
has a2.err "using block map z.raw.bmap" "IMAGE without .xz + .bmap said"
cmp -s a2.img img.raw || fail "z.raw.bmap: a2.img differs from the image"
ok "z.raw.bmap found beside z.raw.xz and used"

run 0 a3.out a3.err "$FP" write --json=a3.json --no-progress --no-bmap img.raw a3.img
check a3.json "d['bmap'] is None and not d['bmap_found'] and d['kind'] == 'raw'" "--no-bmap"
check a3.json "d['bytes_skipped'] == 0 and d['bytes_zeroed'] == 13 * $MiB" "--no-bmap writes the zeros"
lacks a3.err "block map" "--no-bmap"
cmp -s a3.img img.raw || fail "--no-bmap: a3.img differs from the image"
run 0 a4.out a4.err "$FP" write --json=a4.json --no-progress --bmap img.raw.bmap img.raw a4.img
check a4.json "d['bmap'] == 'img.raw.bmap' and not d['bmap_found']" "--bmap given"
lacks a4.err "found beside" "--bmap given"
ok "--no-bmap: no block map looked for, zeros written; --bmap given: not 'found'"

# A bmap of another image (another size; then the same size, other data in
# the first range): refused before a target is created or changed.
truncate -s 32M big.raw
head -c 1M /dev/urandom | dd of=big.raw conv=notrunc status=none
mkdir mm
bmaptool create -o mm/m.raw.bmap big.raw 2>/dev/null
cp img.raw mm/m.raw
cp img.raw mm/c.raw && cp img.raw.bmap mm/c.raw.bmap
printf 'XXXX' | dd of=mm/c.raw bs=1 seek=100 conv=notrunc status=none
for image in mm/m.raw mm/c.raw; do
  cp keep mm/tgt
  ls -A mm >before
  run 1 b.out b.err "$FP" write --json=b.json --no-progress "$image" mm/tgt mm/new.img
  [ ! -e mm/new.img ] || fail "bmap mismatch ($image): new.img was created"
  cmp -s keep mm/tgt || fail "bmap mismatch ($image): tgt changed"
  no_temp mm before "bmap mismatch ($image)"
  has b.err "block map $image.bmap (found beside the image; if it belongs to another image, write with --no-bmap)" "$image"
  check b.json "d['error_class'] == 'corrupt_image' and not d['ok']" "bmap mismatch ($image)"
  check b.json "[r['state'] for r in d['results']] == ['not_started', 'not_started']" "bmap mismatch ($image)"
  valid write-report b.json "bmap mismatch report ($image)"
done
has b.err "mismatch" "first range checksum"
run 0 a5.out a5.err "$FP" write --no-progress --no-bmap mm/m.raw mm/tgt
cmp -s mm/tgt img.raw || fail "--no-bmap past a wrong bmap: tgt differs"
ok "a bmap of another image (size, first range's checksum) refused, nothing created or changed; --no-bmap writes"

# ---- phases and the summary line
run 0 p1.out p1.err "$FP" write --verify --progress=lines img.simg p1a.img p1b.img
python3 - p1.err <<'EOF' || fail "phase lines: $(cat p1.err)"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
def first(p):
    return next(i for i, l in enumerate(lines) if l.startswith("flashpipe write: " + p))
w, s, v = first("writing done: "), first("syncing done: "), first("verifying done: ")
assert w < s < v, (w, s, v)
assert re.fullmatch(r"flashpipe write: done: 16\.0 MiB image to 2 targets in [0-9.]+ s: 3\.0 MiB written "
                    r"\([0-9.]+ MiB/s\), 13\.0 MiB zeroed, 0 B skipped; verified", lines[-1]), lines[-1]
EOF
[ ! -s p1.out ] || fail "progress lines on stdout: $(cat p1.out)"
ok "phase lines writing, syncing, verifying in order on stderr; summary line last (written, zeroed, skipped, verified)"

python3 "$UX" pty p2.tty -- "$FP" write --verify img.raw p2.img || fail "write under a pty failed: $(cat p2.tty)"
python3 - p2.tty <<'EOF' || fail "progress bar: $(cat -v p2.tty)"
import re, sys
text = open(sys.argv[1], "rb").read().decode()
w, s, v = text.index("\rwriting "), text.index("\rsyncing "), text.index("\rverifying ")
assert w < s < v, (w, s, v)
assert re.search(r"\nflashpipe write: done: 16\.0 MiB image to p2\.img in [0-9.]+ s: 3\.0 MiB written \([0-9.]+ MiB/s\), "
                 r"0 B zeroed, 13\.0 MiB skipped; verified\r?\n$", text), text[-300:]
EOF
ok "on a terminal: a bar per phase (writing, syncing, verifying), then the summary line"

run 0 p3.json p3.err "$FP" write --json img.raw p3.img
valid write-report p3.json "--json on stdout"
has p3.err "^flashpipe write: done: " "summary with --json on stdout"
lacks p3.err "writing" "progress with --json on stdout"
ok "--json to stdout: stdout is the report alone, the summary line on stderr"

# ---- --progress=json
run 0 e1.out e1.err "$FP" write --verify --progress=json --json=e1.json img.simg e1a.img e1b.img
python3 "$UX" events "$SCHEMA" e1.out writing,syncing,verifying 2 0 || fail "write events: $(cat e1.out)"
python3 - e1.out e1.json <<'EOF' || fail "the last event is not the --json report"
import json, sys
last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert last["report"] == json.load(open(sys.argv[2]))
EOF
has e1.err "^flashpipe write: done: " "summary with --progress=json"
ok "--progress=json: NDJSON events valid, phases in order, bytes monotonic, 2 target events, the report last (= --json)"

run 1 e2.out e2.err "$FP" write --progress=json img.raw nodir/x
python3 "$UX" events "$SCHEMA" e2.out "" 1 0 || fail "failed write events: $(cat e2.out)"
tail -1 e2.out >e2.last
check e2.last "not d['report']['ok'] and d['report']['error_class'] == 'io_error' and d['report']['mib_per_s'] == 0" "failed write's last event"
ok "--progress=json of a failed write: a target event and the failure report last"

run 0 e3.out e3.err "$FP" read --progress=json img.raw e3.simg
python3 "$UX" events "$SCHEMA" e3.out reading,syncing 0 0 || fail "read events: $(cat e3.out)"
ok "read --progress=json: events valid, the read report last"

# ---- SIGINT and SIGTERM in the middle of a write (stdin fed 1 MiB per 50 ms)
# signal_write SIG TARGET OUT: `write --in-place --progress=json` of the feed to
# TARGET, SIG once a progress event was printed; exit 130 (SIGINT) or 143.
signal_write() {
  local want=130 rc
  [ "$1" = SIGTERM ] && want=143
  rc=$(CMD_OUT=$T/$3.out CMD_ERR=$T/$3.err python3 "$UX" signal "$1" - '"event": "progress"' 40,0.05 -- \
    "$FP" write --in-place --progress=json --json="$3.json" - "$2")
  [ "$rc" = "$want" ] || fail "$1: exit $rc, want $want ($(cat "$3.err"))"
  valid write-report "$3.json" "$1 report"
  check "$3.json" "d['interrupted'] and d['signal'] == '$1' and d['error_class'] == 'interrupted' and not d['ok']" "$1 report"
  check "$3.json" "[(r['target'], r['state'], r['error_class']) for r in d['results']] == [('$2', 'partially_written', 'interrupted')]" "$1 target"
  check "$3.json" "0 < d['results'][0]['partly_written_to'] == d['partly_written_to'] < 40 * $MiB" "$1 offset"
  python3 "$UX" events "$SCHEMA" "$3.out" writing 1 1 || fail "$1 events: $(cat "$3.out")"
  has "$3.err" "^flashpipe write: interrupted by $1" "$1"
  has "$3.err" "^flashpipe write: $2: partially written, do not use (" "$1 target line"
}
pattern() { python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * (64 << 12))'; }  # 64 MiB

# A block device keeps every byte after partly_written_to.
pattern >dev.bin
cp dev.bin dev.orig
LOOP=$(losetup --direct-io=on --find --show dev.bin)
signal_write SIGINT "$LOOP" s1
check s1.json "not d['results'][0]['old_contents_discarded']" "SIGINT, block device"
has s1.err "partly written: image bytes before 0x[0-9a-f]* ([0-9.]* MiB) may have changed, none after them" "SIGINT, block device"
losetup -d "$LOOP"
LOOP=""
python3 - dev.bin dev.orig s1.json <<'EOF2' || fail "SIGINT: the loop device changed after partly_written_to"
import json, sys
end = json.load(open(sys.argv[3]))["partly_written_to"]
now, was = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert len(now) == len(was) and now[end:] == was[end:] and now[:end] != was[:end], end
EOF2
ok "SIGINT, a block device: exit 130, report interrupted, partially_written before partly_written_to, untouched after it"

# An in-place file is cut to the image's size first: the report says its old contents are gone.
pattern >ip.bin
signal_write SIGTERM ip.bin s3
check s3.json "d['results'][0]['old_contents_discarded']" "SIGTERM, in-place file"
has s3.err "ip.bin: partially written, do not use (cut to the image's size first: its old contents are gone" "SIGTERM, in-place file"
lacks s3.err "none after them" "SIGTERM, in-place file"
ok "SIGTERM, an in-place file: exit 143, report interrupted, old_contents_discarded (the file was cut), not 'none after them'"

mkdir s2
ls -A s2 >before
export CMD_OUT=$T/s2.out CMD_ERR=$T/s2.err
rc=$(python3 "$UX" signal SIGTERM s2.err 'writing' 40,0.05 -- \
  "$FP" write --progress=lines --json=s2.json - s2/s2.img)
[ "$rc" = 143 ] || fail "SIGTERM: exit $rc, want 143 ($(cat s2.err))"
[ ! -e s2/s2.img ] || fail "SIGTERM: s2.img created"
no_temp s2 before "SIGTERM"
valid write-report s2.json "SIGTERM report"
check s2.json "d['interrupted'] and d['signal'] == 'SIGTERM' and d['partly_written_to'] is None" "SIGTERM report"
check s2.json "[(r['state'], r['kind']) for r in d['results']] == [('unchanged', 'new_file')]" "SIGTERM target"
has s2.err "^flashpipe write: s2/s2.img: not created" "SIGTERM target line"
ok "SIGTERM: exit 143, report interrupted, the new target not created, no temporary file left"

# read (64 MiB of random bytes into xz, one thread: seconds) stopped by SIGTERM:
# 143, the interrupted read report, no output left behind.
head -c 64M /dev/urandom >rsrc.bin
mkdir rd
rc=$(CMD_OUT=$T/rd.out CMD_ERR=$T/rd.err python3 "$UX" signal SIGTERM - '"event": "progress"' - -- \
  "$FP" read --format xz --level 6 --threads 1 --progress=json --json=rd.json rsrc.bin rd/r.xz)
[ "$rc" = 143 ] || fail "read SIGTERM: exit $rc, want 143 ($(cat rd.err))"
[ -z "$(ls -A rd)" ] || fail "read SIGTERM: left behind: $(ls -A rd)"
valid read-report rd.json "interrupted read report"
check rd.json "d['interrupted'] and d['signal'] == 'SIGTERM' and d['error_class'] == 'interrupted' and not d['ok']" "read SIGTERM report"
python3 "$UX" events "$SCHEMA" rd.out reading 0 1 || fail "read SIGTERM events: $(cat rd.out)"
has rd.err "^flashpipe read: interrupted by SIGTERM" "read SIGTERM"
ok "read SIGTERM: exit 143, interrupted read report (valid), events end with it, no output left"

# bench removes the file it created when a signal stops it (sent once the file exists).
mkdir bn
rc=$(CMD_OUT=$T/bn.out CMD_ERR=$T/bn.err python3 "$UX" signal SIGINT bn/bench.tmp '' - -- \
  "$FP" bench --tests write --sizes 4k --total 64M bn/bench.tmp)
[ "$rc" = 130 ] || fail "bench SIGINT: exit $rc, want 130 ($(cat bn.err))"
[ -z "$(ls -A bn)" ] || fail "bench SIGINT: left behind: $(ls -A bn)"
has bn.err "interrupted by SIGINT" "bench SIGINT"
ok "bench SIGINT: exit 130, the file it created removed"

# ---- every command's --json against its schema, on success and on failure
run 0 j.out j.err "$FP" write --verify-only --json=j1.json img.raw a1.img
valid write-report j1.json "verify-only"
check j1.json "d['ok'] and d['verify_only'] and d['verify'] == 'passed'" "verify-only"
printf 'Y' | dd of=a1.img bs=1 seek=$((3 * MiB + 5)) conv=notrunc status=none
run 1 j.out j.err "$FP" write --verify-only --json=j2.json img.raw a1.img
valid write-report j2.json "verify-only mismatch"
check j2.json "d['error_class'] == 'verify_mismatch' and d['verify'] == 'failed'" "verify-only mismatch"
run 1 j.out j.err "$FP" write --json=j3.json img.raw nodir/x.img
valid write-report j3.json "write to a missing directory"
check j3.json "d['image_size'] == 16 * $MiB and d['results'][0]['state'] == 'not_started'" "early failure keeps the size"
run 0 j.out j.err "$FP" read --json=r1.json --no-progress img.raw r1.simg
valid read-report r1.json "read"
run 1 j.out j.err "$FP" read --json=r2.json --no-progress --length 64M img.raw r2.simg
valid read-report r2.json "read failure"
check r2.json "not d['ok'] and d['error_class'] is not None" "read failure"
run 0 j.out j.err "$FP" bench --sizes 64k,1M --total 2M --json=bn.json sim:size=64M,bw=400M,cmd_us=10
valid bench-report bn.json "bench"
check bn.json "len(d['results']) > 0" "bench results"
run 0 j.out j.err "$FP" bench --sparse img.simg --json=bs.json bs.tmp
valid bench-sparse-report bs.json "bench --sparse"
check bs.json "len(d['results']) > 0" "bench --sparse results"
run 0 d1.json j.err "$FP" dump --json img.simg
valid dump-report d1.json "dump"
check d1.json "d['valid'] and d['totals']['raw_bytes'] == 3 * $MiB" "dump totals"
head -c 3000 img.simg >trunc.simg
run 1 d2.json j.err "$FP" dump --json trunc.simg
valid dump-report d2.json "dump of a truncated image"
check d2.json "not d['valid'] and 'truncated' in d['error']" "dump of a truncated image"
run 0 j.out j.err "$FP" bmap create --json=bc1.json -o bc.bmap img.raw
valid bmap-create-report bc1.json "bmap create"
run 1 bc2.json j.err "$FP" bmap create --json -o bc2.bmap missing.raw
valid bmap-create-report bc2.json "bmap create of a missing image"
check bc2.json "not d['ok']" "bmap create failure"
run 0 j.out j.err "$FP" lp make -d 64M -m 65536 -s 2 -p system:readonly:4M -o super.img
run 0 j.out j.err "$FP" lp dump --json=lp.json super.img
valid lp-dump-report lp.json "lp dump"
check lp.json "[p['name'] for p in d['partitions']] == ['system']" "lp dump partitions"
ok "write (verify-only, mismatch, early failure), read (ok, failure), bench, bench --sparse, dump (ok, truncated), bmap create (ok, failure), lp dump: --json valid against docs/schema"

# The checker is not a rubber stamp: a report without schema_version, or with
# a state the schema does not know, is refused.
python3 -c 'import json, sys; d = json.load(open("a1.json")); del d["schema_version"]; json.dump(d, open("bad1.json", "w"))'
python3 -c 'import json, sys; d = json.load(open("a1.json")); d["results"][0]["state"] = "fine"; json.dump(d, open("bad2.json", "w"))'
for bad in bad1.json bad2.json; do
  if python3 "$UX" validate "$SCHEMA/write-report.schema.json" "$bad" 2>/dev/null; then fail "$bad passed the schema"; fi
done
ok "the schema refuses a report without schema_version and a result with an unknown state"

echo "write_ux_test: $PASS passed"
