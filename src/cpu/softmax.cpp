// CPU kernels of the softmax family. Both read a row twice (its partial, then its outputs) in
// pieces of kBlock elements: each piece's partial (common/softmax_math.hpp) folds into the row's in
// order, so the bits never depend on the thread count. The multi-pass forward (sparsemax, entmax15)
// reads its row once per pass of its solve, in the same pieces, by rows only.
//   rows:  rows in parallel; with fewer rows than threads, the pieces of one row in parallel.
//   outer: kColumns neighbouring rows (in memory order, the columns of a dim that is not innermost)
//          per work item, each tile of kBlock positions x kColumns loaded row by row.
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/parallel.hpp"
#include "ops/softmax_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int kBlock = 16;           // elements per partial
constexpr int64_t kRowPiece = 4096;  // elements per parallel piece of a long row (a multiple of kBlock)
constexpr int kColumns = 64;

template <class A, class T>
A load_as(const T& v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<A>(v);
  else
    return static_cast<A>(static_cast<float>(v));  // half, bfloat16
}
template <class T, class A>
T store_as(A v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(v);
  else
    return T(static_cast<float>(v));
}

template <class Math, class Load, class Store>
struct Kernel {
  using A = typename Math::Value;
  using Partial = typename Math::Partial;
  static constexpr int kIn = Math::kInputs;

  const SoftmaxProblem& p;
  Math math{p.kind};
  const Load* in[2] = {static_cast<const Load*>(p.in[0]), static_cast<const Load*>(p.in[1])};
  Store* out = static_cast<Store*>(p.out);

  A at(int t, int64_t offset) const { return load_as<A>(in[t][offset]); }

  // One row: its first elements' offsets `base` and its steps along dim (1 when kUnit, so that the
  // loops over a contiguous row vectorize).
  template <bool kUnit>
  struct Row {
    const Kernel& k;
    const int64_t* base;
    const int64_t* stride;
    int64_t offset(int t, int64_t i) const { return base[t] + i * (kUnit ? 1 : stride[t]); }

    Partial piece(int64_t begin, int64_t end) const {
      Partial total = Math::identity();
      for (int64_t i0 = begin; i0 < end; i0 += kBlock) {
        A v[kIn][kBlock];
        for (int t = 0; t < kIn; ++t)
          for (int u = 0; u < kBlock; ++u) v[t][u] = i0 + u < end ? k.at(t, offset(t, i0 + u)) : Math::fill();
        total = Math::combine(total, k.math.partial(v));
      }
      return total;
    }
    // The fold of the row's pieces of kRowPiece elements (piece(begin, end) gives one's partial),
    // in parallel when `parallel`, combined in order: the same bits either way.
    template <class P, class Piece, class Combine>
    P fold_pieces(P identity, Piece piece, Combine combine, bool parallel) const {
      const int64_t length = k.p.length, pieces = ceil_div(length, kRowPiece);
      auto piece_at = [&](int64_t c) { return piece(c * kRowPiece, std::min(length, (c + 1) * kRowPiece)); };
      P total = identity;
      if (!parallel) {  // (no omp construct at all: this runs once per row inside a parallel loop)
        for (int64_t c = 0; c < pieces; ++c) total = combine(total, piece_at(c));
        return total;
      }
      std::vector<P> partial(static_cast<size_t>(pieces));
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < pieces; ++c) partial[c] = piece_at(c);
      for (const P& part : partial) total = combine(total, part);
      return total;
    }
    // The multi-pass forward's Fold (common/softmax_math.hpp), over the row's pieces.
    struct Fold {
      const Row& row;
      bool parallel;
      static bool any(bool p) { return p; }  // one row per fold
      template <class P, class Element, class Combine>
      P operator()(P identity, Element element, Combine combine) const {
        auto piece = [&](int64_t begin, int64_t end) {
          P acc = identity;
          for (int64_t i = begin; i < end; ++i) element(acc, row.k.at(0, row.offset(0, i)));
          return acc;
        };
        return row.fold_pieces(identity, piece, combine, parallel);
      }
    };
    typename Math::Writer writer(bool parallel) const {
      if constexpr (Math::kIterative) {
        return k.math.solve(Fold{*this, parallel});
      } else {
        auto part = [&](int64_t begin, int64_t end) { return piece(begin, end); };
        return k.math.writer(fold_pieces(Math::identity(), part, Math::combine, parallel));
      }
    }

    void write(const typename Math::Writer& w, int64_t begin, int64_t end) const {
      for (int64_t i = begin; i < end; ++i) {
        A v[kIn];
        for (int t = 0; t < kIn; ++t) v[t] = k.at(t, offset(t, i));
        k.out[offset(2, i)] = store_as<Store>(w(v));
      }
    }
  };

  template <bool kUnit>
  void rows() const {
    const int64_t pieces = ceil_div(p.length, kRowPiece);
    auto piece_end = [&](int64_t c) { return std::min(p.length, (c + 1) * kRowPiece); };
    if (p.rows >= omp_get_max_threads() || pieces == 1) {
#pragma omp parallel for schedule(static) if (p.rows * p.length > kParallelThreshold)
      for (int64_t r = 0; r < p.rows; ++r) {
        int64_t base[kSoftmaxTensors];
        p.walk.offsets(r, base);
        const Row<kUnit> row{*this, base, p.dim_stride};
        row.write(row.writer(false), 0, p.length);
      }
      return;
    }
    for (int64_t r = 0; r < p.rows; ++r) {  // few long rows: the pieces of each in parallel
      int64_t base[kSoftmaxTensors];
      p.walk.offsets(r, base);
      const Row<kUnit> row{*this, base, p.dim_stride};
      const typename Math::Writer w = row.writer(true);
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < pieces; ++c) row.write(w, c * kRowPiece, piece_end(c));
    }
  }

  void outer() const {
    const int64_t items = ceil_div(p.rows, kColumns);
#pragma omp parallel for schedule(dynamic) if (p.rows * p.length > kParallelThreshold)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t first = item * kColumns;
      const int columns = static_cast<int>(std::min<int64_t>(kColumns, p.rows - first));
      int64_t base[kColumns][kSoftmaxTensors];
      Partial total[kColumns];
      for (int j = 0; j < columns; ++j) {
        p.walk.offsets(first + j, base[j]);
        total[j] = Math::identity();
      }
      A tile[kColumns][kIn][kBlock];  // [column][input][position]: a column's block is one partial
      for (int64_t l0 = 0; l0 < p.length; l0 += kBlock) {
        for (int u = 0; u < kBlock; ++u)
          for (int t = 0; t < kIn; ++t)
            for (int j = 0; j < columns; ++j)
              tile[j][t][u] = l0 + u < p.length ? at(t, base[j][t] + (l0 + u) * p.dim_stride[t]) : Math::fill();
        for (int j = 0; j < columns; ++j) total[j] = Math::combine(total[j], math.partial(tile[j]));
      }
      typename Math::Writer w[kColumns];
      for (int j = 0; j < columns; ++j) w[j] = math.writer(total[j]);
      for (int64_t l = 0; l < p.length; ++l)
        for (int j = 0; j < columns; ++j) {
          A v[kIn];
          for (int t = 0; t < kIn; ++t) v[t] = at(t, base[j][t] + l * p.dim_stride[t]);
          out[base[j][2] + l * p.dim_stride[2]] = store_as<Store>(w[j](v));
        }
    }
  }
};

}  // namespace

Status launch(const LaunchContext&, const SoftmaxProblem& problem) {
  return dispatch_softmax<half, bfloat16>(problem, [&](auto math, auto load, auto store) {
    const Kernel<typename decltype(math)::type, typename decltype(load)::type, typename decltype(store)::type> k{
        problem};
    if (problem.variant == SoftmaxVariant::outer) {
      if constexpr (decltype(math)::type::kIterative)
        return Status::error(StatusCode::unsupported, "softmax: the outer variant has no multi-pass forward");
      else
        k.outer();
    } else {
      bool unit = true;
      for (int64_t s : problem.dim_stride) unit = unit && s == 1;
      if (unit)
        k.template rows<true>();
      else
        k.template rows<false>();
    }
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu
