#!/usr/bin/env bash
# Builds the unit-test binaries with ASan+UBSan (g++, build-asan) and runs
# them: memory errors and undefined behaviour in code the tests reach fail
# the run, even where the plain build happens to pass. Safe to rerun.
#   scripts/sanitize.sh        (prints one line per binary: "ok NAME")
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi
# Every layer's unit-test binary, as the build defines them (CMakeLists.txt:
# one LAYER_test per src/LAYER with tests), not a list kept here.
mapfile -t tests < <(cmake --build build-asan --target help | sed -n 's/^\([a-z0-9_]*_test\)\[1\]_tests\.cmake: .*/\1/p' | sort -u)
[ ${#tests[@]} -gt 0 ] || { echo "FAILED: no unit-test binaries defined in build-asan"; exit 1; }
cmake --build build-asan -j2 --target "${tests[@]}" | tail -1
failed=0
for t in "${tests[@]}"; do
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
     ./build-asan/"$t" --gtest_brief=1 >build-asan/"$t".log 2>&1; then
    echo "ok $t"
  else
    echo "FAILED $t (build-asan/$t.log)"; tail -40 build-asan/"$t".log; failed=1
  fi
done
exit $failed
