#!/usr/bin/env bash
# flashpipe serve over UDP against the real fastboot client: see fastboot_lib.sh.
TRANSPORT=udp
source "$(dirname "$0")/fastboot_lib.sh"
main
