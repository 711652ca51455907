#pragma once
// Random numbers and dropout from one counter-based generator, Philox-4x32-10 (src/cuda/device/philox.h).
//
// The contract: element i of a tensor (its row-major index over the shape, not its place in memory)
// takes the 32 bits of stream position (offset + i) under `seed`: word (offset + i) % 4 of Philox's
// block at counter (offset + i) / 4, key the seed. So a value depends on (seed, offset + i) alone:
// the same bits on the CPU and on every GPU, whatever the grid, the SM count or the output's strides,
// and a tensor written whole or as pieces at the right offsets is the same tensor. A caller that
// draws again advances `offset` by the elements drawn (rounded up to a multiple of 4 if it wants
// fresh blocks, not required).
//
//   RandomPlan   uniform [low, high): the 24 high bits as u in [0, 1) (exact in f32), low + (high - low) u
//                in f32 (a result that rounds up to high becomes the float below it), then rounded to
//                the output's dtype (a 16-bit value may round up to high); f64: u from 53 bits;
//                bernoulli(p): 1 where bits < p 2^32 (p exact to 2^-32), else 0;
//                randint [low, high): low + bits mod (high - low) (i32, i64; range at most 2^32);
//                normal(mean, std): mean + std z, z by Box-Muller (both halves); exponential(lambda):
//                -log(u) / lambda. f32 and 16-bit outputs: position P takes word P % 4 of the block at
//                counter (P / 4, 0, 1) (normal: words 0-1 and 2-3 are the two uniforms of a pair, cosine
//                then sine) or (P / 4, 0, 2) (exponential), 24-bit uniforms, f32 maths (normals reach
//                5.77 standard deviations); f64: P takes the block at (P / 2, 0, 1 or 2), 53-bit
//                uniforms (normal: words 0-1 and 2-3, cosine for even P, sine for odd; exponential:
//                words 0-1 for even P, 2-3 for odd), f64 maths. Their log and sin / cos are the
//                library's own (+ - * and one division: the same bits on both backends, within a few
//                ulps). f32 and 16-bit outputs: z std + mean and e (1 / lambda) as one f32 fused
//                multiply-add (std, mean and 1 / lambda rounded to f32 first), then rounded to a 16-bit
//                dtype; f64: mean + std z and e / lambda in f64.
//   DropoutPlan  y = x / (1 - p) where bits >= p 2^32 (kept), else 0; `mask` (optional, bool) says
//                which were kept. DropoutBackwardPlan: dx = dy / (1 - p) where kept, the mask
//                regenerated from (seed, offset), never stored. p = 0 keeps everything (y = x), p = 1
//                drops everything (y = 0).
// f64 uniform takes two positions per element (2 (offset + i) and 2 (offset + i) + 1: 53 bits).
// A dropped element is 0 even where x is NaN (PyTorch's product with the mask keeps the NaN).
// y may be x exactly and dx dy exactly (in place); any other overlap of an output with an input or
// another output is an error naming the output.
//   RandpermPlan a permutation of 0..n-1 (torch.randperm), uniformly drawn: the values sorted by
//                64-bit keys, value i's key the words 0 and 1 of Philox's block at counter (offset + i,
//                0, 3) (stream 3: no other draw's), ties (about n^2 / 2^65 likely) in value order. A pure
//                function of (seed, offset, n): the same permutation on every backend. A caller drawing
//                again advances offset by n. out: i32 or i64, [n], any stride; n < 2^31. The
//                workspace holds the keys (CPU: 16 n bytes; CUDA: 32 n bytes and CUB's radix sort's).
//   MultinomialPlan torch.multinomial: `samples` category indices of each row of non-negative weights
//                (probs [C] or [R, C], any scale; out [samples] or [R, samples], i32 or i64). Without
//                replacement (the exponential race, as torch draws it): category c of row r gets the
//                key E / w', E the f32 exponential of position offset + r C + c (RandomPlan's
//                exponential, lambda 1, at that element) and w' = w (1 / the row's largest weight)
//                in f32 (f64 weights scaled in f64, then rounded); the row's samples are its categories
//                in order of increasing key (ties in category order): the order successive draws
//                without replacement take them. A category whose w' is 0 is never drawn (nor one
//                whose w' rounds to 0: its odds below 2^-149 of the largest's). With replacement:
//                sample j of row r is the first category whose running sum (in f64, in a fixed order:
//                the row in 256 chunks of ceil(C / 256), each summed from 0, the chunks' sums added
//                in order) passes u total, u the f64 uniform of element offset + r samples + j
//                (RandomPlan's f64 uniform at that element): a weight-0 category is never drawn.
//                A row with a negative, NaN or infinite weight, or whose weights are all 0, and the
//                samples beyond a row's positive weights without replacement, are written -1 (torch
//                raises on the device; a plan cannot see the values before it runs). The same
//                indices on every backend. Without replacement samples <= C; C < 2^31; without
//                replacement and more than 16 samples R C < 2^31 (the CUDA sort counts in 32
//                bits). A caller drawing again advances offset by R C (without replacement) or
//                R samples (with).
#include <cstdint>

#include "baracuda/core/plan.hpp"

namespace baracuda {

enum class RandomKind : unsigned char { uniform, bernoulli, randint, normal, exponential };
std::string_view random_kind_name(RandomKind kind);

struct RandomDescriptor {
  RandomKind kind = RandomKind::uniform;
  DType dtype = DType::f32;  // uniform, bernoulli: f32 f64 f16 bf16; randint: i32 i64
  Shape shape;
  uint64_t seed = 0;
  uint64_t offset = 0;
  double low = 0.0, high = 1.0;  // uniform, randint (whole numbers); low < high
  double p = 0.5;                // bernoulli: in [0, 1]
  double mean = 0.0, std = 1.0;  // normal: finite, std >= 0
  double lambda = 1.0;           // exponential: the rate, > 0 and finite
};

struct RandomArgs {
  AnyTensorMut out;
};

struct DropoutDescriptor {
  DType dtype = DType::f32;  // of x, y, dy, dx: f32 f64 f16 bf16
  Shape shape;
  double p = 0.5;  // the probability of dropping: in [0, 1]
  uint64_t seed = 0;
  uint64_t offset = 0;
};

struct DropoutArgs {
  AnyTensorRef x;
  AnyTensorMut y;
  AnyTensorMut mask;  // optional, bool: true where kept
};

struct DropoutBackwardArgs {
  AnyTensorRef dy;
  AnyTensorMut dx;
};

struct RandpermDescriptor {
  DType dtype = DType::i64;  // of out: i32, i64
  int64_t n = 0;             // 0 <= n < 2^31
  uint64_t seed = 0;
  uint64_t offset = 0;
};

struct RandpermArgs {
  AnyTensorMut out;  // [n]
};

struct MultinomialDescriptor {
  DType dtype = DType::f32;        // of probs: f32 f64 f16 bf16
  DType index_dtype = DType::i64;  // of out: i32 i64
  Shape shape;                     // of probs: [C] or [R, C], C >= 1
  int64_t samples = 1;             // >= 0; without replacement <= C
  bool replacement = false;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

struct MultinomialArgs {
  AnyTensorRef probs;  // [C] or [R, C]
  AnyTensorMut out;    // [samples] or [R, samples]
};

struct RandomOp : OpTag<RandomDescriptor, RandomArgs> {};
struct MultinomialOp : OpTag<MultinomialDescriptor, MultinomialArgs> {};
struct RandpermOp : OpTag<RandpermDescriptor, RandpermArgs> {};
struct DropoutOp : OpTag<DropoutDescriptor, DropoutArgs> {};
struct DropoutBackwardOp : OpTag<DropoutDescriptor, DropoutBackwardArgs> {};

using RandomPlan = Plan<RandomOp>;
using RandpermPlan = Plan<RandpermOp>;
using MultinomialPlan = Plan<MultinomialOp>;
using DropoutPlan = Plan<DropoutOp>;
using DropoutBackwardPlan = Plan<DropoutBackwardOp>;

}  // namespace baracuda
