#!/usr/bin/env bash
# Safety of the sparse tools (issue 14), end to end with the real binary:
#   1. an output that is an input is refused, for every tool and every way of
#      naming one file twice (the same path, a symlink, a hard link, "-" as
#      stdin or stdout, an input of simg2img's overlay list, append2simg's two
#      inputs, a resparse part or stale part), and the input is left as it was;
#   2. everything is checked before anything is created or written (a missing
#      or empty input, a corrupt second input, an image larger than a loop
#      device, a mounted device);
#   3. ENOSPC on a small tmpfs: non-zero exit, the old output intact, no temp;
#   4. one policy for a symlinked output (written through, the link stays), and
#      links planted at the parts resparse names are replaced, not followed
#      and an existing output's mode kept, for every tool;
#   5. resparse run again with fewer parts removes the stale ones;
#   6. kill -9 at 50 random points each of img2simg, simg2img and resparse
#      (sparse_soak.py): every output is absent, the old content, or complete
#      and valid (AOSP simg2img + cmp), and the next run removes the temps.
# Needs root (tmpfs, loop device) and $FLASHPIPE (set by ctest).
set -euo pipefail
FP=$(realpath "${FLASHPIPE:?set FLASHPIPE to the flashpipe binary}")
export FP
HERE=$(cd "$(dirname "$0")" && pwd)
for t in simg2img losetup mkfs.ext4 python3 cmp sha256sum; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup.sh installs it)"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "sparse_safety_test: needs root (tmpfs, loop device)"; exit 1; }

work=$(mktemp -d /tmp/fp_sparse_safety.XXXXXX)
MOUNTS=()
LOOPS=()
cleanup() {
  for m in "${MOUNTS[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null || true; done
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
umask 022
fails=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
fp() { timeout 60 "$FP" "$@"; }
digest() { if [ -e "$1" ]; then sha256sum < "$1"; else echo missing; fi; }
temps_in() { find "$1" -maxdepth 1 -name '.*.flashpipe-*' | wc -l; }

# refused NAME WANT FILE CMD...: CMD exits non-zero, its error contains WANT,
# and FILE is byte for byte what it was.
refused() {
  local name=$1 want=$2 file=$3 before after out rc=0
  shift 3
  before=$(digest "$file")
  out=$("$@" 2>&1) || rc=$?
  after=$(digest "$file")
  if [ $rc -eq 0 ]; then fail "$name: exit 0"
  elif [[ $out != *"$want"* ]]; then fail "$name: error '$out' lacks '$want'"
  elif [ "$before" != "$after" ]; then fail "$name: $file changed"
  else pass "$name"; fi
}

# --- fixtures (kept in $work; every case works on copies in a fresh directory) --
python3 - <<'PY'
import random
r = random.Random(14)
def image(path, kib):
    with open(path, "wb") as f:
        for i in range(kib // 64):
            f.write(bytes(65536) if i % 5 == 0 else r.randbytes(65536))
image("raw.img", 3072)
image("raw2.img", 1024)
image("s.raw", 320)
image("t.raw", 128)
open("tail.raw", "wb").write(r.randbytes(8 * 4096))
PY
fp img2simg raw.img a.simg
fp img2simg raw2.img b.simg
fp img2simg s.raw s.simg
fp img2simg t.raw t.simg
cat raw.img tail.raw > appended.expect
SAME="is the same file as"
ncase=0
fresh() {  # a new directory with copies of the small fixtures, as the current directory
  ncase=$((ncase + 1))
  mkdir "$work/case$ncase" && cd "$work/case$ncase" && cp "$work"/{s.raw,s.simg,t.simg} .
}

# --- 1. an input is never an output -------------------------------------------
fresh; refused "img2simg X X" "output s.raw $SAME input s.raw" s.raw fp img2simg s.raw s.raw
fresh; ln -s s.raw s.link
refused "img2simg X symlink-to-X" "$SAME input s.raw" s.raw fp img2simg s.raw s.link
fresh; ln s.raw s.hard
refused "img2simg X hard-link-of-X" "$SAME input s.raw" s.raw fp img2simg s.raw s.hard
fresh; refused "img2simg - X < X" "output s.raw $SAME input stdin" s.raw bash -c '"$FP" img2simg - s.raw < s.raw'
fresh; refused "img2simg X - >> X" "output stdout $SAME input s.raw" s.raw bash -c '"$FP" img2simg s.raw - >> s.raw'
# A path that resolves to stdout (like /dev/stdout; our own link, so that a
# broken tool cannot unlink the system's).
fresh; ln -s /proc/self/fd/1 stdout.link
refused "img2simg X path-to-stdout >> X" "$SAME input s.raw" s.raw bash -c '"$FP" img2simg s.raw stdout.link >> s.raw'
fresh; refused "img2simg /dev/fd/3 X 3< X" "$SAME input /dev/fd/3" s.raw bash -c '"$FP" img2simg /dev/fd/3 s.raw 3< s.raw'
# The shell truncates X before the tool runs: it cannot be saved, but the tool
# must say so and write nothing, not report success over garbage.
fresh; rc=0; out=$(bash -c '"$FP" img2simg s.raw - > s.raw' 2>&1) || rc=$?
[ $rc -ne 0 ] && [[ $out == *"already emptied"* ]] && [ ! -s s.raw ] && pass "img2simg X - > X: refused, says why" \
  || fail "img2simg X - > X: rc=$rc size=$(stat -c %s s.raw) '$out'"

fresh; refused "simg2img X X" "output s.simg $SAME input s.simg" s.simg fp simg2img s.simg s.simg
fresh; ln -s s.simg s.link
refused "simg2img X symlink-to-X" "$SAME input s.simg" s.simg fp simg2img s.simg s.link
fresh; ln s.simg s.hard
refused "simg2img X hard-link-of-X" "$SAME input s.simg" s.simg fp simg2img s.simg s.hard
fresh; ln -s s.simg s.link
refused "simg2img overlay: first input is the output" "$SAME input s.simg" s.simg fp simg2img s.simg t.simg s.link
fresh; refused "simg2img overlay: last input is the output" "$SAME input s.simg" s.simg fp simg2img t.simg s.simg s.simg
fresh; refused "simg2img - X < X" "output s.simg $SAME input stdin" s.simg bash -c '"$FP" simg2img - s.simg < s.simg'
fresh; refused "simg2img X - >> X" "output stdout $SAME input s.simg" s.simg bash -c '"$FP" simg2img s.simg - >> s.simg'
fresh; refused "simg2img overlay: stdin is the output" "output s.simg $SAME input stdin" s.simg \
  bash -c '"$FP" simg2img t.simg - s.simg < s.simg'
fresh; rc=0; out=$(bash -c '"$FP" simg2img s.simg - > s.simg' 2>&1) || rc=$?
[ $rc -ne 0 ] && [[ $out == *"already emptied"* ]] && [ ! -s s.simg ] && pass "simg2img X - > X: refused, says why" \
  || fail "simg2img X - > X: rc=$rc size=$(stat -c %s s.simg) '$out'"

fresh; cp s.simg p.0
refused "resparse X.0 X" "output p.0 $SAME input p.0" p.0 fp resparse -m 64K p.0 p
fresh; ln -s s.simg p.1; before=$(sha256sum <s.simg)
# A part is a name resparse makes: a link planted there is replaced, never written through.
if fp resparse -m 64K s.simg p 2>/dev/null && [ ! -L p.1 ] && [ "$(sha256sum <s.simg)" = "$before" ]; then
  pass "resparse: a part that is a symlink to the input: the link replaced, the input untouched"
else fail "resparse: a part that is a symlink to the input: $(ls -l p.1)"; fi
fresh; ln s.simg p.2
refused "resparse: a part is a hard link of the input" "output p.2 $SAME input s.simg" s.simg fp resparse -m 64K s.simg p
fresh; fp resparse -m 64K s.simg p 2>/dev/null || true
last=$(ls p.* | sort -t. -k2 -n | tail -1)
sums=$(cat p.* | sha256sum)
refused "resparse: a stale part is the input" "$last would be a stale part" "$last" fp resparse -m 8M "$last" p
[ "$(cat p.* | sha256sum)" = "$sums" ] && pass "resparse refusal left every part" || fail "resparse refusal changed the parts: $(ls | tr "\n" " ")"

fresh; refused "append2simg X X" "s.simg $SAME the image s.simg" s.simg fp append2simg s.simg s.simg
fresh; ln -s s.simg s.link
refused "append2simg X symlink-to-X" "s.link $SAME the image" s.simg fp append2simg s.simg s.link
fresh; ln s.simg s.hard
refused "append2simg X hard-link-of-X" "s.hard $SAME the image" s.simg fp append2simg s.simg s.hard
cd "$work"

# --- 2. everything checked before anything is created ---------------------------
fresh; cp "$work"/{a.simg,b.simg} .
refused "img2simg missing input" "open missing.img" new.simg fp img2simg missing.img new.simg
[ ! -e new.simg ] && [ "$(temps_in .)" -eq 0 ] && pass "img2simg missing input creates nothing" \
  || fail "img2simg missing input created something"
: > empty.img; echo old > old.simg
refused "img2simg empty input keeps the old output" "empty.img is empty" old.simg fp img2simg empty.img old.simg
head -c $(( $(stat -c %s b.simg) - 5000 )) b.simg > corrupt.simg
echo old > old.img
refused "simg2img corrupt second input" "corrupt.simg: chunk" old.img fp simg2img a.simg corrupt.simg old.img
refused "simg2img corrupt second input, no output yet" "corrupt.simg: chunk" new.img \
  fp simg2img a.simg corrupt.simg new.img
[ ! -e new.img ] && [ "$(temps_in .)" -eq 0 ] && pass "simg2img corrupt input leaves no output, no temp" \
  || fail "simg2img corrupt input left $(ls -a)"
printf 'XXXX' | dd of=badhead.simg bs=1 count=4 status=none; cat b.simg >> badhead.simg
refused "simg2img bad header on a pipe" "stdin: file header" old.img bash -c 'cat badhead.simg | "$FP" simg2img - old.img'
cp "$work/raw.img" .
# A loop device: the checks come before a byte is written to it.
truncate -s 8M dev.img
DEV=$(losetup --find --show dev.img); LOOPS+=("$DEV")
head -c 8M /dev/urandom > dev.content; dd if=dev.content of="$DEV" bs=1M status=none conv=fsync
refused "simg2img to a device, corrupt second input" "corrupt.simg: chunk" "$DEV" fp simg2img a.simg corrupt.simg "$DEV"
truncate -s 16M big.raw; fp img2simg big.raw big.simg
refused "simg2img to a device, an overlay too large" "does not fit $DEV" "$DEV" fp simg2img a.simg big.simg "$DEV"
fp simg2img a.simg "$DEV" 2>/dev/null && cmp -s -n "$(stat -c %s raw.img)" "$DEV" raw.img && pass "simg2img to a device" \
  || fail "simg2img to a device"
mkfs.ext4 -q -F "$DEV"; mkdir mnt; mount -o ro "$DEV" mnt; MOUNTS+=("$PWD/mnt")
refused "simg2img to a mounted device" "is in use" "$DEV" fp simg2img b.simg "$DEV"
umount mnt
cd "$work"

# --- 3. ENOSPC on a small tmpfs ---------------------------------------------------
mkdir small; mount -t tmpfs -o size=2M tmpfs small; MOUNTS+=("$work/small")
enospc() {  # NAME FILE CMD...: fails with ENOSPC, FILE unchanged, no temp in small/
  local name=$1 file=$2
  refused "ENOSPC: $name" "No space left on device" "$file" "${@:3}"
  [ "$(temps_in small)" -eq 0 ] && pass "ENOSPC: $name leaves no temp" || fail "ENOSPC: $name left $(ls -a small)"
}
echo old > small/out.simg
enospc "img2simg" small/out.simg fp img2simg raw.img small/out.simg
echo old > small/out.img
enospc "simg2img" small/out.img fp simg2img a.simg small/out.img
cp b.simg small/app.simg
enospc "append2simg" small/app.simg fp append2simg small/app.simg raw.img
rm -f small/*
fp resparse -m 300K b.simg small/p 2>/dev/null || true
sums=$(cat small/p.* | sha256sum)
enospc "resparse" small/p.0 fp resparse -m 1M a.simg small/p
[ "$(cat small/p.* | sha256sum)" = "$sums" ] && pass "ENOSPC: resparse keeps every old part" \
  || fail "ENOSPC: resparse changed the old parts: $(ls small | tr "\n" " ")"
umount small

# --- 4. a symlinked output is written through; an existing output keeps its mode --
mkdir real
linked() {  # NAME LINK TARGET CHECK...: LINK is still a link to TARGET, TARGET has mode 640, CHECK passes
  local name=$1 link=$2 target=$3
  shift 3
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ] && [ "$(stat -c %a "$target")" = 640 ] && "$@"; then
    pass "$name: written through the symlink, mode kept"
  else
    fail "$name: link $(ls -l "$link" 2>&1), mode $(stat -c %a "$target" 2>&1)"
  fi
}
for n in 1 2 3 4; do echo old > real/o$n; chmod 640 real/o$n; ln -s real/o$n l$n; done
fp img2simg raw.img l1 || true
linked img2simg l1 real/o1 cmp -s real/o1 a.simg
fp simg2img a.simg l2 || true
linked simg2img l2 real/o2 cmp -s real/o2 raw.img
cp a.simg real/o3
fp append2simg l3 tail.raw || true
linked append2simg l3 real/o3 bash -c 'simg2img real/o3 app.out && cmp -s app.out appended.expect'
ln -s real/o4 lp.0
fp resparse -m 1M a.simg lp 2>/dev/null || true
# Parts are names resparse makes in the folder, not outputs the user named: a link there is replaced.
if [ ! -L lp.0 ] && [ "$(cat real/o4)" = old ] && simg2img $(ls lp.* | sort -t. -k2 -n) parts.out && cmp -s parts.out raw.img
then pass "resparse: a symlink planted at a part is replaced, its target keeps its bytes"
else fail "resparse: symlinked part: $(ls -l lp.0), target: $(head -c 20 real/o4)"; fi
fp img2simg raw.img fresh.simg; fp simg2img a.simg fresh.img
[ "$(stat -c %a fresh.simg)/$(stat -c %a fresh.img)" = 644/644 ] && pass "new outputs get 0666 & ~umask" \
  || fail "new outputs: modes $(stat -c %a fresh.simg fresh.img)"

# --- 5. resparse again with fewer parts ---------------------------------------------
mkdir rr
fp resparse -m 500K a.simg rr/p 2>/dev/null || true
n=$(ls rr | wc -l)
out=$(fp resparse -m 8M a.simg rr/p 2>&1) || true
if [ "$n" -ge 5 ] && [ "$(ls rr)" = p.0 ] && [[ $out == *"removed $((n - 1)) stale parts"* ]] && simg2img rr/p.0 rr.out \
  && cmp -s rr.out raw.img; then pass "resparse with fewer parts removes the $((n - 1)) stale ones"
else fail "resparse with fewer parts: $(ls rr | tr "\n" " ") '$out'"; fi
rm -rf rr/p.3 && mkdir rr/p.3
refused "resparse: a stale name that is a directory" "rr/p.3 would be a stale part" rr/p.0 fp resparse -m 500K b.simg rr/p

# --- 6. kill -9 soak -------------------------------------------------------------------
python3 "$HERE/sparse_soak.py" "$FP" "$work/soak" 50 "${SPARSE_SOAK_SEED:-$RANDOM}" || fails=$((fails + 1))

echo "sparse safety: $fails failure(s)"
[ "$fails" -eq 0 ]
