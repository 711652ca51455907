#!/usr/bin/env bash
# One call on the GPU machine: build with every core, run the whole test suite (GPU cases
# included), run the GPU cases under compute-sanitizer (memcheck, racecheck), run the profiler's
# standard suite and the PyTorch comparison. Logs go under $OUT (the device tool brings them back).
#   scripts/device-check.sh [STEP[,STEP...]]   steps: tests, memcheck, racecheck, fuzz, bench, speed;
#   all (the default) is tests,memcheck,racecheck,fuzz,bench. SHARDS (default 4) gtest shards run at
#   once; TESTS_FILTER narrows the tests step (e.g. "*cuda*").
# fuzz: the plan fuzzer on the CUDA backend under memcheck (FUZZ_RUNS cases, default 10000; FUZZ_SEED).
# speed: the profiler of this tree beside the one of the source tree in $BASELINE (e.g. a `git
# archive` of the previous commit, carried along), case by case (bench/compare_builds.py).
set -uo pipefail
what=${1:-all}
[[ $what == all ]] && what=tests,memcheck,racecheck,fuzz,bench
want() { [[ ",$what," == *",$1,"* ]]; }
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
status=0
step() { echo "== $*"; }

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
step configure
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DBARACUDA_WARNINGS_AS_ERRORS=ON >"$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
step build
if want speed && [[ -n ${BASELINE:-} ]]; then  # the baseline builds beside this tree
  (cmake -S "$BASELINE" -B build/base -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DBARACUDA_BUILD_TESTS=OFF && cmake --build build/base -j8 --target baracuda-profiler) >"$OUT/build-base.log" 2>&1 &
fi
cmake --build build/device -j16 >"$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }

# The suite in SHARDS processes at once (gtest's sharding; default 4: the GPU and 16 cores take
# them, and the whole suite then fits one device call): shard_run LOG FILTER [PREFIX...].
shard_run() {
  local log=$1 filter=$2 shards=${SHARDS:-4} pids=() rc=0
  shift 2
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$@" ./build/device/tests/baracuda_tests --gtest_color=no \
      --gtest_filter="$filter" >"$log.$i" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  cat "$log".* >"$log" && rm -f "$log".*
  return $rc
}

if want tests; then
  step "tests (all cases, GPU included)"
  shard_run "$OUT/tests.log" "${TESTS_FILTER:-*}" || status=1
  grep -E "^\[  (PASSED|FAILED)  \]|tests ran" "$OUT/tests.log" | head -40
  grep -B2 -A12 -E "Failure$" "$OUT/tests.log" | head -80  # the first failures, in full
fi
# The sanitizers slow kernels ~100x: every GPU case except the ones past 2^31 elements; racecheck
# skips the bit-identity drivers too (ten runs of kernels the other cases already run once).
for tool in memcheck racecheck; do
  want $tool || continue
  filter='*cuda*:-*Large*'
  [[ $tool == racecheck ]] && filter='*cuda*:-*Large*:*BitIdentical*'
  step "compute-sanitizer $tool"
  shard_run "$OUT/sanitizer-$tool.log" "$filter" compute-sanitizer --tool "$tool" --error-exitcode 3 || status=1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)  \]" "$OUT/sanitizer-$tool.log" | head -10
done

if want fuzz; then
  # The plan fuzzer (tests/fuzz/) on the CUDA backend, every kernel launch under memcheck.
  step "fuzzer on CUDA under compute-sanitizer memcheck (${FUZZ_RUNS:-10000} cases)"
  compute-sanitizer --tool memcheck --error-exitcode 3 ./build/device/tests/fuzz/baracuda-fuzz --backend cuda \
    --runs "${FUZZ_RUNS:-10000}" --seed "${FUZZ_SEED:-1}" >"$OUT/fuzz-cuda.log" 2>&1 || status=1
  grep -vE "^========= (Program hit|    Saved host backtrace|        Host Frame)" "$OUT/fuzz-cuda.log" | tail -25
fi

if want bench; then
  # compare_torch.py runs the profiler's standard suite (printing its table) and times PyTorch.
  step "profiler standard suite and PyTorch side by side"
  # Pure-Python peers (Liger-Kernel, entmax) travel as wheels in .whl/ (bench/compare_torch.py).
  if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  PYTHONUNBUFFERED=1 python3 bench/compare_torch.py --profiler build/device/tools/profiler/baracuda-profiler \
    ${BENCH_OPS:+--ops=$BENCH_OPS} --commit "${BARACUDA_COMMIT:-unknown}" \
    --out "$OUT/compare.md" 2>&1 | tee "$OUT/compare.log" || status=1
fi
if want speed; then
  wait
  step "speed: this tree against $BASELINE"
  PYTHONUNBUFFERED=1 python3 bench/compare_builds.py --before build/base/tools/profiler/baracuda-profiler \
    --after build/device/tools/profiler/baracuda-profiler --rounds "${SPEED_ROUNDS:-2}" --out "$OUT/speed.md" || status=1
fi
echo "== device-check exit status $status"
exit $status
