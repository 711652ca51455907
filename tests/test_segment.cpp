// The segment family's walks on both sides of their boundaries. CUDA folds sorted ids, offsets and
// the sort variant's sorted rows in tiles of segment_tile_rows rows (src/ops/segment.cpp and
// src/cuda/common/segment_kernels.cuh): segments that end exactly at a tile's end, empty ones at a tile's
// start and at N, one-row segments, segments across one, two and three tile ends, rows before the
// first offset and after the last, bad ids at both ends. The CPU runs the same cases against the same
// naive reference. (The op table's random samples cover shapes, views and dtypes at large.)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::contiguous;
using testing::unwrap;

enum class Reduction { sum, mean, max, min };

// CUDA's tile rows (segment_tile_rows in src/ops/segment.cpp): 256 up to D = 1024, then 2^18 / D
// down to 64.
int64_t tile_rows(int64_t length) { return std::clamp<int64_t>((int64_t{1} << 18) / length, 64, 256); }

// A layout of rows into segments: `lead` rows before the first segment (offsets) or with id -1
// (ids), then each segment's rows, then `tail` rows after the last (offsets) or with id S (ids).
struct Layout {
  std::vector<int64_t> lengths;
  int64_t lead = 0, tail = 0;
  int64_t rows() const { return lead + tail + std::accumulate(lengths.begin(), lengths.end(), int64_t{0}); }
  int64_t segments() const { return static_cast<int64_t>(lengths.size()); }
  // The segment of each row, or -1.
  std::vector<int64_t> segment_of() const {
    std::vector<int64_t> s(static_cast<size_t>(lead), -1);
    for (int64_t k = 0; k < segments(); ++k) s.insert(s.end(), static_cast<size_t>(lengths[size_t(k)]), k);
    s.insert(s.end(), static_cast<size_t>(tail), -1);
    return s;
  }
};

// Segment lengths around tiles of P rows.
std::vector<Layout> layouts(int64_t P) {
  return {
      // Ends exactly at tile ends, empties at a tile's start, one row, across one and three ends,
      // empties at N.
      {{P, 0, P, 0, 0, 1, P - 1, 2 * P + 3, 0, 7, P + 44, 0, 0}},
      {{P * 3 + 5}},                                                    // one segment, four tiles
      {{0, 0, 3, 0}, 0, 0},                                             // one tile
      {{P}},                                                            // exactly one tile
      {{P + 1}, 0, 0},                                                  // one row past it
      {{5, P - 5, 1, 1, 1, P - 3, 0, P}, 3, 9},                         // rows outside every segment at both ends
      {{}, 0, 0},                                                       // no segments
      {{0, 0, 0}, 0, 0},                                                // no rows
      {std::vector<int64_t>(static_cast<size_t>(2 * P + 7), 1), 1, 0},  // a segment a row
  };
}

class SegmentWalkTest : public testing::BackendDTypeTest {
 protected:
  Tensor index_tensor(const std::vector<int64_t>& v, DType index_dtype) {
    Tensor t = unwrap(harness::random_tensor(backend(), index_dtype,
                                             contiguous({std::max<int64_t>(1, static_cast<int64_t>(v.size()))}), rng_));
    t.shape = Shape{static_cast<int64_t>(v.size())};
    for (size_t i = 0; i < v.size(); ++i) t.host[i] = static_cast<double>(v[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }

  template <class Plan>
  void check(Reduction r, const Layout& layout, int64_t length, SegmentForm form, DType index_dtype,
             std::optional<double> initial = std::nullopt, bool ties = false, bool nans = false) {
    const int64_t n = layout.rows(), segs = layout.segments();
    std::vector<int64_t> seg_of = layout.segment_of();
    SCOPED_TRACE("rows " + std::to_string(n) + " segments " + std::to_string(segs) + " D " + std::to_string(length));
    const Shape data_shape = length == 1 ? Shape{n} : Shape{n, length};
    const Shape out_shape = length == 1 ? Shape{segs} : Shape{segs, length};
    Tensor data = unwrap(harness::random_tensor(backend(), dtype(), contiguous(data_shape), rng_));
    if (ties) {  // four values, -0 and +0 among them: every segment ties, and its first row must win
      constexpr double kValues[] = {-0.0, 0.0, 1.0, -1.0};
      for (double& v : data.host) v = kValues[rng_() % 4];
      ASSERT_TRUE(data.upload().is_ok());
    }
    if (nans) {  // NaNs among numbers and ties: the first NaN of a segment wins, whatever follows it
      const double kValues[] = {std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0, 2.0, -1.0};
      for (double& v : data.host) v = kValues[rng_() % 5];
      ASSERT_TRUE(data.upload().is_ok());
    }
    Tensor out = unwrap(harness::random_tensor(backend(), dtype(), contiguous(out_shape), rng_));
    ASSERT_TRUE(harness::poison(out).is_ok());
    const bool extreme = r == Reduction::max || r == Reduction::min;
    Tensor indices = unwrap(harness::random_tensor(backend(), index_dtype, contiguous(out_shape), rng_));
    ASSERT_TRUE(harness::poison(indices).is_ok());

    std::vector<int64_t> ids(seg_of), offsets;
    for (int64_t& v : ids)
      if (v < 0) v = &v - ids.data() < layout.lead ? -1 : segs;  // bad at both ends, still sorted
    if (form == SegmentForm::unsorted_ids) {
      std::shuffle(ids.begin(), ids.end(), rng_);
      for (int64_t i = 0; i < n; ++i) seg_of[size_t(i)] = ids[size_t(i)] < segs ? ids[size_t(i)] : -1;
    }
    offsets.push_back(layout.lead);
    for (int64_t len : layout.lengths) offsets.push_back(offsets.back() + len);
    Tensor id_tensor = index_tensor(ids, index_dtype), offset_tensor = index_tensor(offsets, index_dtype);

    PlanPreference pref;
    pref.determinism = Determinism::required;  // the unsorted form's sort variant: the sorted walk
    const SegmentDescriptor desc{dtype(), index_dtype, data_shape, segs, form, initial};
    Plan plan = unwrap(Plan::select(stream(), desc, pref));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(1, plan.workspace_size())));
    harness::Buffer counter = unwrap(harness::Buffer::allocate(backend(), sizeof(int64_t)));
    const int64_t zero = 0;
    ASSERT_TRUE(counter.upload(&zero, sizeof zero).is_ok());
    const bool by_ids = form != SegmentForm::offsets;
    SegmentArgs args{
        data.ref(), by_ids ? id_tensor.ref() : AnyTensorRef{}, by_ids ? AnyTensorRef{} : offset_tensor.ref(),
        out.mut(),  extreme ? indices.mut() : AnyTensorMut{},  static_cast<int64_t*>(counter.data())};
    ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, args));
    ASSERT_TRUE(out.download().is_ok());
    ASSERT_TRUE(indices.download().is_ok());
    int64_t bad = -1;
    ASSERT_TRUE(counter.download(&bad, sizeof bad).is_ok());
    EXPECT_EQ(bad, by_ids ? layout.lead + layout.tail : 0);
    if (extreme) {  // the values alone (no indices asked: another walk on the CPU) give the same bits
      Tensor alone = unwrap(harness::random_tensor(backend(), dtype(), contiguous(out_shape), rng_));
      ASSERT_TRUE(harness::poison(alone).is_ok());
      SegmentArgs values_only = args;
      values_only.out = alone.mut();
      values_only.indices = AnyTensorMut{};
      ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, values_only));
      ASSERT_TRUE(alone.download().is_ok());
      for (int64_t k = 0; k < segs * length; ++k)
        EXPECT_EQ(std::bit_cast<uint64_t>(alone.at(k)), std::bit_cast<uint64_t>(out.at(k))) << "segment element " << k;
    }

    // The reference: each segment's rows in row order, in double.
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> want(static_cast<size_t>(segs * length)), magnitude(want.size());
    std::vector<int64_t> want_at(want.size(), -1);
    for (int64_t s = 0; s < segs; ++s) {
      for (int64_t j = 0; j < length; ++j) {
        double acc = r == Reduction::max ? -inf : r == Reduction::min ? inf : 0.0;
        int64_t at = -1, count = 0;
        double sum_abs = 0;  // a sum's rounding error scales with it
        for (int64_t i = 0; i < n; ++i) {
          if (seg_of[size_t(i)] != s) continue;
          const double v = data.at(i * length + j);
          ++count;
          if (r == Reduction::sum || r == Reduction::mean) {
            acc += v;
            sum_abs += std::fabs(v);
          } else if (at < 0 || (r == Reduction::max ? v > acc : v < acc) || (std::isnan(v) && !std::isnan(acc))) {
            acc = v;
            at = i;
          }
        }
        if (r == Reduction::mean && count > 0) acc /= static_cast<double>(count), sum_abs /= static_cast<double>(count);
        if (count == 0 && initial) acc = *initial;
        want[size_t(s * length + j)] = acc;
        magnitude[size_t(s * length + j)] = std::max(std::fabs(acc), sum_abs);
        want_at[size_t(s * length + j)] = at;
      }
    }
    const double tol = extreme ? 0.0 : harness::tolerance(dtype());
    for (size_t k = 0; k < want.size(); ++k) {
      const double got = out.at(static_cast<int64_t>(k));
      if (std::isnan(want[k])) {
        EXPECT_TRUE(std::isnan(got)) << "segment element " << k << ": " << got;
      } else if (std::isinf(want[k]) || (want[k] == 0 && std::signbit(want[k]))) {  // -0: an initial's sign kept
        EXPECT_EQ(got, want[k]) << "segment element " << k;
        EXPECT_EQ(std::signbit(got), std::signbit(want[k])) << "segment element " << k;
      } else {
        EXPECT_NEAR(got, want[k], tol * (1.0 + magnitude[k])) << "segment element " << k;
      }
      if (extreme) {
        EXPECT_EQ(static_cast<int64_t>(indices.at(static_cast<int64_t>(k))), want_at[k]) << "segment element " << k;
      }
    }
  }

  template <class Plan>
  void check_every_layout(Reduction r) {
    for (int64_t length : {int64_t{1}, int64_t{3}, int64_t{8}})  // packed rows, strided, 16-byte units
      for (const Layout& layout : layouts(tile_rows(length)))
        for (SegmentForm form : {SegmentForm::sorted_ids, SegmentForm::offsets, SegmentForm::unsorted_ids}) {
          SCOPED_TRACE(form == SegmentForm::sorted_ids ? "sorted ids"
                       : form == SegmentForm::offsets  ? "offsets"
                                                       : "unsorted ids");
          check<Plan>(r, layout, length, form, length == 3 ? DType::i32 : DType::i64);
        }
  }
};

TEST_P(SegmentWalkTest, SumAcrossTileEnds) { check_every_layout<SegmentSumPlan>(Reduction::sum); }
TEST_P(SegmentWalkTest, MeanAcrossTileEnds) { check_every_layout<SegmentMeanPlan>(Reduction::mean); }
TEST_P(SegmentWalkTest, MaxAcrossTileEnds) { check_every_layout<SegmentMaxPlan>(Reduction::max); }
TEST_P(SegmentWalkTest, MinAcrossTileEnds) { check_every_layout<SegmentMinPlan>(Reduction::min); }

// A wide row (D = 2048: tiles of 128 rows, chunks of units a tile) across tile ends.
// An empty segment's value is the initial, where one is given: the unsorted one-column sums start
// at +0 and skip the counts only where the initial is +0, max / min without indices where it is
// their identity (src/cpu/segment.cpp).
TEST_P(SegmentWalkTest, EmptySegmentsTakeTheInitial) {
  const Layout layout = layouts(tile_rows(1))[0];
  for (std::optional<double> initial :
       {std::optional<double>{}, std::optional<double>{0.0}, std::optional<double>{-0.0}, std::optional<double>{2.5}})
    for (SegmentForm form : {SegmentForm::sorted_ids, SegmentForm::unsorted_ids}) {
      SCOPED_TRACE(initial ? "initial " + std::to_string(*initial) : "no initial");
      check<SegmentSumPlan>(Reduction::sum, layout, 1, form, DType::i64, initial);
      check<SegmentMeanPlan>(Reduction::mean, layout, 1, form, DType::i64, initial);
      // (max / min with no indices asked skip the counts only where the initial is their identity)
      check<SegmentMaxPlan>(Reduction::max, layout, 1, form, DType::i64, initial);
      check<SegmentMinPlan>(Reduction::min, layout, 1, form, DType::i64, initial);
    }
}

// NaNs: a segment's first NaN takes over every number and no later value takes over from it, on
// every walk, with and without indices (the one-column folds' own NaN branch among them).
TEST_P(SegmentWalkTest, TheFirstNaNWins) {
  for (int64_t length : {int64_t{1}, int64_t{3}})
    for (const Layout& layout : layouts(tile_rows(length)))
      for (SegmentForm form : {SegmentForm::sorted_ids, SegmentForm::offsets, SegmentForm::unsorted_ids}) {
        check<SegmentMaxPlan>(Reduction::max, layout, length, form, DType::i64, std::nullopt, false, true);
        check<SegmentMinPlan>(Reduction::min, layout, length, form, DType::i64, std::nullopt, false, true);
      }
}

// Ties (and -0 against +0) keep the first row attaining, whatever the walk.
TEST_P(SegmentWalkTest, TiesKeepTheFirstRow) {
  for (int64_t length : {int64_t{1}, int64_t{3}})
    for (const Layout& layout : layouts(tile_rows(length)))
      for (SegmentForm form : {SegmentForm::sorted_ids, SegmentForm::offsets, SegmentForm::unsorted_ids}) {
        check<SegmentMaxPlan>(Reduction::max, layout, length, form, DType::i64, std::nullopt, true);
        check<SegmentMinPlan>(Reduction::min, layout, length, form, DType::i64, std::nullopt, true);
      }
}

TEST_P(SegmentWalkTest, WideRowsAcrossTileEnds) {
  const int64_t length = 2048, P = tile_rows(length);
  check<SegmentSumPlan>(Reduction::sum, Layout{{P - 1, 1, 2 * P + 1, 0, 5}, 2, 1}, length, SegmentForm::offsets,
                        DType::i64);
  check<SegmentMaxPlan>(Reduction::max, Layout{{P, P + 3, 0}, 0, 0}, length, SegmentForm::sorted_ids, DType::i32);
}

INSTANTIATE_TEST_SUITE_P(Segments, SegmentWalkTest,
                         ::testing::ValuesIn(testing::cases_of({DType::f32, DType::bf16, DType::f64})),
                         testing::case_name);

}  // namespace
}  // namespace baracuda
