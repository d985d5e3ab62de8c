#!/usr/bin/env bash
# Kill soak of `flashpipe write` (issue 14): 50 writes of a 6 MiB image (raw
# file, sparse file, gzip on stdin, two different images in turn) to a file
# and a loop device at once, each killed with SIGKILL after a random delay.
# After each kill:
#   - the file holds either what it held before the run or the complete new
#     image, never anything in between (it is written beside and renamed);
#   - every 512-byte sector of the loop device below the image size holds
#     either its old bytes or the image's, and every byte past the image is
#     untouched.
# Temporary files of killed runs are removed by the next run for that file.
# Bounded to 90 s: a loaded machine runs fewer of the 50 (at least 15).
#   FLASHPIPE=build/flashpipe bash tests/e2e/write_kill_soak_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
RUNS=${FP_SOAK_RUNS:-50}
for tool in losetup blockdev gzip python3; do
  command -v "$tool" >/dev/null || { echo "write_kill_soak_test: missing $tool"; exit 1; }
done

T=$(mktemp -d /tmp/fp_write_soak.XXXXXX)
LOOP=""
PID=""
cleanup() {
  [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true
  [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
fail() { echo "FAIL $*"; exit 1; }

IMG=$((6 << 20))
DEVSZ=$((16 << 20))
head -c "$IMG" /dev/urandom > a.img
{ head -c $((2 << 20)) /dev/urandom; head -c $((1 << 20)) /dev/zero; head -c $((3 << 20)) /dev/urandom; } > b.img
for x in a b; do
  "$FP" img2simg "$x.img" "$x.simg"
  gzip -1 -c "$x.img" > "$x.img.gz"
done
truncate -s "$DEVSZ" loop.bin
LOOP=$(losetup --direct-io=on --find --show loop.bin)
head -c "$DEVSZ" /dev/zero | tr '\0' '\252' | dd of="$LOOP" bs=1M oflag=direct status=none
printf 'the file before any write\n' > out.img

# Every sector below the image size is old or new; every byte after it is 0xAA.
check_device() {  # check_device BEFORE IMAGE
  blockdev --flushbufs "$LOOP"
  python3 - "$LOOP" "$1" "$2" "$IMG" <<'EOF' || fail "device check after run $run ($form)"
import sys
dev, before, image, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = open(dev, "rb").read()
b = open(before, "rb").read()
n = open(image, "rb").read()
for s in range(0, size, 512):
    got = d[s:s + 512]
    if got != b[s:s + 512] and got != n[s:s + 512]:
        sys.exit(f"sector at {s:#x} is neither the old bytes nor the image's")
if d[size:] != b"\xaa" * (len(d) - size):
    sys.exit("bytes past the image changed")
EOF
}

run_once() {  # run_once FORM IMAGE_BASE DELAY_MS (DELAY_MS < 0: no kill)
  local form=$1 x=$2 delay=$3
  case $form in
    raw) "$FP" write --no-progress --queue-depth 1 --request-size 64K "$x.img" out.img "$LOOP" 2>/dev/null & ;;
    sparse) "$FP" write --no-progress --queue-depth 1 --request-size 64K "$x.simg" out.img "$LOOP" 2>/dev/null & ;;
    gzip) "$FP" write --no-progress --queue-depth 1 --request-size 64K - out.img "$LOOP" < "$x.img.gz" 2>/dev/null & ;;
  esac
  PID=$!
  if [ "$delay" -ge 0 ]; then
    sleep "$(printf '0.%03d' "$delay")"
    kill -9 "$PID" 2>/dev/null || true
  fi
  local rc=0
  { wait "$PID"; } 2>/dev/null || rc=$?
  PID=""
  return $rc
}

# How long one write takes here, to spread the kills over it: the fastest of
# three (a single slow run on a loaded machine spread the kills so thin that
# too few landed mid-write).
best=""
for _ in 1 2 3; do
  t0=$(date +%s%N)
  run_once raw a -1 || fail "an uninterrupted write failed"
  cmp -s out.img a.img || fail "an uninterrupted write left the wrong file"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
done
MAX_MS=$(( best * 3 / 2 + 5 ))
[ "$MAX_MS" -lt 999 ] || MAX_MS=999
echo "one write takes about $((MAX_MS * 2 / 3)) ms; killing within $MAX_MS ms"

killed=0; completed=0; start=$(date +%s)
for run in $(seq 1 "$RUNS"); do
  forms=(raw sparse gzip); form=${forms[$((run % 3))]}
  x=$([ $((run % 2)) = 0 ] && echo a || echo b)
  cp out.img before_file
  head -c "$IMG" "$LOOP" > before_dev
  rc=0
  run_once "$form" "$x" $((RANDOM % MAX_MS)) || rc=$?
  if [ "$rc" = 0 ]; then
    # Finished before the kill: the machine got faster; kill sooner.
    completed=$((completed + 1)); MAX_MS=$(( MAX_MS * 9 / 10 > 5 ? MAX_MS * 9 / 10 : 5 ))
  else
    killed=$((killed + 1))
  fi
  if ! cmp -s out.img before_file && ! cmp -s out.img "$x.img"; then
    fail "run $run ($form, killed: rc $rc): out.img is neither its old content nor the complete image ($(stat -c %s out.img) bytes)"
  fi
  [ "$rc" = 0 ] && { cmp -s out.img "$x.img" || fail "run $run completed but out.img is not the image"; }
  check_device before_dev "$x.img"
  temps=$(ls -a | grep -c '\.out\.img\.flashpipe-' || true)
  [ "$temps" -le 1 ] || fail "run $run: $temps temporary files pile up: $(ls -a | grep flashpipe-)"
  # Bounded in time: a loaded machine runs fewer rounds, each still checked.
  done_runs=$run
  [ $(( $(date +%s) - start )) -lt 90 ] || { echo "90 s budget used after run $run of $RUNS"; break; }
done
run_once sparse a -1 || fail "the write after the soak failed"
cmp -s out.img a.img || fail "the write after the soak left the wrong file"
[ "$(ls -a | grep -c '\.flashpipe-' || true)" = 0 ] || fail "temporary files left after a clean run: $(ls -a | grep flashpipe-)"
echo "write_kill_soak_test: $done_runs runs, $killed killed mid-write, $completed completed, $(( $(date +%s) - start )) s"
[ "$done_runs" -ge 15 ] || fail "only $done_runs runs in 90 s"
[ "$killed" -ge $((done_runs / 5)) ] || fail "only $killed of $done_runs runs were killed before they finished"
echo "write_kill_soak_test: passed"
