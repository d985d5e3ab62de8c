#!/usr/bin/env bash
# The host side (`flashpipe flash`, `flashpipe fastboot`) against `flashpipe
# serve` daemons on loopback, with the AOSP tools (simg2img, fastboot 29.0.6)
# as the oracles:
#   - five daemons at once over TCP and UDP with different max-download-sizes
#     (1M, 3M, 16M): one killed mid-flash, one locked; the others end with
#     simg2img's output and the raw image, the --json report names each
#     outcome (ok, gone, refused);
#   - a raw image of odd size cut into many parts; gzip and zstd input; raw +
#     bmap (unmapped ranges keep their old bytes);
#   - --verify by oem digest, and by read-back (fetch:) through a relay that
#     hides serve's oem digest (digestless_proxy.py), over TCP and UDP;
#   - `flashpipe fastboot flashall` from an ANDROID_PRODUCT_OUT folder, and
#     getvar/erase/set_active/reboot: the same partitions, state file and
#     answers as the AOSP client given the same arguments on a twin daemon.
set -euo pipefail

FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 -c 'import jsonschema' || { echo "host_flash_test: missing python3-jsonschema (scripts/setup.sh installs it)"; exit 1; }
for tool in fastboot img2simg simg2img mkfs.ext4 bmaptool gzip zstd python3; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

work=$(mktemp -d)
declare -A pid port
cleanup() {
  for p in "${pid[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# die also from a subshell (a process substitution): the test stops.
trap 'exit 1' TERM
die() { echo "FAIL: $*"; [ "$BASHPID" = $$ ] || kill -TERM $$; exit 1; }
pass() { echo "ok: $*"; }

# start NAME TRANSPORT SERVE-ARGS...: a daemon at a port the kernel picks.
start() {
  local name=$1 transport=$2; shift 2
  rm -f "$work/$name.out"
  "$FLASHPIPE" serve "$@" -v --"$transport" 127.0.0.1:0 --state "$work/$name.state" \
    >"$work/$name.out" 2>"$work/$name.log" &
  pid[$name]=$!
  for _ in $(seq 100); do
    # (the .out file appears once the child runs)
    port[$name]=$({ sed -n "s/^serve: listening on $transport 127\.0\.0\.1:\([0-9][0-9]*\)\$/\1/p" \
      "$work/$name.out" 2>/dev/null || true; } | head -1)
    [ -n "${port[$name]}" ] && return 0
    kill -0 "${pid[$name]}" 2>/dev/null || die "daemon $name did not start: $(cat "$work/$name.log")"
    sleep 0.1
  done
  die "daemon $name not listening"
}
stop() { kill "${pid[$1]}" 2>/dev/null || true; wait "${pid[$1]}" 2>/dev/null || true; unset "pid[$1]"; }

# range FILE OFFSET LENGTH > bytes (a missing argument is an error, not an empty range)
range() { [ $# = 3 ] || die "range $*"; dd if="$1" bs=1M iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none; }
size() { stat -c %s "$1"; }
# The JSON report's field for a device: field JSON DEVICE EXPR (python on d).
field() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); d=[x for x in r["devices"] if x["device"]==sys.argv[2]][0]; print(eval(sys.argv[3]))' "$@"; }

# --- Test data --------------------------------------------------------------
mkdir -p "$work/root/dir"
head -c 3M /dev/urandom >"$work/root/dir/blob"
seq 200000 >"$work/root/numbers"
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/ext4.img" 24M
img2simg "$work/ext4.img" "$work/ext4.simg"
simg2img "$work/ext4.simg" "$work/ext4.oracle"
# 20 MiB + 1234 bytes mixing random data, zeros and a pattern (odd size).
python3 - "$work/odd.raw" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(20):
        k = i % 4
        f.write(os.urandom(1 << 20) if k < 2 else (b"\0" * (1 << 20) if k == 2 else b"ABCD" * (1 << 18)))
    f.write(os.urandom(1234))
PY
gzip -c "$work/odd.raw" >"$work/odd.raw.gz"
zstd -q -c "$work/odd.raw" >"$work/odd.raw.zst"
ODD=$(size "$work/odd.raw")
ODD_END=$(( (ODD + 4095) / 4096 * 4096 ))  # the last block is padded with zeros
REST=$(( (72 << 20) - ODD_END ))
# 64 MiB of random data: long enough to kill a daemon in the middle of it.
head -c 64M /dev/urandom >"$work/big.raw"

# new_parts NAME: NAME.system (zeros, 32M) and NAME.userdata (random, 72M).
new_parts() {
  truncate -s 32M "$work/$1.system"
  head -c 72M /dev/urandom >"$work/$1.userdata"
  cp "$work/$1.userdata" "$work/$1.userdata.before"
}
parts_of() { echo "--partition system=$work/$1.system --partition userdata=$work/$1.userdata"; }

# --- Many daemons at once ---------------------------------------------------
echo "== fleet: tcp 1M, tcp 3M, udp 16M, tcp 1M killed mid-flash, tcp locked"
for n in t1 t3 u16 killed locked; do new_parts $n; done
# shellcheck disable=SC2046
{
  start t1 tcp $(parts_of t1) --max-download-size 1M
  start t3 tcp $(parts_of t3) --max-download-size 3M
  start u16 udp $(parts_of u16) --max-download-size 16M
  start killed tcp $(parts_of killed) --max-download-size 1M --write-model bounce:8
  start locked tcp $(parts_of locked) --max-download-size 1M --initial-lock locked
}
devs=(tcp:127.0.0.1:${port[t1]} tcp:127.0.0.1:${port[t3]} udp:127.0.0.1:${port[u16]}
      tcp:127.0.0.1:${port[killed]} tcp:127.0.0.1:${port[locked]})
args=()
for d in "${devs[@]}"; do args+=(-s "$d"); done
timeout 300 "$FLASHPIPE" flash "${args[@]}" --lag-limit 1 --timeout 10 --json="$work/fleet.json" \
  system="$work/ext4.simg" userdata="$work/big.raw" >"$work/fleet.out" 2>&1 & flash_pid=$!
# Kill the slow daemon once it has taken a few parts of the 64 MiB image.
for _ in $(seq 3000); do
  [ "$(grep -c "download of" "$work/killed.log" || true)" -ge 30 ] && break
  sleep 0.01
done
kill -9 "${pid[killed]}"; wait "${pid[killed]}" 2>/dev/null || true; unset "pid[killed]"
rc=0; wait $flash_pid || rc=$?
[ $rc = 1 ] || die "flash with a dead and a locked device: exit $rc, not 1: $(tail -20 "$work/fleet.out")"
for n in t1 t3 u16; do
  d=$(printf '%s\n' "${devs[@]}" | grep ":${port[$n]}\$")
  [ "$(field "$work/fleet.json" "$d" 'd["result"]')" = ok ] || die "$n: $(field "$work/fleet.json" "$d" 'd')"
  cmp <(range "$work/$n.system" 0 $((24 << 20))) "$work/ext4.oracle" || die "$n: system differs from simg2img output"
  cmp <(range "$work/$n.userdata" 0 $((64 << 20))) "$work/big.raw" || die "$n: userdata differs from the image"
  cmp <(range "$work/$n.userdata" $((64 << 20)) $((8 << 20))) <(range "$work/$n.userdata.before" $((64 << 20)) $((8 << 20))) ||
    die "$n: bytes past the image changed"
done
parts_t1=$(field "$work/fleet.json" "${devs[0]}" 'd["steps"][1]["parts"]')
parts_t3=$(field "$work/fleet.json" "${devs[1]}" 'd["steps"][1]["parts"]')
parts_u16=$(field "$work/fleet.json" "${devs[2]}" 'd["steps"][1]["parts"]')
[ "$parts_t1" -ge 64 ] && [ "$parts_t3" -ge 22 ] && [ "$parts_t3" -lt "$parts_t1" ] && [ "$parts_u16" -ge 4 ] &&
  [ "$parts_u16" -lt "$parts_t3" ] || die "parts per max-download-size: 1M $parts_t1, 3M $parts_t3, 16M $parts_u16"
pass "tcp 1M ($parts_t1 parts), tcp 3M ($parts_t3), udp 16M ($parts_u16): simg2img output and the raw image, nothing past it"
[ "$(field "$work/fleet.json" "${devs[3]}" 'd["result"]')" = gone ] || die "killed: $(field "$work/fleet.json" "${devs[3]}" 'd')"
[ "$(field "$work/fleet.json" "${devs[3]}" '[s["result"] for s in d["steps"]]')" = "['ok', 'failed']" ] ||
  die "killed daemon's steps: $(field "$work/fleet.json" "${devs[3]}" 'd["steps"]')"
cmp <(range "$work/killed.system" 0 $((24 << 20))) "$work/ext4.oracle" || die "killed: system (finished before the kill) differs"
pass "daemon killed mid-flash: 'gone', system reported ok, userdata failed; the others unaffected"
[ "$(field "$work/fleet.json" "${devs[4]}" 'd["result"]')" = refused ] || die "locked: $(field "$work/fleet.json" "${devs[4]}" 'd')"
grep -qi "locked" <<<"$(field "$work/fleet.json" "${devs[4]}" 'd["error"]')" || die "locked: reason not given"
cmp "$work/locked.userdata" "$work/locked.userdata.before" || die "locked daemon's userdata changed"
cmp -n $((32 << 20)) "$work/locked.system" /dev/zero || die "locked daemon's system changed"
pass "locked daemon: 'refused' with the reason, nothing written"
[ "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["ok"], r["failed"])' "$work/fleet.json")" = "3 2" ] ||
  die "report totals: $(cat "$work/fleet.json")"
python3 - "$work/fleet.json" "$SRC/docs/schema/flash-report.schema.json" <<'PY' || die "report not valid against its schema"
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))
PY
pass "--json totals: 3 ok, 2 failed; the report is valid against docs/schema/flash-report.schema.json"
for n in t1 t3 u16 locked; do stop $n; done

# --- Odd raw, compressed, bmap ----------------------------------------------
echo "== inputs: odd-size raw, gzip, zstd, bmap"
new_parts a; new_parts b
# shellcheck disable=SC2046
{ start a tcp $(parts_of a) --max-download-size 1M; start b udp $(parts_of b) --max-download-size 3M; }
for input in odd.raw odd.raw.gz odd.raw.zst; do
  cp "$work/a.userdata.before" "$work/a.userdata"; cp "$work/b.userdata.before" "$work/b.userdata"
  timeout 120 "$FLASHPIPE" flash -s tcp:127.0.0.1:${port[a]} -s udp:127.0.0.1:${port[b]} --no-progress \
    userdata="$work/$input" >"$work/in.out" 2>&1 || die "flash $input: $(cat "$work/in.out")"
  for n in a b; do
    cmp <(range "$work/$n.userdata" 0 "$ODD") "$work/odd.raw" || die "$input on $n: content differs"
    cmp <(range "$work/$n.userdata" "$ODD_END" "$REST") <(range "$work/$n.userdata.before" "$ODD_END" "$REST") ||
      die "$input on $n: bytes past the image changed"
  done
  pass "$input ($ODD bytes) over tcp 1M and udp 3M: content equal, nothing past its last block"
done
# A raw image with holes and its bmap: only mapped ranges are sent.
python3 - "$work/holes.raw" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    f.truncate(16 << 20)
    for mib in (0, 3, 4, 9, 15):
        f.seek(mib << 20); f.write(os.urandom(1 << 20))
PY
bmaptool -q create -o "$work/holes.bmap" "$work/holes.raw"
# TCP sends the mapped data from the file (sendfile), and from the shared
# window with --no-sendfile: the same content either way.
for mode in sendfile --no-sendfile; do
cp "$work/a.userdata.before" "$work/a.userdata"
flags=(); [ "$mode" = sendfile ] || flags=("$mode")
timeout 120 "$FLASHPIPE" flash -s tcp:127.0.0.1:${port[a]} --no-progress "${flags[@]}" --bmap userdata="$work/holes.bmap" \
  userdata="$work/holes.raw" --json="$work/bmap.json" >"$work/in.out" 2>&1 || die "flash with bmap ($mode): $(cat "$work/in.out")"
python3 - "$work/a.userdata" "$work/a.userdata.before" "$work/holes.raw" <<'PY' || die "bmap flash content"
import sys
dev, old, img = (open(p, "rb").read() for p in sys.argv[1:])
for mib in range(16):
    s = slice(mib << 20, (mib + 1) << 20)
    want = img[s] if mib in (0, 3, 4, 9, 15) else old[s]
    if dev[s] != want:
        sys.exit("MiB %d: %s" % (mib, "mapped range not written" if mib in (0, 3, 4, 9, 15) else "unmapped range changed"))
if dev[16 << 20:] != old[16 << 20:]:
    sys.exit("past the image changed")
PY
sent=$(field "$work/bmap.json" "tcp:127.0.0.1:${port[a]}" 'd["bytes"]')
[ "$sent" -lt $((6 << 20)) ] || die "bmap: $sent bytes sent for 5 MiB mapped"
pass "raw + bmap ($mode): mapped ranges written, unmapped ones keep their bytes ($sent bytes sent)"
done

# --verify: the daemons' oem digest of every range the image defines (serve
# has it, and fetch: too: the digest is used, nothing read back).
# shellcheck disable=SC2046
new_parts c; start c tcp $(parts_of c) --max-download-size 1M --write-model discard  # says OKAY, writes nothing
cp "$work/a.userdata.before" "$work/a.userdata"; cp "$work/b.userdata.before" "$work/b.userdata"
rc=0
timeout 120 "$FLASHPIPE" flash -s tcp:127.0.0.1:${port[a]} -s udp:127.0.0.1:${port[b]} -s tcp:127.0.0.1:${port[c]} \
  --no-progress --verify --json="$work/verify.json" system="$work/ext4.simg" userdata="$work/odd.raw.zst" \
  >"$work/in.out" 2>&1 || rc=$?
[ $rc = 1 ] || die "flash --verify with a discarding daemon: exit $rc: $(cat "$work/in.out")"
for d in tcp:127.0.0.1:${port[a]} udp:127.0.0.1:${port[b]}; do
  [ "$(field "$work/verify.json" "$d" '[(s["result"], s["verify"], s["verify_method"]) for s in d["steps"]]')" = \
    "[('ok', 'ok', 'digest'), ('ok', 'ok', 'digest')]" ] || die "verify on $d: $(field "$work/verify.json" "$d" 'd')"
done
d=tcp:127.0.0.1:${port[c]}
[ "$(field "$work/verify.json" "$d" 'd["result"], d["steps"][0]["verify"], d["error_class"]')" = \
  "('mismatch', 'mismatch', 'verify_mismatch')" ] || die "verify on the discarding daemon: $(field "$work/verify.json" "$d" 'd')"
grep -q "the device has sha256" <<<"$(field "$work/verify.json" "$d" 'd["error"]')" || die "mismatch reason"
python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
  "$work/verify.json" "$SRC/docs/schema/flash-report.schema.json" || die "verify report not valid against its schema"
pass "--verify: ok by oem digest on tcp and udp (sparse and zstd raw), 'mismatch' on a daemon that answers OKAY and writes nothing"
stop a; stop b; stop c

# --verify by read-back against serve's own fetch: a relay hides its oem
# digest (digestless_proxy.py rewrites the command, serve refuses it), so
# every range is read back with fetch: over TCP (serve: one frame per data
# phase) and UDP (continued packets, max-fetch-size 1 MiB); the daemon that
# writes nothing is found by read-back too.
# proxy NAME TRANSPORT DEVICE-PORT: the relay, its port in port[NAME].
proxy() {
  local name=$1 transport=$2 to=$3
  python3 "$SRC/tests/e2e/digestless_proxy.py" --"$transport" --to "$to" --exit-after 300 \
    >"$work/$name.out" 2>"$work/$name.log" &
  pid[$name]=$!
  for _ in $(seq 100); do
    port[$name]=$({ sed -n "s/^proxy: listening on $transport 127\.0\.0\.1:\([0-9][0-9]*\)\$/\1/p" \
      "$work/$name.out" 2>/dev/null || true; } | head -1)
    [ -n "${port[$name]}" ] && return 0
    sleep 0.1
  done
  die "proxy $name not listening: $(cat "$work/$name.log")"
}
new_parts a; new_parts b; new_parts c
# shellcheck disable=SC2046
{
  start a tcp $(parts_of a) --max-download-size 1M
  start b udp $(parts_of b) --max-download-size 3M
  start c tcp $(parts_of c) --max-download-size 1M --write-model discard
}
proxy pa tcp "${port[a]}"; proxy pb udp "${port[b]}"; proxy pc tcp "${port[c]}"
rc=0
timeout 120 "$FLASHPIPE" flash -s tcp:127.0.0.1:${port[pa]} -s udp:127.0.0.1:${port[pb]} -s tcp:127.0.0.1:${port[pc]} \
  --no-progress --verify --json="$work/readback.json" system="$work/ext4.simg" userdata="$work/odd.raw.zst" \
  >"$work/rb.out" 2>&1 || rc=$?
[ $rc = 1 ] || die "flash --verify through the digest-hiding relays: exit $rc: $(cat "$work/rb.out")"
for d in tcp:127.0.0.1:${port[pa]} udp:127.0.0.1:${port[pb]}; do
  [ "$(field "$work/readback.json" "$d" '[(s["result"], s["verify"], s["verify_method"]) for s in d["steps"]]')" = \
    "[('ok', 'ok', 'readback'), ('ok', 'ok', 'readback')]" ] || die "read-back verify on $d: $(field "$work/readback.json" "$d" 'd')"
done
d=tcp:127.0.0.1:${port[pc]}
[ "$(field "$work/readback.json" "$d" 'd["result"], d["steps"][0]["verify"], d["steps"][0]["verify_method"], d["written"]')" = \
  "('mismatch', 'mismatch', 'readback', ['system'])" ] || die "read-back verify on the discarding daemon: $(field "$work/readback.json" "$d" 'd')"
grep -q "read back sha256" <<<"$(field "$work/readback.json" "$d" 'd["error"]')" || die "read-back mismatch reason"
for n in pa pb pc; do grep -q "rewrote oem digest" "$work/$n.log" || die "relay $n rewrote no oem digest"; done
python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
  "$work/readback.json" "$SRC/docs/schema/flash-report.schema.json" || die "read-back report not valid against its schema"
pass "--verify where serve's oem digest is hidden: ok by read-back (fetch:) over tcp and udp, 'mismatch' on the daemon that writes nothing"
for n in pa pb pc a b c; do stop $n; done

# --- flashpipe fastboot against the AOSP client ------------------------------
echo "== fastboot verbs: flashpipe fastboot vs AOSP fastboot 29.0.6 on twin daemons"
slotted() {
  local p
  for p in boot_a boot_b; do head -c 8M /dev/urandom >"$work/$1.$p"; done
  for p in system_a system_b; do head -c 32M /dev/urandom >"$work/$1.$p"; done
  truncate -s 8M "$work/$1.userdata"
}
slotted ref; for p in boot_a boot_b system_a system_b userdata; do cp "$work/ref.$p" "$work/our.$p"; done
twin_args() { for p in boot_a boot_b system_a system_b userdata; do echo "--partition $p=$work/$1.$p"; done; }
# shellcheck disable=SC2046
{ start ref tcp $(twin_args ref) --max-download-size 1M; start our tcp $(twin_args our) --max-download-size 1M; }
aosp() { timeout 120 fastboot -s tcp:127.0.0.1:${port[ref]} "$@"; }
ours() { timeout 120 "$FLASHPIPE" fastboot -s tcp:127.0.0.1:${port[our]} "$@"; }
same_state() {
  for p in boot_a boot_b system_a system_b userdata; do
    cmp "$work/ref.$p" "$work/our.$p" >/dev/null || die "after $*: $p differs from the AOSP client's"
  done
  cmp "$work/ref.state" "$work/our.state" || die "after $*: state file differs: $(cat "$work/ref.state") / $(cat "$work/our.state")"
}
# Both clients, same arguments: same exit status, same answer lines (time cut), same device state.
both() {
  local ra=0 ro=0
  aosp "$@" >"$work/aosp.txt" 2>&1 || ra=$?
  ours "$@" >"$work/ours.txt" 2>&1 || ro=$?
  [ "$ra" = "$ro" ] || die "$*: exit $ro, the AOSP client's $ra: $(cat "$work/ours.txt")"
  same_state "$@"
}
answer() { grep -v -e "^Finished" -e "^Total time" "$1" | sed 's/OKAY \[ *[0-9.]*s\]/OKAY/'; }
for var in max-download-size current-slot slot-count has-slot:boot has-slot:userdata partition-size:system_a \
  partition-type:userdata is-userspace unlocked no-such-variable; do
  both getvar "$var"
  diff <(answer "$work/aosp.txt") <(answer "$work/ours.txt") || die "getvar $var answers differ"
done
pass "getvar (10 variables, one unknown): same answers and exit status"
both erase userdata; both erase boot_b; both erase system
pass "erase userdata, boot_b, system (the current slot's): same partitions"
both set_active b; both getvar current-slot
diff <(answer "$work/aosp.txt") <(answer "$work/ours.txt") || die "current-slot after set_active b differs"
grep -q "current-slot: b" "$work/ours.txt" || die "set_active b did not take: $(cat "$work/ours.txt")"
both set_active a; both set_active c
pass "set_active b, a, c (refused): same state file and exit status"
for target in "" bootloader fastboot; do
  # shellcheck disable=SC2086
  both reboot $target
  both getvar is-userspace
  diff <(answer "$work/aosp.txt") <(answer "$work/ours.txt") || die "is-userspace after reboot $target differs"
done
pass "reboot, reboot bootloader, reboot fastboot: same mode afterwards"
head -c $((3 << 20 | 1234)) /dev/urandom >"$work/boot.odd"
both flash boot_a "$work/boot.odd"
both -S 1M flash system "$work/ext4.simg"
both flash --slot b system "$work/odd.raw"
cmp <(range "$work/our.boot_a" 0 $((3 << 20 | 1234))) "$work/boot.odd" || die "flash boot_a: content"
cmp <(range "$work/our.system_a" 0 $((24 << 20))) "$work/ext4.oracle" || die "flash -S 1M system: != simg2img output"
pass "flash (raw of odd size), -S 1M flash (sparse cut in parts), flash --slot b (raw cut in parts): same partitions as AOSP"
# flashall from a product folder, on the same twins.
mkdir -p "$work/product"
head -c $((3 << 20)) /dev/urandom >"$work/product/boot.img"
cp "$work/ext4.simg" "$work/product/system.img"
head -c $((5 << 20 | 4096)) /dev/urandom >"$work/product/system_other.img"
printf 'require board=flashpipe\n' >"$work/product/android-info.txt"
[ "$(aosp getvar product 2>&1 | sed -n 's/^product: //p')" = flashpipe ] || die "daemon product is not flashpipe"
export ANDROID_PRODUCT_OUT="$work/product"
both flashall --skip-reboot
ours_out=$(cat "$work/ours.txt")
cp "$work/ours.txt" "$work/flashall.txt"
cmp <(range "$work/our.boot_a" 0 $((3 << 20))) "$work/product/boot.img" || die "flashall: boot_a: $ours_out"
cmp <(range "$work/our.system_a" 0 $((24 << 20))) "$work/ext4.oracle" || die "flashall: system_a != simg2img output: $ours_out"
cmp <(range "$work/our.system_b" 0 $((5 << 20 | 4096))) "$work/product/system_other.img" || die "flashall: system_b (other)"
pass "flashall from ANDROID_PRODUCT_OUT: boot_a, system_a (== simg2img), system_b from system_other.img; same as AOSP"
printf 'require board=otherboard\n' >"$work/product/android-info.txt"
cp "$work/our.boot_a" "$work/boot_a.before"
if ours flashall --skip-reboot >"$work/ours.txt" 2>&1; then die "flashall for another board succeeded"; fi
cmp "$work/our.boot_a" "$work/boot_a.before" || die "flashall for another board wrote"
pass "flashall refused by android-info.txt (board mismatch): nothing written"
# A hostile android-info.txt: a 30,000-character requirement (once a SIGSEGV in
# a recursive regex) and terminal escapes in a syntax error.
{ printf 'require board='; head -c 30000 /dev/zero | tr '\0' x; printf '\n'; } >"$work/product/android-info.txt"
rc=0; ours flashall --skip-reboot >"$work/ours.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || die "flashall with a 30,000-character line: rc $rc: $(head -c 300 "$work/ours.txt")"
grep -q 'android-info.txt: a line of 30014 bytes' "$work/ours.txt" || die "no clear error for a long line: $(head -c 300 "$work/ours.txt")"
cmp "$work/our.boot_a" "$work/boot_a.before" || die "flashall with a long android-info line wrote"
printf 'garbage \033]0;pwned\007 line\nrequire board=otherboard\n' >"$work/product/android-info.txt"
if ours flashall --skip-reboot >"$work/ours.txt" 2>&1; then die "flashall for another board succeeded"; fi
if grep -q $'\033' "$work/ours.txt"; then die "an escape from android-info.txt reached the terminal"; fi
pass "flashall refuses a 30,000-character android-info line with a clear error (no crash), escapes a syntax error"
unset ANDROID_PRODUCT_OUT
stop ref; stop our
echo PASS
