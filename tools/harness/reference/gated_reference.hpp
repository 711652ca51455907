#pragma once
// Naive double-precision references for the gated units, on the unary references' activations
// (independent of both backends): x = [a, b] along the last dim, out = a act(b), and its gradient.
#include "baracuda/ops/gated.hpp"
#include "harness/reference/unary_reference.hpp"

namespace baracuda::reference {

inline UnaryKind gated_activation(GatedKind kind) {
  switch (kind) {
    case GatedKind::glu:
      return UnaryKind::sigmoid;
    case GatedKind::swiglu:
      return UnaryKind::silu;
    case GatedKind::geglu:
      return UnaryKind::gelu;
    case GatedKind::geglu_tanh:
      return UnaryKind::gelu_tanh;
    case GatedKind::reglu:
      return UnaryKind::relu;
  }
  return UnaryKind::relu;
}

// Element i of the output's shape [..., D]: its a and b in x [..., 2D] (row-major linear indices).
struct GatedIndex {
  int64_t d;
  int64_t a(int64_t i) const { return i / d * 2 * d + i % d; }
  int64_t b(int64_t i) const { return a(i) + d; }
};

inline void gated_forward(const GatedDescriptor& desc, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& out = io.out("out");
  const GatedIndex ix{desc.shape.dims[desc.shape.rank - 1] / 2};
  const UnaryKind act = gated_activation(desc.kind);
  for (int64_t i = 0; i < out.total(); ++i) {
    if (!out.wanted(i)) continue;
    const double a = x.at(ix.a(i)), f = unary(act, x.at(ix.b(i)), UnaryParameters{});
    out.set(i, a * f, std::fabs(a) * (1 + std::fabs(f)), 1);
  }
}

inline void gated_backward(const GatedDescriptor& desc, harness::RefIO& io) {
  const harness::HostView &dout = io.in("dout"), &x = io.in("x");
  harness::RefOutput& dx = io.out("dx");
  const GatedIndex ix{desc.shape.dims[desc.shape.rank - 1] / 2};
  const UnaryKind act = gated_activation(desc.kind);
  for (int64_t i = 0, numel = dout.numel(); i < numel; ++i) {
    const double g = dout.at(i), a = x.at(ix.a(i)), b = x.at(ix.b(i));
    if (dx.wanted(ix.a(i))) {
      const double f = unary(act, b, UnaryParameters{});
      dx.set(ix.a(i), g * f, std::fabs(g) * (1 + std::fabs(f)), 1);
    }
    if (dx.wanted(ix.b(i))) {
      const double v = unary_backward(act, g * a, b, UnaryParameters{});
      dx.set(ix.b(i), v, std::fabs(g * a) * (1 + std::fabs(v)), 1);
    }
  }
}

}  // namespace baracuda::reference
