#!/usr/bin/env bash
# Racing writers (issue 19, class 4): for every command that writes a
# target, a second writer of the same file or device while the first still
# has it is refused (non-zero exit, "another writer has it open", the holder
# named), and the first completes with its image whole, never a mix.
# The first writer is held mid-run by a stdin that stalls after 1 MiB, so
# the overlap is certain, not timing luck.
#   write --in-place FILE      vs write --in-place, write (atomic), simg2img, read
#   write (atomic) FILE        vs write --in-place
#   serve on a storage FILE    vs write --in-place, write, a second serve
#   write to a loop device     vs write --force, simg2img into it
set -euo pipefail
FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
work=$(mktemp -d)
pids=()
loop=""
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && { kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; }; done
  touch "$work/go" 2>/dev/null || true  # a held stdin ends
  if [ -n "$loop" ]; then  # the killed writer may still close it: retry a little
    for _ in $(seq 20); do losetup -d "$loop" 2>/dev/null && break; sleep 0.1; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }
cd "$work"
fp() { timeout 60 "$FLASHPIPE" "$@"; }

head -c $((4 << 20)) /dev/urandom >a.img
head -c $((4 << 20)) /dev/urandom >b.img
fp img2simg b.img b.simg

# held_write ARGS...: `flashpipe write - ARGS` whose stdin gives a.img's
# first MiB, then waits for the file "go" before the rest. Sets $held.
held_write() {
  rm -f go
  { head -c $((1 << 20)) a.img; for _ in $(seq 1200); do [ -e go ] && break; sleep 0.05; done  # at most 60 s
    tail -c +$(((1 << 20) + 1)) a.img; } |
    timeout 60 "$FLASHPIPE" write --no-progress - "$@" >held.out 2>&1 &
  held=$!
  pids+=("$held")
  # Running once it holds the lock on its target (flock in /proc/locks).
  for _ in $(seq 100); do
    sleep 0.1
    if grep -q FLOCK /proc/locks && [ -n "$(lock_pids)" ]; then return 0; fi
  done
  die "the first writer did not start: $(cat held.out)"
}
lock_pids() { awk '$2 == "FLOCK" {print $5}' /proc/locks | while read -r p; do
  [ "$(cat /proc/"$p"/comm 2>/dev/null)" = flashpipe ] && echo "$p"; done; true; }
release() {  # the held writer finishes: rc 0, TARGET is a.img whole
  touch go
  local rc=0; wait "$held" || rc=$?
  [ "$rc" = 0 ] || die "the first writer failed (rc $rc): $(cat held.out)"
}
refused() {  # WHAT CMD...: fails with the lock message naming a flashpipe PID
  local what=$1 rc=0; shift
  "$@" >second.out 2>&1 </dev/null || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || die "$what: rc $rc (expected a refusal): $(cat second.out)"
  grep -q "another writer has it open (held by PID [0-9]* (.*flashpipe" second.out ||
    die "$what: the refusal does not say who holds it: $(cat second.out)"
  pass "$what: refused (rc $rc): $(grep -m1 -o 'another writer.*' second.out | head -c 120)"
}

# ---- a file written in place ---------------------------------------------------
cp b.img t.img
held_write --in-place t.img
refused "write --in-place while another writes in place" fp write --no-progress --in-place b.img t.img
refused "write (atomic) while another writes in place" fp write --no-progress b.img t.img
refused "simg2img into a file another writes" fp simg2img b.simg t.img
refused "read into a file another writes" fp read --no-progress b.img t.img
release
cmp -s t.img a.img || die "t.img is not the first writer's image whole"
pass "the first in-place writer completed: t.img == a.img"

# ---- a file written through a temp beside it -------------------------------------
cp b.img u.img
held_write u.img
refused "write --in-place while an atomic write replaces it" fp write --no-progress --in-place b.img u.img
release
cmp -s u.img a.img || die "u.img is not the first writer's image whole"
pass "the first atomic writer completed: u.img == a.img"

# ---- serve holds its storage --------------------------------------------------------
truncate -s 16M disk.img
"$FLASHPIPE" serve --partition boot="$work/disk.img" --tcp 127.0.0.1:0 --state "$work/state" >serve.out 2>serve.log &
serve=$!; pids+=("$serve")
for _ in $(seq 100); do grep -q "listening on" serve.out 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" serve.out || die "serve did not start: $(cat serve.log)"
cp disk.img disk.before
refused "write --in-place to a storage serve holds" fp write --no-progress --in-place a.img disk.img
refused "write (atomic) to a storage serve holds" fp write --no-progress a.img disk.img
refused "a second serve on the same storage" fp serve --partition boot="$work/disk.img" --tcp 127.0.0.1:0 \
  --state "$work/state2"
cmp -s disk.img disk.before || die "the refused writers changed serve's storage"
kill "$serve"; wait "$serve" 2>/dev/null || true
fp write --no-progress --in-place a.img disk.img || die "write after serve stopped"
pass "once serve is gone the storage can be written"

# ---- a block device (a loop device) ---------------------------------------------------
truncate -s 8M dev.bin
loop=$(losetup --find --show dev.bin)
held_write --force "$loop"
refused "write --force to a device another writes" fp write --no-progress --force b.img "$loop"
refused "simg2img into a device another writes" fp simg2img b.simg "$loop"
release
cmp -n $((4 << 20)) "$loop" a.img || die "$loop is not the first writer's image whole"
pass "the first device writer completed: $loop holds a.img"
losetup -d "$loop"; loop=""
echo PASS
