#!/usr/bin/env bash
# flashpipe serve over UDP against the real fastboot client: see fastboot_lib.sh.
TRANSPORT=udp
source "$(dirname "$0")/fastboot_lib.sh"

# Both transports on one daemon: a TCP client right after a UDP client is
# served at once (the UDP session, idle between commands, gives way).
transport_extra() {
  cp "$1" "$work/both.img"
  start_daemon --storage "$work/both.img" --tcp 127.0.0.1:0
  local tport; tport=$(listening_port tcp)
  [ -n "$tport" ] || die "no tcp listening line: $(cat "$work/daemon.out")"
  fb getvar product 2>&1 | grep "product: flashpipe" >/dev/null || die "udp getvar on the two-transport daemon"
  out=$(timeout 20 fastboot -s "tcp:127.0.0.1:$tport" getvar product 2>&1 || true)
  grep -q "product: flashpipe" <<<"$out" || die "tcp client right after a udp client: $out"
  fb getvar product 2>&1 | grep "product: flashpipe" >/dev/null || die "udp client after the tcp client"
  pass "tcp client right after a udp client served at once, and udp again after it"
  stop_daemon
}
main
