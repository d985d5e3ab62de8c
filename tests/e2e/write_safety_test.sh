#!/usr/bin/env bash
# End-to-end test of what `flashpipe write` must never do (issue 14): change a
# target before every target and the image passed their checks, leave a file
# target looking complete after a failure, write over one of its own inputs,
# write through a file that backs a loop device in use, write part of a raw
# stream without saying so, or "succeed" with an empty image. One section per
# class; each runs the real binary on files, loop devices (direct I/O, detached
# by the trap), a small tmpfs and an ext4 mounted from a loop device.
#   FLASHPIPE=build/flashpipe bash tests/e2e/write_safety_test.sh
# FP_KEEP_GOING=1 reports every failing check instead of stopping at the first.
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
for tool in losetup mkfs.ext4 chattr blockdev zstd xz gzip python3 e2fsck bmaptool; do
  command -v "$tool" >/dev/null || { echo "write_safety_test: missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

T=$(mktemp -d /tmp/fp_write_safety.XXXXXX)
LOOPS=()
MOUNTS=()
cleanup() {
  chattr -R -i "$T" 2>/dev/null || true
  for m in "${MOUNTS[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null || true; done
  for l in "${LOOPS[@]:-}"; do [ -n "$l" ] && losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
FAILED=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() {
  echo "FAIL $*"
  FAILED=$((FAILED + 1))
  [ "${FP_KEEP_GOING:-0}" = 1 ] || exit 1
}
# write expecting failure; stderr in $T/err, stdout in $T/out.
expect_fail() {
  local rc=0
  timeout 60 "$FP" write --no-progress "$@" 2>"$T/err" >"$T/out" || rc=$?
  if [ "$rc" -eq 0 ]; then fail "expected failure: write $*"; return 0; fi
  [ "$rc" -ne 124 ] || { fail "timed out: write $*"; return 0; }
  grep -q "^flashpipe write: error: " "$T/err" || fail "no error line for: write $* ($(cat "$T/err"))"
}
err_has() { grep -q -- "$1" "$T/err" || fail "error of $2 lacks '$1': $(cat "$T/err")"; }
out_has() { grep -q -- "$1" "$T/out" || fail "output of $2 lacks '$1': $(cat "$T/out")"; }
# The identity of a file's content: size and hash (a block device: its bytes).
sig() {
  if [ -b "$1" ]; then blockdev --flushbufs "$1"; sha256sum < "$1"; return; fi
  [ -e "$1" ] || { echo absent; return; }
  echo "$(stat -c %s "$1") $(sha256sum < "$1")"
}
unchanged() {  # unchanged PATH SIG WHAT
  local now
  now=$(sig "$1")
  [ "$now" = "$2" ] || fail "$3: $1 changed (was '$2', now '$now')"
}
attach() {  # attach FILE BYTES: a loop device with direct I/O; sets DEV
  truncate -s "$2" "$1"
  DEV=$(losetup --direct-io=on --find --show "$1")
  LOOPS+=("$DEV")
}
fill_dev() { head -c "$(blockdev --getsize64 "$1")" /dev/zero | tr '\0' "$2" | dd of="$1" bs=1M oflag=direct status=none; }
no_temps() {  # no temp file of ours is left in a directory
  if ls -a "$1" | grep -q '\.flashpipe-'; then fail "$2: temp files left in $1: $(ls -a "$1" | grep flashpipe-)"; fi
}

# ---- fixtures
head -c 3145728 /dev/urandom > img.raw                       # 3 MiB raw
"$FP" img2simg img.raw img.simg
{ head -c 1048576 /dev/urandom; head -c 1048576 /dev/zero; head -c 1048576 /dev/urandom; } > big.raw
head -c 20000000 /dev/urandom > huge.raw                     # ~19 MiB raw, larger than SMALL
zstd -q -c huge.raw > huge.zst                                # records the content size
xz -0 -T1 -c huge.raw > huge.xz                               # records it in its index
zstd -q -c < huge.raw > huge_stream.zst                       # from a pipe: no content size
printf 'old target content\n' > old.txt
reset_target() { cp old.txt "$1"; }
attach small.bin 16M; SMALL=$DEV
fill_dev "$SMALL" '\252'
SMALL_SIG=$(sig "$SMALL")

# ---- 1. Nothing is changed before every target and the image passed their checks
mkdir adir
reset_target t1; S=$(sig t1)
expect_fail img.raw t1 adir && err_has "adir" "a directory target"
unchanged t1 "$S" "a later target is a directory"
expect_fail img.raw t1 nodir/x && err_has "nodir/x" "a target in a missing directory"
unchanged t1 "$S" "a later target is in a missing directory"
reset_target locked; chattr +i locked
expect_fail img.raw t1 locked && err_has "locked" "an immutable target"
chattr -i locked
unchanged t1 "$S" "a later target is immutable"
mkdir ro && mount -t tmpfs -o size=1m,ro tmpfs ro && MOUNTS+=("$T/ro")
expect_fail img.raw t1 ro/new.img && err_has "ro/new.img" "a target on a read-only file system"
unchanged t1 "$S" "a later target is on a read-only file system"
expect_fail img.simg t1 /dev/flashpipe-no-such-disk
unchanged t1 "$S" "a later target is a missing /dev node"
ok "a later bad target (directory, missing directory, immutable, read-only, missing disk) leaves earlier file targets untouched"

# stdin: the image's header is read and checked before any target changes.
"$FP" img2simg huge.raw huge.raw.simg
expect_fail - t1 "$SMALL" < huge.raw.simg && err_has "does not fit" "sparse stdin larger than a device"
unchanged t1 "$S" "stdin sparse image that does not fit a device"
unchanged "$SMALL" "$SMALL_SIG" "stdin sparse image that does not fit a device"
ok "stdin sparse image too big for a device: file target and device untouched"
# A bad sparse header, through stdin and in a file.
python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<IHHHHIIII", 0xED26FF3A, 1, 0, 28, 12, 6, 10, 1, 0))' > badhdr.simg
expect_fail - t1 < badhdr.simg && err_has "blk_sz" "bad sparse header on stdin"
unchanged t1 "$S" "bad sparse header on stdin"
gzip -c badhdr.simg > badhdr.simg.gz
expect_fail badhdr.simg.gz t1 && err_has "blk_sz" "bad sparse header inside gzip"
unchanged t1 "$S" "bad sparse header inside gzip"
# A sparse header whose total size (blk_sz x total_blks) no file can have.
python3 -c '
import struct,sys
h = struct.pack("<IHHHHIIII", 0xED26FF3A, 1, 0, 28, 12, 0xFFFFFFFC, 0xFFFFFFFF, 1, 0)
c = struct.pack("<HHII", 0xCAC3, 0, 0xFFFFFFFF, 12)
sys.stdout.buffer.write(h + c)' > overflow.simg
expect_fail overflow.simg t1
unchanged t1 "$S" "a sparse image of 2^64 bytes"
expect_fail - t1 < overflow.simg
unchanged t1 "$S" "a sparse image of 2^64 bytes on stdin"
ok "bad or impossible image headers (file, stdin, gzip) leave the target untouched: $(head -c 120 err)"

# A file target that fails mid-write keeps its old content (written beside, renamed on success).
mkdir small_fs && mount -t tmpfs -o size=4m tmpfs small_fs && MOUNTS+=("$T/small_fs")
head -c 1000000 /dev/urandom > small_fs/out.img; S_OUT=$(sig small_fs/out.img)
expect_fail huge.raw small_fs/out.img && err_has "No space left on device" "ENOSPC"
unchanged small_fs/out.img "$S_OUT" "ENOSPC mid-write"
no_temps small_fs "ENOSPC mid-write"
expect_fail - small_fs/out.img < huge.raw && err_has "No space left on device" "ENOSPC from a stream"
unchanged small_fs/out.img "$S_OUT" "ENOSPC mid-write from a stream"
no_temps small_fs "ENOSPC from a stream"
head -c 2000000 img.simg > cut.simg
reset_target t1
expect_fail cut.simg t1 && err_has "truncated" "a truncated image"
unchanged t1 "$S" "a truncated sparse image"
head -c 2000000 huge.zst > cut.zst
expect_fail - t1 < cut.zst
unchanged t1 "$S" "a truncated zstd stream"
no_temps . "failed writes"
ok "a failed write (ENOSPC, truncated image) leaves the old file content, no temp files"

# Outputs appear whole, keep their mode; --in-place writes into the same inode.
reset_target t1; chmod 640 t1
ino=$(stat -c %i t1)
"$FP" write --no-progress img.raw t1 || fail "write to a file"
cmp -s t1 img.raw || fail "write to a file: wrong content"
[ "$(stat -c %a t1)" = 640 ] || fail "write to a file did not keep its mode: $(stat -c %a t1)"
reset_target t2; ino=$(stat -c %i t2)
"$FP" write --no-progress --in-place img.simg t2 || fail "--in-place"
cmp -s t2 img.raw || fail "--in-place: wrong content"
[ "$(stat -c %i t2)" = "$ino" ] || fail "--in-place replaced the file instead of writing into it"
{ "$FP" write --no-progress --verify img.simg t3 && cmp -s t3 img.raw; } || fail "new file with --verify"
no_temps . "successful writes"
ok "file targets: written beside and renamed (mode kept); --in-place writes into the file"

# ---- 2. An input is never an output
reset_target t1; S=$(sig t1)
expect_fail - t1 < t1 && err_has "t1" "stdin from the target"
unchanged t1 "$S" "stdin redirected from the target"
expect_fail /dev/stdin t1 < t1
unchanged t1 "$S" "/dev/stdin redirected from the target"
ln t1 t1.hard; ln -s t1 t1.sym
expect_fail - t1.hard < t1
unchanged t1 "$S" "stdin from a hard link of the target"
expect_fail /dev/fd/3 t1.sym 3< t1
unchanged t1 "$S" "/dev/fd/3 from the target, target through a symlink"
cp img.raw self.img; S_SELF=$(sig self.img)
ln -s self.img self.sym
expect_fail self.img self.sym && err_has "image itself" "image as target through a symlink"
unchanged self.img "$S_SELF" "image as its own target through a symlink"
"$FP" img2simg img.raw p1.simg; "$FP" resparse -m 1M img.simg part
P=$(ls part.* | sort -t. -k2 -n | tr '\n' ',' | sed 's/,$//'); LASTP=$(ls part.* | sort -t. -k2 -n | tail -1)
S_P=$(sig "$LASTP")
expect_fail "$P" "$LASTP" && err_has "$LASTP" "a part as target"
unchanged "$LASTP" "$S_P" "a sparse part that is also a target"
bmaptool -q create big.raw > x.bmap 2>/dev/null || bmaptool create big.raw > x.bmap
S_B=$(sig x.bmap)
expect_fail --bmap x.bmap big.raw x.bmap && err_has "bmap" "the bmap file as a target"
unchanged x.bmap "$S_B" "the bmap file as a target"
# The --json report is an output too: never the image, a target, or stdout into either.
cp img.raw j.img; S_J=$(sig j.img); reset_target t1; S=$(sig t1)
expect_fail --json=j.img j.img t1 && err_has "json" "--json over the image"
expect_fail --json=t1 j.img t1 && err_has "json" "--json over a target"
rc=0; timeout 60 "$FP" write --no-progress --json j.img t1 >> j.img 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "--json on a stdout appending to the image: exit $rc"
err_has "stdout" "--json on a stdout appending to the image"
expect_fail --verify-only --json=j.img j.img t1
unchanged j.img "$S_J" "the image as the --json output"
unchanged t1 "$S" "a target as the --json output"
ok "inputs refused as targets: stdin, /dev/stdin, /dev/fd/N, hard and symbolic links, a part, the bmap, the --json report"

# A file that backs a loop device in use: refused without --force, says why and how.
mkdir tree && head -c 300000 /dev/urandom > tree/data.bin
mkfs.ext4 -q -F -d tree backing.img 24M
BLOOP=$(losetup --find --show backing.img); LOOPS+=("$BLOOP")
mkdir mnt && mount "$BLOOP" mnt && MOUNTS+=("$T/mnt")
S_BK=$(sig backing.img)
expect_fail img.raw backing.img && err_has "$BLOOP" "a file behind a mounted loop device"
err_has "mnt" "a file behind a mounted loop device (mount point)"
err_has "\-\-force" "a file behind a mounted loop device (how to override)"
unchanged backing.img "$S_BK" "the file behind a mounted loop device"
ln -s backing.img backing.link
expect_fail img.raw backing.link && err_has "$BLOOP" "a symlink to a file behind a mounted loop device"
unchanged backing.img "$S_BK" "a symlink to the file behind a mounted loop device"
# Even with --force, the device that holds the image's file system is no target.
cp img.raw mnt/img.raw
expect_fail --force mnt/img.raw "$BLOOP" && err_has "holds the file system" "the device under the image"
cmp -s mnt/img.raw img.raw || fail "the image on the target's file system changed"
cmp -s mnt/data.bin tree/data.bin || fail "the mounted file system lost its data"
umount mnt
e2fsck -fn backing.img >/dev/null 2>&1 || fail "the file system behind the loop device is damaged"
S_BK=$(sig backing.img)
# The loop device as target while its backing file is the image.
expect_fail backing.img "$BLOOP" && err_has "backing.img" "a loop device backed by the image"
unchanged backing.img "$S_BK" "a loop device over the image"
ok "a file behind a mounted loop device, and a loop device over the image, are refused: $(head -c 200 err)"

# ---- 3. Know the size first; otherwise say how far a raw stream got
fill_dev "$SMALL" '\252'; SMALL_SIG=$(sig "$SMALL")
expect_fail huge.zst "$SMALL" && err_has "does not fit" "zstd larger than the device"
unchanged "$SMALL" "$SMALL_SIG" "a zstd file larger than the device"
expect_fail huge.xz "$SMALL" && err_has "does not fit" "xz larger than the device"
unchanged "$SMALL" "$SMALL_SIG" "an xz file larger than the device"
expect_fail - "$SMALL" < huge.zst && err_has "does not fit" "zstd stream larger than the device"
unchanged "$SMALL" "$SMALL_SIG" "a zstd stream larger than the device"
ok "compressed images that record their size are refused before writing when too big"
fill_dev "$SMALL" '\252'
expect_fail --json - "$SMALL" < huge.raw && err_has "partly written" "raw stream past the end"
out_has '"error_class": "too_small"' "raw stream past the end"
# The claim is checked on the device: the image before the offset, the old bytes after it.
TO=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get("partly_written_to"); print(v if v is not None else -1)' "$T/out")
if [ "$TO" -le 0 ] || [ "$TO" -gt 16777216 ]; then fail "raw stream past the end: partly_written_to $TO"; fi
err_has "$(printf '0x%x' "$TO")" "raw stream past the end (offset)"
blockdev --flushbufs "$SMALL"
cmp -s -n "$TO" "$SMALL" huge.raw || fail "raw stream past the end: the device does not hold the image before $TO"
[ "$(tail -c +$((TO + 1)) "$SMALL" | tr -d '\252' | wc -c)" = 0 ] || fail "raw stream past the end: bytes after $TO changed"
expect_fail --json - "$SMALL" < huge_stream.zst && err_has "partly written" "unsized zstd stream past the end"
ok "a raw stream of unknown size past the end: the error and --json say it was partly written, to which offset"

# ---- 4. An empty image is refused
reset_target t1; S=$(sig t1)
: > empty.img
expect_fail empty.img t1 && err_has "empty" "an empty image file"
unchanged t1 "$S" "an empty image file"
expect_fail - t1 < empty.img && err_has "empty" "an empty stdin"
unchanged t1 "$S" "an empty stdin"
gzip -c < empty.img > empty.gz; zstd -q -c < empty.img > empty.zst
expect_fail empty.gz t1 && err_has "empty" "gzip of nothing"
unchanged t1 "$S" "gzip of nothing"
expect_fail - t1 < empty.zst && err_has "empty" "zstd of nothing on stdin"
unchanged t1 "$S" "zstd of nothing"
ok "empty images (file, stdin, compressed nothing) are refused"

# ---- 5. Smaller items
reset_target t1; S=$(sig t1)
expect_fail img.raw t1 t1 && err_has "twice" "the same target twice"
expect_fail img.raw new1 new1 && err_has "twice" "a missing target twice"
[ ! -e new1 ] || fail "a refused write created new1"
ln -s new2 new2.sym
expect_fail img.raw new2 new2.sym && err_has "twice" "a missing target and a symlink to it"
[ ! -e new2 ] || fail "a refused write created new2"
expect_fail img.raw t1 t1.hard && err_has "twice" "a target and its hard link"
unchanged t1 "$S" "duplicate targets"
ok "the same target twice (path, missing path, symlink, hard link) refused"

rc=0; timeout 20 "$FP" dump img.simg > /dev/full 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "dump > /dev/full exited $rc: $(cat "$T/err")"
err_has "No space left on device" "dump > /dev/full"
rc=0; timeout 20 "$FP" write --json --no-progress img.raw t4 > /dev/full 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "write --json > /dev/full exited $rc"
ok "dump and write --json report a failed stdout: $(head -c 100 err)"

head -c 2000000 /dev/urandom | gzip -c > crc.gz
printf 'XXXX' | dd of=crc.gz bs=1 seek=$(( $(stat -c %s crc.gz) - 8 )) conv=notrunc status=none
expect_fail crc.gz t1
[ "$(grep -o 'gzip' "$T/err" | wc -l)" = 1 ] || fail "gzip error names gzip more than once: $(cat "$T/err")"
[ "$(grep -o 'crc.gz' "$T/err" | wc -l)" = 1 ] || fail "gzip error names the file more than once: $(cat "$T/err")"
ok "a corrupt gzip names the stream once: $(cat "$T/err")"

# --json: the error class and verify outcome come from the status code.
expect_fail --json cut.simg t1; out_has '"error_class": "corrupt_image"' "truncated image"
out_has '"partly_written_to": null' "truncated image onto a file"
expect_fail --json img.raw adir; out_has '"error_class": "invalid_argument"' "directory target"
"$FP" write --json img.raw t5 > "$T/out" || fail "write --json"; out_has '"error_class": null' "a good write"; out_has '"partly_written_to": null' "a good write"
printf 'Z' | dd of=t5 bs=1 seek=100 conv=notrunc status=none
expect_fail --json --verify-only img.raw t5; out_has '"verify": "failed"' "verify-only mismatch"
out_has '"error_class": "verify_mismatch"' "verify-only mismatch"
ok "--json: error_class, partly_written_to, verify outcome"

# ---- bench: no file created through a dangling symlink; a tiny device is measured from offset 0
ln -s "$T/nowhere.bin" dangling
rc=0; timeout 60 "$FP" bench --sizes 4k --total 64k --modes blocking dangling >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" != 0 ] || fail "bench on a dangling symlink succeeded"
[ ! -e nowhere.bin ] || fail "bench created a file through a dangling symlink"
[ -L dangling ] || fail "bench removed the symlink"
attach tiny.bin 64K; TINY=$DEV
rc=0; timeout 60 "$FP" bench --sizes 64k --total 64k --modes blocking --tests write "$TINY" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 0 ] || fail "bench on a 64 KiB device: $(cat "$T/err")"
out_has "offset 0 " "bench on a 64 KiB device"
ok "bench: dangling symlink refused, 64 KiB device measured from offset 0"

[ "$FAILED" = 0 ] || { echo "write_safety_test: $FAILED checks failed"; exit 1; }
echo "write_safety_test: $PASS checks passed"
