#!/usr/bin/env bash
# Builds the unit-test binaries with ASan+UBSan (clang, build-fuzz: the
# build the fuzzers use, scripts/sanitizer_build.sh) and runs them: memory
# errors and undefined behaviour in code the tests reach fail the run, even
# where the plain build happens to pass. Safe to rerun.
#   scripts/sanitize.sh        (prints one line per binary: "ok NAME")
set -euo pipefail
cd "$(dirname "$0")/.."
tests=(base_test sparse_test lp_test io_test input_test output_test wire_test fastboot_test host_test bench_test superimg_test)
bash scripts/sanitizer_build.sh "${tests[@]}"
failed=0
for t in "${tests[@]}"; do
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
     ./build-fuzz/"$t" --gtest_brief=1 >build-fuzz/"$t".log 2>&1; then
    echo "ok $t"
  else
    echo "FAILED $t (build-fuzz/$t.log)"; tail -40 build-fuzz/"$t".log; failed=1
  fi
done
exit $failed
