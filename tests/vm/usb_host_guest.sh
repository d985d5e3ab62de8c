# Runs inside the VM (usb_host_vm_test.sh), chrooted into the host's root, in
# the shared work directory. Prints 'ok: ...' per check; the first failure
# prints 'FAIL: ...' and ends the script non-zero.
set -uo pipefail
cd /tmp/work
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
S=HOSTVM
G=/sys/kernel/config/usb_gadget/flashpipe-dummy_udc_0
daemon=
die() {
  echo "FAIL: $*"
  [ -f d.log ] && { echo "--- d.log"; tail -15 d.log; }
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
  exit 1
}
pass() { echo "ok: $* [${SECONDS} s]"; }
wait_for() {  # SECONDS COMMAND...: polls every 0.1 s
  local n=$(($1 * 10)); shift
  for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
listed() { grep -q "^$S" <<<"$(fastboot devices)"; }
same() {  # PARTITION-FILE IMAGE: the partition starts with the image's bytes
  cmp -n "$(stat -c %s "$2")" "$1" "$2" >/dev/null
}
start_daemon() {
  ./flashpipe serve --usb --no-tcp --serialno $S --state /tmp/state -v \
    --partition aosp_raw=/tmp/p/aosp_raw --partition fp_raw=/tmp/p/fp_raw \
    --partition aosp_sparse=/tmp/p/aosp_sparse --partition fp_sparse=/tmp/p/fp_sparse \
    --partition big=/tmp/p/big >d.out 2>d.log &
  daemon=$!
  wait_for 30 grep -q "serving" d.out || die "daemon did not start: $(tail -5 d.log)"
  wait_for 30 listed || die "$S never enumerated"
}
# A flashpipe flash of big.raw cut by CUT (a command run once the download
# runs): it must end non-zero within 30 s, saying the device went away.
cut_download() {
  local what=$1; shift
  local before t0 pid rc
  before=$(grep -c "download of" d.log)
  ./flashpipe flash --no-progress -s $S big=/tmp/img/big.raw >cut.out 2>&1 &
  pid=$!
  downloads_past() { [ "$(grep -c "download of" d.log)" -gt "$1" ]; }
  wait_for 60 downloads_past "$before" || die "$what: the download never started"
  grep -q "download complete" <(tail -n +"$(grep -n "download of" d.log | tail -1 | cut -d: -f1)" d.log) &&
    die "$what: the download ended before the cut (the image is too small for this machine)"
  t0=$SECONDS
  "$@"
  for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then
    kill -9 $pid
    die "$what: flashpipe flash still running 30 s after the cut: $(tail -3 cut.out)"
  fi
  wait $pid
  rc=$?
  [ $rc != 0 ] || die "$what: flashpipe flash exited 0 after a cut download: $(tail -3 cut.out)"
  grep -qiE "gone|went away|cancel" cut.out || die "$what: no clear error: $(tail -3 cut.out)"
  pgrep -f "flashpipe flash" >/dev/null && die "$what: a flashpipe flash process is left: $(pgrep -af 'flashpipe flash')"
  pass "$what mid-download: flashpipe flash exited $rc after $((SECONDS - t0)) s ('$(grep -iE "gone|went away|cancel" cut.out | head -1 | cut -c1-150)'), no process left"
}

mkdir -p /tmp/img /tmp/p
cp odd.raw ext4.simg ext4.oracle /tmp/img/ || die "copy images"
head -c 240M /dev/urandom >/tmp/img/big.raw
for p in aosp_raw fp_raw aosp_sparse fp_sparse; do truncate -s 40M /tmp/p/$p; done
truncate -s 256M /tmp/p/big
start_daemon
pass "serve --usb up, $S listed"

timeout 120 fastboot -s $S flash aosp_raw /tmp/img/odd.raw >f.out 2>&1 || die "fastboot flash raw: $(tail -3 f.out)"
timeout 120 ./flashpipe flash --no-progress -s $S fp_raw=/tmp/img/odd.raw >f.out 2>&1 ||
  die "flashpipe flash raw: $(tail -3 f.out)"
timeout 120 fastboot -s $S flash aosp_sparse /tmp/img/ext4.simg >f.out 2>&1 || die "fastboot flash sparse: $(tail -3 f.out)"
timeout 120 ./flashpipe flash --no-progress -s $S fp_sparse=/tmp/img/ext4.simg >f.out 2>&1 ||
  die "flashpipe flash sparse: $(tail -3 f.out)"
timeout 60 fastboot -s $S getvar product >/dev/null 2>&1  # the writes done
same /tmp/p/aosp_raw /tmp/img/odd.raw || die "aosp_raw != odd.raw"
same /tmp/p/fp_raw /tmp/img/odd.raw || die "fp_raw != odd.raw"
same /tmp/p/aosp_sparse /tmp/img/ext4.oracle || die "aosp_sparse != simg2img output"
same /tmp/p/fp_sparse /tmp/img/ext4.oracle || die "fp_sparse != simg2img output"
cmp /tmp/p/aosp_raw /tmp/p/fp_raw >/dev/null || die "the two clients left different raw partitions"
cmp /tmp/p/aosp_sparse /tmp/p/fp_sparse >/dev/null || die "the two clients left different sparse partitions"
pass "AOSP client and flashpipe flash: raw of 20 MiB + 1234 bytes == image, sparse ext4 == simg2img output, partitions identical"

odd_size=$(stat -c %s /tmp/img/odd.raw)
timeout 60 ./usb_fetch_probe $S fp_raw "$odd_size" /tmp/back.raw || die "fetch of fp_raw failed"
cmp /tmp/back.raw /tmp/img/odd.raw || die "fp_raw read back over USB != odd.raw"
timeout 60 ./usb_fetch_probe $S fp_sparse "$(stat -c %s /tmp/img/ext4.oracle)" /tmp/back.img || die "fetch of fp_sparse failed"
cmp /tmp/back.img /tmp/img/ext4.oracle || die "fp_sparse read back over USB != simg2img output"
timeout 60 fastboot -s $S getvar product >/dev/null 2>&1 || die "the device does not answer after the fetches"
pass "read back over USB (fetch:, queued IN transfers): fp_raw ($odd_size bytes) == odd.raw, fp_sparse == simg2img output, the device answers after them"

# A fetch cut by an unplug: ReceiveData ends at once, kCancelled.
fetches=$(grep -c "fetch:big" d.log || true)
./usb_fetch_probe $S big $((240 << 20)) /tmp/back.big >probe.out 2>&1 &
probe=$!
# Cut only once the daemon has the command (a loaded machine may take
# longer than any fixed sleep to find and open the device).
fetch_started() { [ "$(grep -c "fetch:big" d.log || true)" -gt "$fetches" ] || ! kill -0 $probe 2>/dev/null; }
wait_for 60 fetch_started || die "the fetch of 240 MiB never reached the device: $(cat probe.out)"
sleep 0.2
kill -0 $probe 2>/dev/null || die "the fetch of 240 MiB ended before the cut: $(cat probe.out)"
t0=$SECONDS
echo '' >$G/UDC
for _ in $(seq 300); do kill -0 $probe 2>/dev/null || break; sleep 0.1; done
kill -0 $probe 2>/dev/null && { kill -9 $probe; die "usb_fetch_probe still running 30 s after the unplug"; }
wait $probe && die "a fetch cut by an unplug succeeded"
grep -qE "kCancelled|cancelled|went away" probe.out || die "fetch cut by an unplug: no clear error: $(cat probe.out)"
pass "fetch cut by an unplug ended after $((SECONDS - t0)) s: $(head -c 160 probe.out)"
echo dummy_udc.0 >$G/UDC || die "rebind the UDC"
wait_for 30 listed || die "$S not back after the replug"

cut_download "UDC unbound (cable pulled)" sh -c "echo '' > $G/UDC"
echo dummy_udc.0 >$G/UDC || die "rebind the UDC"
wait_for 30 listed || die "$S not back after the replug"
timeout 120 ./flashpipe flash --no-progress -s $S fp_raw=/tmp/img/ext4.oracle >f.out 2>&1 ||
  die "flashpipe flash after the replug: $(tail -3 f.out)"
timeout 60 fastboot -s $S getvar product >/dev/null 2>&1
same /tmp/p/fp_raw /tmp/img/ext4.oracle || die "fp_raw != ext4.oracle after the replug"
pass "after the replug: flashpipe flash writes the device correctly again"

cut_download "daemon killed" kill -9 "$daemon"
wait "$daemon" 2>/dev/null
daemon=
echo "GUEST-DONE"
