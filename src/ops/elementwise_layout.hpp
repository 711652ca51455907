#pragma once
// How an elementwise plan walks its views, decided from the views alone (backend-neutral), so that
// sku(args) and run() always agree.
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "common/elementwise.hpp"

namespace baracuda::detail {

// How a backend walks an elementwise problem. The first five are also the indices of an
// elementwise op's variants (its schema lists them in this order); `transposed`, where an op has it,
// is listed after the first four (kTransposedVariants): variant_path maps a variant to its path.
enum class ElementwisePath : unsigned char {
  vectorized,          // contiguous, every pointer 16-byte aligned: 16-byte accesses
  contiguous,          // contiguous, some pointer not 16-byte aligned: one element per access
  strided,             // general strides (zero strides broadcast): offsets computed per row
  strided_vectorized,  // rows of 16-byte vectors; an input may be broadcast along the row (stride 0)
  broadcast_reduce,    // backward with a broadcast operand: its gradient reduced in a fixed order
  transposed,          // one input read along another dim than the outputs: tiles (TransposedWalk)
};

// The views of an elementwise launch: kIn inputs and kOut outputs over one shape.
template <int kIn_, int kOut_>
struct ElementwiseTensors {
  static constexpr int kIn = kIn_, kOut = kOut_;
  ElementwisePath path = ElementwisePath::strided;
  Shape shape;
  const void* in[kIn > 0 ? kIn : 1] = {};  // a fill has no input
  Strides in_strides[kIn > 0 ? kIn : 1] = {};
  void* out[kOut] = {};
  Strides out_strides[kOut] = {};
};

constexpr std::string_view path_name(ElementwisePath path) {
  constexpr std::string_view kNames[] = {"vectorized",         "contiguous",       "strided",
                                         "strided_vectorized", "broadcast_reduce", "transposed"};
  const auto i = static_cast<size_t>(path);
  return i < std::size(kNames) ? kNames[i] : "?";
}

// The variants of an elementwise op's schema that are the paths above (in ElementwisePath order);
// without a forced one the views pick.
inline constexpr VariantInfo kElementwiseVariants[] = {
    {"vectorized", true, false, true, "contiguous, 16-byte aligned: 16-byte accesses"},
    {"contiguous", true, true, true, "contiguous, any alignment: one element per access"},
    {"strided", true, true, true, "any strides (zero strides broadcast)"},
    {"strided_vectorized", true, false, true, "rows of 16-byte vectors; inputs may broadcast along rows"},
};

// A backward's variants: the paths, and broadcast_reduce for a broadcast operand's gradient.
inline constexpr VariantInfo kElementwiseBackwardVariants[] = {
    kElementwiseVariants[0],
    kElementwiseVariants[1],
    kElementwiseVariants[2],
    kElementwiseVariants[3],
    {"broadcast_reduce", true, true, true, "a broadcast operand's gradient summed in a fixed split order, no atomics"},
};

// The variants of an op that also has the `transposed` path (CastPlan, BinaryPlan): cpu and cuda say
// where its backends compile it (a backend without it runs such views strided).
constexpr VariantInfo transposed_variant(bool cpu, bool cuda) {
  return {"transposed", true, cpu, cuda,
          "one input's unit-stride dim is not the outputs': tiles, that input read along its unit stride "
          "(CUDA: blocks transposed in registers, exchanged through shared memory)"};
}
inline constexpr VariantInfo kCastVariants[] = {kElementwiseVariants[0], kElementwiseVariants[1],
                                                kElementwiseVariants[2], kElementwiseVariants[3],
                                                transposed_variant(true, true)};
inline constexpr VariantInfo kBinaryVariants[] = {kElementwiseVariants[0], kElementwiseVariants[1],
                                                  kElementwiseVariants[2], kElementwiseVariants[3],
                                                  transposed_variant(false, true)};

// The index of the variant named `name` in a schema's list, -1 where it has none.
constexpr int variant_index(std::span<const VariantInfo> variants, std::string_view name) {
  for (size_t i = 0; i < variants.size(); ++i)
    if (variants[i].name == name) return static_cast<int>(i);
  return -1;
}
// The path a variant of an elementwise op's list names.
inline ElementwisePath variant_path(std::span<const VariantInfo> variants, int variant) {
  return variants[static_cast<size_t>(variant)].name == path_name(ElementwisePath::transposed)
             ? ElementwisePath::transposed
             : static_cast<ElementwisePath>(variant);
}

// The SKU layout of a path.
inline Layout layout_of_path(ElementwisePath path) {
  return path == ElementwisePath::vectorized || path == ElementwisePath::contiguous ? Layout::contiguous
                                                                                    : Layout::strided;
}

// Every pointer 16-byte aligned; all views contiguous: vectorized on CUDA (contiguous on the CPU,
// whose loop the compiler vectorizes). Otherwise strided_vectorized on CUDA when rows_vectorizable;
// else transposed where the op has that path on this backend (`transposes`) and the views make a
// TransposedWalk (on CUDA, of at least 128 tiles: elementwise_layout.cpp); else strided. Outputs come
// after inputs in `views`.
ElementwisePath layout_path(Backend backend, const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs,
                            bool transposes = false);

// The walk of the transposed path over NT tensors (inputs first). After collapsing dims: every output
// steps through the innermost dim P with unit stride; one input (`staged`) steps through it with
// another stride and has unit stride along a dim Q instead (read along Q, through a tile); every
// other input steps through P with stride 1 or 0; P and Q both have at least kTransposedMinSize
// elements. The other collapsed dims are batches. None where the views do not make one.
template <int NT>
std::optional<TransposedWalk<NT>> transposed_walk(const Shape& shape, const Strides* const (&strides)[NT], int inputs) {
  int64_t sizes[kMaxRank];
  int64_t collapsed[NT][kMaxRank];
  const int rank = collapse_dims(shape, strides, NT, nullptr, sizes, collapsed);
  const int p = rank - 1;
  if (rank < 2 || sizes[p] < kTransposedMinSize) return std::nullopt;
  TransposedWalk<NT> w;
  for (int t = 0; t < NT; ++t) {
    const int64_t step = collapsed[t][p];
    if (t >= inputs ? step != 1 : step != 0 && step != 1 && w.staged >= 0) return std::nullopt;
    if (t < inputs && step != 0 && step != 1) w.staged = t;
  }
  if (w.staged < 0) return std::nullopt;
  int q = p - 1;  // the staged input's unit-stride dim, the innermost such
  while (q >= 0 && !(collapsed[w.staged][q] == 1 && sizes[q] >= kTransposedMinSize)) --q;
  if (q < 0) return std::nullopt;
  w.p_size = sizes[p];
  w.q_size = sizes[q];
  for (int t = 0; t < NT; ++t) {
    w.p_strides[t] = collapsed[t][p];
    w.q_strides[t] = collapsed[t][q];
  }
  for (int d = 0; d < rank; ++d) {
    if (d == p || d == q) continue;
    w.batch.sizes[w.batch.rank] = sizes[d];
    for (int t = 0; t < NT; ++t) w.batch.strides[t][w.batch.rank] = collapsed[t][d];
    ++w.batch.rank;
  }
  w.batches = w.batch.numel();
  return w;
}
// The walk of an elementwise launch's views (ElementwiseTensors).
template <int kIn, int kOut>
std::optional<TransposedWalk<kIn + kOut>> transposed_walk(const ElementwiseTensors<kIn, kOut>& t) {
  const Strides* strides[kIn + kOut];
  for (int k = 0; k < kIn; ++k) strides[k] = &t.in_strides[k];
  for (int k = 0; k < kOut; ++k) strides[kIn + k] = &t.out_strides[k];
  return transposed_walk<kIn + kOut>(t.shape, strides, kIn);
}

// After collapsing dims: the innermost has a multiple of a 16-byte vector's elements; each input is
// either broadcast along it (stride 0: one scalar per row) or, like every output, steps through it
// with stride 1 from a 16-byte aligned pointer with every other stride a multiple of the vector.
bool rows_vectorizable(const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs);

// The splits of a BroadcastReduction of m kept elements over r each (common/elementwise.hpp): enough
// items to run in parallel, about one per thread the device holds at once (CUDA) or a few per core
// (CPU), within the workspace limit (m * splits partial sums of dtype's accumulator; `workspace` is
// raised to that, so that reductions run one after another can share it). Fixed at select, so runs
// are identical.
int64_t reduction_splits(const PlanTarget& target, int64_t m, int64_t r, DType dtype, size_t workspace_limit,
                         size_t& workspace);

// A forced path must fit the views: a status naming preference.variant when it does not.
Status check_forced_path(std::string_view plan, ElementwisePath forced, const Shape& shape,
                         std::initializer_list<AnyTensorRef> views, int inputs);

}  // namespace baracuda::detail
