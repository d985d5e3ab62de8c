# Runs inside the VM (usb_select_vm_test.sh), chrooted into the host's root,
# in the shared work directory: three `flashpipe serve --usb` gadgets A, B, C
# on dummy_udc.0-2. While a second client holds C's interface and keeps
# asking it getvar, `flashpipe flash -s A -s B` flashes A and B; inotify
# counts every open of the three usbfs nodes meanwhile (A and B: at least
# one, C: none, not even a brief one to read its serial), and the flashing
# process's open files are sampled (A's and B's nodes, never C's). Then `flash -s C` while C is held fails busy
# (so a claim of C would have been seen). Prints 'ok: ...' per check, the
# first failure 'FAIL: ...'; the disks are checked on the host afterwards.
set -uo pipefail
cd /tmp/work
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
A=SELECT000A B=SELECT000B C=SELECT000C
pids=()
die() {
  echo "FAIL: $*"
  for f in d0.log d1.log d2.log hold.out; do [ -f $f ] && { echo "--- $f"; tail -10 $f; }; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  exit 1
}
pass() { echo "ok: $* [${SECONDS} s]"; }
wait_for() {
  local n=$(($1 * 10)); shift
  for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
# The usbfs node of the gadget with serial $1, from sysfs.
node_of() {
  local d
  for d in /sys/bus/usb/devices/*; do
    [ "$(cat $d/serial 2>/dev/null)" = "$1" ] || continue
    printf "/dev/bus/usb/%03d/%03d\n" "$(cat $d/busnum)" "$(cat $d/devnum)"
    return 0
  done
  return 1
}

mkdir -p /tmp/img && cp sys.raw /tmp/img/ || die "copy image"
i=0
for s in $A $B $C; do
  ./flashpipe serve --usb --no-tcp --udc dummy_udc.$i --serialno $s --storage disk$i.img --state state$i \
    --max-download-size 1M >d$i.out 2>d$i.log &
  pids+=($!)
  i=$((i + 1))
done
for i in 0 1 2; do wait_for 30 grep -q "serving usb" d$i.out || die "daemon $i did not start: $(cat d$i.log)"; done
for s in $A $B $C; do wait_for 30 node_of $s || die "$s never enumerated"; done
NA=$(node_of $A) NB=$(node_of $B) NC=$(node_of $C)
pass "three gadgets: $A $NA, $B $NB, $C $NC"

# The second client: claims C's interface and asks getvar:product until told to stop.
python3 - $C >hold.out 2>&1 <<'PY' &
import os, sys, time
sys.path.insert(0, ".")
import usb_wire
u = usb_wire.Usb(sys.argv[1])
print("claimed", flush=True)
n, first, last = 0, None, None
while not os.path.exists("stop"):
    u.send(b"getvar:product")
    r = u.final()
    if not r.startswith("OKAYflashpipe"):
        usb_wire.fail("getvar product: " + r)
    now = time.time()
    first, last, n = first or now, now, n + 1
    time.sleep(0.02)
u.close()
print("answers %d first %.3f last %.3f" % (n, first, last), flush=True)
PY
holder=$!
pids+=($holder)
wait_for 10 grep -q claimed hold.out || die "the second client could not claim $C: $(cat hold.out)"

# Who opens the three device nodes during the flash: inotify sees every
# open(2) of a node, however brief (the holder opened C before this starts);
# and which nodes the flashing process holds, its fds sampled as fast as
# this VM allows. One python for both: python starts slowly here, so it is
# ready before the flash starts and follows it by its pid.
rm -f fp.pid
python3 - "$NA" "$NB" "$NC" >observe.out 2>&1 <<'PY' &
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
wds = {libc.inotify_add_watch(fd, p.encode(), 0x20): p for p in sys.argv[1:]}  # IN_OPEN
assert all(w >= 0 for w in wds), "inotify_add_watch failed"
opens, held, polls = dict.fromkeys(sys.argv[1:], 0), set(), 0
print("ready", flush=True)
while not os.path.exists("fp.pid"):
    time.sleep(0.01)
pid = open("fp.pid").read().strip()
while True:
    alive = os.path.exists(f"/proc/{pid}")
    try:
        for f in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{f}")
            if target.startswith("/dev/bus/usb/"):
                held.add(target)
        polls += 1
    except OSError:
        pass
    try:
        buf = os.read(fd, 4096)
    except BlockingIOError:
        buf = b""
    at = 0
    while at < len(buf):
        wd, _, _, n = struct.unpack_from("iIII", buf, at)
        opens[wds[wd]] += 1
        at += 16 + n
    if not alive:
        break
    time.sleep(0.005)
print("opens " + " ".join("%s=%d" % (p, opens[p]) for p in sys.argv[1:]))
print("held " + " ".join(sorted(held)))
print("polls %d" % polls)
PY
observer=$!
pids+=($observer)
wait_for 30 grep -q ready observe.out || die "observer: $(cat observe.out)"

t0=$(date +%s.%N)
./flashpipe flash -s $A -s $B --no-progress --timeout 30 --json=sel.json system=/tmp/img/sys.raw >fp.out 2>&1 &
fp=$!
echo $fp >fp.pid.new && mv fp.pid.new fp.pid
wait $fp || die "flash -s $A -s $B: $(tail -5 fp.out)"
t1=$(date +%s.%N)
wait $observer || die "observer: $(cat observe.out)"
[ "$(sed -n 's/^held //p' observe.out)" = "$(printf '%s\n' "$NA" "$NB" | sort | tr '\n' ' ' | sed 's/ $//')" ] ||
  die "flash -s $A -s $B did not hold exactly $NA and $NB open: $(cat observe.out)"
grep -q "^opens $NA=[1-9][0-9]* $NB=[1-9][0-9]* $NC=0$" observe.out ||
  die "opens of the nodes during the flash (want A, B: at least one; C: none): $(cat observe.out)"
pass "flash -s $A -s $B opened only $NA and $NB ($(grep '^opens' observe.out | cut -d' ' -f2-) by inotify; $(sed -n 's/^polls //p' observe.out) samples of its fds)"

# The check can fail: naming C while the second client still holds it is
# refused at once, not waited out.
if timeout 60 ./flashpipe flash -s $C --no-progress --timeout 10 system=/tmp/img/sys.raw >fpc.out 2>&1; then
  die "flash -s $C succeeded while another client held it"
fi
grep -q "LIBUSB_ERROR_BUSY (another program holds the interface)" fpc.out || die "flash -s $C: $(cat fpc.out)"
pass "flash -s $C while another client holds it: refused busy ($(grep -o 'claiming the interface[^;]*' fpc.out | head -1))"
touch stop
wait $holder || die "the second client: $(cat hold.out)"
python3 - sel.json $A $B "$t0" "$t1" <<'PY' || die "report $(cat sel.json) / second client $(cat hold.out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert [d["serial"] for d in r["devices"]] == sys.argv[2:4], r
assert all(d["result"] == "ok" and d["written"] == ["system"] and d["steps"][0]["parts"] >= 8 for d in r["devices"]), r
words = open("hold.out").read().split("answers ")[1].split()  # answers N first T last T
n, first, last = int(words[0]), float(words[2]), float(words[4])
t0, t1 = float(sys.argv[4]), float(sys.argv[5])
assert n >= 5 and first < t0 and last > t1, (n, first, last, t0, t1)
PY
pass "both devices ok in the report; $C, held by the second client, answered $(sed -n 's/^answers \([0-9]*\).*/\1/p' hold.out) getvars before, during and after the flash"

for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
echo "GUEST-DONE"
