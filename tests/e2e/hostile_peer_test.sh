#!/usr/bin/env bash
# A hostile fastboot device (tests/e2e/hostile_device.py) whose serial,
# product, INFO and FAIL texts hold terminal escapes and bytes that are not
# UTF-8: no escape byte reaches the terminal from `flash`, `fastboot getvar`
# or `fastboot flash`, each fails with a non-zero exit, and `flash --json` is
# valid UTF-8 JSON (issue 19, classes 5 and 6).
set -euo pipefail
FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
dev_pid=""
cleanup() {
  if [ -n "$dev_pid" ]; then kill "$dev_pid" 2>/dev/null || true; wait "$dev_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }

python3 "$SRC/tests/e2e/hostile_device.py" 120 >"$work/port" & dev_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(head -1 "$work/port")
[ -n "$port" ] || die "the hostile device did not start"
dev=tcp:127.0.0.1:$port
head -c $((1 << 20)) /dev/urandom >"$work/boot.img"

no_escape() {  # FILE WHAT
  if grep -q $'\033\|\007' "$1"; then die "$2: a terminal escape reached the output: $(head -c 300 "$1" | od -c | head -5)"; fi
}

rc=0; timeout 60 "$FLASHPIPE" flash --no-progress -s "$dev" --json="$work/r.json" boot="$work/boot.img" \
  >"$work/out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ] || die "flash against a failing device: rc $rc"
no_escape "$work/out" "flash"
python3 - "$work/r.json" <<'PY' || die "flash --json is not valid UTF-8 JSON: $(head -c 400 "$work/r.json" | od -c | head)"
import json, sys
data = open(sys.argv[1], "rb").read()
doc = json.loads(data.decode("utf-8", errors="strict"))
assert doc["devices"][0]["result"] != "ok", doc
PY
pass "flash: a FAIL with escapes and 0xff 0xfe: rc $rc, no escape on the terminal, --json valid UTF-8"

rc=0; timeout 60 "$FLASHPIPE" fastboot -s "$dev" getvar product >"$work/out" 2>&1 || rc=$?
no_escape "$work/out" "fastboot getvar product"
grep -q 'product: \\x1b\]0;pwned\\x07' "$work/out" || die "getvar product: the value not shown escaped: $(cat "$work/out")"
rc=0; timeout 60 "$FLASHPIPE" fastboot -s "$dev" getvar version >"$work/out" 2>&1 || rc=$?
no_escape "$work/out" "fastboot getvar version (FAIL)"
rc=0; timeout 60 "$FLASHPIPE" fastboot -s "$dev" flash boot "$work/boot.img" >"$work/out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ] || die "fastboot flash against a failing device: rc $rc"
no_escape "$work/out" "fastboot flash"
grep -q '(bootloader) \\x1b' "$work/out" || die "fastboot flash: the INFO line not shown escaped: $(cat "$work/out")"
pass "fastboot getvar and flash: device text shown with escapes as \\xNN, the flash fails (rc $rc)"
echo PASS
