#!/usr/bin/env bash
# flashpipe lp (dump, make, unpack) end to end, checked by peers that share
# no code with it: tests/e2e/lp_reader.py (a liblp reader written from the
# published format) reads what `lp make` writes, AOSP simg2img (29.0.6)
# expands `lp make --sparse`, and `flashpipe write` flashes it. Partition
# images are ext4, made here with mkfs.ext4 -d (one of them sparse).
# Needs $FLASHPIPE and $FLASHPIPE_SOURCE_DIR (set by ctest). Temp dir only.
set -euo pipefail
FP=${FLASHPIPE:?set FLASHPIPE to the flashpipe binary}
SRC=${FLASHPIPE_SOURCE_DIR:?set FLASHPIPE_SOURCE_DIR to the source tree}
export READER_PY="$SRC/tests/e2e/lp_reader.py"
READER="python3 $READER_PY"
for t in simg2img mkfs.ext4 python3 gzip; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup.sh installs it)"; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
T="timeout 120"
fails=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# expect_fail WHAT PATTERN CMD...: exit status 1 and PATTERN in stderr.
expect_fail() {
  local what=$1 pattern=$2 rc=0
  shift 2
  "$@" >out.txt 2>err.txt || rc=$?
  if [ "$rc" -eq 1 ] && grep -qF -- "$pattern" err.txt; then pass "$what"; else
    fail "$what (exit $rc, stderr: $(cat err.txt))"; fi
}

# --- partition images -----------------------------------------------------------
mkdir -p sys/bin ven/lib prod
head -c 6000000 /dev/urandom > sys/bin/blob
seq 1 300000 > sys/bin/numbers.txt
head -c 2000000 /dev/urandom > ven/lib/lib.so
echo product > prod/build.prop
mkfs.ext4 -q -F -b 4096 -d sys system.img 24M
mkfs.ext4 -q -F -b 4096 -d ven vendor.img 8M
mkfs.ext4 -q -F -b 4096 -d prod product.img 2M
$FP img2simg vendor.img vendor.simg   # one partition image given sparse

LAYOUT=(--device-size 96M --metadata-size 64K --metadata-slots 3 --group main:64M
        -p system:readonly:24M:main -p vendor:readonly:0:main -p product:none:0 -p odm:none:0)
IMAGES=(-i system=system.img -i vendor=vendor.simg -i product=product.img)

# --- super_empty.img ------------------------------------------------------------
$T $FP lp make "${LAYOUT[@]}" -o super_empty.img
if $READER check super_empty.img --empty; then pass "super_empty.img reads back (independent reader)"; else
  fail "super_empty.img: independent reader"; fi
$READER json super_empty.img --empty > empty.json
python3 - <<'PY' && pass "super_empty.img tables as asked" || fail "super_empty.img tables"
import json
m = json.load(open("empty.json"))
names = [p["name"] for p in m["partitions"]]
assert names == ["system", "vendor", "product", "odm"], names
assert m["geometry"] == {"metadata_max_size": 65536, "metadata_slot_count": 3, "logical_block_size": 4096}
assert [g["name"] for g in m["groups"]] == ["default", "main"] and m["groups"][1]["maximum_size"] == 64 << 20
sizes = {p["name"]: sum(e["num_sectors"] for e in m["extents"][p["first_extent"]:p["first_extent"] + p["num_extents"]]) * 512
         for p in m["partitions"]}
assert sizes["system"] == 24 << 20 and sizes["odm"] == 0, sizes
assert m["partitions"][0]["attributes"] == 1 and m["minor_version"] == 0
PY

# --- full super images: raw and sparse ------------------------------------------
$T $FP lp make "${LAYOUT[@]}" "${IMAGES[@]}" -o super.img
$T $FP lp make "${LAYOUT[@]}" "${IMAGES[@]}" --sparse -o super.simg
if $READER check super.img; then pass "raw super: every copy valid (independent reader)"; else fail "raw super check"; fi
ok=1
for p in system vendor product; do
  $READER extract super.img $p $p.out && cmp $p.out $p.img || ok=0
done
[ $ok = 1 ] && pass "raw super: each partition's extents hold its image (independent reader)" || fail "raw super extents"
if simg2img super.simg aosp.raw && cmp aosp.raw super.img; then pass "AOSP simg2img expands lp make --sparse to the raw super"; else
  fail "AOSP simg2img of super.simg"; fi
[ "$(stat -c %s super.simg)" -lt $((40 << 20)) ] && pass "sparse super is smaller than its contents" || fail "sparse size"
truncate -s 96M target.img
if $T $FP write --no-progress super.simg target.img >/dev/null && cmp target.img super.img; then
  pass "flashpipe write flashes the sparse super"; else fail "flashpipe write super.simg"; fi

# --- unpack ---------------------------------------------------------------------
for s in super.img super.simg; do
  rm -rf out && mkdir out
  if $T $FP lp unpack $s out >/dev/null && cmp out/system.img system.img && cmp out/vendor.img vendor.img &&
     cmp out/product.img product.img && [ ! -s out/odm.img ]; then pass "lp unpack $s returns the images byte for byte"; else
    fail "lp unpack $s"; fi
done
rm -rf out && mkdir out
$T $FP lp unpack -p vendor --slot 2 super.simg out >/dev/null
[ "$(ls out)" = vendor.img ] && cmp out/vendor.img vendor.img && pass "lp unpack -p vendor --slot 2" || fail "unpack -p"

# --- dump -----------------------------------------------------------------------
$FP lp dump super.simg > dump.txt
grep -q "super: 2048 .. 51200: system (49152 sectors)" dump.txt && grep -q "slot 2 backup metadata at byte 0x53000: valid" dump.txt &&
  pass "lp dump of the sparse super" || fail "lp dump text: $(cat dump.txt)"
$FP lp dump --json --slot 1 super.img > dump.json
python3 - <<'PY' && pass "lp dump --json agrees with the independent reader" || fail "lp dump --json"
import json, subprocess, os
ours = json.load(open("dump.json"))
theirs = json.loads(subprocess.check_output(["python3", os.environ["READER_PY"], "json", "super.img", "--slot=1"]))
assert ours["kind"] == "raw" and ours["slot"] == 1
assert [p["name"] for p in ours["partitions"]] == [p["name"] for p in theirs["partitions"]]
assert [e["target_data"] for p in ours["partitions"] for e in p["extents"]] == [e["target_data"] for e in theirs["extents"]]
assert all(c["valid"] for c in ours["copies"]) and len(ours["copies"]) == 8
PY

# --- a version 10.2 header, alignment offset, a second block device -------------
$T $FP lp make --device-size 32M --metadata-size 8K --metadata-slots 2 --virtual-ab --alignment-offset 4096 \
  -p a:none:3M -p b:none:5M -o vab.img
$READER json vab.img --empty > vab.json || true
if $READER check vab.img --empty && grep -q '"minor_version": 2' vab.json; then
  pass "--virtual-ab and --alignment-offset read back (independent reader)"; else fail "virtual-ab"; fi
$T $FP lp make --device super:16M --device system_b:16M --metadata-size 8K --metadata-slots 2 -p system:none:20M -o multi.img
$FP lp dump multi.img | grep -q "linear system_b" && pass "a partition spills onto the second --device" || fail "multi device"

# --- refusals -------------------------------------------------------------------
cp super.img bad.img
printf '\xff' | dd of=bad.img bs=1 seek=$((0x3000 + 20)) conv=notrunc status=none   # slot 0 primary
$FP lp dump bad.img > bad.txt && grep -q "slot 0 primary metadata at byte 0x3000: header SHA-256 checksum mismatch" bad.txt &&
  pass "a corrupt primary copy: read from the backup, reported" || fail "backup fallback: $(cat bad.txt)"
printf '\xff' | dd of=bad.img bs=1 seek=$((0x33000 + 20)) conv=notrunc status=none  # slot 0 backup
rm -rf out && mkdir out
expect_fail "both copies corrupt: unpack refuses" "no valid copy of the slot 0 metadata" $FP lp unpack bad.img out
[ -z "$(ls -A out)" ] && pass "nothing unpacked from a corrupt super" || fail "files left: $(ls out)"
head -c 4000 super_empty.img > short_empty.img
expect_fail "a truncated super_empty.img" "metadata at byte 0x1000: truncated" $FP lp dump short_empty.img
head -c $(( $(stat -c %s vendor.simg) / 2 )) vendor.simg > cut.simg
expect_fail "a truncated sparse partition image" "cut.simg" $FP lp make "${LAYOUT[@]}" -i vendor=cut.simg --sparse -o cut_super.simg
[ ! -e cut_super.simg ] && pass "no output after a bad partition image" || fail "cut_super.simg was written"
expect_fail "an image larger than its partition" "does not fit partition product" \
  $FP lp make --device-size 96M --metadata-size 64K --metadata-slots 2 -p product:none:2M -i product=system.img -o big.img
[ ! -e big.img ] && pass "no output when an image does not fit" || fail "big.img was written"
expect_fail "no room in the group" "group main has" $FP lp make --device-size 96M --metadata-size 64K \
  --metadata-slots 2 --group main:16M -p system:none:24M:main -o nospace.img
rc=0; $FP lp make --device-size 96M --metadata-size 64K --metadata-slots 2 -p 'sys/x:none:1M' -o x.img 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q 'is not 1 to 36 characters' err.txt && pass "unsafe partition names refused" || fail "name: $rc"
rc=0; $FP lp make --metadata-size 64K --metadata-slots 2 -p a:none:1M -o x.img 2>/dev/null || rc=$?
[ $rc = 2 ] && pass "usage error: no device size (exit 2)" || fail "usage exit $rc"
expect_fail "an output that is an input" "is the image of partition system" \
  $FP lp make "${LAYOUT[@]}" -i system=system.img -o system.img
cmp system.img out/../system.img >/dev/null && pass "the input survived"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
