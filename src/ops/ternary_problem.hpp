#pragma once
// What the ternary plans hand to a backend: the validated views expanded to the output's shape (zero
// strides where an operand is broadcast), the path the plan chose and the backward's reduction
// splits. The dispatch from (kind, dtype) to functors is written here once; the CPU compiles one
// translation unit per group of kinds (common/ternary_math.hpp's TernaryGroups), each defining
// launch_group<G> with its launchers, CUDA the functors' kernels at select or first use
// (cuda/ternary.cpp); both call:
//   launch(type_identity<First>, functor, ElementwiseTensors)   an elementwise pass whose first input
//                                                               has element type First
//   reduce(type_identity<First>, BroadcastReduction)            a broadcast operand's gradient
#include <array>
#include <type_traits>
#include <utility>
#include <vector>

#include "baracuda/ops/ternary.hpp"
#include "common/broadcast_reduction.hpp"
#include "common/dispatch.hpp"
#include "common/ternary_math.hpp"
#include "ops/binary_problem.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct TernaryForwardProblem {
  TernaryDescriptor desc;
  Shape shape;  // the output's
  ElementwisePath path = ElementwisePath::strided;
  std::array<AnyTensorRef, 3> operand;  // expanded to shape; no data where the operand is a scalar
  AnyTensorMut out;
};

struct TernaryBackwardProblem {
  TernaryDescriptor desc;
  Shape shape;
  ElementwisePath path = ElementwisePath::strided;  // of the elementwise passes
  AnyTensorRef dout;
  std::array<AnyTensorRef, 3> operand;  // expanded to shape
  std::array<AnyTensorMut, 3> grad;     // expanded; no data where not computed
  // The splits of the reduction of each gradient over the dims its operand is broadcast along; 0
  // where it is not broadcast (its gradient is written elementwise).
  std::array<int64_t, 3> splits{};
  void* workspace = nullptr;
};

// Calls f(std::integral_constant<int, G>{}) for the group of the kind.
template <class F>
Status with_ternary_group(TernaryKind kind, F&& f) {
  return with_group<TernaryGroups>(kind, std::forward<F>(f));
}

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind (a Math of group G) and
// the element type (the backend's own 16-bit types): a forward (kForward) also on the integer dtypes
// (and bool) the Math takes, a backward on the floats alone.
template <int G, bool kForward, class Half, class BFloat16, class F>
Status dispatch_ternary(const TernaryDescriptor& desc, F&& f) {
  return dispatch_kind<std::tuple_element_t<G, TernaryGroups>, Half, BFloat16, kForward>(desc.kind, desc.dtype,
                                                                                         std::forward<F>(f));
}

// The descriptor's scalars in the compute type.
template <class Acc>
TernaryOperands<Acc> ternary_operands(const TernaryDescriptor& d) {
  TernaryOperands<Acc> o;
  const std::optional<double>* scalars[3] = {&d.a_scalar, &d.b_scalar, &d.c_scalar};
  for (int i = 0; i < 3; ++i) {
    o.is_scalar[i] = scalars[i]->has_value();
    o.scalar[i] = scalar_as<Acc>(scalars[i]->value_or(0.0));
  }
  return o;
}

// Calls f(std::integral_constant<int, N>{}) for N = count in [1, 3] (3 alone with kThreeOnly).
template <bool kThreeOnly = false, class F>
Status with_count(int count, F&& f) {
  if constexpr (!kThreeOnly) {
    if (count == 1) return f(std::integral_constant<int, 1>{});
    if (count == 2) return f(std::integral_constant<int, 2>{});
  }
  return f(std::integral_constant<int, 3>{});
}

// The forward with its Math and element type T: launch(type_identity<First>, functor, tensors).
template <class Math, class T, class Launch>
Status ternary_typed(const TernaryForwardProblem& p, Launch&& launch) {
  using Acc = math_compute_t<Math, T>;
  const TernaryOperands<Acc> operands = ternary_operands<Acc>(p.desc);
  int count = 0;
  for (int i = 0; i < 3; ++i) count += operands.is_scalar[i] ? 0 : 1;
  return with_count<!takes_scalar_operands<Math>>(count, [&](auto n) {
    constexpr int kIn = decltype(n)::value;
    ElementwiseTensors<kIn, 1> t{p.path, p.shape};
    int slot = 0;
    for (int i = 0; i < 3; ++i)
      if (!operands.is_scalar[i]) t.in[slot] = p.operand[i].data, t.in_strides[slot++] = p.operand[i].strides;
    t.out[0] = p.out.data;
    t.out_strides[0] = p.out.strides;
    return launch(std::type_identity<ternary_first_t<Math, T>>{},
                  TernaryForward<Math, Acc, kIn>{operands, scalar_as<Acc>(p.desc.value)}, t);
  });
}

// The backward: a reduction for each broadcast operand's gradient (writing on the way the wanted
// gradients of operands that are not broadcast), then one elementwise pass for the wanted gradients
// no reduction wrote. The inputs of every pass: the tensor operands in order, then dout.
template <class Math, class T, class Launch, class Reduce>
Status ternary_typed(const TernaryBackwardProblem& p, Launch&& launch, Reduce&& reduce) {
  using Acc = acc_t<T>;
  using First = ternary_first_t<Math, T>;
  TernaryOperands<Acc> operands = ternary_operands<Acc>(p.desc);
  // A backward that does not read b and c's values takes them as scalars: they are not loaded.
  if constexpr (!gradient_reads_values<Math>) operands.is_scalar[1] = operands.is_scalar[2] = true;
  const Acc value = static_cast<Acc>(p.desc.value);
  const int64_t n = p.shape.numel();
  int count = 0;
  for (int i = 0; i < 3; ++i) count += operands.is_scalar[i] ? 0 : 1;
  auto run = [&](auto tensors) -> Status {
    constexpr int kIn = decltype(tensors)::value + 1;
    // Reductions are compiled where an operand other than the one tensor read may be broadcast.
    constexpr bool kMayReduce = kIn > 2 || !gradient_reads_values<Math>;
    auto inputs = [&]<int kOut>(std::integral_constant<int, kOut>) {
      ElementwiseTensors<kIn, kOut> t{p.path, p.shape};
      int slot = 0;
      for (int i = 0; i < 3; ++i)
        if (!operands.is_scalar[i]) t.in[slot] = p.operand[i].data, t.in_strides[slot++] = p.operand[i].strides;
      t.in[kIn - 1] = p.dout.data;
      t.in_strides[kIn - 1] = p.dout.strides;
      return t;
    };
    bool written[3];
    for (int i = 0; i < 3; ++i) written[i] = !p.grad[i].data;
    // (Where the one tensor operand read is all there is, it has the output's shape: nothing to reduce.)
    for (int r = 0; r < 3 && kMayReduce; ++r) {
      if (written[r] || p.splits[r] == 0) continue;
      auto t = inputs(std::integral_constant<int, 3>{});
      int k = 0;
      for (int i = 0; i < 3; ++i) {
        if (i == r) continue;
        // Another wanted gradient is written on the way where its operand is not broadcast.
        const bool write = !written[i] && p.splits[i] == 0;
        t.out[k] = write ? p.grad[i].data : nullptr;
        t.out_strides[k++] = p.grad[i].strides;
        written[i] = written[i] || write;
      }
      t.out[2] = p.grad[r].data;
      t.out_strides[2] = p.grad[r].strides;
      bool broadcast[kMaxRank];
      const Shape* shapes[3] = {&p.desc.a_shape, &p.desc.b_shape, &p.desc.c_shape};
      broadcast_dims(p.shape, *shapes[r], broadcast);
      if constexpr (kMayReduce) {
        const TernaryReducedGradient<Math, Acc, kIn> body{operands, value, r};
        if (Status s = reduce(std::type_identity<First>{},
                              make_broadcast_reduction<T, First>(body, t, broadcast, p.splits[r], p.workspace));
            !s)
          return s;
      }
      written[r] = true;
    }
    int left[3], count_left = 0;
    for (int i = 0; i < 3; ++i)
      if (!written[i]) left[count_left++] = i;
    if (count_left == 0 || n == 0) return Status::ok();
    return with_count(count_left, [&](auto outs) {
      constexpr int kOut = decltype(outs)::value;
      auto t = inputs(std::integral_constant<int, kOut>{});
      TernaryGradients<Math, Acc, kIn, kOut> op{operands, value, {}};
      for (int k = 0; k < kOut; ++k) {
        op.of[k] = left[k];
        t.out[k] = p.grad[left[k]].data;
        t.out_strides[k] = p.grad[left[k]].strides;
      }
      return launch(std::type_identity<First>{}, op, t);
    });
  };
  if constexpr (!gradient_reads_values<Math>)
    return run(std::integral_constant<int, 1>{});
  else
    return with_count<!takes_scalar_operands<Math>>(count, run);
}

// Backend entry points: launch routes to the kind's group; launch_group<G> is compiled per group.
namespace cpu {
Status launch(const LaunchContext& ctx, const TernaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const TernaryBackwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const TernaryForwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const TernaryBackwardProblem& problem);
}  // namespace cpu
namespace cuda {  // (no groups: the kernels are compiled at select or first use)
Status launch(const LaunchContext& ctx, const TernaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const TernaryBackwardProblem& problem);
// Compiles (or finds in the caches) the forward's kernels of the descriptor: select's part (the
// backward's functors, which the views decide, compile at first use).
Status prepare_ternary(const PlanTarget& target, const TernaryDescriptor& desc);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// Every ternary program (cuda/ternary.cpp).
std::vector<Program> ternary_programs();
}  // namespace baracuda::detail::jit
