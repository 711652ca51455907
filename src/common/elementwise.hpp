#pragma once
// Shared by the CPU and CUDA backends: the index arithmetic of elementwise kernels and the way an
// elementwise functor is applied to one element. A functor has
//   using Acc;                    the compute type (float for 16-bit and f32, double for f64)
//   static constexpr int kIn, kOut;
//   void operator()(const Acc (&in)[kIn], Acc (&out)[kOut]) const;
//   static constexpr ElementCost kCost;  (optional: see ElementCost)
// and every kernel shape (contiguous, vectorized, strided) of every backend reuses it.
// The functors and Walker are read by NVRTC too (the kernels compiled at select): what needs the
// host (DTypes, Status, shapes) is left out there.
#include "common/convert.hpp"
#include "common/hd.hpp"
#include "common/portable.hpp"
#if defined(__CUDACC_RTC__)
#include "cuda/device/walk.h"
namespace baracuda {
using device::kMaxRank;
}
#else
#include <string>
#include <string_view>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#endif

namespace baracuda::detail {

// f32 accumulation for 16-bit floats and f32, f64 for f64; integers and bools in int64 (where an op
// takes them: the reductions' maths wrap as two's complement, reduce_fn::add / mul).
template <class T>
struct acc_type {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, float>;
};
template <>
struct acc_type<double> {
  using type = double;
};
template <class T>
using acc_t = typename acc_type<T>::type;
#if !defined(__CUDACC_RTC__)
// The DType of acc_t (a plan's precision guarantee).
inline DType acc_dtype(DType dtype) {
  if (dtype == DType::f64) return DType::f64;
  return is_floating(dtype) ? DType::f32 : DType::i64;
}
// Calls f(std::type_identity<acc_t<T>>{}) for the element type T of dtype (the host's sizes of the
// backends' states).
template <class F>
decltype(auto) with_acc_type(DType dtype, F&& f) {
  switch (acc_dtype(dtype)) {
    case DType::f64:
      return f(std::type_identity<double>{});
    case DType::i64:
      return f(std::type_identity<int64_t>{});
    default:
      return f(std::type_identity<float>{});
  }
}

// The DType of compute_t (a plan's precision guarantee).
inline DType elementwise_compute_dtype(DType dtype) {
  switch (dtype) {
    case DType::f64:
    case DType::i64:
    case DType::boolean:
      return dtype;
    case DType::i8:
    case DType::u8:
    case DType::i32:
      return DType::i32;
    default:
      return DType::f32;
  }
}
#endif
// The compute type of an elementwise forward on element type T: acc_t's for the floats; for the
// integers int32 up to 32 bits (i8, u8 and i32 results wrap back to their own width on the store, as
// they would have wrapped in it) and int64 for i64; bool stays bool (so that ~ is logical on it).
template <class T>
using compute_t = std::conditional_t<
    std::is_same_v<T, bool>, bool,
    std::conditional_t<std::is_integral_v<T>, std::conditional_t<(sizeof(T) < 8), int32_t, int64_t>, acc_t<T>>>;

// Two's complement arithmetic on the integer compute types (signed overflow is undefined in C++:
// through the unsigned type, as PyTorch's integer tensors wrap); on bool, add is or and mul is and
// (PyTorch's); on floats, the plain operators.
namespace wrapping {
template <class A>
BARACUDA_HD A add(A a, A b) {
  if constexpr (std::is_same_v<A, bool>)
    return a || b;
  else if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<std::make_unsigned_t<A>>(a) + static_cast<std::make_unsigned_t<A>>(b));
  else
    return a + b;
}
template <class A>
BARACUDA_HD A sub(A a, A b) {
  static_assert(!std::is_same_v<A, bool>, "no subtraction of bools (PyTorch's neither)");
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<std::make_unsigned_t<A>>(a) - static_cast<std::make_unsigned_t<A>>(b));
  else
    return a - b;
}
template <class A>
BARACUDA_HD A mul(A a, A b) {
  if constexpr (std::is_same_v<A, bool>)
    return a && b;
  else if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<std::make_unsigned_t<A>>(a) * static_cast<std::make_unsigned_t<A>>(b));
  else
    return a * b;
}
template <class A>
BARACUDA_HD A neg(A a) {
  return sub(A(0), a);
}
}  // namespace wrapping

// A descriptor's number (a scalar operand, alpha, a bound) in the compute type A. The plans have
// checked that an integer dtype's numbers are whole and within its range (bool's: 0 or 1).
template <class A>
A scalar_as(double v) {
  if constexpr (std::is_same_v<A, bool>)
    return v != 0;
  else if constexpr (std::is_integral_v<A>)  // (a number the kind ignores may be anything: 0 then)
    return v >= -0x1p63 && v < 0x1p63 ? static_cast<A>(static_cast<int64_t>(v)) : A(0);
  else
    return static_cast<A>(v);
}

// A Math whose out is bool (comparisons, isnan, ...): its forward gives 1 or 0 in the compute type
// (the store converts it), it has no backward (the backward plans reject it), and the launchers store
// bool.
struct Predicate {
  static constexpr bool kPredicate = true;
};
template <class Math>
inline constexpr bool is_predicate_math = requires {
  Math::kPredicate;
};
#if !defined(__CUDACC_RTC__)
// A backward launcher's body for a Math: gradient(std::type_identity<Math>{}) where it has one (a
// generic lambda, so that a predicate's is never instantiated); for a predicate (never reached: the
// backward plans' select rejects one, naming descriptor.kind) an error naming the plan.
template <class Math, class F>
Status unless_predicate(std::string_view plan, F&& gradient) {
  if constexpr (is_predicate_math<Math>)
    return Status::error(StatusCode::unsupported, std::string(plan) + ": a predicate kind has no gradient");
  else
    return gradient(std::type_identity<Math>{});
}
#endif

// How much compute an element takes beside its bytes. The GPU launcher sizes a thread's work on
// 16-bit elements by it (cuda/common/elementwise_shape.hpp, kPackUnroll and kRowUnroll):
//  - arithmetic: a few FMA-class instructions (add, mul, abs, relu, where, lerp, a cast);
//  - special: one or two special-function results and a few instructions (exp, rsqrt, sigmoid,
//    silu; sqrt and the quotients of common/arith16.hpp);
//  - heavy: a polynomial or more (erf, gelu, tanh, log, lgamma, pow, the trigonometry). What a Math
//    or a functor that names no `static constexpr ElementCost kCost` gets.
// A kind's cost is measured, not guessed: bench/labs/cost_lab.cu times it both ways.
enum class ElementCost { arithmetic, special, heavy };
template <class T>
consteval ElementCost element_cost() {
  if constexpr (requires { T::kCost; })
    return T::kCost;
  else
    return ElementCost::heavy;
}
// The base of the Maths of each cost (a Math may also name kCost itself).
struct ArithmeticCost {
  static constexpr ElementCost kCost = ElementCost::arithmetic;
};
struct SpecialCost {
  static constexpr ElementCost kCost = ElementCost::special;
};

// Whether a storage type takes a Math's forward16 / backward16 (on the GPU: f32 arithmetic that is
// accurate enough for a 16-bit result and cheaper than the f32 one).
template <class T>
inline constexpr bool kUses16BitMath = sizeof(T) == 2 && !std::is_integral_v<T>;

// A Math whose integer inputs give an f32 result, computed in f32 (true division: PyTorch's int / int).
template <class Math>
inline constexpr bool is_integer_to_float_math = requires {
  Math::kIntegerToFloat;
};
// The compute and output types of a Math's forward on element type T.
template <class Math, class T>
using math_compute_t = std::conditional_t<std::is_integral_v<T> && is_integer_to_float_math<Math>, float, compute_t<T>>;
template <class Math, class T>
using math_output_t =
    std::conditional_t<is_predicate_math<Math>, bool,
                       std::conditional_t<std::is_integral_v<T> && is_integer_to_float_math<Math>, float, T>>;

// Maps a linear index over `sizes` (row-major) to an element offset in each of NT tensors.
// Built on the host with size-1 dims dropped and mergeable dims merged, so the loop is short.
template <int NT>
struct Walker {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[NT][kMaxRank] = {};

  BARACUDA_HD int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
  // Offsets of element `linear` of the first `dims` dims (all by default); linear must be in
  // range, so the outermost dim needs no division.
  BARACUDA_HD void offsets(int64_t linear, int64_t (&off)[NT], int dims = -1) const {
    if (dims < 0) dims = rank;
    for (int t = 0; t < NT; ++t) off[t] = 0;
    for (int d = dims - 1; d > 0; --d) {
      const int64_t q = linear / sizes[d];
      const int64_t i = linear - q * sizes[d];
      linear = q;
      for (int t = 0; t < NT; ++t) off[t] += i * strides[t][d];
    }
    if (dims > 0)
      for (int t = 0; t < NT; ++t) off[t] += linear * strides[t][0];
  }
  // The innermost dim's size (1 for rank 0) and each tensor's stride along it.
  BARACUDA_HD int64_t inner_size() const { return rank ? sizes[rank - 1] : 1; }
  BARACUDA_HD int64_t inner_stride(int t) const { return rank ? strides[t][rank - 1] : 0; }
};

#if !defined(__CUDACC_RTC__)
// Drops size-1 dims (and dims not selected by `keep`) and merges adjacent dims that every tensor
// steps through as one. Returns the collapsed rank.
inline int collapse_dims(const Shape& shape, const Strides* const* strides, int count, const bool* keep, int64_t* sizes,
                         int64_t (*out_strides)[kMaxRank]) {
  int rank = 0;
  for (int d = 0; d < shape.rank; ++d) {
    if (shape.dims[d] == 1 || (keep && !keep[d])) continue;
    bool merge = rank > 0;
    for (int t = 0; t < count && merge; ++t) {
      // The strides of an empty view are unchecked: their product may overflow (then no merge).
      int64_t step = 0;
      merge = !__builtin_mul_overflow((*strides[t])[d], shape.dims[d], &step) && out_strides[t][rank - 1] == step;
    }
    if (merge) {
      sizes[rank - 1] *= shape.dims[d];
      for (int t = 0; t < count; ++t) out_strides[t][rank - 1] = (*strides[t])[d];
      continue;
    }
    sizes[rank] = shape.dims[d];
    for (int t = 0; t < count; ++t) out_strides[t][rank] = (*strides[t])[d];
    ++rank;
  }
  return rank;
}

// Builds a Walker over the dims of `shape` selected by `keep` (all dims when keep is null).
template <int NT>
Walker<NT> make_walker(const Shape& shape, const Strides* const (&strides)[NT], const bool* keep = nullptr) {
  Walker<NT> w;
  w.rank = collapse_dims(shape, strides, NT, keep, w.sizes, w.strides);
  return w;
}
#endif

// The transposed path's walk (ops/elementwise_layout.hpp's transposed_walk makes one).
inline constexpr int64_t kTransposedMinSize = 16;
// CUDA's tiles of the path (cuda/common/elementwise_transposed.cuh) are kTransposedLanes pieces a
// side, a piece 16 bytes of the widest tensor's dtype and at most 8 elements (8-bit pairs take 8-byte
// accesses: 16 x 16 bytes a thread held 164 registers). The host counts tiles to choose the path.
inline constexpr int kTransposedLanes = 16;
constexpr int transposed_piece(size_t widest_bytes) { return 16 / widest_bytes < 8 ? int(16 / widest_bytes) : 8; }
template <int NT>
struct TransposedWalk {
  int staged = -1;
  int64_t p_size = 0, q_size = 0;
  int64_t p_strides[NT] = {}, q_strides[NT] = {};
  Walker<NT> batch;
  int64_t batches = 1;
};

// The pointers of an elementwise launch: inputs of element type In, outputs of Out (a cast's differ;
// every other op's are one type), but the first input of First where that differs (where's bool
// condition): in[0] then holds a First*, read through input_value / the backends' pack loads.
template <class In, class Out, int kIn, int kOut, class First = In>
struct Operands {
  using FirstType = First;
  const In* in[kIn > 0 ? kIn : 1];
  Out* out[kOut];
};

// Input k's element at offset `off`, in the compute type Acc.
template <class Acc, class In, class Out, int kIn, int kOut, class First>
BARACUDA_HD Acc input_value(const Operands<In, Out, kIn, kOut, First>& p, int k, int64_t off) {
  if constexpr (!std::is_same_v<First, In>)
    if (k == 0) return convert<Acc>(reinterpret_cast<const First*>(p.in[0])[off]);
  return convert<Acc>(p.in[k][off]);
}

// Array sizes of a functor's arguments: a fill has no input.
template <int N>
inline constexpr int kSlots = N > 0 ? N : 1;

// Applies `op` to the element at offsets off[0..kIn) (inputs) and off[kIn..kIn+kOut) (outputs),
// converting into the compute type and back by common/convert.hpp.
template <class In, class Out, class Op, class First>
BARACUDA_HD void apply_at(const Op& op, const Operands<In, Out, Op::kIn, Op::kOut, First>& p,
                          const int64_t (&off)[Op::kIn + Op::kOut]) {
  using Acc = typename Op::Acc;
  Acc x[kSlots<Op::kIn>];
  Acc y[Op::kOut];
  for (int k = 0; k < Op::kIn; ++k) x[k] = input_value<Acc>(p, k, off[k]);
  op(x, y);
  for (int k = 0; k < Op::kOut; ++k) p.out[k][off[Op::kIn + k]] = convert<Out>(y[k]);
}

// Same for contiguous operands at element i.
template <class In, class Out, class Op, class First>
BARACUDA_HD void apply_contiguous(const Op& op, const Operands<In, Out, Op::kIn, Op::kOut, First>& p, int64_t i) {
  using Acc = typename Op::Acc;
  Acc x[kSlots<Op::kIn>];
  Acc y[Op::kOut];
  for (int k = 0; k < Op::kIn; ++k) x[k] = input_value<Acc>(p, k, i);
  op(x, y);
  for (int k = 0; k < Op::kOut; ++k) p.out[k][i] = convert<Out>(y[k]);
}

}  // namespace baracuda::detail
