#!/usr/bin/env bash
# The write floor (issue 15): `flashpipe write` of a sparse image to a loop
# device with direct I/O, against fio writing the same data bytes (RAW plus
# non-zero FILL: what has to reach the device) to a loop device of its own,
# side by side in one run.
#
#   super  a 1536 MiB image shaped like Android's super (bench/write_bench.sh's
#          recipe: metadata, two random "partitions", a 0xAA fill, zero runs)
#   ext4   a 1 GiB ext4 image made with mkfs.ext4 -d (~450 MiB of files)
#   throttle  a 384 MiB super-like image under a 30 MiB/s write limit
#          (cgroup v2 io.max "MAJ:MIN wbps=31457280" on the loop device)
#
# What is timed, on both sides: the whole process, from just before fork to
# just after it is reaped (bench/time_pairs.py), start-up and final sync
# included: `flashpipe write IMAGE LOOP` (its fdatasync inside) and
# `fio --rw=write --bs=1M --iodepth=4 --direct=1 --ioengine=io_uring
# --end_fsync=1 --size=DATA_BYTES`. The image's page cache is dropped before
# every run of either (fdatasync + POSIX_FADV_DONTNEED, outside the timing),
# so flashpipe reads its input from the disk, as it would after a download.
# Each loop device sits on its own preallocated file; one warm-up run of each
# command is not counted. ratio = fio time / flashpipe time, taken round by
# round, median (goal >= 0.9).
#
# The throttle case runs each command inside a child cgroup with the limit
# (created under the cgroup v2 root, removed on exit) and reports its time and
# the bytes the throttle saw (io.stat wbytes). When the v2 io controller is
# not available (e.g. a hybrid set-up whose io is bound to the v1 blkio
# hierarchy), the script says so and uses cgroup v1's
# blkio.throttle.write_bps_device instead (the same blk-throttle in the
# kernel); with neither, the case is skipped with the reason.
#
#   FLASHPIPE=build/flashpipe N=5 bash bench/write_floor_bench.sh
#   CASES="super ext4" ...   THROTTLE_N=3 ...
#   BEFORE=/path/to/older/flashpipe ...  also times that binary in the same rounds
# Needs root (losetup, cgroups). Everything lives in a temp dir removed on exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
FP=$(realpath "${FLASHPIPE:-$HERE/../build/flashpipe}")
N=${N:-5}
THROTTLE_N=${THROTTLE_N:-3}
CASES=${CASES:-"super ext4 throttle"}
WBPS=31457280
for t in fio losetup img2simg mkfs.ext4 python3 findmnt; do
  command -v "$t" >/dev/null || { echo "write_floor_bench: missing $t (scripts/setup.sh installs it)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "write_floor_bench: needs root (loop devices, cgroups)"; exit 1; }

T=$(mktemp -d /var/tmp/fp_write_floor.XXXXXX)
LOOPS=()
CGDIR=""
cleanup() {
  if [ -n "$CGDIR" ] && [ -d "$CGDIR" ]; then
    # Anything still in it goes back to the parent so that rmdir can work.
    while read -r p; do echo "$p" > "$(dirname "$CGDIR")/cgroup.procs" 2>/dev/null || true; done < "$CGDIR/cgroup.procs"
    rmdir "$CGDIR" 2>/dev/null || echo "write_floor_bench: could not remove $CGDIR" >&2
  fi
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$T"
log() { echo "[write_floor] $*" >&2; }

# ---- images
# super_like FILE SIZE_MIB: write_bench.sh's layout scaled to SIZE_MIB.
super_like() {
  local f=$1 size=$2
  scale() { echo $(( $1 * size / 1536 )); }
  put() {  # put OFFSET_MIB SIZE_MIB random|fill
    if [ "$3" = fill ]; then head -c "$(( $2 ))M" /dev/zero | tr '\0' '\252'
    else head -c "$(( $2 ))M" /dev/urandom; fi | dd of="$f" bs=1M seek="$1" conv=notrunc status=none
  }
  truncate -s "${size}M" "$f"
  put 0 1 random
  put 1 "$(scale 400)" random
  put "$(scale 657)" "$(scale 64)" fill
  put "$(scale 721)" "$(scale 200)" random
}
ext4_image() { bash "$HERE/make_ext4_image.sh" "$1"; }
# Bytes that have to reach the device: RAW chunks and non-zero FILL.
data_bytes() {
  "$FP" dump --json "$1" | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(sum(c["output_bytes"] for c in j["chunks"]
          if c["type"] == "RAW" or (c["type"] == "FILL" and c["pattern"] != 0)))'
}
new_loop() {  # new_loop FILE MIB: attaches a loop device, sets NEW_LOOP (not in $(...): LOOPS must see it)
  fallocate -l "$2M" "$1"
  NEW_LOOP=$(losetup --direct-io=on --find --show "$1")
  LOOPS+=("$NEW_LOOP")
  [ "$(cat "/sys/block/$(basename "$NEW_LOOP")/loop/dio")" = 1 ] || log "warning: $NEW_LOOP has no direct I/O"
}

log "flashpipe $FP; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); temp dir $T"
GEN_START=$(date +%s)
want() { [[ " $CASES " == *" $1 "* ]]; }
if want super; then super_like super.img 1536; img2simg super.img super.simg; rm super.img; fi
if want ext4; then ext4_image ext4.img; img2simg ext4.img ext4.simg; rm ext4.img; fi
if want throttle; then
  super_like small.img 384
  img2simg small.img small.simg
  command -v bmaptool >/dev/null && bmaptool create small.img > small.bmap 2>/dev/null
fi
log "images ready in $(( $(date +%s) - GEN_START )) s"

# ---- side by side against fio
floor_case() {  # floor_case NAME
  local img=$1.simg data la lb
  data=$(data_bytes "$img")
  new_loop "$T/$1_fp.bin" $(( $("$FP" dump --json "$img" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["image_size"] >> 20)') + 64 ))
  la=$NEW_LOOP
  new_loop "$T/$1_fio.bin" $(( (data >> 20) + 64 ))
  lb=$NEW_LOOP
  local fp_cmd="$FP write --no-progress $T/$img $la"
  local fio_cmd="fio --name=floor --filename=$lb --rw=write --bs=1M --iodepth=4 --direct=1 --ioengine=io_uring --end_fsync=1 --size=$data"
  echo
  echo "### $1: $img, $data data bytes ($(( data >> 20 )) MiB) of $(stat -c %s "$img") in the file"
  echo "flashpipe: $fp_cmd"
  echo "fio:       $fio_cmd"
  echo "read:      cat $img (the input alone, through the page cache, as a naive tool reads it)"
  echo "read+fio:  cat $img & fio ...; wait (that read while fio writes: image and loop backing"
  echo "           share this disk, so the target's floor moves when the input is read too)"
  local before=()
  if [ -n "${BEFORE:-}" ]; then
    echo "before:    $BEFORE write --no-progress $T/$img $la"
    before=("before=$BEFORE write --no-progress $T/$img $la >/dev/null")
  fi
  sh -c "$fp_cmd" >/dev/null && sh -c "$fio_cmd" >/dev/null   # warm-up: allocate both backing files
  python3 "$HERE/time_pairs.py" --rounds "$N" --drop "$T/$img" --baseline fio \
    "flashpipe=$fp_cmd >/dev/null" "${before[@]}" "fio=$fio_cmd >/dev/null" "read=cat $T/$img >/dev/null" \
    "read+fio=cat $T/$img >/dev/null & $fio_cmd >/dev/null; wait"
}

# ---- under a write throttle
CG_KIND=""
CG_MAJMIN=""
setup_cgroup() {  # picks v2 io.max, else v1 blkio; sets CGDIR, CG_KIND
  local v2 ctl
  v2=$(findmnt -n -t cgroup2 -o TARGET | head -1 || true)
  if [ -n "$v2" ] && grep -qw io "$v2/cgroup.controllers" 2>/dev/null; then
    if ! grep -qw io "$v2/cgroup.subtree_control"; then
      echo "+io" > "$v2/cgroup.subtree_control" || { echo "SKIP throttle: cannot enable the io controller in $v2"; return 1; }
    fi
    CGDIR=$v2/flashpipe_write_floor.$$
    mkdir "$CGDIR"
    CG_KIND=v2
    echo "cgroup v2 io controller at $v2: io.max \"$CG_MAJMIN wbps=$WBPS\" in $CGDIR"
    echo "$CG_MAJMIN wbps=$WBPS" > "$CGDIR/io.max"
    return 0
  fi
  ctl=$(findmnt -n -t cgroup -o TARGET,OPTIONS | awk '$2 ~ /(^|,)blkio(,|$)/ {print $1; exit}' || true)
  if [ -n "$ctl" ] && [ -e "$ctl/blkio.throttle.write_bps_device" ]; then
    echo "NOTE: the cgroup v2 io controller is not available here (${v2:-no cgroup2 mount}: controllers" \
         "'$(cat "$v2/cgroup.controllers" 2>/dev/null)'; io is bound to the v1 blkio hierarchy at $ctl)."
    echo "NOTE: using cgroup v1 blkio.throttle.write_bps_device \"$CG_MAJMIN $WBPS\" instead: the same blk-throttle code in the kernel."
    CGDIR=$ctl/flashpipe_write_floor.$$
    mkdir "$CGDIR"
    CG_KIND=v1
    echo "$CG_MAJMIN $WBPS" > "$CGDIR/blkio.throttle.write_bps_device"
    return 0
  fi
  echo "SKIP throttle: no cgroup v2 io controller (${v2:-no cgroup2 mount}) and no cgroup v1 blkio throttle here"
  return 1
}
throttled_bytes() {  # bytes written to the loop device as the throttle counted them
  if [ "$CG_KIND" = v2 ]; then
    awk -v d="$CG_MAJMIN" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); print $i } }' "$CGDIR/io.stat" | head -1 | grep . || echo 0
  else
    awk -v d="$CG_MAJMIN" '$1 == d && $2 == "Write" { print $3 }' "$CGDIR/blkio.throttle.io_service_bytes" | grep . || echo 0
  fi
}
throttle_case() {
  local data loop rows=$T/throttle.tsv
  data=$(data_bytes small.simg)
  new_loop "$T/throttle.bin" 448
  loop=$NEW_LOOP
  CG_MAJMIN=$(lsblk -ndo MAJ:MIN "$loop" | tr -d ' ')
  echo
  echo "### throttle: small.simg (384 MiB super-like, $data data bytes) to $loop under $((WBPS >> 20)) MiB/s"
  setup_cgroup || return 0
  declare -A cmd=(
    [flashpipe]="$FP write --no-progress $T/small.simg $loop"
    [flashpipe-threads]="$FP write --no-progress --backend threads $T/small.simg $loop"
    [before]="${BEFORE:-} write --no-progress $T/small.simg $loop"
    [fio]="fio --name=floor --filename=$loop --rw=write --bs=1M --iodepth=4 --direct=1 --ioengine=io_uring --end_fsync=1 --size=$data"
  )
  local order="flashpipe flashpipe-threads fio"
  [ -n "${BEFORE:-}" ] && order="flashpipe before flashpipe-threads fio"
  if [ -f small.bmap ]; then cmd[bmaptool]="bmaptool -q copy --bmap $T/small.bmap $T/small.img $loop"; order+=" bmaptool"; fi
  for k in $order; do echo "$k: ${cmd[$k]}"; done
  echo "expected at the limit: data bytes / $WBPS B/s = $(python3 -c "print(f'{$data / $WBPS:.2f}')") s"
  : > "$rows"
  for r in $(seq "$THROTTLE_N"); do
    for k in $order; do
      python3 -c "import os; fd = os.open('$T/small.simg', os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)"
      [ -f small.img ] && python3 -c "import os; fd = os.open('$T/small.img', os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)"
      local before after s e
      before=$(throttled_bytes)
      s=$(date +%s.%N)
      sh -c "echo \$\$ > $CGDIR/cgroup.procs && exec ${cmd[$k]}" >/dev/null 2>"$T/err.txt" || { log "FAILED $k: $(cat "$T/err.txt")"; return 1; }
      e=$(date +%s.%N)
      after=$(throttled_bytes)
      printf '%s\t%s\t%s\n' "$k" "$(python3 -c "print($e - $s)")" "$((after - before))" >> "$rows"
      echo "round $r $k: $(tail -1 "$rows" | cut -f2) s, throttle saw $((after - before)) bytes"
    done
  done
  python3 - "$rows" "$data" "$order" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
data = int(sys.argv[2])
for k in sys.argv[3].split():
    t = [float(r[1]) for r in rows if r[0] == k]
    b = [int(r[2]) for r in rows if r[0] == k]
    print(f"median {k}: {statistics.median(t):.2f} s (min {min(t):.2f}, max {max(t):.2f}), "
          f"throttle saw {statistics.median(b) / 2**20:.0f} MiB = {statistics.median(b) / data:.2f}x the data bytes")
PY
}

want super && floor_case super
want ext4 && floor_case ext4
want throttle && throttle_case
echo
echo "command: FLASHPIPE=$FP N=$N THROTTLE_N=$THROTTLE_N CASES=\"$CASES\" bash bench/write_floor_bench.sh"
echo "machine: $(nproc) CPUs, load at the end $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r)"
