# Runs inside the VM (mmc_vm_test.sh), chrooted into the host's root, in the
# shared work directory, with /dev/mmcblk0 an SD card behind sdhci-pci.
# Prints 'ok: ...' per check; the first failure prints 'FAIL: ...' and ends
# the script non-zero.
set -uo pipefail
cd /tmp/work
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
FP=./flashpipe

die() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $* [${SECONDS} s]"; }
wait_for() {
  local n=$(($1 * 10)); shift
  for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

wait_for 30 test -b /dev/mmcblk0 || die "no /dev/mmcblk0 (modules: $(cat /proc/modules | cut -d' ' -f1 | tr '\n' ' '))"
type=$(cat /sys/block/mmcblk0/device/type)
[ "$type" = SD ] || die "device/type is '$type', not SD"
pass "/dev/mmcblk0 is an SD card of $(($(cat /sys/block/mmcblk0/size) / 2048)) MiB through the kernel's MMC stack"
ls /dev/mmcblk0boot* >/dev/null 2>&1 && die "an SD card with boot areas?"

# EXT_CSD: the command goes to the card through MMC_IOC_CMD and fails.
$FP mmc extcsd /dev/mmcblk0 >extcsd.out 2>&1 && die "mmc extcsd succeeded on an SD card: $(cat extcsd.out)"
grep -q "is an SD card (sysfs device/type SD): it has no EXT_CSD" extcsd.out || die "mmc extcsd: $(cat extcsd.out)"
grep -q "CMD8 SEND_EXT_CSD through MMC_IOC_CMD: /dev/mmcblk0: MMC_IOC_CMD CMD8" extcsd.out ||
  die "mmc extcsd did not say what the ioctl answered: $(cat extcsd.out)"
pass "mmc extcsd: $(cat extcsd.out)"
$FP mmc partconf /dev/mmcblk0 1 1 >partconf.out 2>&1 && die "mmc partconf succeeded on an SD card"
grep -q "it has no EXT_CSD" partconf.out || die "mmc partconf: $(cat partconf.out)"
pass "mmc partconf refused before any SWITCH"

# A GPT, then the partitions' nodes without a reboot.
$FP partition /dev/mmcblk0 layout >part.out 2>&1 || die "partition: $(cat part.out)"
wait_for 10 test -b /dev/mmcblk0p2 || die "no /dev/mmcblk0p2 after partition: $(cat part.out)"
[ "$(cat /sys/block/mmcblk0/mmcblk0p1/size)" = 16384 ] || die "mmcblk0p1 is $(cat /sys/block/mmcblk0/mmcblk0p1/size) sectors"
pass "partition: $(head -2 part.out | tr '\n' ' ')"
$FP mmc extcsd /dev/mmcblk0p1 >p.out 2>&1 && die "mmc extcsd on a partition succeeded"
grep -q "is a partition (mmcblk0p1); the card's commands go to the whole device, /dev/mmcblk0" p.out ||
  die "mmc extcsd on a partition: $(cat p.out)"
pass "mmc extcsd on a partition names the card"

# write, read back, by node and by GPT name.
$FP write image.raw /dev/mmcblk0p1 --verify --no-progress >write.out 2>&1 || die "write: $(cat write.out)"
pass "write --verify to /dev/mmcblk0p1: $(tail -1 write.out)"
$FP read /dev/mmcblk0:boot back.raw --no-progress >read.out 2>&1 || die "read: $(cat read.out)"
cmp back.raw image.raw || die "read back of mmcblk0:boot differs from image.raw"
pass "read /dev/mmcblk0:boot gives image.raw back"

# serve on the card: flash a partition the table just made, and the oem
# commands reach the card and fail as extcsd does.
mkdir -p /tmp/state
$FP serve --storage /dev/mmcblk0 --mmc /dev/mmcblk0 --tcp 127.0.0.1:5554 --state /tmp/state/sd.state >serve.log 2>&1 &
serve_pid=$!
fb() { timeout 60 fastboot -s tcp:127.0.0.1:5554 "$@"; }
wait_for 20 fb getvar product || { kill $serve_pid; die "serve did not answer: $(tail -5 serve.log)"; }
head -c 3M /dev/urandom >data.raw
fb flash data data.raw >fb.out 2>&1 || { kill $serve_pid; die "fastboot flash data: $(cat fb.out)"; }
cmp <(head -c 3M /dev/mmcblk0p2) data.raw || { kill $serve_pid; die "data after fastboot flash differs"; }
pass "serve: fastboot flash data (the partition made above)"
fb oem partconf:1:1 >fb.out 2>&1 && { kill $serve_pid; die "oem partconf succeeded on an SD card"; }
grep -q "is an SD card" fb.out || { kill $serve_pid; die "oem partconf: $(cat fb.out)"; }
pass "serve: oem partconf FAILs: $(grep FAILED fb.out | head -1)"
fb getvar partition-size:mmc0boot0 >fb.out 2>&1
grep -q "^partition-size:mmc0boot0: 0x" fb.out && { kill $serve_pid; die "an SD card served a boot area: $(cat fb.out)"; }
grep -q "mmc0boot0" fb.out || { kill $serve_pid; die "getvar partition-size:mmc0boot0: $(cat fb.out)"; }
pass "serve: no mmc0boot0 on an SD card: $(head -1 fb.out)"
kill $serve_pid
wait $serve_pid 2>/dev/null

timeout 300 $FP bench /dev/mmcblk0p2 --sizes 64k,1M --total 4M --force >bench.out 2>&1 || die "bench: $(tail -5 bench.out)"
pass "bench on /dev/mmcblk0p2: $(grep -c . bench.out) lines"
sync
echo "GUEST-DONE"
