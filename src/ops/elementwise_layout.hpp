#pragma once
// How an elementwise plan walks its views, decided from the views alone (backend-neutral), so that
// sku(args) and run() always agree.
#include <initializer_list>
#include <optional>
#include <string_view>

#include "baracuda/core/plan.hpp"

namespace baracuda::detail {

// How a backend walks an elementwise problem; the values are indices into an elementwise op's
// variant list (its schema), which lists them in this order.
enum class ElementwisePath : unsigned char {
  vectorized,          // contiguous, every pointer 16-byte aligned: 16-byte accesses
  contiguous,          // contiguous, some pointer not 16-byte aligned: one element per access
  strided,             // general strides (zero strides broadcast): offsets computed per row
  strided_vectorized,  // rows of 16-byte vectors; an input may be broadcast along the row (stride 0)
  broadcast_reduce,    // backward with a broadcast operand: its gradient reduced in a fixed order
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

std::string_view path_name(ElementwisePath path);

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

// The SKU layout of a path.
inline Layout layout_of_path(ElementwisePath path) {
  return path == ElementwisePath::vectorized || path == ElementwisePath::contiguous ? Layout::contiguous
                                                                                    : Layout::strided;
}

// Every pointer 16-byte aligned; all views contiguous: vectorized on CUDA (contiguous on the CPU,
// whose loop the compiler vectorizes). Otherwise strided_vectorized on CUDA when rows_vectorizable,
// else strided. Outputs come after inputs in `views`.
ElementwisePath layout_path(Backend backend, const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs);

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
