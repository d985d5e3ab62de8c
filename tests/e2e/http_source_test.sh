#!/usr/bin/env bash
# End-to-end test of images at http(s) URLs: Debian's nginx on loopback
# (ranges, multi-range, HTTPS with a test CA), tests/e2e/fault_http.py for
# what servers do badly (drops at random offsets, a stall, 200 to a Range
# request, a file changed between requests, a Content-Length longer than the
# body, a redirect loop, no validators), the cache under two concurrent runs
# and a kill -9 mid-download, --sha256 and SHA256SUMS, `cache ls|rm|gc`, and
# `flash`/`dump`/`bmap create` of a URL. Every written target is compared
# byte for byte with the image; every failure must name what and leave the
# file target absent. About 60 s.
#   FLASHPIPE=build/flashpipe bash tests/e2e/http_source_test.sh
set -euo pipefail

FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
FLASHPIPE_SOURCE_DIR=${FLASHPIPE_SOURCE_DIR:-$(realpath "$(dirname "$0")/../..")}
for tool in nginx curl openssl python3 bmaptool img2simg mkfs.ext4 zstd jq; do
  command -v "$tool" >/dev/null || { echo "http_source_test: missing $tool (scripts/setup.sh installs it)"; exit 77; }
done
T=$(mktemp -d /tmp/fp_http_e2e.XXXXXX)
source "$FLASHPIPE_SOURCE_DIR/tests/e2e/http_lib.sh"
BG=()
cleanup() {
  for p in "${BG[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  http_cleanup
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }
# write with the test's cache; the report in r.json, stderr in err
cache_flag() { [[ " $* " == *" --no-cache "* ]] || echo "--cache=$T/cache"; }
w() {
  timeout 120 "$FP" write --no-progress $(cache_flag "$@") --json=r.json "$@" 2>err || fail "write $*: $(cat err)"
}
expect_fail() {  # expect_fail WHAT-IN-ERROR ARGS...
  local want=$1 rc=0
  shift
  timeout 120 "$FP" write --no-progress $(cache_flag "$@") "$@" 2>err >/dev/null || rc=$?
  [ "$rc" -ne 0 ] || fail "expected failure: write $*"
  [ "$rc" -ne 124 ] || fail "timed out: write $*"
  grep -q -- "$want" err || fail "error of write $* lacks '$want': $(cat err)"
}
field() { jq -r "$1" r.json; }

# ---- fixtures: an ext4 image with files, its bmap, compressed and sparse forms
mkdir tree www
head -c 6000000 /dev/urandom > tree/random.bin
seq 1 400000 > tree/numbers.txt
for i in $(seq 1 40); do head -c $((i * 3000)) /dev/urandom > tree/f$i; done
mkfs.ext4 -q -F -b 4096 -d tree www/disk.img 64M
bmaptool -q create www/disk.img -o www/disk.img.bmap
zstd -q -k www/disk.img -o www/disk.img.zst
img2simg www/disk.img www/disk.simg
cp www/disk.img www/plain.img   # no bmap beside it
sha=$(sha256sum www/disk.img | cut -d' ' -f1)
(cd www && sha256sum disk.img disk.img.zst > SHA256SUMS)
SIZE=$(stat -c %s www/disk.img)
MAPPED=$(python3 - <<'EOF'
import re
t = open("www/disk.img.bmap").read()
print(int(re.search(r"<MappedBlocksCount>\s*(\d+)", t).group(1)) * 4096)
EOF
)

start_nginx "$T/www"
N=http://127.0.0.1:$NGINX_PORT

# ---- nginx: ranges of a raw image with a bmap found beside the URL
w "$N/disk.img" out1.img
cmp -s out1.img www/disk.img || fail "raw+bmap URL: target differs"
[ "$(field .download.cache)" = miss ] || fail "first run: cache $(field .download.cache)"
[ "$(field .download.ranges)" = true ] || fail "nginx ranges not used"
[ "$(field .download.bytes_needed)" = "$MAPPED" ] || fail "needed $(field .download.bytes_needed), mapped $MAPPED"
[ "$(field .bmap_found)" = true ] || fail "bmap beside the URL not found"
served=$(served_bytes "$NGINX_LOG" 2)
[ "$served" -lt $((MAPPED + 1048576)) ] || fail "nginx sent $served bytes for $MAPPED mapped of $SIZE"
grep -q '"bytes=[0-9]*-[0-9]*,[0-9]' "$NGINX_LOG" || fail "no multi-range request: $(head -3 "$NGINX_LOG")"
ok "raw + bmap from nginx: $served bytes sent of $SIZE (mapped $MAPPED), multi-range requests"

: >"$NGINX_LOG"
w "$N/disk.img" out2.img
cmp -s out2.img www/disk.img || fail "cached run: target differs"
[ "$(field .download.cache)" = hit ] || fail "second run: cache $(field .download.cache)"
served=$(served_bytes "$NGINX_LOG" 2)
[ "$served" -lt 200000 ] || fail "a cache hit made nginx send $served bytes"
ok "second run from the cache ($served bytes of probe and bmap)"

w --no-cache "$N/disk.img" out3.img
cmp -s out3.img www/disk.img || fail "--no-cache: target differs"
[ "$(field .download.cache)" = off ] || fail "--no-cache: cache $(field .download.cache)"
w "$N/disk.img.zst" out4.img
cmp -s out4.img www/disk.img || fail "zstd URL: target differs"
[ "$(field .download.bytes_needed)" = "$(stat -c %s www/disk.img.zst)" ] || fail "zstd: not fetched whole"
grep -q "disk.img.bmap" <<<"$(field .bmap)" || fail "zstd: bmap without the suffix not found ($(field .bmap))"
w "$N/disk.simg" out5.img
cmp -s out5.img www/disk.img || fail "sparse URL: target differs"
w --no-bmap --connections 1 "$N/plain.img" out6.img
cmp -s out6.img www/disk.img || fail "raw URL without bmap: target differs"
[ "$(field .download.bytes_needed)" = "$SIZE" ] || fail "raw without bmap: not fetched whole"
ok "--no-cache, zstd (bmap found without the suffix), sparse, raw without bmap"

# ---- integrity: --sha256, SHA256SUMS
w --sha256 "$sha" "$N/plain.img" out7.img
[ "$(field .download.sha256_checked)" = true ] || fail "--sha256 not checked"
bad=$(printf '%064d' 0)
expect_fail "SHA-256 is $sha, expected $bad" --no-cache --sha256 "$bad" "$N/plain.img" out8.img
[ ! -e out8.img ] || fail "a failed SHA-256 left the target"
w --sha256sums "$N/SHA256SUMS" "$N/disk.img.zst" out9.img
cmp -s out9.img www/disk.img || fail "SHA256SUMS: target differs"
ok "--sha256 good and bad (target absent), SHA256SUMS at a URL"

# ---- HTTPS with a test CA; a wrong host name refused
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test CA" -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout srv.key -out srv.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' > san.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out srv.pem 2>/dev/null
start_nginx "$T/www" "" "$T/srv.pem" "$T/srv.key"
w --cacert ca.pem "https://localhost:$NGINX_SSL_PORT/disk.img" out10.img
cmp -s out10.img www/disk.img || fail "https: target differs"
expect_fail "certificate" --no-cache "https://localhost:$NGINX_SSL_PORT/disk.img" out11.img
expect_fail "127.0.0.1" --no-cache --cacert ca.pem "https://127.0.0.1:$NGINX_SSL_PORT/disk.img" out11.img
[ ! -e out11.img ] || fail "a refused https server left a target"
ok "https with --cacert; an unknown CA and a wrong host name refused"

# ---- what servers do badly (tests/e2e/fault_http.py)
echo '{}' > fault.json
start_fault "$T/www" "$T/fault.json"
F=http://127.0.0.1:$FAULT_PORT
fault() { echo "$1" > fault.json; rm -rf "$T/cache"; }

fault '{"drop_prob": 0.5, "drop_seed": 3}'
w --fetch-retries 60 "$F/disk.img" f1.img
cmp -s f1.img www/disk.img || fail "drops: target differs"
[ "$(field .download.resumes)" -gt 0 ] || fail "drops: no resume counted"
fault '{"drop_prob": 0.5}'
w --fetch-retries 60 --no-bmap "$F/disk.img.zst" f2.img
cmp -s f2.img www/disk.img || fail "drops, zstd: target differs"
ok "connections dropped at random offsets: resumed by Range, targets equal the image"

fault '{"stall_once": 30}'  # libcurl averages the rate over ~5 s: a stall must outlast that
w --speed-time 2 --speed-limit 1K --no-bmap "$F/disk.img" f3.img
cmp -s f3.img www/disk.img || fail "stall: target differs"
[ "$(field .download.retries)" -gt 0 ] || fail "stall: no retry: $(jq -c .download r.json) $(tail -5 "$FAULT_LOG" | tr "\n" " ")"
ok "a stalled transfer dropped after --speed-time and resumed"

fault '{"ignore_range": true}'
w "$F/disk.img" f4.img
cmp -s f4.img www/disk.img || fail "200 to Range: target differs"
[ "$(field .download.ranges)" = false ] || fail "200 to Range: ranges reported used"
grep -q "does not serve ranges: reading it whole" err || fail "200 to Range: no note: $(cat err)"
ok "a server answering 200 to Range requests: read whole, said so"

fault '{"change_after": 2}'
expect_fail "changed on the server" "$F/disk.img" f5.img
[ ! -e f5.img ] || fail "a changed file left a target"
fault '{"change_after": 4, "rate": 20000000}'
expect_fail "changed on the server" --no-bmap --connections 1 "$F/plain.img" f5.img
[ ! -e f5.img ] || fail "a file changed mid-stream left a target"
ok "a file changed between requests (new ETag): refused, nothing stitched, target absent"

fault '{"short_length": 1000}'
w --no-bmap "$F/disk.img" f6.img
cmp -s f6.img www/disk.img || fail "wrong Content-Length: target differs"
fault '{"no_validators": true}'
w "$F/disk.img" f7.img
cmp -s f7.img www/disk.img || fail "no validators: target differs"
fault '{"redirect_loop": true}'
expect_fail "redirects" "$F/disk.img" f8.img
fault '{}'
expect_fail "404" "$F/missing.img" f9.img
ok "a Content-Length past the body, no validators, a redirect loop, a 404"

# ---- the cache: two runs at once download once; kill -9, then resume
fault '{"rate": 4000000}'
: >"$FAULT_LOG"
"$FP" write --no-progress --cache "$T/cache" --json=c1.json "$F/disk.img" c1.img 2>c1.err & a=$!
"$FP" write --no-progress --cache "$T/cache" --json=c2.json "$F/disk.img" c2.img 2>c2.err & b=$!
wait $a || fail "concurrent run 1: $(cat c1.err)"
wait $b || fail "concurrent run 2: $(cat c2.err)"
cmp -s c1.img www/disk.img && cmp -s c2.img www/disk.img || fail "concurrent runs: a target differs"
served=$(served_bytes "$FAULT_LOG" 4)
[ "$served" -lt $((MAPPED + MAPPED / 4)) ] || fail "two runs at once made the server send $served bytes (mapped $MAPPED)"
# Under load the second process can start after the first has finished: then
# it is a whole cache hit, not a shared fetch. Either way one download served both.
jq -r '"\(.download.shared) \(.download.cache)"' c1.json c2.json | grep -Eq '^true |^false hit$' \
  || fail "neither run says it shared the download or found it cached: $(jq -c .download c1.json c2.json | tr '\n' ' ')"
ok "two runs at once: one download ($served bytes sent, mapped $MAPPED)"

fault '{"rate": 3000000}'
"$FP" write --no-progress --cache "$T/cache" --no-bmap "$F/disk.img" k.img 2>k.err & k=$!
BG+=("$k")
sleep 3
kill -9 "$k"
wait "$k" 2>/dev/null || true
[ ! -e k.img ] || fail "kill -9: the target appeared"
timeout 30 "$FP" cache --cache "$T/cache" ls --json > ls.json || fail "cache ls after kill -9"
held=$(jq '[.entries[].bytes_held] | max' ls.json)
[ "$held" -gt 0 ] && [ "$held" -lt "$SIZE" ] || fail "kill -9: the entry holds $held bytes"
jq -e '.entries[] | select(.bytes_held > .size)' ls.json >/dev/null && fail "torn entry: $(cat ls.json)"
echo '{}' > fault.json
w --no-bmap "$F/disk.img" k.img
cmp -s k.img www/disk.img || fail "resumed entry: target differs"
[ "$(field .download.cache)" = partial ] || fail "after kill -9: cache $(field .download.cache)"
[ "$(field .download.bytes_from_cache)" -ge "$held" ] || fail "the next run did not resume from $held bytes"
ok "kill -9 mid-download: no target, no torn entry, the next run resumed from $held bytes"

# ---- cache ls/rm/gc
n=$(jq '.entries | length' ls.json)
timeout 30 "$FP" cache --cache "$T/cache" rm "$F/disk.img" 2>/dev/null
timeout 30 "$FP" cache --cache "$T/cache" ls --json > ls2.json
jq -e --arg u "$F/disk.img" '[.entries[] | select(.url == $u)] | length == 0' ls2.json >/dev/null || fail "cache rm URL left entries"
w "$N/disk.img" g.img
timeout 30 "$FP" cache --cache "$T/cache" gc --max-size 0 2>/dev/null
[ "$(timeout 30 "$FP" cache --cache "$T/cache" ls --json | jq '.entries | length')" = 0 ] || fail "gc --max-size 0 kept entries"
ok "cache rm by URL, gc to a size"

# ---- other commands take a URL
timeout 60 "$FP" dump --cache "$T/cache" "$N/disk.simg" > dump.txt || fail "dump URL"
grep -q "^total:" dump.txt || fail "dump URL printed no totals"
timeout 60 "$FP" bmap create --cache "$T/cache" --no-progress "$N/plain.img" -o url.bmap || fail "bmap create URL"
"$FP" write --no-progress --bmap url.bmap www/disk.img bm.img && cmp -s bm.img www/disk.img || fail "bmap of a URL does not write the image"
ok "dump and bmap create of a URL"

# ---- the host side: flash and fastboot flash of a URL into a daemon's partition
truncate -s 80M sys.part
"$FP" serve -v --tcp 127.0.0.1:0 --state "$T/serve.state" --partition system="$T/sys.part" >serve.out 2>serve.log & sp=$!
BG+=("$sp")
for _ in $(seq 100); do
  port=$(sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' serve.out 2>/dev/null | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "serve did not start: $(cat serve.log)"
timeout 120 "$FP" flash --no-progress --cache "$T/cache" -s "tcp:127.0.0.1:$port" "system=$N/disk.img" --json=fl.json 2>fl.err ||
  fail "flash URL: $(cat fl.err)"
cmp -s -n "$SIZE" sys.part www/disk.img || fail "flash URL: the partition differs from the image"
[ "$(jq '.downloads[0].bytes_needed' fl.json)" = "$MAPPED" ] || fail "flash URL: $(jq -c .downloads fl.json)"
truncate -s 0 sys.part && truncate -s 80M sys.part
timeout 120 "$FP" fastboot --cache "$T/cache" -s "tcp:127.0.0.1:$port" flash system "$N/disk.simg" 2>fb.err || fail "fastboot flash URL: $(cat fb.err)"
cmp -s -n "$SIZE" sys.part www/disk.img || fail "fastboot flash URL: the partition differs from the image"
kill "$sp"; wait "$sp" 2>/dev/null || true
ok "flash (raw + bmap: the mapped ranges) and fastboot flash (sparse) of a URL"

echo "http_source_test: $PASS passed"
