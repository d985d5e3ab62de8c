#!/usr/bin/env bash
# End-to-end test of the command-line vocabulary every command shares
# (tools/flags.h): exit status 0 done / 1 failed / 2 usage, usage errors
# prefixed "flashpipe CMD: error:", the writer flags (--backend and its old
# spelling --io-backend, -Q/--queue-depth, --request-size with unit
# suffixes) accepted by write, serve and bench alike, and --json[=FILE]
# meaning stdout without a file and FILE with one.
#   FLASHPIPE=build/flashpipe bash tests/e2e/cli_test.sh
set -euo pipefail

FP=${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}
FP=$(realpath "$FP")
T=$(mktemp -d /tmp/fp_cli_e2e.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*"; exit 1; }

# run EXPECTED_RC CMD...: stdout to out, stderr to err.
run() {
  local want=$1 rc=0
  shift
  timeout 60 "$FP" "$@" >out 2>err || rc=$?
  [ "$rc" -eq "$want" ] || fail "flashpipe $* exited $rc, expected $want: $(head -3 err)"
}

# Usage errors: exit 2, "flashpipe CMD: error:" first, for every command.
for cmd in write read bmap serve bench img2simg simg2img append2simg resparse dump; do
  run 2 "$cmd" --no-such-flag
  grep -q "^flashpipe $cmd: error: " err || fail "$cmd: usage error without prefix: $(cat err)"
  run 0 "$cmd" --help
  grep -q "Usage: flashpipe $cmd" out || fail "$cmd --help: usage line does not say 'flashpipe $cmd'"
  grep -q "Exit status: 0 done, 1 failed, 2 usage error" out || fail "$cmd --help does not state the exit codes"
done
ok "every command: usage error exits 2 with 'flashpipe CMD: error:', --help exits 0"
for sub in dump make unpack; do
  run 2 lp "$sub" --no-such-flag
  grep -q "^flashpipe lp: error: " err || fail "lp $sub: usage error without prefix: $(cat err)"
  run 0 lp "$sub" --help
  grep -q "Usage: flashpipe lp $sub" out || fail "lp $sub --help: usage line does not say 'flashpipe lp $sub'"
  grep -q "Exit status: 0 done, 1 failed, 2 usage error" out || fail "lp $sub --help does not state the exit codes"
done
run 2 lp no-such-subcommand
run 2 lp
ok "lp subcommands: the same usage errors and --help"
run 2 no-such-command
run 2
ok "unknown or missing command exits 2"

# Bad values of the shared writer flags are usage errors in every command.
# (positional arguments as each command needs them: serve has none)
declare -A ARGS=([write]="x y" [read]="x y" [serve]="--partition p=x" [bench]="x")
for cmd in write read serve bench; do
  # shellcheck disable=SC2086
  run 2 "$cmd" --backend aio ${ARGS[$cmd]}
  grep -q "unknown I/O backend 'aio'" err || fail "$cmd --backend aio: $(cat err)"
  # shellcheck disable=SC2086
  run 2 "$cmd" --queue-depth 0 ${ARGS[$cmd]}
  # shellcheck disable=SC2086
  run 2 "$cmd" --request-size 3 ${ARGS[$cmd]}
  grep -q "request size 3 must be a multiple of 4096" err || fail "$cmd --request-size 3: $(cat err)"
done
ok "write, read, serve, bench: bad --backend / --queue-depth / --request-size exit 2 with the reason"

# A real failure exits 1.
run 1 write missing.simg out.img
grep -q "^flashpipe write: error: " err || fail "failure without prefix"
ok "a failing write exits 1"

# The writer flags work in write, with unit suffixes and the old spelling.
head -c 3M /dev/urandom > img.raw
run 0 write --no-progress --backend threads -Q 2 --request-size 256K img.raw a.img
cmp img.raw a.img || fail "write --backend threads wrote other bytes"
run 0 write --no-progress --io-backend sync --queue-depth 3 --request-size 1M img.raw b.img
cmp img.raw b.img || fail "write --io-backend sync wrote other bytes"
ok "write: --backend threads, -Q, --request-size 256K, and --io-backend"

# --json without a file: JSON on stdout; --json=FILE: the file, stdout quiet.
run 0 write --json img.raw c.img
python3 -c 'import json,sys; d=json.load(open("out")); assert d["ok"] is True, d' || fail "write --json: stdout is not the report"
run 0 write --no-progress --json=report.json img.raw d.img
python3 -c 'import json; d=json.load(open("report.json")); assert d["ok"] is True' || fail "write --json=FILE"
[ ! -s out ] || fail "write --json=FILE printed on stdout"
ok "write: --json on stdout, --json=FILE into the file"

# serve takes --request-size 4M (a unit suffix) and the other writer flags.
head -c 8M /dev/zero > disk.img
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$FP" serve --partition userdata=disk.img --tcp "127.0.0.1:$PORT" --state "$T/state" \
  --request-size 4M -Q 8 --backend threads --no-prefault >serve.out 2>serve.err &
PIDS+=($!)
for _ in $(seq 50); do grep -q "listening" serve.out 2>/dev/null && break; sleep 0.1; done
grep -q "listening" serve.out || fail "serve --request-size 4M did not start: $(cat serve.err)"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
ok "serve: --request-size 4M -Q 8 --backend threads accepted"

# bench --json without a file prints JSON on stdout (sim target: no device).
run 0 bench sim:size=64M,bw=100M,cmd_us=10 --total 1M --sizes 64k --modes blocking --tests write --json
python3 -c 'import json; d=json.load(open("out")); assert d["results"], d' || fail "bench --json: stdout is not JSON"
run 0 bench sim:size=64M,bw=100M,cmd_us=10 --total 1M --sizes 64k --modes blocking --tests write --json=b.json
python3 -c 'import json; json.load(open("b.json"))' || fail "bench --json=FILE"
run 0 bench sim:size=64M,bw=100M,cmd_us=10 --total 1M --request-size 128K --modes blocking --tests write --json
python3 -c 'import json; d=json.load(open("out")); assert [r["request_bytes"] for r in d["results"]] == [131072], d' \
  || fail "bench --request-size 128K did not run 128 KiB requests: $(cat out)"
ok "bench: --json on stdout and into FILE, --request-size is the request size"

# dump --json without a file prints on stdout.
"$FP" img2simg img.raw img.simg
run 0 dump --json img.simg
python3 -c 'import json; d=json.load(open("out")); assert d["valid"] is True' || fail "dump --json"
ok "dump: --json on stdout"

# --json=FILE never names an input or another output of the command: the
# report is written last and would replace it (through a link too).
"$FP" lp make --device-size 16M --metadata-size 4096 --metadata-slots 2 --group main:8M \
  --partition system_a:readonly:1M:main -o sup.img >/dev/null 2>&1 || fail "lp make for the --json checks"
ln -sf img.raw img.link
cp img.raw img.keep; cp img.simg simg.keep; cp sup.img sup.keep
for args in "read --no-progress img.raw r.img --json=img.raw" "read --no-progress img.raw r.img --json=r.img" \
            "read --no-progress img.raw r.img --bmap r.bmap --json=r.bmap" \
            "bmap create --no-progress img.raw -o x.bmap --json=img.link" "bmap create img.raw -o y.bmap --json=y.bmap" \
            "dump img.simg --json=img.simg" "lp dump sup.img --json=sup.img" \
            "flash -s tcp:127.0.0.1:1 system=img.raw --json=img.raw" "write --no-progress img.raw w.img --json=img.raw"; do
  rc=0; timeout 60 "$FP" $args >out 2>err || rc=$?
  [ "$rc" -ne 0 ] || fail "flashpipe $args: accepted"
  cmp -s img.raw img.keep && cmp -s img.simg simg.keep && cmp -s sup.img sup.keep || fail "flashpipe $args: wrote over an input"
  for o in r.img r.bmap y.bmap w.img; do [ ! -e "$o" ] || fail "flashpipe $args: left $o"; done
done
ok "--json=FILE naming an input or an output is refused before anything is written"

echo "cli_test: $PASS checks passed"
