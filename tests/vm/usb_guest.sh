# Runs inside the VM (usb_vm_test.sh), chrooted into the host's root, in the
# shared work directory: `flashpipe serve --usb` on dummy_udc.0 (and a second
# daemon on dummy_udc.1) against the stock fastboot client over dummy_hcd.
# Prints 'ok: ...' per check; the first failure prints 'FAIL: ...' and ends
# the script non-zero. Final contents are checked on the host afterwards.
set -uo pipefail
cd /tmp/work
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
G=/sys/kernel/config/usb_gadget
S1=FLASHPIPE0001
S2=FLASHPIPE0002
pids=()

die() {
  echo "FAIL: $*"
  for f in d1.log d2.log; do [ -f $f ] && { echo "--- $f"; tail -15 $f; }; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  exit 1
}
pass() { echo "ok: $* [${SECONDS} s]"; }
fb() { local s=$1; shift; timeout 60 fastboot -s "$s" "$@"; }
fb_ok() { fb "$@" >fb.out 2>&1 || die "fastboot $* failed: $(tail -5 fb.out)"; }
# wait_for SECONDS COMMAND...: polls every 0.1 s.
wait_for() {
  local n=$(($1 * 10)); shift
  for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
# (grep -q reads the whole output: with pipefail, a grep -q that quits early
# turns the writer's SIGPIPE into a failure.)
listed() { grep -q "^$1" <<<"$(fastboot devices)"; }
# same_part NAME: the partition holds what it held before the test.
same_part() {
  local off len
  off=$(awk -v n="$1" '$1==n {print $2*512}' layout) len=$(awk -v n="$1" '$1==n {print $3*512}' layout)
  cmp <(dd if=disk.img bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none) \
    <(dd if=snap.img bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none) >/dev/null
}

# Images go to the guest's tmpfs: the client maps them, and page faults
# over 9p are slow.
mkdir -p /tmp/img && cp ./*.raw ./*.simg /tmp/img/ || die "copy images"

./flashpipe serve --usb --serialno $S1 --storage disk.img --state state1 --max-download-size 8M -v \
  >d1.out 2>d1.log &
pids+=($!)
wait_for 30 grep -q "serving usb" d1.out || die "daemon 1 did not start: $(cat d1.log)"
[ -d $G/flashpipe-dummy_udc_0 ] || die "no gadget directory"
wait_for 30 listed $S1 || die "$S1 never enumerated"
fastboot devices -l | grep -E "^$S1 +fastboot usb:" >/dev/null || die "devices -l: $(fastboot devices -l)"
pass "fastboot devices -l lists $S1 on usb ($(fastboot devices -l | grep $S1 | tr -s ' '))"

fb $S1 getvar all >all.out 2>&1
grep -q "partition-size:system:0x0000000003000000" all.out && grep -q "max-download-size:0x00800000" all.out &&
  grep -q "serialno:$S1" all.out || die "getvar all: $(tail -5 all.out)"
pass "getvar all ($(grep -c bootloader all.out) lines)"

fb_ok $S1 flash boot_a /tmp/img/odd3.raw
pass "flash of a raw image of 3 MiB + 1234 bytes (not a multiple of 4096)"

fb_ok $S1 erase boot_b
fb_ok $S1 set_active b
grep -q "current-slot: b" <<<"$(fb $S1 getvar current-slot 2>&1)" || die "current-slot after set_active b"
fb_ok $S1 flash --slot b boot /tmp/img/misc.raw
fb_ok $S1 set_active a
pass "erase boot_b, set_active b, flash --slot b boot, set_active a"

fb_ok $S1 flashing lock
if fb $S1 flash misc /tmp/img/misc.raw >fb.out 2>&1; then die "flash succeeded on a locked device"; fi
grep -q "locked" fb.out || die "locked refusal: $(tail -3 fb.out)"
fb_ok $S1 flashing unlock
pass "flashing lock refuses flash; unlock"

# The cable pulled mid-download: the UDC unbound while a host is halfway
# through sending an image for system.
python3 usb_wire.py partial $S1 8388608 4194304 >k.out 2>&1 &
wpid=$!
wait_for 30 grep -q "ok: sent" k.out || die "partial download: $(cat k.out)"
echo "" >$G/flashpipe-dummy_udc_0/UDC
wait_for 10 grep -q "host gone" d1.log || die "daemon did not see the host go"
kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
echo dummy_udc.0 >$G/flashpipe-dummy_udc_0/UDC
wait_for 30 listed $S1 || die "$S1 did not come back after the UDC was bound again"
out=$(fb $S1 getvar product 2>&1)
grep -q "product: flashpipe" <<<"$out" || die "not serving the next host: $out"
same_part system || die "an unbound download wrote to system"
pass "UDC unbound mid-download: nothing written, the next host is served"

fb_ok $S1 flash system /tmp/img/ext4.simg
grep -q "Sending 'system'" fb.out || die "ext4: $(tail -3 fb.out)"
pass "flash of a sparse ext4 image"

python3 usb_wire.py garbage $S1 || die "bad input over usb"
pass "bad input over usb answered"

# Reading back over USB: get_staged (upload) and fetch send the disk's
# bytes (bulk IN in whole packets, no zero-length packet after a multiple of
# 512: usb_wire.py reads the response right after the data); oem digest is
# their SHA-256, and a byte changed behind the daemon's back changes it.
sys_off=$(awk '$1=="system" {print $2*512}' layout)
part_bytes() { dd if=disk.img bs=1M iflag=skip_bytes,count_bytes skip=$((sys_off + $1)) count=$2 status=none; }
usb_digest() {
  fb $S1 oem digest system "$1" "$2" >dg.out 2>&1 || die "oem digest: $(tail -3 dg.out)"
  sed -n 's/.*(bootloader) sha256 [12]\/2 \([0-9a-f]\{32\}\)$/\1/p' dg.out | tr -d '\n'
}
for range in "4096 1048576" "3 100001"; do
  set -- $range
  fb_ok $S1 oem stage system $1 $2
  fb_ok $S1 get_staged /tmp/img/staged.bin
  cmp /tmp/img/staged.bin <(part_bytes $1 $2) || die "get_staged of system $1 $2 differs"
done
python3 usb_wire.py fetch $S1 system 8192 1048576 /tmp/img/fetched.bin || die "fetch over usb"
cmp /tmp/img/fetched.bin <(part_bytes 8192 1048576) || die "fetch of system 8192 1048576 differs"
at=$((41 << 20))  # past the ext4 image, which the host checks afterwards
before=$(usb_digest $at 1048576)
[ "$before" = "$(part_bytes $at 1048576 | sha256sum | cut -d' ' -f1)" ] || die "oem digest != sha256sum: $before"
python3 -c 'import os, sys
fd = os.open("disk.img", os.O_RDWR); at = int(sys.argv[1])
os.pwrite(fd, bytes([(os.pread(fd, 1, at)[0] + 1) % 256]), at); os.fsync(fd)' $((sys_off + at + 0x12345))
after=$(usb_digest $at 1048576)
[ "$after" != "$before" ] && [ "$after" = "$(part_bytes $at 1048576 | sha256sum | cut -d' ' -f1)" ] ||
  die "digest after a byte changed on the device: $after (before $before)"
pass "get_staged (1 MiB; 100001 bytes at offset 3) and fetch (1 MiB) == disk bytes; oem digest follows a byte changed behind the daemon"

# A second gadget on the second UDC; both flashed at once.
./flashpipe serve --usb --no-tcp --udc dummy_udc.1 --serialno $S2 --storage disk2.img --state state2 \
  --max-download-size 1M >d2.out 2>d2.log &
pids+=($!)
wait_for 30 grep -q "serving usb" d2.out || die "daemon 2 did not start: $(cat d2.log)"
wait_for 30 listed $S2 || die "$S2 never enumerated"
timeout 90 fastboot -s $S1 flash userdata /tmp/img/big.raw >f1.out 2>&1 &
p1=$!
timeout 90 fastboot -s $S2 flash userdata /tmp/img/big2.raw >f2.out 2>&1 &
p2=$!
wait $p1 || die "flash on $S1: $(tail -3 f1.out)"
wait $p2 || die "flash on $S2: $(tail -3 f2.out)"
grep -q "Sending sparse 'userdata' 2/2" f1.out || die "12 MiB was not split at 8M: $(cat f1.out)"
grep -q "Sending sparse 'userdata' 2/" f2.out || die "12 MiB was not split at 1M: $(cat f2.out)"
pass "two gadgets on two UDCs flashed at once (-s $S1, -s $S2), images above max-download-size split"

# flashpipe's own host side (libusb) over the same bus: `flashpipe fastboot
# devices` lists both gadgets; `flash --all` sends each image to both from one
# read, cut for each one's max-download-size (8M, 1M), and checks every
# written range by digest (--verify); `flash -s` picks one gadget. The bytes
# are checked on the host afterwards.
fp() { local secs=$1; shift; timeout "$secs" ./flashpipe "$@" >fp.out 2>&1 || die "flashpipe $*: $(tail -5 fp.out)"; }
fp 30 fastboot devices
grep -qx "$S1	fastboot" fp.out && grep -qx "$S2	fastboot" fp.out || die "flashpipe fastboot devices: $(cat fp.out)"
fp 120 flash --all --verify --no-progress --timeout 30 --json=all.json \
  userdata=/tmp/img/small.simg boot_a=/tmp/img/odd2.raw
python3 - all.json $S1 $S2 <<'PY' || die "flash --all report: $(cat all.json)"
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(d["serial"] for d in r["devices"]) == sorted(sys.argv[2:]), "not one entry per gadget"
for d in r["devices"]:
    assert d["result"] == "ok" and d["written"] == ["userdata", "boot_a"], d
    assert [s["verify"] for s in d["steps"]] == ["ok", "ok"], d["steps"]
parts = {d["serial"]: [s["parts"] for s in d["steps"]] for d in r["devices"]}
assert parts[sys.argv[2]] == [1, 1] and min(parts[sys.argv[3]]) >= 2, f"parts per 8M and 1M device: {parts}"
assert (r["ok"], r["failed"]) == (2, 0), (r["ok"], r["failed"])
PY
fp 60 flash -s $S2 --no-progress system=/tmp/img/misc.raw
grep -q "^$S2: ok" fp.out && ! grep -q "^$S1" fp.out || die "flash -s $S2: $(cat fp.out)"
pass "flashpipe: fastboot devices lists both; flash --all --verify flashed both (one ok entry each in --json); flash -s $S2 only $S2"

# A gadget that appears after flashpipe started (as after --retry's wait or
# a reboot): no udevd here, so libusb sees it only from a new scan of the bus.
echo "" >$G/flashpipe-dummy_udc_1/UDC
wait_for 10 eval '! listed $S2' || die "$S2 still listed after its UDC was unbound"
# Bound again only once the client says it waits (a fixed sleep raced a
# client slow to start under load: it found the gadget already back).
rm -f fp.out
(for _ in $(seq 200); do grep -q "waiting for" fp.out 2>/dev/null && break; sleep 0.1; done
 echo dummy_udc.1 >$G/flashpipe-dummy_udc_1/UDC) &
fp 30 fastboot -s $S2 getvar product
grep -q "waiting for $S2" fp.out && grep -q "product: flashpipe" fp.out || die "waiting for $S2: $(cat fp.out)"
pass "flashpipe fastboot -s $S2 waited for the gadget and found it when its UDC was bound again"

fb_ok $S1 reboot
grep -q "Rebooting" fb.out || die "reboot: $(cat fb.out)"
wait_for 10 grep -q "re-enumerating" d1.log || die "no re-enumeration after reboot"
wait_for 30 listed $S1 || die "$S1 did not come back after reboot"
out=$(fb $S1 getvar version 2>&1)
grep -q "version: 0.4" <<<"$out" || die "not serving after reboot: $out"
fb_ok $S1 reboot bootloader
wait_for 30 listed $S1 || die "$S1 did not come back after reboot bootloader"
out=$(fb $S1 getvar is-userspace 2>&1)
grep -q "is-userspace: no" <<<"$out" || die "after reboot bootloader: $out"
pass "reboot and reboot bootloader: the device leaves the bus and comes back"

for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do wait "$p" || die "daemon exit status $?"; done
[ -z "$(ls $G)" ] || die "gadgets left after exit: $(ls $G)"
pass "SIGTERM: both daemons removed their gadgets"
echo "GUEST-DONE"
