#!/bin/bash
# Runs a build made on the development machine on the GPU machine: its tests, compute-sanitizer,
# sweeps beside PyTorch (bench/compare_torch.py) and ncu, as the environment asks:
#   TF / TTIME   gtest filter and time of the tests (16 shards; set OMP_NUM_THREADS=1 with CPU cases)
#   MF / MTIME   memcheck's filter and time; RF racecheck's filter
#   SWEEPS       "name|ops|shapes[|dtypes];..." (dtypes f32,bf16 by default; NOJAX=1: no jax ms column;
#                SWEEP_FLAGS: more compare_torch.py flags, e.g. --serial; EXTRAS=1: the EXTRA_PEERS columns too,
#                torch.compile and Liger-Kernel, installed from .whl/ when carried)
#   NCU          "name|ops|dtype|shape|kernel regex;..."
# The build (about 20 minutes on 2 cores, 49 MB stripped, small enough to travel):
#   cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real \
#     -DBUILD_SHARED_LIBS=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBARACUDA_CUDA_LINEINFO=OFF \
#     -DCMAKE_CUDA_FLAGS=-compress-mode=size -DBARACUDA_WARNINGS_AS_ERRORS=ON
#   cmake --build build/dev --target baracuda_tests baracuda-profiler
#   mkdir .ship && cp build/dev/libbaracuda.so build/dev/tests/baracuda_tests \
#     build/dev/tools/profiler/baracuda-profiler .ship/ && strip .ship/*
# then the device tool's run with carry [".ship"] and e.g. `TF='*cuda*' bash bench/run_on_device.sh`.
# The device machine has no OpenBLAS or oneDNN: ship libopenblas.so.0, libgfortran.so.5,
# libquadmath.so.0 (from /usr/lib/x86_64-linux-gnu/openblas-openmp and /usr/lib/x86_64-linux-gnu) and
# libdnnl.so.2 beside the binaries (LD_LIBRARY_PATH below takes them from .ship).
set -o pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
t0=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - t0 )) s"; }
S=${SHIP:-.ship}
export LD_LIBRARY_PATH=$PWD/$S:$LD_LIBRARY_PATH
P=$S/baracuda-profiler
T=$S/baracuda_tests
chmod +x $T $P
ldd $T | grep -i "not found"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
shards() { local log=$1 filter=$2 to=$3; shift 3
  for i in $(seq 0 $((${N:-8}-1))); do GTEST_TOTAL_SHARDS=${N:-8} GTEST_SHARD_INDEX=$i timeout $to "$@" $T --gtest_color=no --gtest_filter="$filter" > $log.$i 2>&1 & done; wait
  cat $log.* > $log; rm -f $log.*; }
if [ -n "$TF" ]; then
N=16 shards $OUT/tests.log "$TF" ${TTIME:-300}
el "tests"; grep -E "^\[  (PASSED|FAILED)  \]|tests ran" $OUT/tests.log | sort | uniq -c; grep -E "^\[  FAILED  \]" $OUT/tests.log | sort -u | head -40; grep -B2 -A12 "Failure$" $OUT/tests.log | head -80
fi
if [ -n "$MF" ]; then
N=12 shards $OUT/memcheck.log "$MF" ${MTIME:-200} compute-sanitizer --tool memcheck --error-exitcode 3
el memcheck; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)  \]" $OUT/memcheck.log | sort | uniq -c
fi
if [ -n "$RF" ]; then
N=8 shards $OUT/racecheck.log "$RF" 200 compute-sanitizer --tool racecheck --error-exitcode 3
el racecheck; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)  \]" $OUT/racecheck.log | sort | uniq -c
fi
IFS=';' read -ra SW <<< "$SWEEPS"
for sw in "${SW[@]}"; do
  IFS='|' read -r name ops shapes dtypes <<< "$sw"
  timeout ${CTIME:-200} python3 bench/compare_torch.py --profiler $P --ops=$ops --dtypes=${dtypes:-f32,bf16} ${shapes:+--shapes=$shapes} $([ -z "$EXTRAS" ] && echo --no-extras) ${NOJAX:+--no-jax} ${SWEEP_FLAGS} --out $OUT/$name.md > $OUT/$name.log 2>&1; echo "$name rc $?"; grep "^|" $OUT/$name.md | cut -c1-260 || tail -30 $OUT/$name.log
  el "$name"
done
# NCU: "name|ops|dtype|shape|kernel regex;..." one launch each, clocks left alone
IFS=';' read -ra NC <<< "$NCU"
for nc in "${NC[@]}"; do
  IFS='|' read -r name ops dt shape kre <<< "$nc"
  timeout 120 ncu --clock-control none -k "regex:$kre" --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis $P --backend=cuda --ops=$ops --dtypes=$dt --shapes=$shape --iterations=3 --warmup=1 > $OUT/ncu_$name.txt 2>&1
  echo "ncu $name rc $?"; grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|Issue Slots Busy|Block Limit Reg|Grid Size|Block Size|Warp Cycles Per Issued" $OUT/ncu_$name.txt | head -20
done
