// Op-table rows of the matmul family: Matmul and Linear, forward and backward. Sizes from {1, 3, 17,
// 64, 255, 4097} in each of M, N, K (one large at a time: the references are naive), K = 0, every
// transpose, 1-D operands, batches strided, broadcast both ways (and folded into M or K), alpha and
// beta with c, f32 output of 16-bit inputs, every activation with and without a bias; padded,
// transposed, broadcast and misaligned views. In-place addmm and the layouts BLAS cannot take are
// tests/test_matmul.cpp's.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/matmul_reference.hpp"

namespace baracuda::harness {
namespace {

using MDesc = MatmulDescriptor;
using LDesc = LinearDescriptor;

MDesc mm(Shape a, Shape b, bool ta = false, bool tb = false) {
  MDesc d;
  d.a = a;
  d.b = b;
  d.transpose_a = ta;
  d.transpose_b = tb;
  return d;
}
// op(a) [m, k] @ op(b) [k, n] as stored.
MDesc mmk(int64_t m, int64_t n, int64_t k, bool ta = false, bool tb = false) {
  return mm(ta ? Shape{k, m} : Shape{m, k}, tb ? Shape{n, k} : Shape{k, n}, ta, tb);
}

std::vector<Sample<MDesc>> matmul_samples(bool backward) {
  std::vector<Sample<MDesc>> out;
  auto add = [&](MDesc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), std::move(dtypes)});
  };
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                            {3, 17, 64},
                                                            {17, 3, 255},
                                                            {64, 64, 64},
                                                            {255, 17, 3},
                                                            {1, 255, 64},
                                                            {4097, 3, 17},
                                                            {3, 4097, 17},
                                                            {17, 3, 4097},
                                                            {255, 64, 17},
                                                            {130, 70, 60},
                                                            {255, 255, 255}})
    add(mmk(m, n, k));
  for (bool ta : {false, true})
    for (bool tb : {false, true}) add(mmk(17, 64, 3, ta, tb), Views::contiguous, "op");
  add(mmk(5, 7, 0), Views::contiguous, "K = 0");
  add(mmk(0, 7, 5));
  add(mm({4, 17, 9}, {4, 9, 5}));
  add(mm({2, 1, 7, 5}, {3, 5, 6}), Views::contiguous, "batch broadcast both ways");
  add(mm({7, 5}, {3, 5, 6}), Views::contiguous, "a broadcast over the batch");
  add(mm({3, 7, 5}, {5, 6}), Views::contiguous, "b broadcast: folded into M");
  add(mm({2, 3, 4, 5}, {5, 6}, false, false), Views::contiguous, "two batch dims folded into M");
  add(mm({3, 5, 7}, {3, 5, 6}, true, false), Views::contiguous, "batched op(a)");
  add(mm({5}, {5}), Views::contiguous, "1-D @ 1-D");
  add(mm({5}, {3, 5, 4}), Views::contiguous, "1-D a");
  add(mm({3, 4, 5}, {5}), Views::contiguous, "1-D b");
  add(mm({6, 5}, {5}), Views::contiguous, "matrix @ vector");
  if (!backward) {
    MDesc addmm = mmk(9, 11, 13);
    addmm.has_c = true;
    addmm.alpha = 0.5;
    addmm.beta = -1.5;
    add(addmm, Views::contiguous, "alpha 0.5, beta -1.5, c");
    MDesc k0 = mmk(4, 6, 0);
    k0.has_c = true;
    k0.beta = 2.0;
    add(k0, Views::contiguous, "K = 0: out = beta c");
    MDesc batched_c = mm({3, 7, 5}, {5, 6});
    batched_c.has_c = true;
    batched_c.beta = 1.0;
    add(batched_c, Views::contiguous, "c, folded");
    MDesc wide = mmk(33, 17, 40);
    wide.out_dtype = DType::f32;
    add(wide, Views::contiguous, "f32 out", {DType::f16, DType::bf16});
  } else {
    MDesc scaled = mmk(9, 11, 13);
    scaled.alpha = -0.75;
    add(scaled, Views::contiguous, "alpha -0.75");
  }
  // (The CPU takes products of 2^20 flops and more to oneDNN, smaller ones to OpenBLAS: both sides.)
  for (Views v : {Views::padded, Views::misaligned, Views::transposed})
    add(mmk(130, 70, 60, v == Views::transposed), v);
  add(mm({3, 90, 64}, {3, 64, 100}), Views::padded, "batched, oneDNN's side");
  for (Views v : {Views::padded, Views::misaligned}) {
    add(mmk(33, 20, 17), v);
    add(mm({3, 9, 7}, {3, 7, 5}), v);
    add(mm({2, 1, 7, 5}, {3, 5, 6}), v);
  }
  add(mmk(33, 20, 17), Views::transposed);
  add(mmk(33, 20, 17, true, true), Views::transposed);
  add(mm({3, 9, 7}, {3, 7, 5}), Views::broadcast);
  add(mm({4, 1, 6, 5}, {4, 3, 5, 2}), Views::broadcast);
  return out;
}

std::vector<DescriptorError<MDesc>> matmul_errors() {
  return {
      {"K mismatch",
       [](MDesc& d) {
         d.a = {4, 5};
         d.b = {6, 3};
         d.transpose_a = d.transpose_b = false;
       },
       StatusCode::invalid_problem, "descriptor.b"},
      {"batch dims that do not broadcast",
       [](MDesc& d) {
         d.a = {2, 4, 5};
         d.b = {3, 5, 6};
         d.transpose_a = d.transpose_b = false;
       },
       StatusCode::invalid_problem, "descriptor.b"},
      {"rank 0 a", [](MDesc& d) { d.a = {}; }, StatusCode::invalid_problem, "descriptor.a.rank"},
      {"transposed 1-D a",
       [](MDesc& d) {
         d.a = {5};
         d.transpose_a = true;
       },
       StatusCode::invalid_problem, "descriptor.transpose_a"},
      {"negative size",
       [](MDesc& d) {
         d.a = {-2, 3};
         d.transpose_a = false;
       },
       StatusCode::invalid_problem, "descriptor.a[0]"},
      {"alpha NaN", [](MDesc& d) { d.alpha = std::nan(""); }, StatusCode::invalid_problem, "descriptor.alpha"},
      {"beta inf", [](MDesc& d) { d.beta = INFINITY; }, StatusCode::invalid_problem, "descriptor.beta"},
      {"integer out_dtype", [](MDesc& d) { d.out_dtype = DType::i32; }, StatusCode::unsupported,
       "descriptor.out_dtype"},
  };
}

LDesc lin(Shape x, int64_t out, bool bias = true, Activation act = Activation::none) {
  LDesc d;
  d.x = x;
  d.out_features = out;
  d.has_bias = bias;
  d.activation = act;
  return d;
}

constexpr Activation kActivations[] = {Activation::none, Activation::relu, Activation::gelu, Activation::gelu_tanh,
                                       Activation::silu};

std::vector<Sample<LDesc>> linear_samples(bool backward) {
  std::vector<Sample<LDesc>> out;
  auto add = [&](LDesc d, Views views = Views::contiguous, std::string note = {}) {
    // relu's kink: the finite differences skip padded samples.
    if (backward && d.activation == Activation::relu && views == Views::contiguous) views = Views::padded;
    out.push_back({d, views, {}, std::nullopt, std::move(note), {}});
  };
  for (Activation a : kActivations) {
    const std::string name(activation_name(a));
    add(lin({5, 7}, 3, true, a), Views::contiguous, name);
    add(lin({2, 3, 16}, 9, true, a), Views::contiguous, name + ", batched");
    add(lin({6, 33}, 17, false, a), Views::contiguous, name + ", no bias");
  }
  add(lin({7}, 4), Views::contiguous, "1-D x");
  add(lin({4, 0}, 3, true, Activation::gelu), Views::contiguous, "no input features: act(bias)");
  add(lin({0, 8}, 5));
  add(lin({3, 8}, 0));
  add(lin({255, 64}, 17, true, Activation::silu), Views::contiguous, "silu");
  for (Activation a : kActivations) add(lin({96, 128}, 64, true, a), Views::contiguous, "oneDNN's side");
  add(lin({96, 128}, 64, true, Activation::gelu), Views::padded, "oneDNN's side");
  add(lin({2, 2, 3, 12}, 10, true, Activation::gelu_tanh), Views::contiguous, "gelu_tanh, two batch dims");
  for (Views v : {Views::padded, Views::misaligned, Views::transposed}) {
    add(lin({9, 12}, 7, true, Activation::gelu), v, "gelu");
    add(lin({9, 12}, 7, true, Activation::relu), v, "relu");
  }
  add(lin({3, 5, 12}, 7, true, Activation::silu), Views::padded, "silu");
  // x broadcast along its batch (a weight broadcast along a matrix dim is no layout BLAS takes).
  out.push_back({lin({3, 5, 12}, 7, true, Activation::none), Views::broadcast, "x", std::nullopt, "x broadcast", {}});
  return out;
}

std::vector<DescriptorError<LDesc>> linear_errors() {
  return {
      {"rank 0 x", [](LDesc& d) { d.x = {}; }, StatusCode::invalid_problem, "descriptor.x.rank"},
      {"negative out_features", [](LDesc& d) { d.out_features = -1; }, StatusCode::invalid_problem,
       "descriptor.out_features"},
      {"unknown activation", [](LDesc& d) { d.activation = static_cast<Activation>(9); }, StatusCode::invalid_problem,
       "descriptor.activation"},
  };
}

// Bench shapes {M, N, K}: the on the GPU (a square, an LLM's tokens x hidden against its
// projections, decode), and CPU sizes NumPy and JAX are compared at.
std::vector<Shape> matmul_shapes(Backend backend) {
  if (backend == Backend::cuda)
    return {{8192, 8192, 8192}, {8192, 4096, 4096}, {8192, 14336, 4096}, {8192, 128256, 4096},
            {1, 14336, 4096},   {8, 14336, 4096},   {64, 14336, 4096}};
  return {{1024, 1024, 1024}, {8, 4096, 4096}};
}
std::vector<Shape> linear_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 14336, 4096}, {8192, 4096, 4096}};
  return {{1024, 1024, 1024}};
}
MDesc matmul_bench(DType dtype, const Shape& s) {
  MDesc d = mmk(s.dims[0], s.dims[1], s.dims[2]);
  d.dtype = dtype;
  return d;
}
template <Activation A>
LDesc linear_bench(DType dtype, const Shape& s) {
  LDesc d = lin({s.dims[0], s.dims[2]}, s.dims[1], true, A);
  d.dtype = dtype;
  return d;
}

// The reference's terms per output element: K for the products, M or N for the gradients.
int64_t contracted(const Shape& s) { return std::max({s.dims[0], s.dims[1], s.dims[2]}); }

std::vector<BenchSample<MDesc>> matmul_bench_cases(bool backward) {
  const std::vector<DType> dtypes = {DType::bf16, DType::f32};
  BenchSample<MDesc> c{"matmul", "torch.matmul(a, b)", dtypes, matmul_shapes, matmul_bench};
  if (backward) c = {"matmul_backward", "autograd of torch.matmul(a, b)", dtypes, matmul_shapes, matmul_bench};
  c.reference_terms = contracted;
  return {c};
}
std::vector<BenchSample<LDesc>> linear_bench_cases(bool backward) {
  const std::vector<DType> dtypes = {DType::bf16};
  std::vector<BenchSample<LDesc>> cases;
  if (backward)
    cases = {{"linear_gelu_backward", "autograd of F.gelu(F.linear(x, w, b))", dtypes, linear_shapes,
              linear_bench<Activation::gelu>}};
  else
    cases = {{"linear", "F.linear(x, w, b)", dtypes, linear_shapes, linear_bench<Activation::none>},
             {"linear_gelu", "F.gelu(F.linear(x, w, b))", dtypes, linear_shapes, linear_bench<Activation::gelu>},
             {"linear_gelu_tanh", "F.gelu(F.linear(x, w, b), approximate='tanh')", dtypes, linear_shapes,
              linear_bench<Activation::gelu_tanh>}};
  for (BenchSample<LDesc>& c : cases) c.reference_terms = contracted;
  return cases;
}

template <bool kBackward>
std::vector<Sample<MDesc>> matmul_samples_of() {
  return matmul_samples(kBackward);
}
template <bool kBackward>
std::vector<Sample<LDesc>> linear_samples_of() {
  return linear_samples(kBackward);
}
using GDesc = GroupedMatmulDescriptor;

GDesc grouped(int64_t rows, int64_t k, int64_t n, int64_t groups, bool transpose_b = false) {
  GDesc d;
  d.rows = rows;
  d.k = k;
  d.n = n;
  d.groups = groups;
  d.transpose_b = transpose_b;
  return d;
}

// Offsets drawn sorted from [0, T] (every group in bounds) unless a sample says otherwise; the
// default range [-2, T + 3) adds offsets out of bounds, which are counted.
std::vector<Sample<GDesc>> grouped_samples(bool backward) {
  std::vector<Sample<GDesc>> out;
  auto add = [&](GDesc d, Views views = Views::contiguous, std::string_view only = {}, std::string note = {},
                 std::optional<IndexRange> offsets = IndexRange{}, std::vector<DType> dtypes = {}) {
    if (offsets && offsets->hi == 0) offsets = IndexRange{0, d.rows + 1};
    out.push_back({d, views, only, offsets, std::move(note), std::move(dtypes)});
  };
  for (bool tb : {false, true}) {
    const std::string op = tb ? "b as [G, N, K]" : "b as [G, K, N]";
    add(grouped(17, 9, 5, 3, tb), Views::contiguous, {}, op);
    add(grouped(40, 16, 12, 8, tb), Views::contiguous, {}, op + ", 8 groups");
    add(grouped(64, 33, 7, 4, tb), Views::contiguous, {}, op + ", offsets out of bounds too", std::nullopt);
  }
  add(grouped(255, 17, 3, 1), Views::contiguous, {}, "one group");
  add(grouped(33, 5, 6, 1), Views::contiguous, {}, "one group holding every row", IndexRange{33, 34});
  add(grouped(5, 4, 3, 12), Views::contiguous, {}, "more groups than rows: empty ones");
  add(grouped(6, 4, 3, 3), Views::contiguous, {}, "no group holds a row", IndexRange{0, 1});
  add(grouped(9, 0, 4, 3), Views::contiguous, {}, "K = 0");
  add(grouped(9, 4, 0, 3));
  add(grouped(0, 4, 3, 2), Views::contiguous, {}, "no rows", std::nullopt);
  add(grouped(512, 128, 96, 4), Views::contiguous, {}, "oneDNN's side");
  add(grouped(512, 128, 96, 4, true), Views::padded, {}, "oneDNN's side");
  // CUDA's tiles (64 and 128 rows and columns, K 32 and 16 a step, four stages): groups of several
  // tiles and partial ones, K past the stages, ragged N, every layout of each operand.
  for (bool tb : {false, true}) add(grouped(700, 200, 300, 6, tb), Views::contiguous, {}, "several tiles a group");
  add(grouped(390, 161, 133, 3), Views::transposed, backward ? "dout" : "a", "several tiles, column-major");
  add(grouped(300, 72, 70, 2), Views::misaligned, {}, "misaligned, groups past a tile");
  add(grouped(260, 72, 70, 2, true), Views::transposed, "a", "a column-major, groups past a tile");
  add(grouped(3000, 24, 20, 2500), Views::contiguous, {}, "more groups than CUDA's one block of offsets", IndexRange{},
      {DType::bf16, DType::f64});
  for (Views v : {Views::padded, Views::misaligned}) {
    add(grouped(30, 12, 7, 3), v);
    add(grouped(30, 12, 7, 3, true), v);
  }
  add(grouped(30, 12, 7, 3), Views::transposed, backward ? "dout" : "a", "column-major");
  add(grouped(30, 12, 7, 3), Views::broadcast, "b", "every group the same weights (a zero stride)");
  if (!backward) {
    GDesc wide = grouped(40, 16, 12, 5);
    wide.out_dtype = DType::f32;
    add(wide, Views::contiguous, {}, "f32 out", IndexRange{}, {DType::f16, DType::bf16});
  }
  return out;
}

std::vector<DescriptorError<GDesc>> grouped_errors(bool backward) {
  std::vector<DescriptorError<GDesc>> errors = {
      {"no group", [](GDesc& d) { d.groups = 0; }, StatusCode::invalid_problem, "descriptor.groups"},
      {"more than 2^24 groups", [](GDesc& d) { d.groups = (int64_t{1} << 24) + 1; }, StatusCode::invalid_problem,
       "descriptor.groups"},
      {"negative rows", [](GDesc& d) { d.rows = -1; }, StatusCode::invalid_problem, "descriptor.rows"},
      {"negative k", [](GDesc& d) { d.k = -3; }, StatusCode::invalid_problem, "descriptor.k"},
      {"integer out_dtype", [](GDesc& d) { d.out_dtype = DType::i32; }, StatusCode::unsupported,
       "descriptor.out_dtype"},
      {"more rows than i32 offsets count",
       [](GDesc& d) {
         d.index_dtype = DType::i32;
         d.rows = int64_t{1} << 32;
         d.k = d.n = 1;
       },
       StatusCode::unsupported, "descriptor.index_dtype"},
  };
  if (backward)
    errors.push_back({"dout in another dtype",
                      [](GDesc& d) { d.out_dtype = d.dtype == DType::f64 ? DType::f32 : DType::f64; },
                      StatusCode::unsupported, "descriptor.out_dtype"});
  return errors;
}

template <bool kBackward>
std::vector<Sample<GDesc>> grouped_samples_of() {
  return grouped_samples(kBackward);
}
void grouped_forward_ref(const GDesc& d, RefIO& io) { reference::grouped_matmul_forward(d, io); }
void grouped_backward_ref(const GDesc& d, RefIO& io) { reference::grouped_matmul_backward(d, io); }

void matmul_forward_ref(const MDesc& d, RefIO& io) { reference::matmul_forward(d, io); }
void matmul_backward_ref(const MDesc& d, RefIO& io) { reference::matmul_backward(d, io); }
void linear_forward_ref(const LDesc& d, RefIO& io) { reference::linear_forward(d, io); }
void linear_backward_ref(const LDesc& d, RefIO& io) { reference::linear_backward(d, io); }

// Grouped: T x N x K x G, the weights as nn.Linear keeps them ([G, N, K]), group sizes from the
// offsets drawn sorted in [0, T] (a mixture of experts' routing, uneven).
std::vector<Shape> grouped_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096, 4096, 8}, {16384, 4096, 4096, 64}};
  return {{2048, 1024, 1024, 8}};
}
GDesc grouped_bench(DType dtype, const Shape& s) {
  GDesc d = grouped(s.dims[0], s.dims[2], s.dims[1], s.dims[3], true);
  d.dtype = dtype;
  return d;
}
std::vector<BenchSample<GDesc>> grouped_bench_cases(bool backward) {
  BenchSample<GDesc> c{"grouped_matmul", "torch._grouped_mm(a, b, offs)", {DType::bf16}, grouped_shapes, grouped_bench};
  if (backward)
    c = {"grouped_matmul_backward",
         "autograd of torch._grouped_mm(a, b, offs)",
         {DType::bf16},
         grouped_shapes,
         grouped_bench};
  c.reference_terms = contracted;
  return {c};
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> matmul_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<MatmulPlan>({matmul_samples_of<false>,
                                       matmul_forward_ref,
                                       harness::tolerance,
                                       {},
                                       matmul_errors(),
                                       matmul_bench_cases(false)}));
  rows.push_back(make_row<MatmulBackwardPlan>({matmul_samples_of<true>,
                                               matmul_backward_ref,
                                               harness::tolerance,
                                               {},
                                               matmul_errors(),
                                               matmul_bench_cases(true),
                                               forward_of<MatmulPlan>,
                                               Gradient{"dout", "out", {{"da", "a"}, {"db", "b"}}}}));
  rows.push_back(make_row<LinearPlan>({linear_samples_of<false>,
                                       linear_forward_ref,
                                       harness::tolerance,
                                       {},
                                       linear_errors(),
                                       linear_bench_cases(false)}));
  rows.push_back(
      make_row<LinearBackwardPlan>({linear_samples_of<true>,
                                    linear_backward_ref,
                                    harness::tolerance,
                                    {},
                                    linear_errors(),
                                    linear_bench_cases(true),
                                    forward_of<LinearPlan>,
                                    Gradient{"dy", "y", {{"dx", "x"}, {"dweight", "weight"}, {"dbias", "bias"}}}}));
  rows.push_back(make_row<GroupedMatmulPlan>({grouped_samples_of<false>,
                                              grouped_forward_ref,
                                              harness::tolerance,
                                              {},
                                              grouped_errors(false),
                                              grouped_bench_cases(false)}));
  rows.push_back(make_row<GroupedMatmulBackwardPlan>({grouped_samples_of<true>,
                                                      grouped_backward_ref,
                                                      harness::tolerance,
                                                      {},
                                                      grouped_errors(true),
                                                      grouped_bench_cases(true),
                                                      forward_of<GroupedMatmulPlan>,
                                                      Gradient{"dout", "out", {{"da", "a"}, {"db", "b"}}}}));
  return rows;
}

}  // namespace baracuda::harness
