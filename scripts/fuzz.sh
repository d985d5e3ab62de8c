#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz and runs each
# for SECONDS (default 30), starting from the seeds in fuzz/seeds/NAME/ if any.
#   scripts/fuzz.sh [SECONDS]
# Every fuzz/*_fuzzer.cc is built and run: the sparse decoder, the fastboot
# protocol, USB and client parsers, http answers, android-info, liblp
# metadata, and the partition layout parsers (sfdisk scripts and U-Boot
# $partitions strings: partition_layout_fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DFLASHPIPE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build-fuzz
shopt -s nullglob
fuzzers=(build-fuzz/*_fuzzer)
if [ ${#fuzzers[@]} -eq 0 ]; then echo "no fuzzers built"; exit 1; fi
failed=0
for f in "${fuzzers[@]}"; do
  [ -f "$f" ] && [ -x "$f" ] || continue  # skip corpus-* directories
  name=$(basename "$f")
  corpus=build-fuzz/corpus-$name
  mkdir -p "$corpus"
  [ -d "fuzz/seeds/$name" ] && cp -n fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null || true
  echo "-- $name: ${secs}s"
  if ! "$f" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=0 \
       -artifact_prefix=build-fuzz/ "$corpus" >build-fuzz/$name.log 2>&1; then
    echo "FAILED: $name (see build-fuzz/$name.log)"; tail -40 build-fuzz/$name.log; failed=1
  else
    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" build-fuzz/$name.log | tail -1 || true
  fi
done
exit $failed
