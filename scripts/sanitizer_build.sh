#!/usr/bin/env bash
# The one sanitizer build (clang, ASan+UBSan, build-fuzz): the libFuzzer
# targets and the unit-test binaries, built from the same objects, so the
# suite compiles the tree twice (plain and sanitized), not three times.
#   scripts/sanitizer_build.sh [TARGET...]   (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-fuzz/build.ninja ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DFLASHPIPE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
fi
if [ $# -gt 0 ]; then cmake --build build-fuzz --target "$@" | tail -1; else cmake --build build-fuzz | tail -1; fi
