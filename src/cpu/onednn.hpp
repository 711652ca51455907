#pragma once
// The CPU matmuls' fast path: oneDNN's matmul for f32 and 16-bit products (cpu/onednn.cpp).
#include <optional>

#include "ops/matmul_problem.hpp"

namespace baracuda::detail::cpu {

// d = alpha * a @ b + beta * d, one 2-D product (matrices as GemmMatrix strides, elements of `in`,
// d of `out`), on oneDNN's threads. False where oneDNN has no kernel for it: the caller's own path
// then runs (every configuration always takes the same one, so results stay bit-stable).
bool onednn_gemm(DType in, DType out, int64_t m, int64_t n, int64_t k, const void* a, GemmMatrix am, const void* b,
                 GemmMatrix bm, void* d, GemmMatrix dm, double alpha, double beta);

}  // namespace baracuda::detail::cpu
