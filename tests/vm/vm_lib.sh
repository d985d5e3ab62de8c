# Boots Debian's 6.1 kernel under QEMU (TCG) with a busybox initramfs, the
# host's root file system shared read-only over 9p and a work directory
# shared read-write, and runs one script of the work directory inside the
# guest, chrooted into the host's root, with dummy_hcd (two UDCs),
# libcomposite and usb_f_fs loaded (or the modules VM_MODULES names). See
# ../shared notes usb-functionfs-vm.md. Sourced; not a test by itself. Tests
# that share a CACHE_DIR may run at once: vm_prepare holds a lock on it.
#
#   vm_prepare CACHE_DIR            kernel package downloaded and extracted once
#   vm_run WORK SCRIPT SECONDS LOG  boots, runs WORK/SCRIPT as root in the
#                                   guest, powers off; console in LOG;
#                                   VM_QEMU_ARGS (an array) adds devices

# The kernel package that linux-image-amd64 points at (Debian 12: 6.1.x).
vm_kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1
}

# Downloads (apt-get download) and extracts the kernel into CACHE once;
# sets VM_KDIR (the extracted tree) and VM_KVER.
vm_prepare() {
  mkdir -p "$1"
  local lock
  exec {lock}>"$1/.lock"
  flock "$lock"
  vm_prepare_locked "$1"
  local rc=$?
  exec {lock}>&-
  return $rc
}
vm_prepare_locked() {
  local cache=$1 pkg deb
  deb=$(ls "$cache"/linux-image-*.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then
    pkg=$(vm_kernel_package)
    if [ -z "$pkg" ]; then apt-get update -qq >/dev/null 2>&1; pkg=$(vm_kernel_package); fi
    [ -n "$pkg" ] || { echo "vm: no linux-image-amd64 in the apt lists" >&2; return 1; }
    (cd "$cache" && apt-get download "$pkg" >/dev/null 2>&1) || { echo "vm: apt-get download $pkg failed" >&2; return 1; }
    deb=$(ls "$cache"/linux-image-*.deb | head -1)
  fi
  VM_KDIR=$cache/kernel
  if [ ! -f "$VM_KDIR/.extracted" ]; then
    rm -rf "$VM_KDIR"
    dpkg-deb -x "$deb" "$VM_KDIR" && touch "$VM_KDIR/.extracted" || return 1
  fi
  VM_KVER=$(ls "$VM_KDIR/lib/modules" | head -1)
  [ -n "$VM_KVER" ] && [ -f "$VM_KDIR/boot/vmlinuz-$VM_KVER" ] || { echo "vm: no kernel in $deb" >&2; return 1; }
}

# Module paths (relative to the modules dir) of NAMEs and their dependencies,
# dependencies first, read from each .ko's modinfo "depends=" string.
vm_module_order() {
  local mdir=$VM_KDIR/lib/modules/$VM_KVER
  declare -gA VM_MOD_PATH=() VM_MOD_SEEN=()
  local f n
  while read -r f; do  # no subshell per module: there are thousands
    n=${f##*/}; n=${n%.ko}; VM_MOD_PATH[${n//-/_}]=$f
  done < <(cd "$mdir" && find kernel -name '*.ko')
  VM_ORDER=()
  for n in "$@"; do vm_module_visit "$mdir" "${n//-/_}" || return 1; done
}
vm_module_visit() {
  local mdir=$1 n=$2 path deps d
  [ -n "${VM_MOD_SEEN[$n]:-}" ] && return 0
  VM_MOD_SEEN[$n]=1
  path=${VM_MOD_PATH[$n]:-}
  [ -n "$path" ] || return 0  # built in
  deps=$(tr '\0' '\n' <"$mdir/$path" | sed -n 's/^depends=//p' | head -1)
  for d in ${deps//,/ }; do vm_module_visit "$mdir" "${d//-/_}" || return 1; done
  VM_ORDER+=("$path")
}

# The initramfs: static busybox, the modules in load order, /init.
vm_initramfs() {
  local out=$1 root
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,dev,proc,sys,host,modules}
  cp "$(command -v busybox)" "$root/bin/busybox"
  # shellcheck disable=SC2086  # a list of names
  vm_module_order virtio_pci 9pnet_virtio 9p ${VM_MODULES:-configfs libcomposite usb_f_fs dummy_hcd loop} || return 1
  local i=0 p
  for p in "${VM_ORDER[@]}"; do
    i=$((i + 1))
    cp "$VM_KDIR/lib/modules/$VM_KVER/$p" "$root/modules/$(printf %02d "$i")-$(basename "$p")"
  done
  cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
ip link set lo up
for m in /modules/*.ko; do
  args=""; case "$m" in *-dummy_hcd.ko) args="$(sed -n 's/.*vm.dummy_hcd=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')";; esac
  insmod "$m" $args || echo "VM-INIT: insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=1048576 host /host || echo "VM-INIT: 9p host failed"
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run
mkdir -p /host/tmp/work
mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 work /host/tmp/work || echo "VM-INIT: 9p work failed"
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
[ -d /sys/kernel/config ] && mount -t configfs configfs /host/sys/kernel/config
mkdir -p /host/dev/pts /host/dev/shm; mount -t devpts devpts /host/dev/pts; mount -t tmpfs shm /host/dev/shm
ln -s /proc/self/fd /host/dev/fd; ln -s fd/0 /host/dev/stdin; ln -s fd/1 /host/dev/stdout; ln -s fd/2 /host/dev/stderr
script=$(sed -n 's/.*vm.script=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "VM-INIT: up, running $script"
chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp \
  /bin/bash -c "cd /tmp/work && bash ./$script"
echo "VM-EXIT: $?"
poweroff -f
INIT
  chmod +x "$root/init"
  (cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$out"
  rm -rf "$root"
}

# vm_run WORK SCRIPT SECONDS LOG: exit status of SCRIPT in the guest (124 on
# timeout, 125 when the guest did not report one).
vm_run() {
  local work=$1 script=$2 secs=$3 log=$4 initrd
  initrd=$work/.initrd.gz
  vm_initramfs "$initrd" || return 125
  timeout --kill-after=5 "$secs" qemu-system-x86_64 -accel tcg -smp 2 -m "${VM_MEM:-1536}" -nodefaults -no-reboot \
    -display none -monitor none -serial "file:$log" \
    -kernel "$VM_KDIR/boot/vmlinuz-$VM_KVER" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=-1 vm.script=$script vm.dummy_hcd=${VM_DUMMY_HCD:-num=2}" \
    -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$work,mount_tag=work,security_model=none" "${VM_QEMU_ARGS[@]}" </dev/null
  local rc=$?
  rm -f "$initrd"
  [ $rc = 124 ] && return 124
  rc=$(sed -n 's/^VM-EXIT: \([0-9]*\).*/\1/p' "$log" | tail -1)
  return "${rc:-125}"
}
