#!/usr/bin/env bash
# flashpipe serve over TCP against the real fastboot client: see fastboot_lib.sh.
TRANSPORT=tcp
source "$(dirname "$0")/fastboot_lib.sh"
main
