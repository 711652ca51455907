#pragma once
// Naive double-precision references for the binary family, on the C library's <cmath>, independent of
// both backends (nothing here calls src/common/binary_math.hpp): f(a, b) and the gradients PyTorch's
// autograd gives, with its choices at the points where f is not differentiable; broadcasting by
// NumPy's rules, each broadcast operand's gradient summed over the elements that read it.
#include <cmath>
#include <limits>

#include "baracuda/ops/binary.hpp"
#include "harness/data.hpp"
#include "harness/op_table.hpp"
#include "harness/reference/binary_param_reference.hpp"
#include "harness/reference/integer_reference.hpp"

namespace baracuda::reference {

namespace binary_detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The quotient a / b as the kernels hold it: rounded to f32 unless the dtype is f64 (the truncated
// quotient of f32 operands then agrees with theirs; the f64 quotient rounded to f32 is the f32
// quotient, division being one of the operations double rounding through f64 leaves exact).
inline double quotient(double a, double b, bool f64) {
  return f64 ? a / b : static_cast<double>(static_cast<float>(a / b));
}

// floor(a / b) of the real quotient, from the exact remainder: the nearest integer to (a - r) / b.
inline double floor_quotient(double a, double b, bool f64) {
  if (b == 0) return a / b;
  const double r = std::fmod(a, b);
  double q = std::round((a - r) / b);
  if (r != 0 && ((b < 0) != (r < 0))) q -= 1;
  if (q == 0) return std::copysign(0.0, a / b);
  return f64 ? q : static_cast<double>(static_cast<float>(q));
}

}  // namespace binary_detail

inline double binary(BinaryKind kind, double a, double b, double alpha, bool f64) {
  using namespace binary_detail;
  switch (kind) {
    case BinaryKind::add:
      return a + alpha * b;
    case BinaryKind::sub:
      return a - alpha * b;
    case BinaryKind::mul:
      return a * b;
    case BinaryKind::div:
      return a / b;
    case BinaryKind::div_floor:
      return floor_quotient(a, b, f64);
    case BinaryKind::div_trunc:
      return std::trunc(quotient(a, b, f64));
    case BinaryKind::remainder: {  // Python's %: fmod, moved by b where the signs differ
      const double r = std::fmod(a, b);
      return (r != 0 && ((b < 0) != (r < 0))) ? r + b : r;
    }
    case BinaryKind::fmod:
      return std::fmod(a, b);
    case BinaryKind::pow:
      return std::pow(a, b);
    case BinaryKind::atan2:
      return std::atan2(a, b);
    case BinaryKind::hypot:
      return std::hypot(a, b);
    case BinaryKind::maximum:
      return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
    case BinaryKind::minimum:
      return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
    case BinaryKind::fmax:
      return std::fmax(a, b);
    case BinaryKind::fmin:
      return std::fmin(a, b);
    case BinaryKind::copysign:
      return std::copysign(a, b);
    case BinaryKind::logaddexp:
      if (std::isnan(a) || std::isnan(b)) return kNaN;
      if (a == b && std::isinf(a)) return a;
      return std::max(a, b) + std::log1p(std::exp(-std::fabs(a - b)));
    case BinaryKind::xlogy:
      if (std::isnan(b)) return kNaN;
      return a == 0 ? 0.0 : a * std::log(b);
    case BinaryKind::eq:
      return a == b;
    case BinaryKind::ne:
      return a != b;
    case BinaryKind::lt:
      return a < b;
    case BinaryKind::le:
      return a <= b;
    case BinaryKind::gt:
      return a > b;
    case BinaryKind::ge:
      return a >= b;
    case BinaryKind::logical_and:
      return a != 0 && b != 0;
    case BinaryKind::logical_or:
      return a != 0 || b != 0;
    case BinaryKind::logical_xor:
      return (a != 0) != (b != 0);
    default:  // the bitwise kinds: integers alone
      break;
  }
  return kNaN;
}

// f(a, b) for an integer (or bool) dtype, as PyTorch's integer tensors give it, with the results
// binary.hpp defines where C++'s are not (by 0: 0; shifts past the dtype's width: 0 or the sign).
// div is true division in f32.
inline double binary_integer(BinaryKind kind, int64_t a, int64_t b, int64_t alpha, DType dtype) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  auto trunc_div = [&] { return b == -1 ? wrap_to(dtype, 0 - ua) : wrap_to(dtype, static_cast<uint64_t>(a / b)); };
  auto fmod = [&]() -> int64_t { return (b == 0 || b == -1) ? 0 : a % b; };
  switch (kind) {
    case BinaryKind::add:
      return wrap_to(dtype, ua + static_cast<uint64_t>(alpha) * ub);
    case BinaryKind::sub:
      return wrap_to(dtype, ua - static_cast<uint64_t>(alpha) * ub);
    case BinaryKind::mul:
      return wrap_to(dtype, ua * ub);
    case BinaryKind::div:
      return static_cast<float>(static_cast<float>(a) / static_cast<float>(b));
    case BinaryKind::div_trunc:
      return b == 0 ? 0.0 : trunc_div();
    case BinaryKind::div_floor: {
      if (b == 0) return 0.0;
      const double q = trunc_div();
      return (fmod() != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case BinaryKind::fmod:
      return static_cast<double>(fmod());
    case BinaryKind::remainder: {
      const int64_t r = fmod();
      return static_cast<double>((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
    }
    case BinaryKind::pow: {  // b products (the exponents here are below a few thousand); b < 0 truncates
      if (b < 0) return a == 1 ? 1.0 : (a == -1 ? (b % 2 != 0 ? -1.0 : 1.0) : 0.0);
      uint64_t p = 1;
      for (int64_t k = 0; k < b; ++k) p *= ua;
      return wrap_to(dtype, p);
    }
    case BinaryKind::maximum:
    case BinaryKind::fmax:
      return static_cast<double>(a > b ? a : b);
    case BinaryKind::minimum:
    case BinaryKind::fmin:
      return static_cast<double>(a < b ? a : b);
    case BinaryKind::bitwise_and:
      return wrap_to(dtype, ua & ub);
    case BinaryKind::bitwise_or:
      return wrap_to(dtype, ua | ub);
    case BinaryKind::bitwise_xor:
      return wrap_to(dtype, ua ^ ub);
    case BinaryKind::shift_left:
      return (b < 0 || b >= bit_width(dtype)) ? 0.0 : wrap_to(dtype, ua << b);
    case BinaryKind::shift_right:
      if (b < 0 || b >= bit_width(dtype)) return a < 0 ? -1.0 : 0.0;
      return static_cast<double>(a >> b);
    default:  // the predicates: as the floats' (exact on these integers)
      return binary(kind, static_cast<double>(a), static_cast<double>(b), 1.0, true);
  }
}

// d out / d a and d out / d b at (a, b), times dout, as PyTorch's autograd gives them.
inline void binary_gradients(BinaryKind kind, double dout, double a, double b, double alpha, bool f64, double& da,
                             double& db) {
  using namespace binary_detail;
  switch (kind) {
    case BinaryKind::add:
      da = dout, db = alpha * dout;
      return;
    case BinaryKind::sub:
      da = dout, db = -alpha * dout;
      return;
    case BinaryKind::mul:
      da = dout * b, db = dout * a;
      return;
    case BinaryKind::div:
      da = dout / b, db = -dout * a / (b * b);
      return;
    case BinaryKind::div_floor:
    case BinaryKind::div_trunc:
      da = db = 0;
      return;
    case BinaryKind::remainder:
      da = dout, db = -dout * floor_quotient(a, b, f64);
      return;
    case BinaryKind::fmod:
      da = dout, db = -dout * std::trunc(quotient(a, b, f64));
      return;
    case BinaryKind::pow:
      da = b == 0 ? 0.0 : dout * b * std::pow(a, b - 1);
      db = a == 0 && b >= 0 ? 0.0 : dout * std::pow(a, b) * std::log(a);
      return;
    case BinaryKind::atan2: {
      const double r = a * a + b * b;
      da = dout * b / r, db = -dout * a / r;
      return;
    }
    case BinaryKind::hypot: {
      const double h = std::hypot(a, b);
      da = dout * a / h, db = dout * b / h;
      return;
    }
    case BinaryKind::maximum:
    case BinaryKind::minimum: {
      const double g = a == b ? dout / 2 : dout;
      const bool a_loses = kind == BinaryKind::maximum ? a < b : a > b;
      const bool b_loses = kind == BinaryKind::maximum ? a > b : a < b;
      da = a_loses ? 0.0 : g, db = b_loses ? 0.0 : g;
      return;
    }
    case BinaryKind::fmax:
    case BinaryKind::fmin: {
      const bool to_a = (kind == BinaryKind::fmax ? a >= b : a <= b) || std::isnan(b);
      da = to_a ? dout : 0.0, db = to_a ? 0.0 : dout;
      return;
    }
    case BinaryKind::copysign:
      da = a == 0 ? 0.0 : dout * std::copysign(1.0, a) * std::copysign(1.0, b), db = 0;
      return;
    case BinaryKind::logaddexp:
      da = dout / (1 + std::exp(b - a)), db = dout / (1 + std::exp(a - b));
      return;
    case BinaryKind::xlogy:
      da = (a == 0 && b <= 0) ? 0.0 : (std::isnan(b) ? kNaN : (dout == 0 ? 0.0 : dout * std::log(b)));
      db = dout * a / b;
      return;
    default:  // the predicates: no gradient
      break;
  }
  da = db = kNaN;
}

// A number as the compute type holds it: f64, or f32 for the other dtypes.
inline double compute_value(double v, bool f64) { return f64 ? v : static_cast<double>(static_cast<float>(v)); }

// The output's shape and, for element i of it, the element each operand reads (0 for a scalar).
struct BinaryIndexing {
  Shape out;
  bool a_scalar, b_scalar;
  Shape a_shape, b_shape;
  int64_t a_of(int64_t i) const { return a_scalar ? 0 : broadcast_index(out, a_shape, i); }
  int64_t b_of(int64_t i) const { return b_scalar ? 0 : broadcast_index(out, b_shape, i); }
};
inline BinaryIndexing binary_indexing(const BinaryDescriptor& d) {
  return {binary_output_shape(d).value_or(Shape{}), d.a_scalar.has_value(), d.b_scalar.has_value(), d.a_shape,
          d.b_shape};
}

// The dtype a and b are computed in: theirs, promoted where b_dtype differs (PyTorch's rules), or where
// the scalar is of a higher category (bool < integer < float: an integer one gives i64, a float one
// f32; written here, not taken from the library's promote_with_scalar).
inline DType operand_dtype(const BinaryDescriptor& d) {
  if (d.b_dtype && *d.b_dtype != d.dtype) return promote_types(d.dtype, *d.b_dtype).value_or(d.dtype);
  if (!d.scalar_dtype || (!d.a_scalar && !d.b_scalar)) return d.dtype;
  auto category = [](DType t) { return is_floating(t) ? 2 : (t == DType::boolean ? 0 : 1); };
  if (category(*d.scalar_dtype) <= category(d.dtype)) return d.dtype;
  return is_floating(*d.scalar_dtype) ? DType::f32 : DType::i64;
}
// An operand's element as the kernels compute with it: in the promoted dtype (an integer in a
// 16-bit float or f32 rounds).
inline double operand(const harness::HostView& v, int64_t i, DType to) { return harness::quantize(to, v.at(i)); }

// out = f(a, b) for every element.
inline void binary_forward(const BinaryDescriptor& d, harness::RefIO& io) {
  const BinaryIndexing ix = binary_indexing(d);
  const DType to = operand_dtype(d);
  const bool f64 = to == DType::f64;
  const harness::HostView* a = d.a_scalar ? nullptr : &io.in("a");
  const harness::HostView* b = d.b_scalar ? nullptr : &io.in("b");
  harness::RefOutput& out = io.out("out");
  for (int64_t i = 0, numel = ix.out.numel(); i < numel; ++i) {
    if (!out.wanted(i)) continue;
    if (!is_floating(to)) {  // (a scalar of an integer dtype is a whole number in its range)
      const auto x = static_cast<int64_t>(a ? a->at(ix.a_of(i)) : *d.a_scalar);
      const auto y = static_cast<int64_t>(b ? b->at(ix.b_of(i)) : *d.b_scalar);
      out.set(i, binary_integer(d.kind, x, y, static_cast<int64_t>(d.alpha), to));
      continue;
    }
    // A scalar operand as the kernels hold it: in the compute type (a predicate sees the difference).
    const double x = a ? operand(*a, ix.a_of(i), to) : compute_value(*d.a_scalar, f64);
    const double y = b ? operand(*b, ix.b_of(i), to) : compute_value(*d.b_scalar, f64);
    out.set(i, binary(d.kind, x, y, d.alpha, f64));
  }
}

// da and db, each summed over the output elements that read its element.
inline void binary_backward(const BinaryDescriptor& d, harness::RefIO& io) {
  const BinaryIndexing ix = binary_indexing(d);
  const bool f64 = operand_dtype(d) == DType::f64;
  const harness::HostView& dout = io.in("dout");
  // (add's and sub's backward takes no a or b: their gradients do not read them)
  const bool operands = binary_gradient_reads_operands(d.kind);
  const harness::HostView* a = d.a_scalar || !operands ? nullptr : &io.in("a");
  const harness::HostView* b = d.b_scalar || !operands ? nullptr : &io.in("b");
  harness::RefOutput* da = d.a_scalar ? nullptr : &io.out("da");
  harness::RefOutput* db = d.b_scalar ? nullptr : &io.out("db");
  // (A gradient element no output element reads is a sum of nothing: it starts at 0.)
  for (int64_t i = 0, numel = ix.out.numel(); i < numel; ++i) {
    const int64_t ka = ix.a_of(i), kb = ix.b_of(i);
    const bool want_a = da && da->wanted(ka), want_b = db && db->wanted(kb);
    if (!want_a && !want_b) continue;
    const double x = a ? a->at(ka) : d.a_scalar.value_or(0.0), y = b ? b->at(kb) : d.b_scalar.value_or(0.0);
    double ga = 0, gb = 0;
    binary_gradients(d.kind, dout.at(i), x, y, d.alpha, f64, ga, gb);
    if (want_a) da->add(ka, ga);
    if (want_b) db->add(kb, gb);
  }
}

}  // namespace baracuda::reference
