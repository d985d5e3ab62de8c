#!/usr/bin/env bash
# Signed bmaps, local and at URLs (nginx on loopback): keys made by the test
# (gpg --batch), then a good detached signature (.asc and .sig), a good
# inline (clear-signed) bmap, a corrupted signature, a signature by another
# key, a bmap modified after signing, an image modified in a mapped range,
# an unsigned bmap. Each case is also run through `bmaptool copy` with the
# same files as the oracle (GNUPGHOME holding the signer's key alone, which
# is what flashpipe's --keyring means; bmaptool 3.6 calls pygpgme, which
# Debian no longer ships: tests/e2e/gpgme_shim gives it that API over
# python3-gpg). flashpipe must succeed exactly when bmaptool does, except
# an unsigned bmap with a key given, which flashpipe refuses by design.
# Failures leave the file target absent. About 20 s.
#   FLASHPIPE=build/flashpipe bash tests/e2e/http_signature_test.sh
set -euo pipefail

FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
FLASHPIPE_SOURCE_DIR=${FLASHPIPE_SOURCE_DIR:-$(realpath "$(dirname "$0")/../..")}
for tool in nginx curl gpg bmaptool mkfs.ext4 jq; do
  command -v "$tool" >/dev/null || { echo "http_signature_test: missing $tool (scripts/setup.sh installs it)"; exit 77; }
done
/usr/bin/python3 -c "import gpg" 2>/dev/null || { echo "http_signature_test: missing python3-gpg"; exit 77; }
T=$(mktemp -d /tmp/fp_sig_e2e.XXXXXX)
source "$FLASHPIPE_SOURCE_DIR/tests/e2e/http_lib.sh"
cleanup() {
  http_cleanup
  gpgconf --homedir "$T/keys" --kill all 2>/dev/null || true
  gpgconf --homedir "$T/signer-only" --kill all 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }

# ---- keys: a signer and another key; a home with the signer's key alone
mkdir -m 700 keys signer-only
export GNUPGHOME=$T/keys
gpg --batch -q --passphrase '' --quick-gen-key "Test Signer <signer@example.org>" ed25519 sign never
gpg --batch -q --passphrase '' --quick-gen-key "Other Key <other@example.org>" ed25519 sign never
SIGNER=$(gpg --with-colons --list-keys signer@example.org | awk -F: '/^fpr/ {print $10; exit}')
OTHER=$(gpg --with-colons --list-keys other@example.org | awk -F: '/^fpr/ {print $10; exit}')
gpg --export "$SIGNER" > signer.gpg
gpg --export "$SIGNER" "$OTHER" > both.gpg
GNUPGHOME=$T/signer-only gpg --batch -q --import signer.gpg

# ---- the image and its bmap
mkdir tree
head -c 3000000 /dev/urandom > tree/a.bin
seq 1 100000 > tree/n.txt
mkfs.ext4 -q -F -b 4096 -d tree disk.img 24M
bmaptool -q create disk.img -o disk.bmap
mkdir www
# case DIR: www/DIR/disk.img + its bmap as the case has them
mkcase() { mkdir -p "www/$1"; cp disk.img "www/$1/disk.img"; cp disk.bmap "www/$1/disk.img.bmap"; }
sign() { gpg --batch -q --yes -u "$1" "${@:2}"; }
mkcase good_asc; sign "$SIGNER" --armor --detach-sign -o www/good_asc/disk.img.bmap.asc www/good_asc/disk.img.bmap
mkcase good_sig; sign "$SIGNER" --detach-sign -o www/good_sig/disk.img.bmap.sig www/good_sig/disk.img.bmap
mkcase inline; sign "$SIGNER" --clearsign -o www/inline/signed www/inline/disk.img.bmap; mv www/inline/signed www/inline/disk.img.bmap
mkcase bad_sig; sign "$SIGNER" --detach-sign -o www/bad_sig/disk.img.bmap.sig www/bad_sig/disk.img.bmap
python3 - www/bad_sig/disk.img.bmap.sig <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2 + 8] ^= 0x55; open(p, "wb").write(b)
EOF
mkcase other_key; sign "$OTHER" --armor --detach-sign -o www/other_key/disk.img.bmap.asc www/other_key/disk.img.bmap
mkcase modified_bmap; sign "$SIGNER" --armor --detach-sign -o www/modified_bmap/disk.img.bmap.asc www/modified_bmap/disk.img.bmap
sed -i 's|<!-- |<!-- edited |' www/modified_bmap/disk.img.bmap
mkcase modified_image; sign "$SIGNER" --armor --detach-sign -o www/modified_image/disk.img.bmap.asc www/modified_image/disk.img.bmap
last=$(python3 -c 'import re,sys; print(re.findall(r">\s*(\d+)(?:-\d+)?\s*</Range>", open(sys.argv[1]).read())[-1])' disk.bmap)
printf 'XXXX' | dd of=www/modified_image/disk.img bs=1 seek=$((4096 * last + 100)) conv=notrunc status=none
mkcase unsigned
cmp -s www/modified_bmap/disk.img.bmap disk.bmap && fail "the bmap was not modified"

start_nginx "$T/www"
N=http://127.0.0.1:$NGINX_PORT

# verdict CASE: "ok" or "fail" for bmaptool copy and flashpipe write of the URL
bmaptool_verdict() {
  rm -f b.img
  if GNUPGHOME=$T/signer-only PYTHONPATH=$FLASHPIPE_SOURCE_DIR/tests/e2e/gpgme_shim \
     timeout 60 bmaptool copy "$N/$1/disk.img" b.img >bmaptool.log 2>&1 && cmp -s b.img disk.img; then
    echo ok
  else
    echo fail
  fi
}
flashpipe_verdict() {
  rm -f f.img
  if timeout 60 "$FP" write --no-progress --no-cache --keyring signer.gpg --json=r.json "$N/$1/disk.img" f.img 2>fp.err; then
    cmp -s f.img disk.img || fail "$1: flashpipe succeeded but the target differs"
    echo ok
  else
    [ ! -e f.img ] || fail "$1: a failed run left the target"
    echo fail
  fi
}
for c in good_asc:ok good_sig:ok inline:ok bad_sig:fail other_key:fail modified_bmap:fail modified_image:fail; do
  name=${c%%:*} want=${c##*:}
  got=$(flashpipe_verdict "$name")
  oracle=$(bmaptool_verdict "$name")
  [ "$got" = "$want" ] || fail "$name: flashpipe says $got, expected $want: $(cat fp.err)"
  if [ "$oracle" != "$want" ]; then
    # bmaptool 3.6 writes bytes to a text file after a good clear-signed check:
    # its own bug, seen in its log; gpg --verify is the oracle then.
    if [ "$name" = inline ] && grep -q "TypeError" bmaptool.log; then
      GNUPGHOME=$T/signer-only gpg --verify "www/inline/disk.img.bmap" 2>/dev/null || fail "inline: gpg --verify refuses it"
      oracle="ok (gpg --verify; bmaptool 3.6 fails on its clear-sign bug)"
    else
      fail "$name: bmaptool says $oracle, expected $want: $(tail -3 bmaptool.log)"
    fi
  fi
  if [ "$want" = ok ]; then
    [ "$(jq -r .bmap_signed_by r.json)" = "$SIGNER" ] || fail "$name: signed_by $(jq -r .bmap_signed_by r.json)"
  fi
  ok "$name: flashpipe $got, bmaptool copy $oracle"
done
grep -q "mismatch" <<<"$(flashpipe_verdict modified_image; cat fp.err)" || fail "modified_image: not a checksum mismatch"
flashpipe_verdict bad_sig >/dev/null; grep -qi "bad signature\|invalid\|checksum" fp.err || fail "bad_sig: $(cat fp.err)"
flashpipe_verdict other_key >/dev/null; grep -q "No public key" fp.err || fail "other_key: $(cat fp.err)"

# unsigned: accepted without a key (as bmaptool), refused with one
[ "$(bmaptool_verdict unsigned)" = ok ] || fail "unsigned: bmaptool refused it"
[ "$(flashpipe_verdict unsigned)" = fail ] || fail "unsigned with --keyring: accepted"
grep -q "is not signed" fp.err || fail "unsigned: $(cat fp.err)"
timeout 60 "$FP" write --no-progress --no-cache "$N/unsigned/disk.img" u.img 2>/dev/null || fail "unsigned without a key refused"
ok "unsigned: bmaptool and flashpipe without a key write it; with --keyring flashpipe refuses it"

# --fingerprint: the other key's fingerprint refuses the signer's signature
rm -f f.img
if timeout 60 "$FP" write --no-progress --no-cache --keyring both.gpg --fingerprint "$OTHER" "$N/good_asc/disk.img" f.img 2>fp.err; then
  fail "--fingerprint of another key accepted"
fi
grep -q "not by $OTHER" fp.err || fail "--fingerprint: $(cat fp.err)"
timeout 60 "$FP" write --no-progress --no-cache --keyring both.gpg --fingerprint "$SIGNER" "$N/good_asc/disk.img" f.img || fail "--fingerprint of the signer refused"
ok "--fingerprint: the signer's accepted, another key's refused"

# Local files, the user's own keyring (GNUPGHOME), no --keyring
cp www/good_asc/disk.img.bmap.asc ./disk.bmap.asc
GNUPGHOME=$T/signer-only timeout 60 "$FP" write --no-progress --bmap disk.bmap --json=r.json disk.img l.img || fail "local signed bmap"
[ "$(jq -r .bmap_signed_by r.json)" = "$SIGNER" ] || fail "local: not reported as signed"
cp www/other_key/disk.img.bmap.asc ./disk.bmap.asc
if GNUPGHOME=$T/signer-only timeout 60 "$FP" write --no-progress --bmap disk.bmap disk.img l2.img 2>fp.err; then
  fail "local bmap signed by an unknown key accepted"
fi
ok "local bmap: checked against the user's keyring as bmaptool does"

echo "http_signature_test: $PASS passed"
