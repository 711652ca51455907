#pragma once
// Naive double-precision references for the ternary family, on the C library's <cmath>, independent of
// both backends (nothing here calls src/common/ternary_math.hpp): f(a, b, c) and the gradients
// PyTorch's autograd gives (include/baracuda/ops/ternary.hpp lists them); broadcasting by NumPy's
// rules, each broadcast operand's gradient summed over the elements that read it.
#include <cmath>
#include <limits>

#include "baracuda/ops/ternary.hpp"
#include "harness/op_table.hpp"
#include "harness/reference/binary_param_reference.hpp"

namespace baracuda::reference {

inline double ternary(TernaryKind kind, double a, double b, double c, double value) {
  switch (kind) {
    case TernaryKind::where:
      return a != 0 ? b : c;
    case TernaryKind::clamp:
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      if (std::isnan(c)) return c;
      return std::min(std::max(a, b), c);
    case TernaryKind::addcdiv:
      return a + value * (b / c);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

inline void ternary_gradients(TernaryKind kind, double dout, double a, double b, double c, double value,
                              double (&d)[3]) {
  d[0] = d[1] = d[2] = 0;
  switch (kind) {
    case TernaryKind::where:
      (a != 0 ? d[1] : d[2]) = dout;
      return;
    case TernaryKind::clamp:
      if (a >= b && a <= c) d[0] = dout;
      if (a < b && b < c) d[1] = dout;
      if (a > c || c < b) d[2] = dout;
      return;
    case TernaryKind::addcdiv:
      d[0] = dout;
      d[1] = value * dout / c;
      d[2] = -value * dout * b / (c * c);
      return;
  }
}

// For element i of the output, the element each operand reads (0 for a scalar).
struct TernaryIndexing {
  Shape out;
  std::array<const std::optional<double>*, 3> scalar;
  std::array<Shape, 3> shape;
  int64_t of(int k, int64_t i) const { return scalar[k]->has_value() ? 0 : broadcast_index(out, shape[k], i); }
};
inline TernaryIndexing ternary_indexing(const TernaryDescriptor& d) {
  return {ternary_output_shape(d).value_or(Shape{}),
          {&d.a_scalar, &d.b_scalar, &d.c_scalar},
          {d.a_shape, d.b_shape, d.c_shape}};
}

// A scalar operand as the kernels hold it: f64, or f32 for the other dtypes.
inline double ternary_scalar(const std::optional<double>& s, DType dtype) {
  return dtype == DType::f64 ? *s : static_cast<double>(static_cast<float>(*s));
}

inline void ternary_forward(const TernaryDescriptor& d, harness::RefIO& io) {
  const TernaryIndexing ix = ternary_indexing(d);
  const char* names[3] = {"a", "b", "c"};
  const harness::HostView* in[3];
  for (int k = 0; k < 3; ++k) in[k] = ix.scalar[k]->has_value() ? nullptr : &io.in(names[k]);
  harness::RefOutput& out = io.out("out");
  for (int64_t i = 0, numel = ix.out.numel(); i < numel; ++i) {
    if (!out.wanted(i)) continue;
    double v[3];
    for (int k = 0; k < 3; ++k) v[k] = in[k] ? in[k]->at(ix.of(k, i)) : ternary_scalar(*ix.scalar[k], d.dtype);
    out.set(i, ternary(d.kind, v[0], v[1], v[2], d.value));
  }
}

inline void ternary_backward(const TernaryDescriptor& d, harness::RefIO& io) {
  const TernaryIndexing ix = ternary_indexing(d);
  const char* names[3] = {"a", "b", "c"};
  const char* grads[3] = {"da", "db", "dc"};
  const harness::HostView& dout = io.in("dout");
  const harness::HostView* in[3];
  harness::RefOutput* g[3];
  for (int k = 0; k < 3; ++k) {
    const bool tensor = !ix.scalar[k]->has_value();
    in[k] = tensor ? &io.in(names[k]) : nullptr;
    g[k] = tensor && !(k == 0 && d.kind == TernaryKind::where) ? &io.out(grads[k]) : nullptr;
  }
  // (A gradient element no output element reads is a sum of nothing: it starts at 0.)
  for (int64_t i = 0, numel = ix.out.numel(); i < numel; ++i) {
    int64_t at[3];
    bool any = false;
    for (int k = 0; k < 3; ++k) {
      at[k] = ix.of(k, i);
      any = any || (g[k] && g[k]->wanted(at[k]));
    }
    if (!any) continue;
    double v[3], dv[3];
    for (int k = 0; k < 3; ++k) v[k] = in[k] ? in[k]->at(at[k]) : ternary_scalar(*ix.scalar[k], d.dtype);
    ternary_gradients(d.kind, dout.at(i), v[0], v[1], v[2], d.value, dv);
    for (int k = 0; k < 3; ++k)
      if (g[k] && g[k]->wanted(at[k])) g[k]->add(at[k], dv[k]);
  }
}

}  // namespace baracuda::reference
