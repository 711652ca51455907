#!/usr/bin/env bash
# Builds the profiler with compile-time kernel knobs and times each build on the same cases, in one
# device call. Usage: scripts/variants.sh "NAME:FLAGS" ... (FLAGS are nvcc -D definitions)
#   e.g. scripts/variants.sh "base:" "cs:-DBARACUDA_STREAMING_STORES=1"
set -uo pipefail
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
ops=${VARIANT_OPS:-lerp,lerp_backward}
for spec in "$@"; do
  name=${spec%%:*}; flags=${spec#*:}
  cmake -S . -B "build/v-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBARACUDA_BUILD_TESTS=OFF \
    -DCMAKE_CUDA_FLAGS="$flags" >/dev/null 2>&1 && cmake --build "build/v-$name" -j16 >"$OUT/build-$name.log" 2>&1 \
    || { echo "$name: build failed"; tail -20 "$OUT/build-$name.log"; continue; }
  echo "== $name ($flags)"
  "build/v-$name/tools/profiler/baracuda-profiler" --ops="$ops" --dtypes="${VARIANT_DTYPES:-f32,bf16}" \
    ${VARIANT_SHAPES:+--shapes=$VARIANT_SHAPES} 2>/dev/null | grep -vE "^ *note|^all cases"
done
