#pragma once
// Naive double-precision references of the matmul plans, independent of both backends: every
// product a term of its sum (so the tolerance grows with K, as RefOutput keeps it), batch dims
// broadcast as torch.matmul, the gradients summed over the dims their operand was broadcast along.
#include <cmath>
#include <cstdint>
#include <vector>

#include "baracuda/ops/matmul.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

// Element (batch index over `batch`, row i, col j) of a stored operand whose op is [rows, cols]
// (a vector is a row or a column), as a linear row-major index of its own shape.
struct OperandIndex {
  Shape shape;
  bool vector = false, transpose = false, is_row = true;  // is_row: a vector is op's row (a) or column (b)
  int64_t at(const Shape& batch, int64_t b, int64_t i, int64_t j) const {
    if (vector) return is_row ? j : i;
    const int own = shape.rank - 2;
    // The batch index along the operand's own (right-aligned) dims; 1-sized dims broadcast.
    int64_t linear = 0, rest = b;
    int64_t coords[kMaxRank] = {};
    for (int d = batch.rank - 1; d >= 0; --d) {
      coords[d] = rest % std::max<int64_t>(batch.dims[d], 1);
      rest /= std::max<int64_t>(batch.dims[d], 1);
    }
    for (int d = 0; d < own; ++d) {
      const int bd = d + (batch.rank - own);
      linear = linear * shape.dims[d] + (shape.dims[d] == 1 ? 0 : coords[bd]);
    }
    const int64_t r = transpose ? j : i, c = transpose ? i : j;
    return (linear * shape.dims[own] + r) * shape.dims[own + 1] + c;
  }
};

struct MatmulRefShapes {
  Shape batch;
  int64_t m = 1, k = 1, n = 1;
  OperandIndex a, b;
  bool a_vector = false, b_vector = false;
};
inline MatmulRefShapes matmul_ref_shapes(const MatmulDescriptor& d) {
  MatmulRefShapes s;
  s.a_vector = d.a.rank == 1;
  s.b_vector = d.b.rank == 1;
  const int ra = d.a.rank, rb = d.b.rank;
  s.k = s.a_vector ? d.a.dims[0] : d.a.dims[ra - (d.transpose_a ? 2 : 1)];
  if (!s.a_vector) s.m = d.a.dims[ra - (d.transpose_a ? 1 : 2)];
  if (!s.b_vector) s.n = d.b.dims[rb - (d.transpose_b ? 2 : 1)];
  const int ba = s.a_vector ? 0 : ra - 2, bb = s.b_vector ? 0 : rb - 2;
  s.batch.rank = std::max(ba, bb);
  for (int i = 0; i < s.batch.rank; ++i) {
    const int ia = i - (s.batch.rank - ba), ib = i - (s.batch.rank - bb);
    const int64_t da = ia >= 0 ? d.a.dims[ia] : 1, db = ib >= 0 ? d.b.dims[ib] : 1;
    s.batch.dims[i] = da == 1 ? db : da;
  }
  s.a = {d.a, s.a_vector, d.transpose_a, true};
  s.b = {d.b, s.b_vector, d.transpose_b, false};
  return s;
}

inline void matmul_forward(const MatmulDescriptor& d, harness::RefIO& io) {
  const MatmulRefShapes s = matmul_ref_shapes(d);
  const harness::HostView &a = io.in("a"), &b = io.in("b");
  harness::RefOutput& out = io.out("out");
  const int64_t batches = s.batch.numel();
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const int64_t o = (bi * s.m + i) * s.n + j;
        if (!out.wanted(o)) continue;
        out.set(o, 0.0);
        if (d.has_c && d.beta != 0) out.add(o, d.beta * io.in("c").at(o));
        for (int64_t k = 0; k < s.k; ++k)
          out.add(o, d.alpha * a.at(s.a.at(s.batch, bi, i, k)) * b.at(s.b.at(s.batch, bi, k, j)));
      }
}

// Each wanted gradient element on its own (the profiler checks a sample of a large problem): the
// sum over every batch entry that reads it and over the contracted dim.
inline void matmul_backward(const MatmulDescriptor& d, harness::RefIO& io) {
  const MatmulRefShapes s = matmul_ref_shapes(d);
  const harness::HostView &a = io.in("a"), &b = io.in("b"), &dout = io.in("dout");
  const int64_t batches = s.batch.numel();
  auto gradient = [&](std::string_view name, const OperandIndex& op, bool of_a) {
    if (!io.specs[static_cast<size_t>(io.index_of(name))].present) return;
    harness::RefOutput& g = io.out(name);
    const int64_t total = op.shape.numel();
    for (int64_t e = 0; e < total; ++e) {
      if (!g.wanted(e)) continue;
      g.set(e, 0.0);
      // The element's place in op(operand): row r, column c.
      int64_t r = 0, c = 0;
      if (op.vector) {
        (op.is_row ? c : r) = e;
      } else {
        const int64_t n_cols = op.shape.dims[op.shape.rank - 1], n_rows = op.shape.dims[op.shape.rank - 2];
        const int64_t rs = e / n_cols % n_rows, cs = e % n_cols;
        r = op.transpose ? cs : rs;
        c = op.transpose ? rs : cs;
      }
      for (int64_t bi = 0; bi < batches; ++bi) {
        if (op.at(s.batch, bi, r, c) != e) continue;  // an entry of the batch that reads another element
        // da[r = i, c = k] = sum_j dout[i, j] b[k, j]; db[r = k, c = j] = sum_i a[i, k] dout[i, j]
        const int64_t other = of_a ? s.n : s.m;
        for (int64_t t = 0; t < other; ++t) {
          const double up = of_a ? dout.at((bi * s.m + r) * s.n + t) : dout.at((bi * s.m + t) * s.n + c);
          const double x = of_a ? b.at(s.b.at(s.batch, bi, c, t)) : a.at(s.a.at(s.batch, bi, t, r));
          g.add(e, d.alpha * up * x);
        }
      }
    }
  };
  gradient("da", s.a, true);
  gradient("db", s.b, false);
}

inline double activate(Activation act, double x) {
  switch (act) {
    case Activation::relu:
      return x > 0 ? x : 0.0;
    case Activation::gelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::silu:
      return x / (1 + std::exp(-x));
    case Activation::none:
      break;
  }
  return x;
}
inline double activation_slope(Activation act, double x) {
  switch (act) {
    case Activation::relu:
      return x > 0 ? 1.0 : 0.0;
    case Activation::gelu:
      return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case Activation::gelu_tanh: {
      const double c = std::sqrt(2 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    }
    case Activation::silu: {
      const double sig = 1 / (1 + std::exp(-x));
      return sig * (1 + x * (1 - sig));
    }
    case Activation::none:
      break;
  }
  return 1.0;
}

struct LinearRefShapes {
  int64_t rows = 1, in = 0, out = 0;
};
inline LinearRefShapes linear_ref_shapes(const LinearDescriptor& d) {
  LinearRefShapes s;
  for (int i = 0; i + 1 < d.x.rank; ++i) s.rows *= d.x.dims[i];
  s.in = d.x.dims[d.x.rank - 1];
  s.out = d.out_features;
  return s;
}

inline void linear_forward(const LinearDescriptor& d, harness::RefIO& io) {
  const LinearRefShapes s = linear_ref_shapes(d);
  const harness::HostView &x = io.in("x"), &w = io.in("weight");
  const bool want_pre = d.activation != Activation::none && io.specs[static_cast<size_t>(io.index_of("pre"))].present;
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t o = 0; o < s.out; ++o) {
      const int64_t e = r * s.out + o;
      const bool pre_wanted = want_pre && io.out("pre").wanted(e);
      if (!pre_wanted && !io.out("y").wanted(e)) continue;
      double sum = d.has_bias ? io.in("bias").at(o) : 0.0, magnitude = std::fabs(sum);
      for (int64_t i = 0; i < s.in; ++i) {
        const double t = x.at(r * s.in + i) * w.at(o * s.in + i);
        sum += t;
        magnitude += std::fabs(t);
      }
      if (pre_wanted) io.out("pre").set(e, sum, magnitude, s.in + 1);
      io.out("y").set(e, activate(d.activation, sum), magnitude, s.in + 1);
    }
}

inline void linear_backward(const LinearDescriptor& d, harness::RefIO& io) {
  const LinearRefShapes s = linear_ref_shapes(d);
  const harness::HostView &x = io.in("x"), &w = io.in("weight"), &dy = io.in("dy");
  auto present = [&](std::string_view name) { return io.specs[static_cast<size_t>(io.index_of(name))].present; };
  auto dpre = [&](int64_t r, int64_t o) {
    const int64_t e = r * s.out + o;
    return dy.at(e) * (d.activation == Activation::none ? 1.0 : activation_slope(d.activation, io.in("pre").at(e)));
  };
  if (present("dx"))
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t i = 0; i < s.in; ++i) {
        const int64_t e = r * s.in + i;
        if (!io.out("dx").wanted(e)) continue;
        io.out("dx").set(e, 0.0);
        for (int64_t o = 0; o < s.out; ++o) io.out("dx").add(e, dpre(r, o) * w.at(o * s.in + i));
      }
  if (present("dweight"))
    for (int64_t o = 0; o < s.out; ++o)
      for (int64_t i = 0; i < s.in; ++i) {
        const int64_t e = o * s.in + i;
        if (!io.out("dweight").wanted(e)) continue;
        io.out("dweight").set(e, 0.0);
        for (int64_t r = 0; r < s.rows; ++r) io.out("dweight").add(e, dpre(r, o) * x.at(r * s.in + i));
      }
  if (d.has_bias && present("dbias"))
    for (int64_t o = 0; o < s.out; ++o) {
      if (!io.out("dbias").wanted(o)) continue;
      io.out("dbias").set(o, 0.0);
      for (int64_t r = 0; r < s.rows; ++r) io.out("dbias").add(o, dpre(r, o));
    }
}

// The grouped plans: each row's group from the offsets (a group ends at its offset clamped into
// [0, T] and at least where the previous one ended; offsets outside [0, T] and below their
// predecessor counted), -1 for the rows after the last group.
struct GroupedRefCase {
  std::vector<int64_t> group_of, start;  // per row; per group, its first row
  std::vector<int64_t> count;            // per group
  int64_t bad = 0;
};
inline GroupedRefCase grouped_ref_case(const GroupedMatmulDescriptor& d, const harness::RefIO& io) {
  GroupedRefCase c;
  c.group_of.assign(static_cast<size_t>(d.rows), -1);
  const harness::HostView& offsets = io.in("offsets");
  int64_t row = 0;
  for (int64_t g = 0; g < d.groups; ++g) {
    const auto raw = static_cast<int64_t>(offsets.at(g));
    int64_t end = raw < 0 ? 0 : (raw > d.rows ? d.rows : raw);
    c.bad += raw != end ? 1 : 0;
    c.bad += g > 0 && raw < static_cast<int64_t>(offsets.at(g - 1)) ? 1 : 0;
    if (end < row) end = row;
    c.start.push_back(row);
    c.count.push_back(end - row);
    for (; row < end; ++row) c.group_of[static_cast<size_t>(row)] = g;
  }
  return c;
}
// Element (k, j) of op(b[g]) [K, N] as a row-major index of b's stored shape.
inline int64_t grouped_b_at(const GroupedMatmulDescriptor& d, int64_t g, int64_t k, int64_t j) {
  return d.transpose_b ? (g * d.n + j) * d.k + k : (g * d.k + k) * d.n + j;
}

inline void grouped_matmul_forward(const GroupedMatmulDescriptor& d, harness::RefIO& io) {
  const GroupedRefCase c = grouped_ref_case(d, io);
  io.bad_index_count = c.bad;
  const harness::HostView &a = io.in("a"), &b = io.in("b");
  harness::RefOutput& out = io.out("out");
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      const int64_t e = i * d.n + j, g = c.group_of[static_cast<size_t>(i)];
      if (!out.wanted(e)) continue;
      out.set(e, 0.0);
      if (g >= 0)
        for (int64_t k = 0; k < d.k; ++k) out.add(e, a.at(i * d.k + k) * b.at(grouped_b_at(d, g, k, j)));
    }
}

inline void grouped_matmul_backward(const GroupedMatmulDescriptor& d, harness::RefIO& io) {
  const GroupedRefCase c = grouped_ref_case(d, io);
  io.bad_index_count = c.bad;
  const harness::HostView &a = io.in("a"), &b = io.in("b"), &dout = io.in("dout");
  harness::RefOutput &da = io.out("da"), &db = io.out("db");
  for (int64_t i = 0; i < d.rows; ++i)  // da[i, k] = sum_j dout[i, j] op(b[g])[k, j]
    for (int64_t k = 0; k < d.k; ++k) {
      const int64_t e = i * d.k + k, g = c.group_of[static_cast<size_t>(i)];
      if (!da.wanted(e)) continue;
      da.set(e, 0.0);
      if (g >= 0)
        for (int64_t j = 0; j < d.n; ++j) da.add(e, dout.at(i * d.n + j) * b.at(grouped_b_at(d, g, k, j)));
    }
  for (int64_t g = 0; g < d.groups; ++g)  // op(db[g])[k, j] = sum over the group's rows of a[i, k] dout[i, j]
    for (int64_t k = 0; k < d.k; ++k)
      for (int64_t j = 0; j < d.n; ++j) {
        const int64_t e = grouped_b_at(d, g, k, j);
        if (!db.wanted(e)) continue;
        db.set(e, 0.0);
        const int64_t first = c.start[static_cast<size_t>(g)];
        for (int64_t i = first; i < first + c.count[static_cast<size_t>(g)]; ++i)
          db.add(e, a.at(i * d.k + k) * dout.at(i * d.n + j));
      }
}

}  // namespace baracuda::reference
