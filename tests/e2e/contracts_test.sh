#!/usr/bin/env bash
# The machine-facing contracts of docs/contracts.md, one outcome each: exit
# 2 and no report for a usage error of every command; exit 1 with a report
# valid against its schema for a missing image (write), an unreachable
# device (flash: gone) and a locked one (flash: refused, nothing listed as
# partly written); SIGHUP in the middle of a write stops it cleanly (exit
# 129, the report says interrupted by SIGHUP), as when LAVA's timeout or a
# closed ssh session ends a job; a file target killed mid-write keeps its
# old content and the temporary file is removed by the next run. About 10 s.
#   FLASHPIPE=build/flashpipe bash tests/e2e/contracts_test.sh
set -euo pipefail
FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
SRC=$(realpath "${FLASHPIPE_SOURCE_DIR:-$(dirname "$0")/../..}")
UX="python3 $SRC/tests/e2e/ux_check.py"
SCHEMA=$SRC/docs/schema
python3 -c "import jsonschema" 2>/dev/null || { echo "SKIP: python3-jsonschema missing"; exit 77; }
T=$(mktemp -d)
daemon=""
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
valid() { $UX validate "$SCHEMA/$1.schema.json" "$2" || fail "$3: not valid against $1.schema.json: $(cat "$2")"; }
check() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" || fail "$3: $(cat "$1")"; }

# Usage errors: exit 2 and nothing on stdout, for every command of the table.
for cmd in $("$FP" --help-json | python3 -c 'import json, sys; print(" ".join(c["name"] for c in json.load(sys.stdin)["commands"]))'); do
  rc=0
  "$FP" $cmd --no-such-flag --json >u.out 2>u.err || rc=$?
  [ $rc = 2 ] || fail "$cmd --no-such-flag: exit $rc, want 2"
  [ ! -s u.out ] || fail "$cmd --no-such-flag printed on stdout: $(cat u.out)"
done
rc=0; "$FP" no-such-command 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "an unknown command: exit $rc"
ok "a usage error of every command: exit 2, no report"

# write: a missing image.
rc=0; "$FP" write --json=w.json missing.img out.img 2>w.err || rc=$?
[ $rc = 1 ] || fail "write of a missing image: exit $rc"
valid write-report w.json "missing image"
check w.json "not d['ok'] and d['error_class'] == 'not_found' and d['results'][0]['state'] == 'not_started'" "missing image"
[ ! -e out.img ] || fail "a failed write created its target"
ok "write of a missing image: exit 1, error_class not_found, target not_started and not created"

# flash: a device that is not there (waited for up to --wait, then absent), and a locked one.
head -c 1M /dev/urandom >boot.raw
rc=0; timeout 20 "$FP" flash -s tcp:127.0.0.1:1 --wait 0.5 --json=gone.json boot=boot.raw 2>absent.err || rc=$?
[ $rc = 1 ] || fail "flash to a closed port: exit $rc"
valid flash-report gone.json "unreachable device"
check gone.json "d['failed'] == 1 and d['devices'][0]['result'] == 'absent' and d['devices'][0]['partly_written'] == []" "absent"
[ "$(grep -c '< waiting for tcp:127.0.0.1:1 >' absent.err)" = 1 ] || fail "waiting not said once: $(cat absent.err)"
truncate -s 16M disk.img
sgdisk -n 1:2048:+4M -c 1:boot disk.img >/dev/null
"$FP" serve --storage disk.img --state state --tcp 127.0.0.1:0 --initial-lock locked >d.out 2>d.log &
daemon=$!
for _ in $(seq 100); do grep -q "listening on tcp" d.out 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9]*\)$/\1/p' d.out)
[ -n "$port" ] || fail "daemon: $(cat d.log)"
cp disk.img disk.before
rc=0; "$FP" flash -s tcp:127.0.0.1:$port --json=locked.json boot=boot.raw 2>locked.err || rc=$?
[ $rc = 1 ] || fail "flash to a locked device: exit $rc"
valid flash-report locked.json "locked device"
check locked.json "d['devices'][0]['result'] == 'refused' and 'locked' in d['devices'][0]['error']" "locked"
check locked.json "d['devices'][0]['written'] == [] and d['devices'][0]['partly_written'] == [] and not d['devices'][0]['steps'][0]['changed']" \
  "a refused download listed as partly written"
cmp disk.img disk.before || fail "a locked device changed"
grep -q "^flashpipe flash: error: 1 of 1 devices failed" locked.err || fail "flash's stderr: $(cat locked.err)"
ok "flash: an unreachable device is waited for, then absent; a locked one refused (nothing partly written, the disk unchanged): exit 1, reports valid"

# SIGHUP in the middle of a write to a block-device-like target (a file in place).
head -c 64M /dev/zero | tr '\0' '\132' >t.bin
rc=$(CMD_OUT=$T/h.out CMD_ERR=$T/h.err $UX signal SIGHUP - '"event": "progress"' 40,0.05 -- \
  "$FP" write --in-place --progress=json --json=h.json - t.bin)
[ "$rc" = 129 ] || fail "SIGHUP: exit $rc, want 129 ($(cat h.err))"
valid write-report h.json "SIGHUP report"
check h.json "d['interrupted'] and d['signal'] == 'SIGHUP' and d['error_class'] == 'interrupted'" "SIGHUP report"
check h.json "d['results'][0]['state'] == 'partially_written' and d['partly_written_to'] > 0" "SIGHUP target"
grep -q "^flashpipe write: interrupted by SIGHUP" h.err || fail "SIGHUP message: $(cat h.err)"
ok "SIGHUP mid-write: exit 129, report interrupted by SIGHUP, the target partially_written up to partly_written_to"

# A file target killed (SIGKILL) mid-write: old content kept, the temporary
# removed by the next run.
head -c 4M /dev/urandom >old.bin
cp old.bin target.bin
rc=$(CMD_OUT=$T/k.out CMD_ERR=$T/k.err $UX signal SIGKILL - '"event": "progress"' 40,0.05 -- \
  "$FP" write --progress=json - target.bin)
[ "$rc" = -9 ] || [ "$rc" = 137 ] || fail "SIGKILL: exit $rc"
cmp target.bin old.bin || fail "a killed write changed the file target"
ls -A | grep -q '^\.target\.bin\.flashpipe-' || fail "no temporary left by the killed run (did it write beside the file?)"
head -c 2M /dev/urandom >new.bin
"$FP" write --no-progress new.bin target.bin 2>/dev/null || fail "the next write"
cmp target.bin new.bin || fail "the next write"
! ls -A | grep -q '^\.target\.bin\.flashpipe-' || fail "the next run left the killed run's temporary: $(ls -A)"
ok "SIGKILL mid-write of a file: the old content stays, the next run removes the temporary"
echo "PASS"
