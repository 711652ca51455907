// The CPU side of the rotary plans: tokens in parallel; a token's cos / sin (cuda/device/rotary_math.h,
// the same arithmetic as the GPU's) computed once per pair, a block of pairs at a time (their inverse
// frequencies once for every token), and applied to every head of both tensors; the dims past
// rotary_dim copied where an output is not its input.
#include <algorithm>
#include <cstdint>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "cuda/device/rotary_math.h"
#include "ops/rotary_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

// The pairs whose cos / sin a loop step holds (on the stack).
inline constexpr int64_t kPairBlock = 64;

template <class T, class I, bool kInterleaved>
void rotate(const device::RotaryParams& p) {
  using Acc = acc_t<T>;
  const int64_t heads = p.heads[0] + p.heads[1];
  const bool parallel = p.tokens * p.head_dim >= kParallelThreshold / std::max<int64_t>(heads, 1);
  // A block of pairs at a time (one for head dims up to 128): its inverse frequencies once, then the
  // tokens in parallel; the first block's pass also copies the dims past rotary_dim.
  for (int64_t j0 = 0; j0 < p.pairs; j0 += kPairBlock) {
    const int64_t n = std::min<int64_t>(kPairBlock, p.pairs - j0);
    double inv_freq[kPairBlock];
    for (int64_t j = 0; j < n; ++j) inv_freq[j] = device::rotary_inv_freq(p, j0 + j);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t token = 0; token < p.tokens; ++token) {
      const int64_t b = token / p.seq, s = token - b * p.seq;
      const double position = device::rotary_position<I>(p, b, s);
      // Head h of tensor t, as (source, destination) pointers at its dim 0.
      auto head = [&](int t, int64_t h) {
        const T* x = static_cast<const T*>(p.src[t]) + b * p.src_strides[t][0] + s * p.src_strides[t][1] +
                     h * p.src_strides[t][2];
        T* y = static_cast<T*>(p.dst[t]) + b * p.dst_strides[t][0] + s * p.dst_strides[t][1] + h * p.dst_strides[t][2];
        return std::pair<const T*, T*>{x, y};
      };
      Acc c[kPairBlock], sn[kPairBlock];
      for (int64_t j = 0; j < n; ++j) {
        double cd, sd;
        device::rotary_cos_sin(position, inv_freq[j], p.sign, cd, sd);
        c[j] = static_cast<Acc>(cd);
        sn[j] = static_cast<Acc>(sd);
      }
      for (int t = 0; t < 2; ++t) {
        const int64_t xd = p.src_strides[t][3], yd = p.dst_strides[t][3];
        for (int64_t h = 0; h < p.heads[t]; ++h) {
          const auto [x, y] = head(t, h);
          for (int64_t j = 0; j < n; ++j) {
            const int64_t ea = kInterleaved ? 2 * (j0 + j) : j0 + j, eb = kInterleaved ? ea + 1 : ea + p.pairs;
            Acc out_a, out_b;
            device::rotary_rotate(convert<Acc>(x[ea * xd]), convert<Acc>(x[eb * xd]), c[j], sn[j], out_a, out_b);
            y[ea * yd] = convert<T>(out_a);
            y[eb * yd] = convert<T>(out_b);
          }
          if (j0 == 0 && p.copy[t])
            for (int64_t e = 2 * p.pairs; e < p.head_dim; ++e) y[e * yd] = x[e * xd];
        }
      }
    }
  }
}

template <class T, class I>
void rotate_layout(const RotaryProblem& p) {
  if (p.layout == RotaryLayout::interleaved)
    rotate<T, I, true>(p.params);
  else
    rotate<T, I, false>(p.params);
}

}  // namespace

Status launch(const LaunchContext&, const RotaryProblem& p) {
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    if (p.index_dtype == DType::i32)
      rotate_layout<T, int32_t>(p);
    else
      rotate_layout<T, int64_t>(p);
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu
