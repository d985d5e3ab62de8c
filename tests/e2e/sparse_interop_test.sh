#!/usr/bin/env bash
# Interop of flashpipe's sparse tools with AOSP's (android-sdk-libsparse-utils
# 29.0.6) on an ext4 image, random data, zero and fill runs and sizes that are
# not a multiple of the block size, at block sizes 1024, 4096 and 65536:
#   ours img2simg -> AOSP simg2img, AOSP img2simg -> ours simg2img,
#   ours resparse -> AOSP simg2img part.*, append2simg both ways,
#   -s hole mode, --crc, stdin/stdout, and error cases (exit status + message).
# Needs $FLASHPIPE (set by ctest). Uses a temp dir, removed on exit.
set -euo pipefail
FP=${FLASHPIPE:?set FLASHPIPE to the flashpipe binary}
for t in img2simg simg2img append2simg mkfs.ext4 python3; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup.sh installs it)"; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
T="timeout 120"
fails=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# expect_same RAW EXPANDED BLK: EXPANDED is RAW padded with zeros to a block multiple.
expect_same() {
  local raw=$1 out=$2 blk=$3 size padded
  size=$(stat -c %s "$raw")
  padded=$(( (size + blk - 1) / blk * blk ))
  [ "$(stat -c %s "$out")" -eq "$padded" ] || { echo "size $(stat -c %s "$out") != $padded"; return 1; }
  cmp -n "$size" "$raw" "$out" || return 1
  [ "$padded" -eq "$size" ] || cmp -n $((padded - size)) -i "$size:0" "$out" /dev/zero
}

# --- inputs -------------------------------------------------------------------
mkdir -p tree/sub
head -c 3000000 /dev/urandom > tree/random.bin
seq 1 200000 > tree/sub/numbers.txt
python3 -c "open('tree/sub/text.txt', 'w').write('flashpipe sparse interop\\n' * 60000)"
mkfs.ext4 -q -F -b 4096 -d tree ext4.img 24M
head -c $((5 * 1048576 + 1234)) /dev/urandom > random.img
python3 - <<'PY'
import os, struct
with open("runs.img", "wb") as f:
    f.write(os.urandom(100000))            # random, not block aligned
    f.write(bytes(4 << 20))                # a long zero run
    f.write(struct.pack("<I", 0xA1B2C3D4) * (512 << 10))  # a 2 MiB fill run
    f.write(os.urandom(65536 * 3))
    f.write(struct.pack("<I", 0x01010101) * 20000)
    f.write(bytes(70000))
    f.write(os.urandom(777))               # partial last block
PY
inputs=(ext4.img random.img runs.img)

# --- both directions, every block size ----------------------------------------
for blk in 1024 4096 65536; do
  for in in "${inputs[@]}"; do
    tag="$in blk=$blk"
    $T "$FP" img2simg -b "$blk" "$in" ours.simg
    $T simg2img ours.simg aosp.out
    expect_same "$in" aosp.out "$blk" && pass "ours img2simg -> AOSP simg2img: $tag" || fail "ours img2simg -> AOSP simg2img: $tag"

    $T img2simg "$in" aosp.simg "$blk"
    $T "$FP" simg2img aosp.simg ours.out
    expect_same "$in" ours.out "$blk" && pass "AOSP img2simg -> ours simg2img: $tag" || fail "AOSP img2simg -> ours simg2img: $tag"

    # AOSP's positional block size works with ours too, and gives the same image bytes.
    $T "$FP" img2simg "$in" ours_pos.simg "$blk"
    cmp -s ours.simg ours_pos.simg && pass "positional block size: $tag" || fail "positional block size: $tag"

    $T "$FP" img2simg --crc -b "$blk" "$in" crc.simg
    $T "$FP" simg2img crc.simg crc.out && $T simg2img crc.simg crc_aosp.out
    expect_same "$in" crc.out "$blk" && cmp -s crc.out crc_aosp.out && pass "--crc round trip: $tag" || fail "--crc: $tag"

    $T "$FP" resparse --max-size 1M ours.simg part
    parts=(part.*)
    ok=1
    for p in "${parts[@]}"; do [ "$(stat -c %s "$p")" -le 1048576 ] || ok=0; done
    $T simg2img $(ls part.* | sort -t. -k2 -n) parts.out
    [ $ok = 1 ] && expect_same "$in" parts.out "$blk" && pass "resparse (${#parts[@]} parts) -> AOSP simg2img: $tag" \
      || fail "resparse -> AOSP simg2img: $tag"
    $T "$FP" simg2img $(ls part.* | sort -t. -k2 -n) parts_ours.out
    cmp -s parts.out parts_ours.out && pass "resparse -> ours simg2img: $tag" || fail "resparse -> ours simg2img: $tag"
    rm -f part.* ./*.out
  done
done

# --- stdin / stdout ------------------------------------------------------------
cat runs.img | $T "$FP" img2simg - pipe_in.simg
$T "$FP" simg2img pipe_in.simg - > stdout.out
expect_same runs.img stdout.out 4096 && pass "img2simg from stdin, simg2img to stdout" || fail "stdin/stdout"
$T "$FP" img2simg runs.img - | cat > pipe_out.simg
cmp -s pipe_in.simg pipe_out.simg && pass "img2simg to a pipe (two passes) = to a file" || fail "img2simg to a pipe"
cat pipe_in.simg | $T "$FP" simg2img - stdin.out
expect_same runs.img stdin.out 4096 && pass "simg2img from stdin" || fail "simg2img from stdin"

# --- -s hole mode ----------------------------------------------------------------
rm -f holes.img
head -c 300000 /dev/urandom | dd of=holes.img bs=4096 seek=100 conv=notrunc status=none
truncate -s 40M holes.img
head -c 5000 /dev/urandom | dd of=holes.img bs=1 seek=$((30 * 1048576 + 100)) conv=notrunc status=none
$T "$FP" img2simg -s holes.img holes.simg
"$FP" dump holes.simg | grep -q DONT_CARE && pass "-s maps holes to DONT_CARE" || fail "-s made no DONT_CARE"
$T simg2img holes.simg holes.out
cmp holes.img holes.out && pass "-s image -> AOSP simg2img" || fail "-s image -> AOSP simg2img"

# --- append2simg both ways ---------------------------------------------------------
head -c $((16 * 4096)) /dev/urandom > tail.raw
cp pipe_in.simg app_ours.simg; cp pipe_in.simg app_aosp.simg
$T "$FP" append2simg app_ours.simg tail.raw
$T append2simg app_aosp.simg tail.raw
$T simg2img app_ours.simg app1.out
$T "$FP" simg2img app_aosp.simg app2.out
simg2img pipe_in.simg base.out
cat base.out tail.raw > app.expect
cmp app1.out app.expect && cmp app2.out app.expect && pass "append2simg ours -> AOSP and AOSP -> ours" || fail "append2simg"
head -c 1000 /dev/urandom > odd.raw
# A raw existing image is made sparse first, as AOSP does: both give the same bytes.
head -c 40960 /dev/urandom > raw_old.img; cp raw_old.img raw_ours.img; cp raw_old.img raw_aosp.img
$T "$FP" append2simg raw_ours.img tail.raw && $T append2simg raw_aosp.img tail.raw
$T simg2img raw_ours.img raw1.out && $T "$FP" simg2img raw_aosp.img raw2.out
cat raw_old.img tail.raw > raw.expect
cmp raw1.out raw.expect && cmp raw2.out raw.expect && pass "append2simg on a raw existing image, like AOSP" \
  || fail "append2simg on a raw existing image"
if out=$("$FP" append2simg app_ours.simg odd.raw 2>&1); then fail "append2simg accepted an unaligned raw"; else
  [[ $out == *"size 1000 is not a multiple of the image's block size 4096"* ]] && pass "append2simg unaligned refused" || fail "append2simg message: $out"
fi

# --- errors: non-zero exit, the message, no complete-looking output -----------------
cp pipe_in.simg bad_magic.simg; printf 'XXXX' | dd of=bad_magic.simg conv=notrunc status=none
expect_error() {  # name, expected substring, command...
  local name=$1 want=$2; shift 2
  local out
  if out=$("$@" 2>&1); then fail "$name: exit 0"; return; fi
  [[ $out == *"$want"* ]] && pass "$name" || fail "$name: got '$out'"
}
expect_error "bad magic" "bad magic 0x58585858" "$FP" simg2img bad_magic.simg bad.out
[ ! -e bad.out ] && pass "failed simg2img leaves no output" || fail "failed simg2img left bad.out"
head -c $(( $(stat -c %s pipe_in.simg) - 100 )) pipe_in.simg > truncated.simg
echo previous > keep.out
expect_error "truncated input" "truncated RAW payload" "$FP" simg2img truncated.simg keep.out
[ "$(cat keep.out)" = previous ] && ! ls .keep.out.flashpipe-* keep.out.* >/dev/null 2>&1 && pass "failed simg2img keeps the old output, no temp left" \
  || fail "failed simg2img damaged keep.out"
cp pipe_in.simg trailing.simg; printf 'junk' >> trailing.simg
expect_error "data after the last chunk" "data after the last chunk" "$FP" simg2img trailing.simg t.out
expect_error "dump reports the error" "truncated RAW payload" "$FP" dump truncated.simg
expect_error "resparse too small" "cannot hold one 4096-byte block" "$FP" resparse --max-size 100 pipe_in.simg p
expect_error "img2simg bad block size" "block size 1022 is not a non-zero multiple of 4" "$FP" img2simg -b 1022 runs.img x.simg
expect_error "img2simg missing input" "open nope.img" "$FP" img2simg nope.img x.simg
# A libsparse-style CRC over a multi-block FILL is recognised, and --no-crc-check accepts it.
python3 - <<'PY'
import struct, zlib
blk = 4096
body = b""
raw = bytes(range(256)) * 16
body += struct.pack("<HHII", 0xCAC1, 0, 1, 12 + blk) + raw
body += struct.pack("<HHII", 0xCAC2, 0, 3, 16) + struct.pack("<I", 0x55)
wrong = zlib.crc32(raw + struct.pack("<I", 0x55) * (blk // 4))   # libsparse: one block of the fill
body += struct.pack("<HHII", 0xCAC4, 0, 0, 16) + struct.pack("<I", wrong)
hdr = struct.pack("<IHHHHIIII", 0xED26FF3A, 1, 0, 28, 12, blk, 4, 3, 0)
open("libsparse_crc.simg", "wb").write(hdr + body)
PY
expect_error "libsparse writer CRC recognised" "libsparse's miscomputed writer CRC" "$FP" simg2img libsparse_crc.simg l.out
$T "$FP" simg2img --no-crc-check libsparse_crc.simg l.out && pass "--no-crc-check accepts it" || fail "--no-crc-check"

# The AOSP tool names as links to flashpipe.
mkdir -p links && ln -sf "$FP" links/img2simg && ln -sf "$FP" links/simg2img
$T links/img2simg runs.img link.simg && $T links/simg2img link.simg link.out
expect_same runs.img link.out 4096 && pass "argv[0] links img2simg/simg2img" || fail "argv[0] links"

echo "sparse interop: $fails failure(s)"
[ "$fails" -eq 0 ]
