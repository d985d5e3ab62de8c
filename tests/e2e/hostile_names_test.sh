#!/usr/bin/env bash
# Hostile names in liblp metadata (issue 19, class 3): a super_empty.img
# whose partition is named "../../x<LF><ESC>[2J" (checksums valid, made by
# patching what `lp make` wrote) is refused by `serve`'s update-super (with
# and without wipe) with a FAIL that shows the name escaped, and the super
# is left as it was; `lp dump` shows such names escaped (text) and as valid
# JSON; a super that already holds such a name is opened with the name not
# served and nothing escaping to a client.
set -euo pipefail
FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }
cd "$work"

no_escape() {  # FILE WHAT
  if grep -q $'\033' "$1"; then die "$2: an escape byte reached the output: $(head -c 300 "$1" | od -c | head -5)"; fi
}

# rename_in FILE OLD NEW: every metadata copy in FILE (found by its magic at
# any 512-byte boundary of the first 4 MiB) with OLD's bytes replaced by NEW
# (same length) and both checksums computed again, as a forger would.
rename_in() {
  python3 - "$@" <<'PY'
import hashlib, struct, sys
path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
assert len(old) == len(new)
data = bytearray(open(path, "rb").read())
copies = 0
for at in range(0, min(len(data), 4 << 20), 512):
    if struct.unpack_from("<I", data, at)[0] != 0x414C5030:
        continue
    header_size, = struct.unpack_from("<I", data, at + 8)
    tables_size, = struct.unpack_from("<I", data, at + 44)
    t0, t1 = at + header_size, at + header_size + tables_size
    tables = bytes(data[t0:t1])
    if old not in tables:
        continue
    data[t0:t1] = tables.replace(old, new)
    data[at + 48:at + 80] = hashlib.sha256(bytes(data[t0:t1])).digest()
    data[at + 12:at + 44] = bytes(32)
    data[at + 12:at + 44] = hashlib.sha256(bytes(data[at:at + header_size])).digest()
    copies += 1
assert copies > 0, "no metadata copy holds the name"
open(path, "wb").write(data)
print(copies)
PY
}
# start_serve WHAT: serve super.bin on TCP loopback; sets serve_pid and port.
start_serve() {
  "$FLASHPIPE" serve -v --partition super="$work/super.bin" --tcp 127.0.0.1:0 --state "$work/state" \
    --initial-lock unlocked >serve.out 2>serve.log & serve_pid=$!
  port=
  for _ in $(seq 100); do
    port=$({ sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' serve.out 2>/dev/null || true; } | head -1)
    [ -n "$port" ] && return 0
    kill -0 "$serve_pid" 2>/dev/null || die "serve did not start ($1): $(cat serve.log)"
    sleep 0.1
  done
  die "serve not listening ($1)"
}

HOSTILE='../../x\n\x1b[2J'  # 12 bytes once unescaped, like aaaaaaaaaaaa

"$FLASHPIPE" lp make -d 16M -m 64K -s 2 -g main:8M -p aaaaaaaaaaaa:readonly:1M:main -o se.img >/dev/null
[ "$(rename_in se.img aaaaaaaaaaaa "$HOSTILE")" = 1 ] || die "super_empty.img not patched"
"$FLASHPIPE" lp dump se.img >dump.txt 2>&1 || die "lp dump of the forged super_empty.img: $(cat dump.txt)"
no_escape dump.txt "lp dump"
grep -qF 'Name: ../../x\x0a\x1b[2J' dump.txt || die "lp dump: the name not shown escaped: $(head -20 dump.txt)"
"$FLASHPIPE" lp dump --json se.img >dump.json 2>&1 || die "lp dump --json: $(cat dump.json)"
python3 - dump.json <<'PY' || die "lp dump --json: not valid UTF-8 JSON with the name: $(head -c 300 dump.json)"
import json, sys
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", errors="strict"))
assert any(p["name"] == "../../x\n\x1b[2J" for p in doc["partitions"] if isinstance(p, dict)), doc
PY
pass "lp dump: a forged name shown escaped as text, exact in JSON"

# ---- serve: update-super of the forged super_empty.img ---------------------
truncate -s 16M super.bin
cp super.bin super.before
start_serve "blank super"
python3 - "$SRC/tests/e2e" "$port" se.img <<'PY' >wire.out || die "update-super of a forged name: $(cat wire.out)"
import sys
sys.path.insert(0, sys.argv[1])
from fastboot_wire import Tcp
data = open(sys.argv[3], "rb").read()
for command in ("update-super:super:wipe", "update-super:super"):
    c = Tcp("127.0.0.1", int(sys.argv[2]))
    r = c.command("download:%08x" % len(data))
    assert r.startswith("DATA"), r
    c.send_frame(data)
    assert c.response() == "OKAY"
    r = c.command(command)
    assert r.startswith("FAIL"), (command, r)
    assert "\x1b" not in r and "\n" not in r, (command, r)
    assert "is not 1 to 36 characters" in r or "partition name" in r, (command, r)
    print("ok: %s: %s" % (command, r))
PY
cat wire.out
cmp -s super.bin super.before || die "a refused update-super changed the super"
no_escape serve.log "serve's log"
pass "serve refuses update-super (wipe and not) of a forged name, nothing written"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=""

# ---- serve: a super that already holds a forged name -----------------------
"$FLASHPIPE" lp make -d 16M -m 64K -s 2 -g main:8M -p aaaaaaaaaaaa:readonly:1M:main -p system:readonly:1M:main \
  -F -o super.bin >/dev/null
[ "$(rename_in super.bin aaaaaaaaaaaa "$HOSTILE")" -ge 2 ] || die "super not patched"
start_serve "forged super"
timeout 60 "$FLASHPIPE" fastboot -s "tcp:127.0.0.1:$port" getvar all >getvar.out 2>&1 || true
no_escape getvar.out "getvar all on a forged super"
grep -q "partition-size:system:" getvar.out || die "the legal partition is not served: $(cat getvar.out)"
if grep -q "x1b\|\.\./" getvar.out; then die "the forged partition is served: $(grep -a 'x1b\|\.\./' getvar.out)"; fi
grep -q "is not 1 to 36 characters.*not served" serve.log || die "serve does not say why: $(cat serve.log)"
no_escape serve.log "serve's log (forged super)"
pass "serve opens a super holding a forged name: the name not served, the others are"
echo PASS
