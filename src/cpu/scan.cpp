// CPU kernels of the scans. Work is cut the same way whatever the thread count, so the bits never
// depend on it: a line of up to kPiece elements is one sequential fold; a longer one is cut into
// pieces of kPiece (longer where the lines' pieces would pass kMaxPieces: the host scratch of a run is
// bounded), each piece's total folded first (in parallel), the totals scanned in order, then each
// piece folded again from its prefix while writing.
//   rows:    a line at a time.
//   columns: kColumns neighbouring lines (along the innermost other dim) at a time, walking down
//            them together: each element's row is read contiguously.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/parallel.hpp"
#include "ops/scan_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int64_t kPiece = int64_t{1} << 16;
constexpr int64_t kMaxPieces = int64_t{1} << 12;  // over all the lines
constexpr int kColumns = 64;

template <class Step>
void scan(const ScanProblem& p) {
  using State = typename Step::State;
  const Step step{p};
  const int64_t n = p.n;
  const int64_t piece_length = kPiece * ceil_div(ceil_div(std::max<int64_t>(n, 1), kPiece),
                                                 std::max<int64_t>(1, kMaxPieces / std::max<int64_t>(p.lines, 1)));
  const int64_t pieces = ceil_div(n, piece_length);
  const bool columns = p.variant == ScanVariant::columns && p.walk.rank > 0;
  const int64_t line = columns ? p.walk.inner_size() : 1;
  const int64_t per_line = ceil_div(line, kColumns);
  const int64_t blocks = columns ? p.lines / line * per_line : p.lines;
  const bool down = descending(p);
  const bool parallel = p.lines * n > kParallelThreshold;

  // Folds piece `piece` of the `width` lines of a block from `states`, writing each element's output
  // when `emit`.
  auto pass = [&](int64_t block, int64_t piece, State* states, int& width, int64_t& first, bool emit) {
    first = columns ? block / per_line * line + block % per_line * kColumns : block;
    width = columns ? static_cast<int>(std::min<int64_t>(kColumns, line - block % per_line * kColumns)) : 1;
    int64_t off[kColumns][kScanTensors];
    p.walk.offsets(first, off[0]);
    for (int j = 1; j < width; ++j)
      for (int t = 0; t < kScanTensors; ++t) off[j][t] = off[0][t] + j * p.walk.inner_stride(t);
    const int64_t begin = piece * piece_length, end = std::min(n, begin + piece_length);
    for (int64_t q = begin; q < end; ++q) {
      const int64_t i = down ? n - 1 - q : q;
      for (int j = 0; j < width; ++j) {
        const typename Step::Element e = step.element(off[j], i);
        step.fold(states[j], e, i);
        if (emit) {
          step.emit(off[j], i, states[j], e);
          step.emit_index(off[j], i, states[j]);
        }
      }
    }
  };

  const int64_t items = blocks * pieces;
  std::vector<State> prefix(pieces > 1 ? static_cast<size_t>(p.lines * pieces) : 0);
  if (pieces > 1) {
    // Each piece's total, then the exclusive prefix of every piece of a line, in order.
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t item = 0; item < items; ++item) {
      State states[kColumns];
      for (State& s : states) s = step.math.identity();
      int width = 0;
      int64_t first = 0;
      pass(item / pieces, item % pieces, states, width, first, false);
      for (int j = 0; j < width; ++j) prefix[(first + j) * pieces + item % pieces] = states[j];
    }
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t l = 0; l < p.lines; ++l) {
      State carry = step.math.identity();
      for (int64_t c = 0; c < pieces; ++c) {
        const State total = prefix[l * pieces + c];
        prefix[l * pieces + c] = carry;
        carry = step.math.combine(carry, total);
      }
    }
  }
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t block = item / pieces, piece = item % pieces;
    State states[kColumns];
    // The block's first line and width, as pass() finds them.
    const int64_t first = columns ? block / per_line * line + block % per_line * kColumns : block;
    for (int j = 0; j < kColumns; ++j)
      states[j] = pieces > 1 && first + j < p.lines ? prefix[(first + j) * pieces + piece] : step.math.identity();
    int width = 0;
    int64_t at = 0;
    pass(block, piece, states, width, at, true);
  }
}

}  // namespace

Status launch(const LaunchContext&, const ScanProblem& problem) {
  return dispatch_scan<half, bfloat16>(problem, [&](auto step) {
    scan<typename decltype(step)::type>(problem);
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu
