#!/bin/bash
# The GPU suite on the device machine from a build made here (issue 58's verification), in one call:
# the build and a kernel cache warmed here travel in .shipx (git-ignored), the rest of the cache is
# compiled there, then the tests in 16 shards, memcheck and racecheck of the filters asked for.
# Pack here (about 20 minutes of NVRTC on two cores for a whole cache; keep the carry under 64 MiB):
#   cmake --build build/dev --target baracuda_tests baracuda-profiler baracuda-jit-warm
#   mkdir -p .ship .shipx && cp build/dev/libbaracuda.so build/dev/tests/baracuda_tests \
#     build/dev/tools/profiler/baracuda-profiler build/dev/baracuda-jit-warm .ship/ && strip .ship/* &&
#     cp /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libgfortran.so.5 \
#       /usr/lib/x86_64-linux-gnu/libquadmath.so.0 /usr/lib/x86_64-linux-gnu/libdnnl.so.2 .ship/
#   tar -cf - .ship | xz -9 -T2 > .shipx/ship.tar.xz                       # about 21 MB
#   BARACUDA_CACHE_DIR=DIR build/dev/baracuda-jit-warm --arch 90 --threads 2 --prune
#   (cd DIR && ls -S | head -120 > /tmp/drop && tar -cf - --exclude-from=/tmp/drop . | xz -6 -T2) \
#     > .shipx/cache.tar.xz                                                # about 38 MB; the largest
#                                                                          # compile on the device
# then the device tool's run with carry [".shipx"] and `bash bench/device_suite.sh`. Environment:
#   TF / TFILE  the tests' filter (default: every GPU test) or a file of test names, one a line
#   STIME       the tests' limit (default 540: the whole GPU filter needs about 600 s in 16 shards,
#               bench/NOTES.md); MF / MTIME memcheck's filter and limit; RF / RTIME racecheck's
cd "$(dirname "$0")/.."
t0=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - t0 )) s"; }
# (A script run before this one in the same call may have unpacked and warmed already.)
if [ ! -f /tmp/bcache/.warm ]; then
  tar -xJf .shipx/ship.tar.xz && mkdir -p /tmp/bcache && tar -C /tmp/bcache -xJf .shipx/cache.tar.xz || exit 1
  el extracted
fi
export BARACUDA_CACHE_DIR=/tmp/bcache LD_LIBRARY_PATH=$PWD/.ship:$LD_LIBRARY_PATH OMP_NUM_THREADS=1
T=.ship/baracuda_tests
chmod +x .ship/*
# Jit's tests run the warm tool from the build tree's path.
W=$(strings $T | grep -m1 "/baracuda-jit-warm$"); [ -n "$W" ] && mkdir -p "$(dirname "$W")" && cp .ship/baracuda-jit-warm "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
shards() { local log=$1 filter=$2 to=$3 n=$4; shift 4
  for i in $(seq 0 $((n-1))); do GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i timeout "$to" "$@" $T --gtest_color=no --gtest_filter="$filter" > "$log.$i" 2>&1 & done; wait
  cat "$log".* > "$log"; rm -f "$log".*; }
summary() { grep -E "^\[  (PASSED|FAILED)  \]|ERROR SUMMARY|RACECHECK SUMMARY" "$1" | sed 's/ *([0-9]* ms total)//' | sort | uniq -c
  grep -E "^\[  FAILED  \]" "$1" | sort -u | head -30; grep -B2 -A10 "Failure$" "$1" | head -60
  echo "started $(grep -c '^\[ RUN' "$1"), ok $(grep -c '^\[       OK' "$1"), skipped $(grep -c '^\[  SKIPPED' "$1")"; }
if [ ! -f /tmp/bcache/.warm ]; then
  timeout "${WTIME:-60}" .ship/baracuda-jit-warm --arch 90 --threads 16 2>&1 | tail -1; touch /tmp/bcache/.warm; el warm
fi
FILTER=${TF:-'*cuda*:*Cuda*:*CUDA*:*Gpu*:*GPU*'}
[ -n "$TFILE" ] && FILTER=$(paste -sd: "$TFILE")
shards "$OUT/suite.log" "$FILTER" "${STIME:-540}" 16; el suite; summary "$OUT/suite.log"
# The tests that did not finish, started or not (a next call's TFILE), and the slowest.
$T --gtest_list_tests --gtest_filter="$FILTER" | awk '/^[^ ]/ {s=$1} /^  / {print s $1}' | sort > /tmp/all
grep -E "^\[ +(OK|SKIPPED) +\]" "$OUT/suite.log" | awk '{print $4}' | sort > /tmp/finished
comm -23 /tmp/all /tmp/finished > "$OUT/unfinished.txt"; echo "unfinished: $(wc -l < "$OUT/unfinished.txt") of $(wc -l < /tmp/all)"
grep -E "^\[       OK \]" "$OUT/suite.log" | sed -E 's/.*\] (.*) \(([0-9]+) ms\)/\2 \1/' | sort -rn | head -8
if [ -n "$MF" ]; then
  shards "$OUT/memcheck.log" "$MF" "${MTIME:-60}" 16 compute-sanitizer --tool memcheck --error-exitcode 3; el memcheck
  summary "$OUT/memcheck.log"; grep -B3 -A12 "Invalid\|ERROR SUMMARY: [1-9]" "$OUT/memcheck.log" | head -30
fi
if [ -n "$RF" ]; then
  shards "$OUT/racecheck.log" "$RF" "${RTIME:-40}" 16 compute-sanitizer --tool racecheck --error-exitcode 3; el racecheck
  summary "$OUT/racecheck.log"
fi
el done
