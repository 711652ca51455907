// Op-table rows of the rotary family: RotaryPlan and its backward. Both layouts, rotary_dim below
// the head dim (even and odd head dims), grouped-query k (H_k != H_q), q alone, i32 and i64
// positions (random in [-1000, 1000): negative ones too), a base of 10, 10^4 and 5 10^5, an inv_freq
// table, positions near 10^6 (f32 and 16-bit: the f64 plan's angle is within 10^-9 rad of libm's
// there, past the f64 tolerance), empty and one-pair problems; padded, transposed, broadcast
// (positions shared by every batch) and misaligned views. In place, [B, H, S, D] views, the inverse
// and f64 at 10^6 are tests/test_rotary.cpp's.
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/rotary_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = RotaryDescriptor;

Desc rope(int64_t batch, int64_t seq, int64_t q_heads, int64_t k_heads, int64_t head_dim, int64_t rotary_dim = 0,
          RotaryLayout layout = RotaryLayout::half_split) {
  Desc d;
  d.batch = batch;
  d.seq_len = seq;
  d.q_heads = q_heads;
  d.k_heads = k_heads;
  d.head_dim = head_dim;
  d.rotary_dim = rotary_dim;
  d.layout = layout;
  return d;
}

std::vector<Sample<Desc>> samples() {
  std::vector<Sample<Desc>> out;
  auto add = [&](Desc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {},
                 std::vector<ValueRange> ranges = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), std::move(dtypes), std::move(ranges)});
  };
  for (RotaryLayout layout : {RotaryLayout::half_split, RotaryLayout::interleaved}) {
    const std::string name(rotary_layout_name(layout));
    add(rope(2, 5, 3, 1, 8, 0, layout), Views::contiguous, name);
    add(rope(2, 5, 3, 3, 10, 6, layout), Views::contiguous, name + ", rotary_dim 6 of 10");
    add(rope(1, 9, 2, 1, 7, 4, layout), Views::contiguous, name + ", rotary_dim 4 of 7");
    add(rope(3, 4, 4, 0, 16, 0, layout), Views::contiguous, name + ", q alone");
    add(rope(2, 17, 8, 2, 64, 0, layout), Views::contiguous, name + ", GQA 8 / 2");
    add(rope(1, 33, 4, 4, 128, 64, layout), Views::contiguous, name + ", rotary_dim 64 of 128");
    add(rope(1, 1, 1, 1, 2, 0, layout), Views::contiguous, name + ", one pair");
    Desc table = rope(2, 6, 3, 2, 12, 8, layout);
    table.has_inv_freq = true;
    add(table, Views::contiguous, name + ", inv_freq table");
    Desc far = rope(2, 7, 2, 1, 64, 0, layout);
    add(far, Views::contiguous, name + ", positions near 10^6", {DType::f32, DType::f16, DType::bf16},
        {{"positions", 999000.0, 1001000.0}});
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
      add(rope(3, 5, 4, 2, 16, 0, layout), v, name);
      Desc t = rope(2, 3, 2, 1, 10, 6, layout);
      t.has_inv_freq = true;
      add(t, v, name + ", rotary_dim 6 of 10, inv_freq table");
    }
  }
  Desc i32 = rope(2, 9, 4, 2, 32);
  i32.index_dtype = DType::i32;
  add(i32, Views::contiguous, "i32 positions");
  add(i32, Views::broadcast, "i32 positions");
  for (double base : {10.0, 500000.0}) {
    Desc b = rope(2, 5, 2, 2, 32);
    b.base = base;
    add(b, Views::contiguous, "base " + std::to_string(base));
  }
  add(rope(0, 5, 2, 2, 8));
  add(rope(2, 0, 2, 2, 8));
  add(rope(2, 3, 0, 0, 8), Views::contiguous, "no heads");
  add(rope(2, 3, 0, 2, 8), Views::contiguous, "k alone");
  return out;
}

std::vector<DescriptorError<Desc>> errors() {
  return {
      {"rotary_dim odd", [](Desc& d) { d.rotary_dim = 3; }, StatusCode::invalid_problem, "descriptor.rotary_dim"},
      {"rotary_dim past the head dim", [](Desc& d) { d.rotary_dim = d.head_dim + 2; }, StatusCode::invalid_problem,
       "descriptor.rotary_dim"},
      {"rotary_dim negative", [](Desc& d) { d.rotary_dim = -2; }, StatusCode::invalid_problem, "descriptor.rotary_dim"},
      {"an odd head dim rotated whole",
       [](Desc& d) {
         d.head_dim = 7;
         d.rotary_dim = 0;
       },
       StatusCode::invalid_problem, "descriptor.rotary_dim"},
      {"head_dim 0", [](Desc& d) { d.head_dim = 0; }, StatusCode::invalid_problem, "descriptor.head_dim"},
      {"negative batch", [](Desc& d) { d.batch = -1; }, StatusCode::invalid_problem, "descriptor.batch"},
      {"negative seq_len", [](Desc& d) { d.seq_len = -3; }, StatusCode::invalid_problem, "descriptor.seq_len"},
      {"negative q_heads", [](Desc& d) { d.q_heads = -1; }, StatusCode::invalid_problem, "descriptor.q_heads"},
      {"negative k_heads", [](Desc& d) { d.k_heads = -2; }, StatusCode::invalid_problem, "descriptor.k_heads"},
      {"2^62 elements",
       [](Desc& d) {
         d.batch = int64_t{1} << 31;
         d.seq_len = int64_t{1} << 31;
       },
       StatusCode::invalid_problem, "descriptor.q_heads"},
      {"base 0", [](Desc& d) { d.base = 0; }, StatusCode::invalid_problem, "descriptor.base"},
      {"base negative", [](Desc& d) { d.base = -10000; }, StatusCode::invalid_problem, "descriptor.base"},
      {"base NaN", [](Desc& d) { d.base = std::nan(""); }, StatusCode::invalid_problem, "descriptor.base"},
      {"base inf", [](Desc& d) { d.base = INFINITY; }, StatusCode::invalid_problem, "descriptor.base"},
      {"no such layout", [](Desc& d) { d.layout = static_cast<RotaryLayout>(7); }, StatusCode::invalid_problem,
       "descriptor.layout"},
  };
}

// [B, S, H_q, D] with H_k = H_q / 4 (grouped-query attention; at least 1) and the whole head dim
// rotated (its even part). On the GPU the prefill (B 4, S 4096, H_q 32, H_kv 8, D 128), a
// long sequence, a decode step of 64 sequences, and D 64; on the CPU one sequence of 1024.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{4, 4096, 32, 128}, {1, 32768, 32, 128}, {64, 1, 32, 128}, {8, 2048, 16, 64}};
  return {{1, 1024, 8, 64}, {4, 512, 32, 128}};
}
template <RotaryLayout kLayout>
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d = rope(shape.dims[0], shape.dims[1], shape.dims[2], std::max<int64_t>(1, shape.dims[2] / 4), shape.dims[3],
                shape.dims[3] / 2 * 2, kLayout);
  d.dtype = dtype;
  return d;
}
constexpr ValueRange kBenchPositions[] = {{"positions", 0.0, 32768.0}};

std::vector<BenchSample<Desc>> bench(bool backward) {
  const std::vector<DType> dtypes = {DType::bf16, DType::f32};
  BenchSample<Desc> half{
      backward ? "rotary_backward" : "rotary",
      backward ? "autograd of apply_rotary_pos_emb(q, k, cos, sin)" : "apply_rotary_pos_emb(q, k, cos, sin)", dtypes,
      standard_shapes, bench_desc<RotaryLayout::half_split>};
  half.value_ranges = kBenchPositions;
  if (backward) return {half};
  BenchSample<Desc> interleaved{"rotary_interleaved", "apply_rotary_pos_emb_interleaved(q, k, cos, sin)", dtypes,
                                standard_shapes, bench_desc<RotaryLayout::interleaved>};
  interleaved.value_ranges = kBenchPositions;
  return {half, interleaved};
}

// An inv_freq table as a real one is: positive, below 1.
std::vector<ValueRange> ranges() { return {{"inv_freq", 0.0, 1.0}}; }

template <bool kBackward>
void reference_of(const Desc& d, RefIO& io) {
  reference::rotary(d, kBackward, io);
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> rotary_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  const Gradient gradient{"dq_out", "q_out", {{"dq", "q"}, {"dk", "k"}}, {{"dk_out", "k_out"}}};
  rows.push_back(
      make_row<RotaryPlan>({samples, reference_of<false>, harness::tolerance, ranges(), errors(), bench(false)}));
  rows.push_back(make_row<RotaryBackwardPlan>({samples, reference_of<true>, harness::tolerance, ranges(), errors(),
                                               bench(true), forward_of<RotaryPlan>, gradient}));
  return rows;
}

}  // namespace baracuda::harness
