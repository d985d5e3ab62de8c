#!/usr/bin/env bash
# Planted links (issue 19, class 2): every command that creates files is run
# with a symlink and a hard link planted at each name it will create, each
# pointing at a victim file outside (or beside) the output folder.
#   - Names a command makes inside a folder it was given (lp unpack's
#     DIR/NAME.img, resparse's and read --max-size's PREFIX.N): the link is
#     replaced by the new file, never written through; the victim keeps its
#     bytes, and its link count drops back.
#   - An output the user named (img2simg, simg2img, lp make -o, read OUTPUT,
#     bmap create -o, dump --json=FILE): a hard link there is replaced, never
#     written through (temp beside it, rename); a symlink there is followed
#     on purpose, as AOSP's tools do (docs/design.md), which is not tested as
#     a failure here.
# Also: nothing but the expected outputs is left in the folders.
set -euo pipefail
FLASHPIPE=${FLASHPIPE:-$(cd "$(dirname "$0")/../.." && pwd)/build/flashpipe}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
die() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }
cd "$work"
fp() { timeout 120 "$FLASHPIPE" "$@"; }

# victim NAME: a file whose bytes and link count are checked afterwards.
victim() { printf 'precious %s\n' "$1" >"$1"; chmod 600 "$1"; }
untouched() {  # NAME WHAT
  [ "$(cat "$1")" = "precious $1" ] || die "$2: the victim $1 was written: $(head -c 60 "$1" | od -c | head -2)"
  [ "$(stat -c %h "$1")" = 1 ] || die "$2: the victim $1 still has $(stat -c %h "$1") links"
  [ "$(stat -c %a "$1")" = 600 ] || die "$2: the victim $1 changed mode"
}
regular() {  # PATH WHAT
  [ -f "$1" ] && [ ! -L "$1" ] || die "$2: $1 is not a regular file: $(ls -l "$1" 2>&1)"
  [ "$(stat -c %h "$1")" = 1 ] || die "$2: $1 has $(stat -c %h "$1") links"
}

# ---- lp unpack --------------------------------------------------------------
head -c $((1 << 20)) /dev/urandom >sys.raw
head -c $((512 << 10)) /dev/urandom >ven.raw
fp lp make -d 8M -m 64K -s 2 -g main:6M -p system:readonly:1M:main -p vendor:readonly:512K:main \
  -i system=sys.raw -i vendor=ven.raw -o super.img >/dev/null
mkdir out
victim victim_sys; victim victim_ven
ln -s ../victim_sys out/system.img
ln victim_ven out/vendor.img
fp lp unpack super.img out >unpack.log 2>&1 || die "lp unpack with planted links: $(cat unpack.log)"
untouched victim_sys "lp unpack (symlink at out/system.img)"
untouched victim_ven "lp unpack (hard link at out/vendor.img)"
regular out/system.img "lp unpack"; regular out/vendor.img "lp unpack"
cmp -s out/system.img sys.raw || die "lp unpack: out/system.img is not the partition"
cmp -s out/vendor.img ven.raw || die "lp unpack: out/vendor.img is not the partition"
[ "$(ls -A out | wc -l)" = 2 ] || die "lp unpack left more than its outputs: $(ls -A out)"
pass "lp unpack: a symlink and a hard link planted at DIR/NAME.img are replaced, the victims untouched"

# ---- resparse parts -----------------------------------------------------------
head -c $((3 << 20)) /dev/urandom >img.raw
fp img2simg img.raw img.simg
mkdir parts
victim victim_p0; victim victim_p1
ln -s ../victim_p0 parts/p.0
ln victim_p1 parts/p.1
fp resparse -m 1M img.simg parts/p >resparse.log 2>&1 || die "resparse with planted links: $(cat resparse.log)"
untouched victim_p0 "resparse (symlink at p.0)"
untouched victim_p1 "resparse (hard link at p.1)"
regular parts/p.0 resparse; regular parts/p.1 resparse
fp simg2img $(ls parts/p.* | sort -t. -k2 -n) joined.raw
cmp -s joined.raw img.raw || die "resparse: the parts do not join to the image"
pass "resparse: links planted at PREFIX.0 and PREFIX.1 are replaced, the victims untouched"

# ---- read --max-size parts ----------------------------------------------------
mkdir rparts
victim victim_r0; victim victim_r1
ln -s ../victim_r0 rparts/r.0
ln victim_r1 rparts/r.1
fp read --no-progress --format sparse --max-size 1M img.raw rparts/r >read.log 2>&1 ||
  die "read --max-size with planted links: $(cat read.log)"
untouched victim_r0 "read --max-size (symlink at r.0)"
untouched victim_r1 "read --max-size (hard link at r.1)"
regular rparts/r.0 "read --max-size"; regular rparts/r.1 "read --max-size"
fp simg2img $(ls rparts/r.* | sort -t. -k2 -n) rjoined.raw
cmp -s rjoined.raw img.raw || die "read --max-size: the parts do not join to the source"
pass "read --max-size: links planted at OUTPUT.0 and OUTPUT.1 are replaced, the victims untouched"

# ---- outputs the user named: a hard link is replaced, never written through ----
hard() {  # NAME OUTPUT CMD...: OUTPUT is a hard link of a victim when CMD runs
  local name=$1 out=$2; shift 2
  victim "v_$name"; rm -f "$out"; ln "v_$name" "$out"
  "$@" >"$name.log" 2>&1 || die "$name with a hard link at $out: $(cat "$name.log")"
  untouched "v_$name" "$name (hard link at $out)"
  regular "$out" "$name"
  pass "$name: a hard link at its output is replaced, the victim untouched"
}
hard img2simg o1.simg fp img2simg img.raw o1.simg
hard simg2img o2.raw fp simg2img img.simg o2.raw
hard lp_make o3.img fp lp make -d 8M -m 64K -s 2 -g main:6M -p system:readonly:1M:main -o o3.img
hard read o4.raw fp read --no-progress img.raw o4.raw
hard bmap_create o5.bmap fp bmap create -o o5.bmap img.raw
hard dump_json o6.json fp dump --json=o6.json img.simg
cmp -s o2.raw img.raw && cmp -s o4.raw img.raw || die "the outputs are not what was asked"
echo PASS
