#pragma once
// Naive double-precision references for the BinaryParam family, independent of both backends: the
// formulas, and the whole ops over the op table's RefIO (a weight tensor broadcast to the shape).
#include <cstdint>

#include "baracuda/ops/binary_param.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

inline double lerp(double a, double b, double w) { return a + w * (b - a); }
inline double lerp_da(double dout, double w) { return (1.0 - w) * dout; }
inline double lerp_db(double dout, double w) { return w * dout; }
inline double lerp_dw(double dout, double a, double b) { return (b - a) * dout; }

inline double addcmul(double a, double b, double w) { return a + w * b; }
inline double addcmul_da(double dout, double /*w*/) { return dout; }
inline double addcmul_db(double dout, double w) { return w * dout; }
inline double addcmul_dw(double dout, double /*a*/, double b) { return b * dout; }

// The element (row-major in weight_shape) of a weight broadcast to `shape` that element `i` reads.
inline int64_t broadcast_index(const Shape& shape, const Shape& weight_shape, int64_t i) {
  int64_t idx[kMaxRank] = {};
  for (int d = shape.rank - 1; d >= 0; --d) {
    idx[d] = i % shape.dims[d];
    i /= shape.dims[d];
  }
  const int offset = shape.rank - weight_shape.rank;
  int64_t w = 0;
  for (int d = 0; d < weight_shape.rank; ++d)
    w = w * weight_shape.dims[d] + (weight_shape.dims[d] == 1 ? 0 : idx[d + offset]);
  return w;
}

// out = f(a, b, w) for every element.
template <class F>
void binary_param_forward(const BinaryParamDescriptor& d, harness::RefIO& io, F f) {
  const bool tensor = d.weight_mode == WeightMode::tensor;
  const harness::HostView &a = io.in("a"), &b = io.in("b");
  const harness::HostView* w = tensor ? &io.in("weight") : nullptr;
  harness::RefOutput& out = io.out("out");
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i)
    if (out.wanted(i))
      out.set(i, f(a.at(i), b.at(i), w ? w->at(broadcast_index(d.shape, d.weight_shape, i)) : d.weight));
}

// da = da_of(dout, w), db = db_of(dout, w) and, for a weight tensor, dweight = the sum of
// dw_of(dout, a, b) over the elements that read each weight element.
template <class Da, class Db, class Dw>
void binary_param_backward(const BinaryParamDescriptor& d, harness::RefIO& io, Da da_of, Db db_of, Dw dw_of) {
  const bool tensor = d.weight_mode == WeightMode::tensor;
  const harness::HostView& dout = io.in("dout");
  harness::RefOutput &da = io.out("da"), &db = io.out("db");
  const harness::HostView *a = nullptr, *b = nullptr, *w = nullptr;
  harness::RefOutput* dw = nullptr;
  if (tensor) {
    a = &io.in("a");
    b = &io.in("b");
    w = &io.in("weight");
    dw = &io.out("dweight");
  }
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i) {
    const int64_t k = tensor ? broadcast_index(d.shape, d.weight_shape, i) : 0;
    const double wv = tensor ? w->at(k) : d.weight;
    if (da.wanted(i)) da.set(i, da_of(dout.at(i), wv));
    if (db.wanted(i)) db.set(i, db_of(dout.at(i), wv));
    if (tensor && dw->wanted(k)) dw->add(k, dw_of(dout.at(i), a->at(i), b->at(i)));
  }
}

}  // namespace baracuda::reference
