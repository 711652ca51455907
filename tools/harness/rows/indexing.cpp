// Op-table rows of the indexing family: gather, scatter_add, index_select and embedding, forward and
// backward. Each op's descriptor maps onto the canonical gather or scatter-add of
// harness/reference/indexing_reference.hpp.
#include "harness/op_row.hpp"
#include "harness/reference/indexing_reference.hpp"

namespace baracuda::harness {
namespace {

using reference::IndexedCase;

int normalized(int dim, int rank) { return dim < 0 ? dim + rank : dim; }
double exact(DType) { return 0.0; }  // forwards copy elements

// Every sample with i64 and with i32 indices and, for an op that accumulates, with accumulate true
// and false (forward ops ignore it).
template <class Desc>
std::vector<Sample<Desc>> in_every_mode(std::vector<Sample<Desc>> samples, bool accumulates) {
  std::vector<Sample<Desc>> out;
  for (const Sample<Desc>& s : samples) {
    for (DType index : {DType::i64, DType::i32}) {
      for (bool accumulate : {true, false}) {
        if (!accumulate && !accumulates) continue;
        Sample<Desc> x = s;
        x.desc.index_dtype = index;
        x.desc.accumulate = accumulate;
        x.note += std::string(", ") + std::string(dtype_name(index)) + (accumulate ? "" : ", overwrite");
        out.push_back(std::move(x));
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// gather, its backward, and scatter_add: an index of the table's rank, along dim.

struct AlongDim {
  Shape table, index;
  int dim = 0;
  Views views = Views::contiguous;
  std::optional<IndexRange> values{};
};

std::vector<AlongDim> along_dim_cases() {
  std::vector<AlongDim> c;
  for (int dim : {0, 1, 2, -1}) c.push_back({{7, 8, 9}, {5, 6, 4}, dim});  // index smaller off dim
  c.push_back({{13}, {29}, 0});                                            // longer along dim: duplicates
  c.push_back({{2, 3, 4, 5}, {2, 3, 11, 5}, 2});
  c.push_back({{37, 53}, {37, 61}, 1});
  c.push_back({{3, 1031}, {3, 17}, 1});
  c.push_back({{5, 37}, {5, 3000}, 1});  // long lines into a short table (CUDA's shared-memory line)
  c.push_back({{1}, {1}, 0});
  c.push_back({{4, 5}, {4, 0}, 1});  // nothing to gather
  c.push_back({{0, 5}, {3, 5}, 0});  // an empty dim: every index is bad
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    c.push_back({{7, 8, 9}, {5, 6, 4}, 1, v});
    c.push_back({{37, 53}, {37, 61}, 1, v});
  }
  c.push_back({{2, 7}, {2, 3000}, 1, Views::contiguous, IndexRange{4, 5}});  // every index equal
  c.push_back({{7, 2}, {3000, 2}, 0, Views::contiguous, IndexRange{4, 5}});
  c.push_back({{6, 9}, {6, 9}, 1, Views::contiguous, IndexRange{0, 9}});  // every index valid
  return c;
}

template <class Desc>
std::vector<Sample<Desc>> along_dim_samples(bool accumulates) {
  std::vector<Sample<Desc>> out;
  for (const AlongDim& c : along_dim_cases())
    out.push_back(
        {Desc{DType::f32, DType::i64, c.table, c.index, c.dim}, c.views, {}, c.values, "dim " + std::to_string(c.dim)});
  return in_every_mode(std::move(out), accumulates);
}

IndexedCase along_dim_case(const Shape& index_shape, int dim) {
  return {index_shape, normalized(dim, index_shape.rank), false};
}

void gather_reference(const GatherDescriptor& d, RefIO& io) {
  io.bad_index_count =
      reference::gather(along_dim_case(d.index_shape, d.dim), io.in("index"), io.in("src"), io.out("out"));
}
void gather_backward_reference(const GatherDescriptor& d, RefIO& io) {
  io.bad_index_count = reference::scatter_add(along_dim_case(d.index_shape, d.dim), io.in("dout"), io.in("index"),
                                              d.src_shape, io.out("dsrc"));
}
void scatter_add_reference(const ScatterAddDescriptor& d, RefIO& io) {
  io.bad_index_count = reference::scatter_add(along_dim_case(d.index_shape, d.dim), io.in("src"), io.in("index"),
                                              d.dst_shape, io.out("dst"));
}

// A table and an index for the error cases.
template <class Desc, Shape Desc::*kTable>
void set_shapes(Desc& d, Shape table, Shape index, int dim) {
  d.*kTable = table;
  d.index_shape = index;
  d.dim = dim;
}

template <class Desc, Shape Desc::*kTable>
std::vector<DescriptorError<Desc>> along_dim_errors(std::string_view table_field) {
  static const std::string negative = std::string(table_field) + "[1]";
  return {
      {"dim past the rank",
       [](Desc& d) {
         set_shapes<Desc, kTable>(d, {4, 5}, {4, 5}, 2);
       },
       StatusCode::invalid_problem, "descriptor.dim"},
      {"index larger off dim",
       [](Desc& d) {
         set_shapes<Desc, kTable>(d, {4, 5}, {6, 5}, 1);
       },
       StatusCode::invalid_problem, "descriptor.index_shape[0]"},
      {"index of another rank",
       [](Desc& d) {
         set_shapes<Desc, kTable>(d, {4, 5}, {4}, 0);
       },
       StatusCode::invalid_problem, "descriptor.index_shape"},
      {"negative size",
       [](Desc& d) {
         set_shapes<Desc, kTable>(d, {4, -1}, {4, 1}, 0);
       },
       StatusCode::invalid_problem, negative},
  };
}

// ---------------------------------------------------------------------------------------------
// index_select and its backward: a 1-D index along dim.

struct SelectCase {
  Shape src;
  int dim = 0;
  int64_t num_indices = 0;
  Views views = Views::contiguous;
  std::optional<IndexRange> values{};
};

std::vector<Sample<IndexSelectDescriptor>> index_select_samples(bool accumulates) {
  std::vector<SelectCase> cases;
  for (int dim : {0, 1, 2, -1}) cases.push_back({{6, 9, 10}, dim, 13});
  cases.push_back({{13}, 0, 29});
  cases.push_back({{1}, 0, 1});
  cases.push_back({{5}, 0, 0});     // no indices
  cases.push_back({{0, 4}, 0, 3});  // an empty dim: every index is bad
  cases.push_back({{4, 0}, 0, 3});  // nothing to copy: the indices are not used
  cases.push_back({{37, 53}, 1, 61});
  cases.push_back({{33, 128}, 0, 41});  // whole 16-byte rows
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    cases.push_back({{6, 9, 10}, 1, 13, v});
    cases.push_back({{33, 128}, 0, 41, v});
  }
  cases.push_back({{50, 40}, 0, 4000, Views::contiguous, IndexRange{0, 6}});  // long runs of each index
  std::vector<Sample<IndexSelectDescriptor>> out;
  for (const SelectCase& c : cases)
    out.push_back(
        {{DType::f32, DType::i64, c.src, c.dim, c.num_indices}, c.views, {}, c.values, "dim " + std::to_string(c.dim)});
  return in_every_mode(std::move(out), accumulates);
}

IndexedCase select_case(const IndexSelectDescriptor& d) {
  IndexedCase c{d.src_shape, normalized(d.dim, d.src_shape.rank), true};
  c.shape.dims[c.dim] = d.num_indices;
  return c;
}
void index_select_reference(const IndexSelectDescriptor& d, RefIO& io) {
  io.bad_index_count = reference::gather(select_case(d), io.in("index"), io.in("src"), io.out("out"));
}
void index_select_backward_reference(const IndexSelectDescriptor& d, RefIO& io) {
  io.bad_index_count =
      reference::scatter_add(select_case(d), io.in("dout"), io.in("index"), d.src_shape, io.out("dsrc"));
}

std::vector<DescriptorError<IndexSelectDescriptor>> index_select_errors() {
  return {
      {"negative num_indices", [](IndexSelectDescriptor& d) { d.num_indices = -2; }, StatusCode::invalid_problem,
       "descriptor.num_indices"},
      {"dim past the rank", [](IndexSelectDescriptor& d) { d.dim = d.src_shape.rank; }, StatusCode::invalid_problem,
       "descriptor.dim"},
  };
}

// ---------------------------------------------------------------------------------------------
// embedding and its backward: rows of a [V, D] weight.

struct EmbeddingCase {
  int64_t v, d, n;
  std::optional<int64_t> padding{};
  Views views = Views::contiguous;
  std::optional<IndexRange> values{};
};

std::vector<Sample<EmbeddingDescriptor>> embedding_samples(bool accumulates) {
  std::vector<EmbeddingCase> cases;
  for (int64_t d : {64, 33, 1})  // whole 16-byte rows, odd rows, single elements
    for (std::optional<int64_t> padding :
         {std::optional<int64_t>{}, std::optional<int64_t>{0}, std::optional<int64_t>{-1}})
      cases.push_back({37, d, 101, padding});
  cases.push_back({1, 1, 1});
  cases.push_back({5, 0, 7});                                               // empty rows
  cases.push_back({0, 4, 5});                                               // no rows: every index is bad
  cases.push_back({11, 4, 0});                                              // no indices
  cases.push_back({11, 48, 700, {}, Views::contiguous, IndexRange{0, 3}});  // runs much longer than a window
  cases.push_back({23, 64, 300, 0, Views::contiguous, IndexRange{0, 5}});   // duplicates and the padding
  cases.push_back({23, 7, 300, 22, Views::contiguous, IndexRange{7, 8}});   // every index equal
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned})
    cases.push_back({37, 64, 101, -1, v});
  cases.push_back({37, 33, 101, {}, Views::misaligned});
  std::vector<Sample<EmbeddingDescriptor>> out;
  for (const EmbeddingCase& c : cases)
    out.push_back({{DType::f32, DType::i64, c.v, c.d, c.n, c.padding},
                   c.views,
                   {},
                   c.values,
                   c.padding ? "padding " + std::to_string(*c.padding) : "no padding"});
  return in_every_mode(std::move(out), accumulates);
}

IndexedCase embedding_case(const EmbeddingDescriptor& d) {
  IndexedCase c{{d.num_indices, d.embedding_dim}, 0, true};
  if (d.padding_idx) c.padding = *d.padding_idx < 0 ? *d.padding_idx + d.num_embeddings : *d.padding_idx;
  return c;
}
void embedding_reference(const EmbeddingDescriptor& d, RefIO& io) {
  io.bad_index_count = reference::gather(embedding_case(d), io.in("indices"), io.in("weight"), io.out("out"));
}
void embedding_backward_reference(const EmbeddingDescriptor& d, RefIO& io) {
  io.bad_index_count = reference::scatter_add(embedding_case(d), io.in("dout"), io.in("indices"),
                                              {d.num_embeddings, d.embedding_dim}, io.out("dweight"));
}

std::vector<DescriptorError<EmbeddingDescriptor>> embedding_errors() {
  return {
      {"padding_idx past the rows",
       [](EmbeddingDescriptor& d) {
         d.num_embeddings = 10;
         d.padding_idx = 10;
       },
       StatusCode::invalid_problem, "descriptor.padding_idx"},
      {"negative num_embeddings", [](EmbeddingDescriptor& d) { d.num_embeddings = -1; }, StatusCode::invalid_problem,
       "descriptor.num_embeddings"},
      {"negative embedding_dim", [](EmbeddingDescriptor& d) { d.embedding_dim = -1; }, StatusCode::invalid_problem,
       "descriptor.embedding_dim"},
      {"negative num_indices", [](EmbeddingDescriptor& d) { d.num_indices = -1; }, StatusCode::invalid_problem,
       "descriptor.num_indices"},
  };
}

// ---------------------------------------------------------------------------------------------
// The profiler's cases. A case's shape is [A, B, K]:
//   embedding*:        weight [A, B] (V x D), K indices, values [K, B]
//   index_select_rows: src [A, B], K indices along dim 0, values [K, B]
//   index_select*:     src [A, B], K indices along dim 1, values [A, K]
//   gather*, scatter_add: src [A, B], index [A, K] along dim 1, values [A, K]
//   gather_rows*:      src [A, B], index [K, B] along dim 0, values [K, B]
// Backward cases overwrite their gradient (accumulate = false: the zeroing is part of the op, as in
// PyTorch's ops, which allocate and zero it); scatter_add accumulates into its destination as
// Tensor.scatter_add_ does. Indices are i64.

struct Dims {
  int64_t a, b, k;
};
Dims dims_of(const Shape& s) { return {s.dims[0], s.rank > 1 ? s.dims[1] : 1, s.rank > 2 ? s.dims[2] : 1}; }

// The shapes of the benchmarks on the GPU; smaller ones on the CPU.
std::vector<Shape> embedding_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{32000, 4096, 16384}} : std::vector<Shape>{{4000, 512, 2048}};
}
std::vector<Shape> skewed_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{1000000, 128, 262144}} : std::vector<Shape>{{100000, 64, 16384}};
}
std::vector<Shape> along_dim1_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{8192, 4096, 1024}} : std::vector<Shape>{{1024, 1024, 256}};
}
// gather along dim 0: src [4096, 8192], index [1024, 8192] (the dim-1 case transposed); on the GPU
// also a tall table with few entries a column (src [65536, 1024], index [64, 1024]: column lines).
std::vector<Shape> gather_rows_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{4096, 8192, 1024}, {65536, 1024, 64}}
                            : std::vector<Shape>{{1024, 1024, 256}};
}

// (Functions, not globals: the table is built during other files' static initialization.)
std::vector<DType> floats() { return {DType::f32, DType::bf16, DType::f16, DType::f64}; }
std::vector<DType> bench_floats() { return {DType::f32, DType::bf16}; }

template <bool kOverwrite>
GatherDescriptor bench_gather(DType dt, const Shape& s) {
  const Dims d = dims_of(s);
  GatherDescriptor desc{dt, DType::i64, {d.a, d.b}, {d.a, d.k}, 1};
  desc.accumulate = !kOverwrite;
  return desc;
}
GatherDescriptor bench_gather_rows(DType dt, const Shape& s) {
  const Dims d = dims_of(s);
  GatherDescriptor desc{dt, DType::i64, {d.a, d.b}, {d.k, d.b}, 0};
  desc.accumulate = false;
  return desc;
}
ScatterAddDescriptor bench_scatter_add(DType dt, const Shape& s) {
  const Dims d = dims_of(s);
  return {dt, DType::i64, {d.a, d.b}, {d.a, d.k}, 1};
}
template <int kDim, bool kOverwrite>
IndexSelectDescriptor bench_index_select(DType dt, const Shape& s) {
  const Dims d = dims_of(s);
  IndexSelectDescriptor desc{dt, DType::i64, {d.a, d.b}, kDim, d.k};
  desc.accumulate = !kOverwrite;
  return desc;
}
template <bool kOverwrite>
EmbeddingDescriptor bench_embedding(DType dt, const Shape& s) {
  const Dims d = dims_of(s);
  EmbeddingDescriptor desc{dt, DType::i64, d.a, d.b, d.k, {}};
  desc.accumulate = !kOverwrite;
  return desc;
}

// A backward case and its deterministic twin.
template <class Desc>
std::vector<BenchSample<Desc>> with_deterministic(std::string_view name, std::string_view deterministic_name,
                                                  std::string_view torch, std::vector<DType> dtypes,
                                                  std::vector<Shape> (*shapes)(Backend),
                                                  Desc (*describe)(DType, const Shape&), bool skewed = false) {
  return {{name, torch, dtypes, shapes, describe, false, skewed},
          {deterministic_name, torch, dtypes, shapes, describe, true, skewed}};
}

template <class Desc>
std::vector<BenchSample<Desc>> concat(std::vector<BenchSample<Desc>> a, const std::vector<BenchSample<Desc>>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> indexing_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(
      make_row<GatherPlan>({[] { return along_dim_samples<GatherDescriptor>(false); },
                            gather_reference,
                            exact,
                            {},
                            along_dim_errors<GatherDescriptor, &GatherDescriptor::src_shape>("descriptor.src_shape"),
                            {{"gather", "torch.gather(src, 1, idx)", floats(), along_dim1_shapes, bench_gather<false>,
                              false, false, "src"}}}));
  rows.push_back(make_row<GatherBackwardPlan>(
      {[] { return along_dim_samples<GatherDescriptor>(true); },
       gather_backward_reference,
       harness::tolerance,
       {},
       along_dim_errors<GatherDescriptor, &GatherDescriptor::src_shape>("descriptor.src_shape"),
       concat(with_deterministic<GatherDescriptor>("gather_backward", "gather_backward_deterministic",
                                                   "zeros().scatter_add_(1, idx, dout)", bench_floats(),
                                                   along_dim1_shapes, bench_gather<true>),
              with_deterministic<GatherDescriptor>("gather_rows_backward", "gather_rows_backward_deterministic",
                                                   "zeros().scatter_add_(0, idx, dout)", bench_floats(),
                                                   gather_rows_shapes, bench_gather_rows)),
       forward_of<GatherPlan>,
       Gradient{"dout", "out", {{"dsrc", "src"}}}}));
  rows.push_back(make_row<ScatterAddPlan>(
      {[] { return along_dim_samples<ScatterAddDescriptor>(true); },
       scatter_add_reference,
       harness::tolerance,
       {},
       along_dim_errors<ScatterAddDescriptor, &ScatterAddDescriptor::dst_shape>("descriptor.dst_shape"),
       with_deterministic<ScatterAddDescriptor>("scatter_add", "scatter_add_deterministic",
                                                "dst.scatter_add_(1, idx, src)", bench_floats(), along_dim1_shapes,
                                                bench_scatter_add)}));
  rows.push_back(make_row<IndexSelectPlan>({[] { return index_select_samples(false); },
                                            index_select_reference,
                                            exact,
                                            {},
                                            index_select_errors(),
                                            {{"index_select_rows", "torch.index_select(src, 0, idx)", floats(),
                                              embedding_shapes, bench_index_select<0, false>, false, false, "src"},
                                             {"index_select", "torch.index_select(src, 1, idx)", floats(),
                                              along_dim1_shapes, bench_index_select<1, false>, false, false, "src"}}}));
  rows.push_back(make_row<IndexSelectBackwardPlan>(
      {[] { return index_select_samples(true); },
       index_select_backward_reference,
       harness::tolerance,
       {},
       index_select_errors(),
       with_deterministic<IndexSelectDescriptor>("index_select_backward", "index_select_backward_deterministic",
                                                 "zeros().index_add_(1, idx, dout)", bench_floats(), along_dim1_shapes,
                                                 bench_index_select<1, true>),
       forward_of<IndexSelectPlan>,
       Gradient{"dout", "out", {{"dsrc", "src"}}}}));
  rows.push_back(make_row<EmbeddingPlan>(
      {[] { return embedding_samples(false); },
       embedding_reference,
       exact,
       {},
       embedding_errors(),
       {{"embedding", "F.embedding", floats(), embedding_shapes, bench_embedding<false>, false, false, "weight"}}}));
  rows.push_back(make_row<EmbeddingBackwardPlan>(
      {[] { return embedding_samples(true); },
       embedding_backward_reference,
       harness::tolerance,
       {},
       embedding_errors(),
       concat(with_deterministic<EmbeddingDescriptor>("embedding_backward", "embedding_backward_deterministic",
                                                      "aten.embedding_dense_backward", bench_floats(), embedding_shapes,
                                                      bench_embedding<true>),
              with_deterministic<EmbeddingDescriptor>("embedding_backward_skewed",
                                                      "embedding_backward_skewed_deterministic",
                                                      "aten.embedding_dense_backward (log-uniform)", bench_floats(),
                                                      skewed_shapes, bench_embedding<true>, true)),
       forward_of<EmbeddingPlan>,
       Gradient{"dout", "out", {{"dweight", "weight"}}}}));
  return rows;
}

}  // namespace baracuda::harness
