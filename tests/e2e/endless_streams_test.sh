#!/usr/bin/env bash
# Streams that never end (issue 19): a character device (/dev/zero,
# /dev/urandom), a link to one (system.img -> /dev/zero) or a fifo given as
# an image path is refused at once, naming the path and what it is, before
# any target is created or any byte is sent: by `write`, by `flash` and
# `fastboot flash` / `flashall` against a `flashpipe serve` daemon on TCP
# loopback. Streams go through `-`, and are bounded: stdin larger than a
# block device fails, and on the host side an image larger than the
# partition-size the device reports is refused before it is sent, a stream
# before the part that would cross the partition's end.
#   FLASHPIPE=build/flashpipe bash tests/e2e/endless_streams_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
T=$(mktemp -d /tmp/fp_endless_e2e.XXXXXX)
LOOPS=()
SERVE=
cleanup() {
  [ -n "$SERVE" ] && { kill "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true; }
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

fail() { echo "FAIL $*"; exit 1; }
ok() { echo "ok   $*"; }
# refused WHAT TEXT CMD...: CMD fails within 20 s (not a timeout), stderr has TEXT.
refused() {
  local what=$1 text=$2 rc=0; shift 2
  timeout 20 "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
  [ "$rc" -ne 124 ] || fail "$what: still running after 20 s"
  [ "$rc" -ne 0 ] || fail "$what: succeeded"
  grep -qF -- "$text" "$T/err" || fail "$what: error lacks '$text': $(head -c 400 "$T/err")"
  ok "$what (rc $rc): $(grep -m1 -F -- "$text" "$T/err" | head -c 160)"
}

# ---- write ------------------------------------------------------------------
refused "write /dev/zero t.img" "/dev/zero is a character device, not an image; use - for a stream" \
  "$FP" write --no-progress /dev/zero t.img
[ ! -e t.img ] || fail "t.img was created"
ls -a | grep -q '^\.t\.img' && fail "a temporary file beside t.img was left: $(ls -a)"
ln -s /dev/zero system.img
refused "write through a link to /dev/zero" "system.img is a character device, not an image" \
  "$FP" write --no-progress system.img t.img
[ ! -e t.img ] || fail "t.img was created (link)"
mkfifo fifo  # no writer: the old code waited in open() for one
refused "write FIFO t.img" "fifo is a fifo, not an image; use - for a stream" "$FP" write --no-progress fifo t.img
[ ! -e t.img ] || fail "t.img was created (fifo)"
head -c 3000000 /dev/urandom >img
truncate -s 3M before && cp before t2.img
refused "write /dev/urandom onto an existing file" "/dev/urandom is a character device" \
  "$FP" write --no-progress --in-place /dev/urandom t2.img
cmp -s t2.img before || fail "t2.img changed"

# `-` still streams, and a stream is bounded by a block device's size.
cat img | timeout 20 "$FP" write --no-progress - t.img 2>"$T/err" || fail "cat img | write - t.img: $(cat "$T/err")"
cmp img t.img || fail "write - t.img: content differs"
ok "cat img | write - t.img"
truncate -s 4M loop.bin
LOOP=$(losetup --find --show loop.bin); LOOPS+=("$LOOP")
rc=0; timeout 20 "$FP" write --no-progress - "$LOOP" </dev/zero 2>"$T/err" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "write - $LOOP < /dev/zero: rc $rc"
grep -q "goes beyond the end of $LOOP" "$T/err" || fail "endless stdin onto a 4 MiB device: $(cat "$T/err")"
ok "endless stdin onto a 4 MiB device fails (rc $rc): $(head -c 160 "$T/err")"
losetup -d "$LOOP"; LOOPS=()

# ---- host side: a daemon with a 4 MiB boot --------------------------------
truncate -s 4M boot.part system.part
cp boot.part boot.before
"$FP" serve -v --partition boot="$T/boot.part" --partition system="$T/system.part" --max-download-size 8M \
  --tcp 127.0.0.1:0 --state "$T/serve.state" >serve.out 2>serve.log & SERVE=$!
PORT=
for _ in $(seq 100); do
  PORT=$({ sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' serve.out 2>/dev/null || true; } | head -1)
  [ -n "$PORT" ] && break
  kill -0 "$SERVE" 2>/dev/null || fail "serve did not start: $(cat serve.log)"
  sleep 0.1
done
[ -n "$PORT" ] || fail "serve not listening"
DEV=tcp:127.0.0.1:$PORT
[ "$("$FP" fastboot -s "$DEV" getvar partition-size:boot 2>&1 | sed -n 's/^partition-size:boot: //p')" = 0x0000000000400000 ] ||
  fail "partition-size:boot is not 4 MiB"
downloads() { grep -c "download of" serve.log || true; }
d0=$(downloads)
refused "flash -s DEV boot=/dev/urandom" "/dev/urandom is a character device, not an image" \
  "$FP" flash -s "$DEV" --timeout 10 boot=/dev/urandom
refused "fastboot flash boot /dev/urandom" "/dev/urandom is a character device, not an image" \
  "$FP" fastboot -s "$DEV" flash boot /dev/urandom
refused "fastboot flash boot FIFO" "fifo is a fifo, not an image" "$FP" fastboot -s "$DEV" flash boot "$T/fifo"
mkdir product
head -c 1M /dev/urandom >product/boot.img
ln -s /dev/zero product/system.img
printf 'require board=flashpipe\n' >product/android-info.txt
refused "fastboot flashall with system.img -> /dev/zero" "system.img is a character device, not an image" \
  env ANDROID_PRODUCT_OUT="$T/product" "$FP" fastboot -s "$DEV" flashall --skip-reboot
cmp -s boot.part boot.before || fail "boot changed by a refused flashall"
[ "$(downloads)" = "$d0" ] || fail "the daemon took downloads for refused images: $(grep download serve.log | tail -3)"

# Larger than partition-size: a file refused before sending, a stream stopped before it crosses the end.
head -c 6M /dev/urandom >big.raw
refused "fastboot flash boot (6 MiB file, 4 MiB partition)" "does not fit boot (partition-size 4194304 bytes)" \
  "$FP" fastboot -s "$DEV" flash boot big.raw
[ "$(downloads)" = "$d0" ] || fail "a 6 MiB image for a 4 MiB partition was sent"
# An endless stdin: its first part (up to max-download-size, 8 MiB) would cross boot's end.
rc=0; timeout 20 "$FP" fastboot -s "$DEV" flash boot - </dev/urandom >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "fastboot flash boot - < /dev/urandom: rc $rc: $(tail -3 "$T/err")"
grep -q "a stream of at least .* bytes does not fit boot (partition-size 4194304 bytes)" "$T/err" ||
  fail "endless stdin to boot: $(tail -3 "$T/err")"
[ "$(downloads)" = "$d0" ] || fail "a part of an endless stream crossing boot's end was sent"
cmp -s boot.part boot.before || fail "boot changed by a refused stream"
cmp -n 4194304 system.part /dev/zero || fail "system changed"
ok "fastboot flash boot - < /dev/urandom refused before its first part is sent (rc $rc): $(grep -m1 "does not fit" "$T/err" | head -c 160)"
head -c 1M /dev/urandom >small.raw
timeout 20 "$FP" fastboot -s "$DEV" flash boot small.raw >"$T/out" 2>"$T/err" || fail "flash a 1 MiB image: $(cat "$T/err")"
cmp -n 1048576 boot.part small.raw || fail "boot differs from small.raw"
ok "a 1 MiB image still flashes"
echo "endless_streams_test: all passed"
