#!/usr/bin/env bash
# LAVA's flasher deploy running flashpipe, with Debian's lava-dispatcher
# (2023.01): the device configuration is rendered from contrib/lava's
# device-type template and a device dictionary (with a stand-in for the
# server's base.jinja2, which lava-server ships), then `lava-run` runs jobs
# locally (no server): the storage is a loop device, the fastboot device a
# `flashpipe serve` daemon over TCP on loopback. A good job passes and
# leaves simg2img's bytes on both; a corrupted image fails the job at deploy
# with flashpipe's message and leaves the loop device as it was. Then the
# commands LAVA's own fastboot deploy builds (lava_dispatcher's
# get_fastboot_cmd from the device dictionary) run through a `fastboot`
# link to flashpipe. About 15 s.
#   FLASHPIPE=build/flashpipe bash tests/e2e/lava_test.sh
set -euo pipefail
FLASHPIPE=$(realpath "${FLASHPIPE:-$(dirname "$0")/../../build/flashpipe}")
SRC=$(realpath "${FLASHPIPE_SOURCE_DIR:-$(dirname "$0")/../..}")
PY=${FLASHPIPE_PYTHON:-/usr/bin/python3}  # Debian's, for lava_dispatcher and jinja2
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (lava-run, loop device)"
command -v lava-run >/dev/null || skip "lava-dispatcher not installed (scripts/setup.sh)"
"$PY" -c "import jinja2, lava_dispatcher" 2>/dev/null || skip "python3-jinja2 or lava_dispatcher missing"
for tool in simg2img img2simg sgdisk mkfs.ext4 losetup; do command -v $tool >/dev/null || skip "$tool not installed"; done

# Not under /tmp's usual names only: lava-run downloads into
# /var/lib/lava/dispatcher/tmp/JOB_ID, so each job gets an id of its own.
work=$(mktemp -d)
loopdev=""
daemon=""
job_base=$(( ($$ % 10000) * 100000 + RANDOM ))
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  if [ -n "$loopdev" ]; then losetup -d "$loopdev" 2>/dev/null || true; fi
  for i in 1 2; do rm -rf "/var/lib/lava/dispatcher/tmp/$((job_base + i))"; done
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "FAIL: $*"; [ -f "$work/daemon.log" ] && tail -20 "$work/daemon.log"; exit 1; }
pass() { echo "ok: $*"; }

mkdir -p "$work/root"
head -c 2M /dev/urandom >"$work/root/blob"
seq 80000 >"$work/root/numbers"
mkfs.ext4 -q -F -b 4096 -d "$work/root" "$work/rootfs.ext4" 16M
img2simg "$work/rootfs.ext4" "$work/rootfs.simg"
simg2img "$work/rootfs.simg" "$work/rootfs.oracle"
head -c $((512 * 1024 + 99)) /dev/urandom >"$work/boot.raw"
cp "$work/rootfs.simg" "$work/system.simg"
# The corrupted image: the second chunk header's type made unknown.
cp "$work/rootfs.simg" "$work/bad.simg"
"$PY" - "$work/bad.simg" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(8)
    file_hdr_sz, _ = struct.unpack("<HH", f.read(4))
    f.seek(file_hdr_sz)
    _, _, _, total = struct.unpack("<HHII", f.read(12))
    f.seek(file_hdr_sz + total)
    f.write(struct.pack("<H", 0xCAFE))
PY
rm -rf "$work/root" "$work/rootfs.ext4"

truncate -s 24M "$work/medium.img"
loopdev=$(losetup -f --show --direct-io=on "$work/medium.img")
truncate -s 32M "$work/serve.img"
sgdisk -n 1:2048:+2M -c 1:boot -n 2:0:+20M -c 2:system "$work/serve.img" >/dev/null
"$FLASHPIPE" serve --storage "$work/serve.img" --state "$work/state" --tcp 127.0.0.1:0 >"$work/daemon.out" 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do grep -q "listening on tcp" "$work/daemon.out" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/^serve: listening on tcp 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/daemon.out")
[ -n "$port" ] || die "daemon did not start: $(cat "$work/daemon.log")"

# The device configuration, rendered as lava-server renders a device
# dictionary: jinja2 with trim_blocks, the template extending base.jinja2.
mkdir -p "$work/templates"
cat >"$work/templates/base.jinja2" <<'EOF'
{# Stand-in for lava-server's base.jinja2: the constants lava-run needs and the body block. #}
constants:
  failure_retry: 1
  boot_retry: 1
parameters: {}
{% block body %}{% endblock body -%}
timeouts:
  actions: {}
  connections: {}
EOF
cat >"$work/templates/board.jinja2" <<EOF
{% extends 'flashpipe.jinja2' %}
{% set flashpipe_command = '$FLASHPIPE' %}
{% set flashpipe_storage = '$loopdev' %}
{% set flashpipe_fastboot = 'tcp:127.0.0.1:$port' %}
{% set flashpipe_partitions = ['boot', 'system'] %}
{% set flashpipe_fastboot_verbs = ['getvar product'] %}
EOF
"$PY" - "$work/templates" "$SRC/contrib/lava" "$work/device.yaml" <<'PY'
import jinja2, sys, yaml
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1:3]), trim_blocks=True, autoescape=False)
text = env.get_template("board.jinja2").render()
yaml.safe_load(text)  # it must be YAML
open(sys.argv[3], "w").write(text)
PY
grep -q "write --progress lines --verify {IMAGE} $loopdev" "$work/device.yaml" || die "rendered device: $(cat "$work/device.yaml")"

# job NAME ID IMAGE: a job whose deploy is the flasher with images image, boot and system.
job() {
  cat >"$work/$1.yaml" <<EOF
device_type: flashpipe
job_name: flashpipe-$1
timeouts:
  job: {minutes: 3}
  action: {minutes: 2}
priority: medium
visibility: public
actions:
- deploy:
    to: flasher
    images:
      image: {url: "file://$3"}
      boot: {url: "file://$work/boot.raw"}
      system: {url: "file://$work/system.simg"}
EOF
  local rc=0
  mkdir -p "$work/out-$1"
  timeout 170 lava-run --job-id "$2" --output-dir "$work/out-$1" --device "$work/device.yaml" "$work/$1.yaml" \
    >"$work/$1.log" 2>&1 || rc=$?
  return $rc
}
part() {  # part NAME SIZE: bytes of the daemon's partition
  local off
  off=$(sfdisk --json "$work/serve.img" | "$PY" -c 'import json,sys; t=json.load(sys.stdin)["partitiontable"]
print(next(p["start"] for p in t["partitions"] if p["name"] == sys.argv[1]) * 512)' "$1")
  dd if="$work/serve.img" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$2" status=none
}

rc=0
job good $((job_base + 1)) "$work/rootfs.simg" || rc=$?
[ $rc = 0 ] || { tail -30 "$work/good.log"; die "lava-run of the good job: status $rc"; }
grep -q '"case": "job", "definition": "lava", "result": "pass"' "$work/good.log" || die "no job pass in the log"
# job_result DIR: the result of the case "job" in DIR/result.yaml.
job_result() {
  "$PY" -c 'import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
print(next(c["result"] for c in (r if isinstance(r, list) else [r]) if c["case"] == "job"))' "$1/result.yaml"
}
[ "$(job_result "$work/out-good")" = pass ] || die "result.yaml: $(cat "$work/out-good/result.yaml")"
for c in "write --progress lines" "flash --no-progress" "fastboot -s tcp"; do
  grep -q "Calling: 'nice' '$FLASHPIPE' '${c%% *}'" "$work/good.log" || die "the job did not run flashpipe ${c%% *}"
done
size=$(stat -c %s "$work/rootfs.oracle")
cmp <(head -c "$size" "$loopdev") "$work/rootfs.oracle" || die "the loop device != simg2img output"
cmp <(part boot $(stat -c %s "$work/boot.raw")) "$work/boot.raw" || die "the daemon's boot != boot.raw"
cmp <(part system "$size") "$work/rootfs.oracle" || die "the daemon's system != simg2img output"
grep -q "product: flashpipe" "$work/good.log" || die "getvar product not in the job log"
pass "lava-run: flasher deploy ran flashpipe write (loop device == simg2img output), flash (boot, system over TCP, --verify) and fastboot getvar; job result pass"

cp "$work/medium.img" "$work/medium.before"
rc=0
job bad $((job_base + 2)) "$work/bad.simg" || rc=$?
[ $rc = 1 ] || { tail -30 "$work/bad.log"; die "lava-run of the corrupted job: status $rc, not 1"; }
grep -q "chunk 1 at input byte" "$work/bad.log" || { grep -i flashpipe "$work/bad.log" | tail; die "flashpipe's message is not in the job log"; }
grep -q '"case": "deploy-flasher", "definition": "lava", "error_msg": "Unable to flash the device"' "$work/bad.log" ||
  grep -q "Unable to flash the device" "$work/out-bad/result.yaml" || die "the job did not fail at deploy"
[ "$(job_result "$work/out-bad")" = fail ] || die "result.yaml: $(cat "$work/out-bad/result.yaml")"
cmp "$work/medium.img" "$work/medium.before" || die "a corrupted image changed the loop device"
pass "lava-run: a corrupted image fails the job at deploy ($(grep -o 'chunk 1 at input byte[^"\\]*' "$work/bad.log" | head -1)); the loop device unchanged"

# LAVA's own fastboot deploy calls `fastboot -s SERIAL flash PART FILE` and
# `fastboot -s SERIAL reboot`: rendered here by lava_dispatcher from the
# device dictionary, run with a `fastboot` link to flashpipe first in PATH.
mkdir -p "$work/bin"
ln -s "$FLASHPIPE" "$work/bin/fastboot"
head -c $((300 * 1024)) /dev/urandom >"$work/boot2.raw"
PATH="$work/bin:$PATH" "$PY" - "$work/device.yaml" "$work/boot2.raw" <<'PY' || die "LAVA's fastboot commands through flashpipe"
import subprocess, sys, yaml
from lava_dispatcher.utils.fastboot import OptionalContainerFastbootAction
device = yaml.safe_load(open(sys.argv[1]))
assert device["fastboot_serial_number"].startswith("tcp:127.0.0.1:"), device
class Job:  # what get_fastboot_cmd reads
    pass
action = OptionalContainerFastbootAction()
action.job = Job()
action.job.device = device
for verb in (["flash", "boot", sys.argv[2]], ["getvar", "product"], ["reboot"]):
    cmd = action.get_fastboot_cmd(verb)
    out = subprocess.run(cmd, capture_output=True, text=True)
    print("ran:", " ".join(cmd), "->", out.returncode, out.stderr.strip().splitlines()[-1:])
    assert cmd[0] == "fastboot" and out.returncode == 0, out.stderr
    assert verb[0] != "flash" or "Writing 'boot'" in out.stderr, out.stderr
PY
cmp <(part boot $((300 * 1024))) "$work/boot2.raw" || die "fastboot flash through the link did not write boot"
pass "LAVA's fastboot deploy commands (fastboot -s SERIAL flash/getvar/reboot from get_fastboot_cmd) ran through a fastboot link to flashpipe"
echo "PASS"
