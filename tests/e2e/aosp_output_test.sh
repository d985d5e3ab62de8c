#!/usr/bin/env bash
# `flashpipe fastboot` prints what the AOSP client 29.0.6 prints, line for
# line, for the same commands: both clients run against twin `flashpipe
# serve` daemons (the same partitions, max-download-size 32M, over TCP and
# UDP), their stderr normalised (times, the program's name) and diffed, and
# their exit codes compared. Images: raw that fits a download, raw larger
# than one (resparsed: "Sending sparse ... 1/2"), raw larger than one that
# sparses into one part ("1/1"), an odd-sized raw, sparse that fits, sparse
# that does not, -S smaller than the image, a missing file, a partition the
# device does not have, getvar of a known and an unknown variable, erase.
set -euo pipefail
FP=${FLASHPIPE:?FLASHPIPE must name the binary}
for t in fastboot img2simg python3; do
  command -v $t >/dev/null || { echo "FAIL: $t missing (scripts/setup.sh installs it)"; exit 1; }
done
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

head -c 5M /dev/urandom >raw5.img
head -c 50M /dev/urandom >raw50.img
(head -c 20M /dev/urandom; head -c 40M /dev/zero) >z60.img
(head -c 3M /dev/urandom; head -c 1000 /dev/urandom) >odd.img
(head -c 2M /dev/urandom; head -c 6M /dev/zero; head -c 1M /dev/urandom) >z9.img  # fits: sent as it is, zeros too
img2simg raw5.img s5.simg
img2simg raw50.img s50.simg

start() {  # start NAME TRANSPORT: a daemon, its port in NAME.port
  truncate -s 128M "$1.part"
  local only=()
  [ "$2" = udp ] && only=(--no-tcp)  # TCP would take 127.0.0.1:5554 too
  "$FP" serve --partition "system=$1.part" --"$2" 127.0.0.1:0 "${only[@]}" --state "$1.state" --max-download-size 32M \
    >"$1.out" 2>"$1.log" &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on $2" "$1.out" 2>/dev/null && break; sleep 0.05; done
  sed -n "s/^serve: listening on $2 127\.0\.0\.1:\([0-9]*\)$/\1/p" "$1.out" >"$1.port"
  [ -s "$1.port" ] || fail "daemon $1: $(cat "$1.log")"
}
norm() { sed -E 's/\[ *[0-9.]+s\]/[T]/; s/Total time: [0-9.]+s/Total time: T/; s/^flashpipe fastboot:/fastboot:/'; }


for transport in tcp udp; do
  checks=0
  start "aosp-$transport" $transport
  start "fp-$transport" $transport
  a="$transport:127.0.0.1:$(cat aosp-$transport.port)"
  f="$transport:127.0.0.1:$(cat fp-$transport.port)"
  while read -r args; do
    rc_a=0; timeout 60 fastboot -s "$a" $args >a.txt 2>&1 || rc_a=$?
    rc_f=0; timeout 60 "$FP" fastboot -s "$f" $args >f.txt 2>&1 || rc_f=$?
    norm <a.txt >a.norm
    norm <f.txt >f.norm
    diff a.norm f.norm >d.txt || fail "$transport [$args]: the output differs (< AOSP, > flashpipe):
$(cat d.txt)"
    [ "$rc_a" = "$rc_f" ] || fail "$transport [$args]: exit $rc_a (AOSP) vs $rc_f (flashpipe)"
    checks=$((checks + 1))
  done <<'LIST'
flash system raw5.img
flash system raw50.img
flash system z60.img
flash system odd.img
flash system z9.img
flash system s5.simg
flash system s50.simg
-S 10M flash system raw5.img
flash system nofile.img
flash nosuch raw5.img
getvar product
getvar nosuchvar
erase system
LIST
  cmp "aosp-$transport.part" "fp-$transport.part" || fail "$transport: the twin partitions differ"
  echo "ok: $transport: $checks command lines print the same, exit the same, leave the same partition"
done
echo "PASS"
