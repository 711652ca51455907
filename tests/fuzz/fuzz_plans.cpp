// The fuzz case (fuzz_plans.hpp). What depends on a plan's types is small: one descriptor generator
// per descriptor type (the fuzz_descriptor overloads) and fuzz_plan<Plan>, which reads the rest from
// the plan itself (schema(), arg_fields(), arg_specs()). Views, buffers, their contents and the
// invariants work on ArgSpecs, for every plan alike.
#include "fuzz_plans.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "fuzz_input.hpp"
#include "harness/buffer.hpp"

namespace baracuda::fuzz {
namespace {

constexpr int64_t kMaxBufferElements = int64_t{1} << 16;  // the most elements a view's buffer holds
constexpr size_t kMaxWorkspace = size_t{1} << 22;         // the most workspace bytes a case allocates
constexpr std::byte kCanary{0xA5};                        // what output buffers hold where their view is not
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int kDTypeCount = static_cast<int>(DType::boolean) + 1;

// The checks throw without the plan's name; fuzz_one adds it.
[[noreturn]] void fail(const std::string& detail) { throw FuzzFailure("", detail); }

// ---------------------------------------------------------------------------------------------
// Arithmetic on sizes the fuzzer makes itself: views may be absurd, and the fuzzer must not
// overflow where it expects the library not to.

int64_t saturating_mul(int64_t a, int64_t b) {  // a, b >= 0
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kInt64Max : r;
}
int64_t saturating_add(int64_t a, int64_t b) {  // a, b >= 0
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kInt64Max : r;
}

// The dims a Shape stores: a rank past kMaxRank (or negative) has no more.
int stored_rank(const Shape& s) { return std::clamp(s.rank, 0, kMaxRank); }

// Elements of a shape (saturated); 0 when a size is 0. Negative sizes count as 1.
int64_t exact_numel(const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d < stored_rank(s); ++d) {
    if (s.dims[d] == 0) return 0;
    n = saturating_mul(n, std::max<int64_t>(s.dims[d], 1));
  }
  return n;
}

// One past the furthest element a view reaches through its positive strides (saturated); 0 when
// empty. For a valid view (sizes and strides >= 0) this is its true extent.
int64_t reach(const Shape& s, const Strides& strides) {
  if (exact_numel(s) == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < stored_rank(s); ++d)
    if (s.dims[d] > 1 && strides[d] > 0) last = saturating_add(last, saturating_mul(s.dims[d] - 1, strides[d]));
  return saturating_add(last, 1);
}

size_t element_bytes(DType dtype) { return std::max<size_t>(dtype_size(dtype), 1); }  // 1 outside the enum

std::string dims_string(const int64_t* values, int count) {
  std::string s = "[";
  for (int d = 0; d < count; ++d) s += (d ? ", " : "") + std::to_string(values[d]);
  return s + "]";
}

std::string describe(const AnyTensorRef& v) {
  return std::string(dtype_name(v.dtype)) + " shape " + dims_string(v.shape.dims.data(), stored_rank(v.shape)) +
         (v.shape.rank == stored_rank(v.shape) ? "" : " (rank " + std::to_string(v.shape.rank) + ")") + " strides " +
         dims_string(v.strides.data(), stored_rank(v.shape)) + " capacity " + std::to_string(v.capacity);
}

// A view the fuzzer may walk: its offsets stay in [0, capacity), and there are not too many.
bool walkable(const AnyTensorRef& v) {
  if (v.shape.rank < 0 || v.shape.rank > kMaxRank) return false;
  for (int d = 0; d < v.shape.rank; ++d)
    if (v.shape.dims[d] < 0 || v.strides[d] < 0) return false;
  const int64_t n = exact_numel(v.shape);
  return n == 0 || (n <= 4 * kMaxBufferElements && reach(v.shape, v.strides) <= v.capacity);
}

// The view's distinct elements: its broadcast dims (zero strides) collapsed to size 1. Each element
// of it stands for `copies` of the view's.
AnyTensorRef distinct_elements(AnyTensorRef v, int64_t& copies) {
  copies = 1;
  for (int d = 0; d < stored_rank(v.shape); ++d) {
    if (v.strides[d] != 0 || v.shape.dims[d] <= 1) continue;
    copies = saturating_mul(copies, v.shape.dims[d]);
    v.shape.dims[d] = 1;
  }
  return v;
}

// Calls f(offset) for every element of a walkable view, in row-major order.
template <class F>
void for_each_offset(const AnyTensorRef& v, F&& f) {
  const int64_t n = exact_numel(v.shape);
  std::array<int64_t, kMaxRank> coord{};
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) {
    f(offset);
    for (int d = v.shape.rank - 1; d >= 0; --d) {
      if (++coord[d] < v.shape.dims[d]) {
        offset += v.strides[d];
        break;
      }
      offset -= (v.shape.dims[d] - 1) * v.strides[d];
      coord[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Descriptors: all decisions from the input. Sizes are mostly small so that most cases are cheap
// and get past select; the rest are the values that break naive size arithmetic.

// 2^k + 1 for k = 60..62: times 16, 8 or 4 (bytes per element or record) it wraps to a small size.
constexpr int64_t kAbsurdSizes[] = {int64_t{1} << 31,
                                    (int64_t{1} << 31) - 1,
                                    int64_t{1} << 32,
                                    (int64_t{1} << 32) + 1,
                                    int64_t{1} << 40,
                                    (int64_t{1} << 60) + 1,
                                    (int64_t{1} << 61) + 1,
                                    int64_t{1} << 62,
                                    (int64_t{1} << 62) + 1,
                                    kInt64Max,
                                    3037000500 /* its square passes INT64_MAX */,
                                    -1,
                                    -(int64_t{1} << 31),
                                    kInt64Min};

int64_t fuzz_size(FuzzInput& in) {
  switch (in.consume_weighted({72, 6, 12, 7, 3})) {
    case 0:
      return in.consume_int<int64_t>(1, 9);
    case 1:
      return 0;
    case 2:
      return in.consume_int<int64_t>(10, 300);
    case 3:
      return in.pick(kAbsurdSizes);
    default:
      return in.consume_int64();
  }
}

constexpr int kBadRanks[] = {kMaxRank + 1, 100, -1};

int fuzz_rank(FuzzInput& in) {
  switch (in.consume_weighted({62, 8, 20, 6, 4})) {
    case 0:
      return in.consume_int(1, 3);
    case 1:
      return 0;
    case 2:
      return in.consume_int(4, 5);
    case 3:
      return in.consume_int(6, kMaxRank);
    default:
      return in.pick(kBadRanks);
  }
}

// A shape of rank 0..9 or 100 (past kMaxRank only the stored dims are set).
Shape fuzz_shape(FuzzInput& in) {
  Shape s;
  s.rank = fuzz_rank(in);
  for (int d = 0; d < stored_rank(s); ++d) s.dims[d] = fuzz_size(in);
  return s;
}

// A dim of a rank-`rank` tensor (negative counts from the end), or now and then one that is not.
int fuzz_dim(FuzzInput& in, int rank) {
  if (rank > 0 && rank <= kMaxRank && !in.chance(10)) return in.consume_int(-rank, rank - 1);
  switch (in.consume_weighted({1, 1, 1, 1, 1})) {
    case 0:
      return rank;
    case 1:
      return -rank - 1;
    case 2:
      return std::numeric_limits<int>::min();
    case 3:
      return std::numeric_limits<int>::max();
    default:
      return in.consume_int(std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  }
}

// Mostly a dtype the plan supports (else few cases get past select), else any DType, else a value
// outside the enum.
DType fuzz_dtype(FuzzInput& in, std::span<const DType> supported) {
  switch (in.consume_weighted({88, 8, 4})) {
    case 0:
      if (!supported.empty()) return in.pick(supported);
      [[fallthrough]];
    case 1:
      return static_cast<DType>(in.consume_int(0, kDTypeCount - 1));
    default:
      return static_cast<DType>(in.consume_int(kDTypeCount, 255));
  }
}

// A weight shape broadcastable to `shape` (a suffix of it with some sizes 1), or now and then any.
Shape fuzz_broadcast_shape(FuzzInput& in, const Shape& shape) {
  if (shape.rank < 0 || shape.rank > kMaxRank || in.chance(20)) return fuzz_shape(in);
  Shape w;
  w.rank = in.consume_int(0, shape.rank);
  for (int d = 0; d < w.rank; ++d) w.dims[d] = in.chance(40) ? 1 : shape.dims[d + shape.rank - w.rank];
  return w;
}

// An index shape of the table's rank no larger than the table off `dim`, or now and then any.
Shape fuzz_index_shape(FuzzInput& in, const Shape& table, int dim) {
  if (table.rank < 0 || table.rank > kMaxRank || in.chance(20)) return fuzz_shape(in);
  Shape index = table;
  const int along = dim < 0 ? dim + table.rank : dim;  // a wild dim makes every dim "off dim"
  for (int d = 0; d < table.rank; ++d) {
    if (d == along)
      index.dims[d] = fuzz_size(in);
    else if (table.dims[d] > 0 && in.chance(50))
      index.dims[d] = in.consume_int<int64_t>(0, table.dims[d]);
  }
  return index;
}

void fuzz_along_dim(FuzzInput& in, Shape& table, Shape& index, int& dim) {
  table = fuzz_shape(in);
  dim = fuzz_dim(in, table.rank);
  index = fuzz_index_shape(in, table, dim);
}

double fuzz_weight(FuzzInput& in) {
  constexpr double kSpecial[] = {0.5,
                                 0.0,
                                 -0.0,
                                 1.0,
                                 -1.0,
                                 std::numeric_limits<double>::quiet_NaN(),
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 1e300,
                                 -1e300,
                                 std::numeric_limits<double>::denorm_min()};
  return in.chance(60) ? in.consume_int(-2000, 2000) / 1000.0 : in.pick(kSpecial);
}

std::optional<int64_t> fuzz_padding(FuzzInput& in, int64_t rows) {
  switch (in.consume_weighted({40, 40, 10, 10})) {
    case 0:
      return std::nullopt;
    case 1:
      return rows > 0 ? in.consume_int<int64_t>(-rows, rows - 1) : in.consume_int<int64_t>(-2, 2);
    case 2:
      return in.pick(kAbsurdSizes);
    default:
      return in.consume_int64();
  }
}

// What every indexing descriptor has.
template <class Descriptor>
void fuzz_index_types(FuzzInput& in, const OpSchema& schema, Descriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.accumulate = in.consume_bool();
}

// One of an enum's two values, or now and then a value past them (an invalid enum a caller cast).
template <class E>
E fuzz_enum(FuzzInput& in, E first, E second, int garbage_percent) {
  if (in.chance(garbage_percent)) return static_cast<E>(in.consume_int(2, 255));
  return in.consume_bool() ? second : first;
}

// One generator per descriptor type; a new op family adds its overload.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, BinaryParamDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.weight_mode = fuzz_enum(in, WeightMode::scalar, WeightMode::tensor, 6);
  d.weight = fuzz_weight(in);
  d.weight_shape = fuzz_broadcast_shape(in, d.shape);
}

// Any kind (now and then a value past the last), its parameters valid or not (NaN, infinities, 0,
// softplus's beta <= 0, hardtanh's bounds reversed).
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, UnaryDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.kind = in.chance(95) ? static_cast<UnaryKind>(in.consume_int(0, kUnaryKindCount - 1))
                         : static_cast<UnaryKind>(in.consume_int(kUnaryKindCount, 255));
  if (in.chance(50)) {
    UnaryParameters& p = d.parameters;
    for (double* v : {&p.negative_slope, &p.alpha, &p.beta, &p.threshold, &p.min_val, &p.max_val})
      if (in.chance(30)) *v = fuzz_weight(in);
  }
}

// Any kind (now and then a value past the last); b broadcast against a (or a shape that does not
// broadcast), a side a scalar now and then (both, rarely), alpha anything.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, BinaryDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.kind = in.chance(95) ? static_cast<BinaryKind>(in.consume_int(0, kBinaryKindCount - 1))
                         : static_cast<BinaryKind>(in.consume_int(kBinaryKindCount, 255));
  d.a_shape = fuzz_shape(in);
  d.b_shape = fuzz_broadcast_shape(in, d.a_shape);
  if (in.consume_bool()) std::swap(d.a_shape, d.b_shape);
  if (in.chance(10)) d.a_scalar = fuzz_weight(in);
  if (in.chance(10)) d.b_scalar = fuzz_weight(in);
  // Mixed dtypes: promoted (u8 with i8 and a scalar operand with b_dtype are rejected).
  if (in.chance(15)) d.b_dtype = fuzz_dtype(in, schema.dtypes);
  // A scalar's own dtype (promoted where of a higher category; set without a scalar: rejected).
  if (in.chance(15)) d.scalar_dtype = fuzz_dtype(in, schema.dtypes);
  d.alpha = fuzz_weight(in);
}

// Any kind (now and then a value past the last); b and c broadcast against a (or shapes that do not
// broadcast), in any order; an operand a scalar now and then (all three, rarely); value anything.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, TernaryDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.kind = in.chance(95) ? static_cast<TernaryKind>(in.consume_int(0, kTernaryKindCount - 1))
                         : static_cast<TernaryKind>(in.consume_int(kTernaryKindCount, 255));
  d.a_shape = fuzz_shape(in);
  d.b_shape = fuzz_broadcast_shape(in, d.a_shape);
  d.c_shape = fuzz_broadcast_shape(in, in.consume_bool() ? d.a_shape : d.b_shape);
  if (in.consume_bool()) std::swap(d.a_shape, d.b_shape);
  if (in.consume_bool()) std::swap(d.a_shape, d.c_shape);
  if (in.chance(10)) d.a_scalar = fuzz_weight(in);
  if (in.chance(15)) d.b_scalar = fuzz_weight(in);
  if (in.chance(15)) d.c_scalar = fuzz_weight(in);
  d.value = fuzz_weight(in);
}

// Any dtype pair (now and then one past the last).
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, CastDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.out_dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
}

// Any value (NaN, infinities, past an integer's range) or an exact integer.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, FillDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.value = fuzz_weight(in);
  if (in.chance(20)) d.integer_value = in.consume_int64();
}

// Any kind (now and then a value past the last); the last dim odd now and then.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, GatedDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.kind = in.chance(95) ? static_cast<GatedKind>(in.consume_int(0, kGatedKindCount - 1))
                         : static_cast<GatedKind>(in.consume_int(kGatedKindCount, 255));
  d.shape = fuzz_shape(in);
  if (d.shape.rank > 0 && d.shape.rank <= kMaxRank && in.chance(90)) d.shape.dims[d.shape.rank - 1] &= ~int64_t{1};
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, GatherDescriptor& d) {
  fuzz_index_types(in, schema, d);
  fuzz_along_dim(in, d.src_shape, d.index_shape, d.dim);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, ScatterAddDescriptor& d) {
  fuzz_index_types(in, schema, d);
  fuzz_along_dim(in, d.dst_shape, d.index_shape, d.dim);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, IndexSelectDescriptor& d) {
  fuzz_index_types(in, schema, d);
  d.src_shape = fuzz_shape(in);
  d.dim = fuzz_dim(in, d.src_shape.rank);
  d.num_indices = fuzz_size(in);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, EmbeddingDescriptor& d) {
  fuzz_index_types(in, schema, d);
  d.num_embeddings = fuzz_size(in);
  d.embedding_dim = fuzz_size(in);
  d.num_indices = fuzz_size(in);
  d.padding_idx = fuzz_padding(in, d.num_embeddings);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, SoftmaxDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.out_dtype = in.chance(70) ? std::nullopt : std::optional<DType>(fuzz_dtype(in, schema.dtypes));
  d.shape = fuzz_shape(in);
  d.dim = fuzz_dim(in, d.shape.rank);
  d.kind = in.consume_bool() ? fuzz_enum(in, SoftmaxKind::softmax, SoftmaxKind::log_softmax, 5)
                             : fuzz_enum(in, SoftmaxKind::sparsemax, SoftmaxKind::entmax15, 5);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, NormDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.weight_dtype = in.chance(60) ? std::nullopt : std::optional<DType>(in.chance(80) ? DType::f32 : fuzz_dtype(in, {}));
  d.shape = fuzz_shape(in);
  const int rank = std::clamp(d.shape.rank, 0, kMaxRank);
  d.normalized_dims = in.chance(90) && rank > 0 ? in.consume_int(1, rank) : in.consume_int(-2, kMaxRank + 2);
  d.eps = in.chance(90) ? 1e-5 : fuzz_weight(in);
  d.has_weight = in.consume_bool();
  d.has_bias = in.consume_bool();
  d.weight_offset = in.chance(80) ? 0.0 : fuzz_weight(in);
  d.residual = in.consume_bool();
}

// Groups mostly dividing C (a divisor of the fuzzed C), sometimes any count; every option.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, GroupNormDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.weight_dtype = in.chance(60) ? std::nullopt : std::optional<DType>(in.chance(80) ? DType::f32 : fuzz_dtype(in, {}));
  d.shape = fuzz_shape(in);
  const int64_t channels = d.shape.rank >= 2 ? d.shape.dims[1] : 1;
  if (in.chance(85) && channels > 0 && channels < (int64_t{1} << 20)) {
    d.groups = in.consume_int<int64_t>(1, channels);
    while (channels % d.groups != 0) --d.groups;
  } else {
    d.groups = fuzz_size(in);
  }
  d.eps = in.chance(90) ? 1e-5 : fuzz_weight(in);
  d.has_weight = in.consume_bool();
  d.has_bias = in.consume_bool();
  d.silu = in.consume_bool();
}

// Every mode and option; momentum mostly in [0, 1], sometimes anything.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, BatchNormDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.weight_dtype = in.chance(60) ? std::nullopt : std::optional<DType>(in.chance(80) ? DType::f32 : fuzz_dtype(in, {}));
  d.shape = fuzz_shape(in);
  const int rank = std::clamp(d.shape.rank, 0, kMaxRank);
  d.channel_dim = in.chance(90) && rank > 0 ? in.consume_int(0, rank - 1) : in.consume_int(-2, kMaxRank + 2);
  d.eps = in.chance(90) ? 1e-5 : fuzz_weight(in);
  d.momentum = in.chance(85) ? in.consume_int(0, 10) / 10.0 : fuzz_weight(in);
  d.training = in.consume_bool();
  d.running_stats = in.chance(80);
  d.has_weight = in.consume_bool();
  d.has_bias = in.consume_bool();
}

// Mostly small caches and appends, sometimes any size (the block table's rows and the lengths are
// index arguments: the fuzzer's values include bad ones).
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, KvCacheAppendDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.batch = fuzz_size(in);
  d.new_tokens = fuzz_size(in);
  d.heads_kv = in.chance(90) ? in.consume_int<int64_t>(1, 3) : fuzz_size(in);
  d.head_dim = in.chance(90) ? in.consume_int<int64_t>(1, 40) : fuzz_size(in);
  d.head_dim_v = in.chance(70) ? d.head_dim : fuzz_size(in);
  d.block_size = in.chance(90) ? in.consume_int<int64_t>(1, 16) : in.consume_int<int64_t>(-2, 1 << 20);
  d.num_blocks = fuzz_size(in);
  d.max_blocks = fuzz_size(in);
}

// Mostly small valid sizes (heads_q a multiple of heads_kv, head dims up to 40), sometimes any;
// every mask, the soft-cap and scale at their edges, the bias in any dtype, packed sequences, paged caches.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, AttentionDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.batch = fuzz_size(in);
  d.seq_q = fuzz_size(in);
  d.seq_kv = fuzz_size(in);
  d.heads_kv = in.chance(90) ? in.consume_int<int64_t>(1, 3) : fuzz_size(in);
  if (in.chance(85)) {  // a multiple of heads_kv (the product kept in range: no overflow here)
    const int64_t factor = in.consume_int<int64_t>(0, 3);
    const bool small = d.heads_kv > -(int64_t{1} << 61) && d.heads_kv < (int64_t{1} << 61);
    d.heads_q = small ? d.heads_kv * factor : d.heads_kv;
  } else {
    d.heads_q = fuzz_size(in);
  }
  d.head_dim = in.chance(90) ? in.consume_int<int64_t>(1, 40) : in.consume_int<int64_t>(-2, 600);
  d.head_dim_v = in.chance(70) ? d.head_dim : in.consume_int<int64_t>(-2, 600);
  d.scale = in.chance(80) ? 0.0 : fuzz_weight(in);
  d.causal = in.consume_bool();
  d.alignment = fuzz_enum(in, CausalAlignment::top_left, CausalAlignment::bottom_right, 5);
  d.window_left = in.chance(60) ? -1 : in.consume_int<int64_t>(-3, 12);
  d.window_right = in.chance(60) ? (d.causal ? 0 : -1) : in.consume_int<int64_t>(-3, 12);
  d.softcap = in.chance(80) ? 0.0 : fuzz_weight(in);
  d.has_bias = in.consume_bool();
  d.bias_dtype = in.chance(60) ? std::nullopt : std::optional<DType>(in.chance(70) ? DType::f32 : fuzz_dtype(in, {}));
  // Packed sequences: offsets as random index values (mostly refused at run, naming them); or a paged
  // KV cache: block entries and lengths as random index values (mostly valid), tables mostly long enough.
  if (in.chance(15)) {
    d.has_bias = in.chance(10);
    if (in.chance(40)) {
      d.paged = true;
      d.block_size = in.chance(85) ? in.consume_int<int64_t>(1, 8) : fuzz_size(in);
      d.num_blocks = fuzz_size(in);
      const int64_t per_block = d.block_size > 0 ? d.block_size : 1;
      d.max_blocks = in.chance(80) && d.seq_kv >= 0 ? d.seq_kv / per_block + 1 : fuzz_size(in);
    } else {
      d.varlen = true;
      d.total_q = fuzz_size(in);
      d.total_kv = fuzz_size(in);
    }
  }
}

// ignore_index: a class, or a value no index fill draws (the fills' bad values are -1, C, C + 1, the
// extremes and random words): either way the counter counts exactly the targets outside [0, C).
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, CrossEntropyDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.weight_dtype = in.chance(60) ? std::nullopt : std::optional<DType>(in.chance(80) ? DType::f32 : fuzz_dtype(in, {}));
  d.shape = fuzz_shape(in);
  d.reduction = in.chance(5) ? static_cast<LossReduction>(in.consume_int(3, 255))
                             : static_cast<LossReduction>(in.consume_int(0, 2));
  const int64_t classes = d.shape.rank >= 1 && d.shape.rank <= kMaxRank ? d.shape.dims[d.shape.rank >= 2 ? 1 : 0] : 0;
  d.ignore_index = in.chance(50) || classes <= 0 ? -(int64_t{1} << 40) : in.consume_int<int64_t>(0, classes - 1);
  d.label_smoothing = in.chance(60) ? 0.0 : (in.chance(70) ? 0.1 : fuzz_weight(in));
  d.z_loss = in.chance(60) ? 0.0 : (in.chance(70) ? 1e-4 : fuzz_weight(in));
  d.has_weight = in.consume_bool();
  // F.nll_loss, mostly without the smoothing and z-loss it refuses.
  d.log_probs = in.chance(25);
  if (d.log_probs && !in.chance(10)) d.label_smoothing = d.z_loss = 0.0;
  // Probabilities as targets (with log_probs: refused).
  d.soft_targets = in.chance(d.log_probs ? 5 : 20);
}

// Small sizes (each run is a sweep of matmuls), sometimes a forced chunk that does not divide N.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, LinearCrossEntropyDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.tokens = in.consume_int<int64_t>(-1, 40);
  d.hidden_size = in.consume_int<int64_t>(-1, 24);
  d.vocab_size = in.consume_int<int64_t>(-1, 60);
  d.has_bias = in.consume_bool();
  d.has_class_weight = in.consume_bool();
  d.reduction = in.chance(5) ? static_cast<LossReduction>(in.consume_int(3, 255))
                             : static_cast<LossReduction>(in.consume_int(0, 2));
  d.ignore_index =
      in.chance(50) || d.vocab_size <= 0 ? -(int64_t{1} << 40) : in.consume_int<int64_t>(0, d.vocab_size - 1);
  d.label_smoothing = in.chance(60) ? 0.0 : (in.chance(70) ? 0.1 : fuzz_weight(in));
  d.z_loss = in.chance(60) ? 0.0 : (in.chance(70) ? 1e-4 : fuzz_weight(in));
  d.grad_in_forward = in.consume_bool();
  d.weight_grad_dtype =
      in.chance(70) ? std::nullopt : std::optional<DType>(in.chance(80) ? DType::f32 : fuzz_dtype(in, {}));
  d.chunk_rows = in.chance(50) ? 0 : in.consume_int<int64_t>(-1, 9);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, PointwiseLossDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.kind = in.chance(5) ? static_cast<PointwiseLossKind>(in.consume_int(7, 255))
                        : static_cast<PointwiseLossKind>(in.consume_int(0, 6));
  d.shape = fuzz_shape(in);
  d.reduction = in.chance(5) ? static_cast<LossReduction>(in.consume_int(3, 255))
                             : static_cast<LossReduction>(in.consume_int(0, 2));
  d.beta = in.chance(60) ? 1.0 : (in.chance(50) ? 0.0 : fuzz_weight(in));
  d.log_target = in.consume_bool();
  // bce's and bce_with_logits' weights, sometimes on another kind (refused)
  const bool bce = d.kind == PointwiseLossKind::bce || d.kind == PointwiseLossKind::bce_with_logits;
  d.has_weight = in.chance(bce ? 40 : 5);
  d.has_pos_weight = in.chance(d.kind == PointwiseLossKind::bce_with_logits ? 40 : 5);
}

// Mostly operands whose K agree (else few cases get past select), sometimes any two shapes.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, MatmulDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.out_dtype = in.chance(80) ? std::nullopt : std::optional<DType>(in.chance(70) ? DType::f32 : fuzz_dtype(in, {}));
  d.a = fuzz_shape(in);
  d.b = fuzz_shape(in);
  d.transpose_a = in.chance(30);
  d.transpose_b = in.chance(30);
  const int ra = d.a.rank, rb = d.b.rank;
  if (in.chance(80) && ra >= 1 && ra <= kMaxRank && rb >= 1 && rb <= kMaxRank) {
    if (ra == 1) d.transpose_a = false;
    if (rb == 1) d.transpose_b = false;
    const int64_t k = ra == 1 ? d.a.dims[0] : d.a.dims[ra - (d.transpose_a ? 2 : 1)];
    d.b.dims[rb == 1 ? 0 : rb - (d.transpose_b ? 1 : 2)] = k;
    // Batch dims mostly equal or 1 (broadcast).
    for (int i = 0; i + 2 < std::min(ra, rb) && in.chance(80); ++i)
      d.b.dims[rb - 3 - i] = in.chance(30) ? 1 : d.a.dims[ra - 3 - i];
  }
  d.alpha = in.chance(80) ? 1.0 : fuzz_weight(in);
  d.beta = in.chance(60) ? 0.0 : fuzz_weight(in);
  d.has_c = in.consume_bool();
  d.allow_tf32 = in.consume_bool();
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, LinearDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.x = fuzz_shape(in);
  d.out_features = fuzz_size(in);
  d.has_bias = in.consume_bool();
  d.activation =
      in.chance(5) ? static_cast<Activation>(in.consume_int(5, 255)) : static_cast<Activation>(in.consume_int(0, 4));
  d.allow_tf32 = in.consume_bool();
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, GroupedMatmulDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.out_dtype = in.chance(80) ? std::nullopt : std::optional<DType>(in.chance(70) ? DType::f32 : fuzz_dtype(in, {}));
  d.rows = fuzz_size(in);
  d.k = fuzz_size(in);
  d.n = fuzz_size(in);
  d.groups = in.chance(10) ? fuzz_size(in) : in.consume_int<int64_t>(1, 70);
  d.transpose_b = in.consume_bool();
  d.allow_tf32 = in.consume_bool();
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, RandomDescriptor& d) {
  d.kind =
      in.chance(5) ? static_cast<RandomKind>(in.consume_int(5, 255)) : static_cast<RandomKind>(in.consume_int(0, 4));
  d.mean = in.chance(80) ? 0.0 : fuzz_weight(in);
  d.std = in.chance(80) ? 1.0 : fuzz_weight(in);
  d.lambda = in.chance(80) ? 1.0 : fuzz_weight(in);
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.seed = static_cast<uint64_t>(in.consume_int64());
  d.offset = static_cast<uint64_t>(in.consume_int64());
  d.low = in.chance(70) ? in.consume_int(-100, 100) : fuzz_weight(in);
  d.high = in.chance(70) ? d.low + in.consume_int(1, 1000) : fuzz_weight(in);
  d.p = in.chance(80) ? in.consume_int(0, 100) / 100.0 : fuzz_weight(in);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, RandpermDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.n = in.chance(5) ? in.consume_int64() : in.consume_int<int64_t>(-2, 3000);
  d.seed = static_cast<uint64_t>(in.consume_int64());
  d.offset = static_cast<uint64_t>(in.consume_int64());
}

// Mostly [rows, categories] or [categories] (the ranks it takes), samples around the categories
// (past them now and then, refused without replacement); the weights are anything.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, MultinomialDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.shape =
      in.chance(80) ? (in.chance(50) ? Shape{fuzz_size(in), fuzz_size(in)} : Shape{fuzz_size(in)}) : fuzz_shape(in);
  const int64_t categories = d.shape.rank >= 1 ? d.shape.dims[d.shape.rank - 1] : 0;
  d.samples =
      in.chance(5) ? in.consume_int64() : in.consume_int<int64_t>(-1, std::clamp<int64_t>(categories, 0, 1 << 20) + 2);
  d.replacement = in.chance(50);
  d.seed = static_cast<uint64_t>(in.consume_int64());
  d.offset = static_cast<uint64_t>(in.consume_int64());
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, DropoutDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.p = in.chance(80) ? in.consume_int(0, 100) / 100.0 : fuzz_weight(in);
  d.seed = static_cast<uint64_t>(in.consume_int64());
  d.offset = static_cast<uint64_t>(in.consume_int64());
}

// Mostly small problems (an odd head dim rotated whole, or a rotary dim past it, is refused), q alone
// now and then; an invalid layout, a base of 0, NaN or infinity; the positions' values are anything.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, RotaryDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.batch = fuzz_size(in);
  d.seq_len = fuzz_size(in);
  d.q_heads = fuzz_size(in);
  d.k_heads = in.chance(30) ? 0 : fuzz_size(in);
  d.head_dim = in.chance(70) ? 2 * in.consume_int<int64_t>(1, 8) : fuzz_size(in);
  d.rotary_dim = in.chance(40) ? 0 : in.chance(80) ? 2 * in.consume_int<int64_t>(0, 8) : fuzz_size(in);
  d.layout = fuzz_enum(in, RotaryLayout::half_split, RotaryLayout::interleaved, 5);
  d.base = in.chance(80) ? 10000.0 : fuzz_weight(in);
  d.has_inv_freq = in.consume_bool();
}

// The reduced dims: mostly a subset of the rank's dims in any order (some negative), or none (every
// dim); now and then wild ones (repeated, past the rank, below -rank) or a count past the rank,
// kMaxRank or below 0.
ReduceDims fuzz_reduce_dims(FuzzInput& in, int rank) {
  ReduceDims dims;
  const int stored = std::clamp(rank, 0, kMaxRank);
  switch (in.consume_weighted({70, 15, 10, 5})) {
    case 0:
      for (int k = 0; k < stored; ++k)
        if (in.chance(50)) dims.dims[dims.count++] = in.consume_bool() ? k - rank : k;
      for (int k = dims.count - 1; k > 0; --k) std::swap(dims.dims[k], dims.dims[in.consume_int(0, k)]);
      return dims;
    case 1:
      return dims;
    case 2:
      dims.count = in.consume_int(1, kMaxRank);
      for (int i = 0; i < dims.count; ++i) dims.dims[i] = fuzz_dim(in, rank);
      if (dims.count > 1 && in.chance(50)) dims.dims[dims.count - 1] = dims.dims[0];  // a repeat
      return dims;
    default:
      dims.count = in.consume_bool() ? in.consume_int(kMaxRank + 1, 1000) : in.consume_int(-1000, -1);
      for (int& d : dims.dims) d = fuzz_dim(in, rank);
      return dims;
  }
}

// A var / std correction or a norm's p: ordinary values, the edges (0, negative, huge), NaN and inf.
double fuzz_parameter(FuzzInput& in, double usual) {
  constexpr double kSpecial[] = {0.0,
                                 1.0,
                                 2.0,
                                 3.0,
                                 0.5,
                                 -1.0,
                                 -0.0,
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN(),
                                 1e300,
                                 -1e300,
                                 std::numeric_limits<double>::denorm_min()};
  return in.chance(75) ? usual : in.pick(kSpecial);
}

void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, ReduceDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.dims = fuzz_reduce_dims(in, d.shape.rank);
  d.keepdim = in.consume_bool();
  d.kind = in.chance(95) ? static_cast<ReduceKind>(in.consume_int(0, static_cast<int>(ReduceKind::var_mean)))
                         : static_cast<ReduceKind>(in.consume_int(static_cast<int>(ReduceKind::var_mean) + 1, 255));
  switch (in.consume_weighted({70, 18, 8, 4})) {
    case 0:
      d.out_dtype = std::nullopt;
      break;
    case 1:
      d.out_dtype = fuzz_dtype(in, schema.dtypes);
      break;
    case 2:  // the count and boolean kinds' own
      d.out_dtype = in.consume_bool() ? DType::boolean : DType::i64;
      break;
    default:
      d.out_dtype = fuzz_dtype(in, {});
      break;
  }
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.correction = fuzz_parameter(in, 1.0);
  d.p = fuzz_parameter(in, 2.0);
}

// A segment reduction: any data shape (rank 0 now and then), a segment count small, absurd or
// negative, each form (a value past the enum now and then), and an initial value or none.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, SegmentDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
  d.data_shape = fuzz_shape(in);
  d.num_segments = in.chance(85) ? fuzz_size(in) : in.consume_int64();
  d.form =
      in.chance(95) ? static_cast<SegmentForm>(in.consume_int(0, 2)) : static_cast<SegmentForm>(in.consume_int(3, 255));
  d.initial = in.chance(70) ? std::nullopt : std::optional<double>(fuzz_weight(in));
}

// A scan: any dim (a scalar's 0 and -1 among them), both directions, kinds past the enum now and
// then; out dtypes none, f32 or i64 (an integer cumsum's), a supported one or any.
void fuzz_descriptor(FuzzInput& in, const OpSchema& schema, ScanDescriptor& d) {
  d.dtype = fuzz_dtype(in, schema.dtypes);
  d.shape = fuzz_shape(in);
  d.dim = fuzz_dim(in, d.shape.rank);
  d.kind = in.chance(95) ? static_cast<ScanKind>(in.consume_int(0, static_cast<int>(ScanKind::logcumsumexp)))
                         : static_cast<ScanKind>(in.consume_int(static_cast<int>(ScanKind::logcumsumexp) + 1, 255));
  d.reverse = in.consume_bool();
  switch (in.consume_weighted({70, 15, 10, 5})) {
    case 0:
      d.out_dtype = std::nullopt;
      break;
    case 1:
      d.out_dtype = in.consume_bool() ? DType::f32 : DType::i64;
      break;
    case 2:
      d.out_dtype = fuzz_dtype(in, schema.dtypes);
      break;
    default:
      d.out_dtype = fuzz_dtype(in, {});
      break;
  }
  d.index_dtype = fuzz_dtype(in, schema.index_dtypes);
}

std::string fuzz_variant(FuzzInput& in, std::span<const VariantInfo> variants) {
  switch (in.consume_weighted({65, 28, 7})) {
    case 0:
      return "";
    case 1:
      if (!variants.empty()) return std::string(in.pick(variants).name);
      [[fallthrough]];
    default:
      return in.consume_string(12);
  }
}

PlanPreference fuzz_preference(FuzzInput& in, const OpSchema& schema) {
  PlanPreference p;
  p.determinism = fuzz_enum(in, Determinism::any, Determinism::required, 5);
  switch (in.consume_weighted({75, 10, 10, 5})) {
    case 0:
      break;  // no limit
    case 1:
      p.workspace_limit = 0;
      break;
    case 2:
      p.workspace_limit = in.consume_int<size_t>(1, 4096);
      break;
    default:
      p.workspace_limit = in.consume_uint64();
  }
  switch (in.consume_weighted({80, 12, 8})) {
    case 0:
      break;  // any backend
    case 1:
      p.backend = Backend::cpu;
      break;
    default:
      p.backend = Backend::cuda;
  }
  p.variant = fuzz_variant(in, schema.variants);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Memory, on the plan's backend.

// Exactly `initial.size()` bytes holding `initial`: on the CPU its own heap block (so that
// AddressSanitizer sees the first byte past it), on CUDA a device buffer.
class FuzzBuffer {
 public:
  FuzzBuffer(Backend backend, std::vector<std::byte> initial) : backend_(backend), initial_(std::move(initial)) {
    if (backend_ == Backend::cpu) {
      host_.reset(new std::byte[initial_.size()]);
      std::copy(initial_.begin(), initial_.end(), host_.get());
      return;
    }
    Expected<harness::Buffer> b = harness::Buffer::allocate(Backend::cuda, initial_.size());
    if (!b) throw std::runtime_error("fuzzer: device allocation failed: " + b.status().to_string());
    device_ = std::move(*b);
    if (Status s = device_.upload(initial_.data(), initial_.size()); !s)
      throw std::runtime_error("fuzzer: upload failed: " + s.to_string());
  }
  std::byte* data() const { return backend_ == Backend::cpu ? host_.get() : static_cast<std::byte*>(device_.data()); }
  const std::vector<std::byte>& initial() const { return initial_; }
  // The contents now (on CUDA, downloaded at the first call: call it after run).
  std::span<const std::byte> current() {
    if (backend_ == Backend::cpu) return {host_.get(), initial_.size()};
    if (downloaded_.size() == initial_.size()) return downloaded_;
    downloaded_.resize(initial_.size());
    if (Status s = device_.download(downloaded_.data(), downloaded_.size()); !s)
      fail("downloading a buffer after run failed (a kernel faulted?): " + s.to_string());
    return downloaded_;
  }

 private:
  Backend backend_;
  std::vector<std::byte> initial_;
  std::unique_ptr<std::byte[]> host_;
  harness::Buffer device_;
  std::vector<std::byte> downloaded_;
};

// A workspace of `size` bytes, 16-byte aligned (or none: data null).
class FuzzWorkspace {
 public:
  FuzzWorkspace(Backend backend, size_t size, bool null) : size_(size) {
    if (null) return;
    if (backend == Backend::cpu) {
      host_.reset(std::aligned_alloc(16, (std::max<size_t>(size, 1) + 15) / 16 * 16));
      return;
    }
    Expected<harness::Buffer> b = harness::Buffer::allocate(Backend::cuda, size);
    if (!b) throw std::runtime_error("fuzzer: device allocation failed: " + b.status().to_string());
    device_ = std::move(*b);
  }
  Workspace get() const { return {host_ ? host_.get() : device_.data(), size_}; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  size_t size_;
  std::unique_ptr<void, Free> host_;
  harness::Buffer device_;
};

// Exactly what the plan needs, or a few bytes short, or none, or more; never past kMaxWorkspace (a
// plan that needs more must refuse the smaller one it gets).
FuzzWorkspace fuzz_workspace(FuzzInput& in, Backend backend, size_t needed) {
  size_t size = needed;
  bool null = false;
  switch (in.consume_weighted({75, 12, 8, 5})) {
    case 0:
      break;
    case 1:
      size = needed - std::min(needed, in.consume_int<size_t>(1, 16));
      break;
    case 2:
      null = true;
      break;
    default:
      size = needed + in.consume_int<size_t>(1, 64);
  }
  return FuzzWorkspace(backend, std::min(size, kMaxWorkspace), null);
}

// ---------------------------------------------------------------------------------------------
// Contents.

// A value of `dtype` at `out`: small numbers exact in every float type, and now and then NaN or an
// infinity when `specials`; one arbitrary byte for a DType outside the enum.
void store_value(DType dtype, SplitMix64& rng, bool specials, std::byte* out) {
  if (!is_floating(dtype)) {
    const int64_t v = rng.below(17) - 8;
    const auto put = [&](auto x) { std::memcpy(out, &x, sizeof x); };
    switch (dtype) {
      case DType::i32:
        return put(static_cast<int32_t>(v));
      case DType::i64:
        return put(v);
      case DType::i8:
        return put(static_cast<int8_t>(v));
      case DType::u8:
      case DType::boolean:
        return put(static_cast<uint8_t>(v & 1));
      default:
        return put(static_cast<uint8_t>(rng.next()));
    }
  }
  double v = static_cast<double>(rng.below(2001) - 1000) / 256.0;
  if (specials && rng.below(8) == 0) {
    constexpr double kSpecial[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity()};
    v = kSpecial[rng.below(3)];
  }
  const auto put = [&](auto x) { std::memcpy(out, &x, sizeof x); };
  switch (dtype) {
    case DType::f16:
      return put(half(static_cast<float>(v)).bits);
    case DType::bf16:
      return put(bfloat16(static_cast<float>(v)).bits);
    case DType::f32:
      return put(static_cast<float>(v));
    default:
      return put(v);
  }
}

void fill_random_bytes(std::vector<std::byte>& bytes, SplitMix64& rng) {
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(bytes.data() + i, &r, std::min<size_t>(8, bytes.size() - i));
  }
}

// How a case's index values are drawn: mostly valid, any mix, or all bad.
enum class IndexMix : unsigned char { mostly_valid, mixed, all_bad };

// Valid values in [0, bound), and the classic wrong ones: -1, bound, bound + 1, the type's extremes,
// anything.
int64_t index_value(DType index_dtype, int64_t bound, IndexMix mix, SplitMix64& rng) {
  int kind = 0;
  if (mix == IndexMix::all_bad) kind = 1 + static_cast<int>(rng.below(6));
  if (mix == IndexMix::mixed) kind = static_cast<int>(rng.below(7));
  if (mix == IndexMix::mostly_valid && rng.below(10) == 0) kind = 1 + static_cast<int>(rng.below(6));
  const bool i32 = index_dtype == DType::i32;
  switch (kind) {
    case 0:
      return rng.below(bound);
    case 1:
      return -1;
    case 2:
      return bound;
    case 3:
      return saturating_add(bound, 1);
    case 4:
      return i32 ? std::numeric_limits<int32_t>::min() : kInt64Min;
    case 5:
      return i32 ? std::numeric_limits<int32_t>::max() : kInt64Max;
    default:
      return static_cast<int64_t>(rng.next());
  }
}

void store_index(DType index_dtype, int64_t value, std::byte* p) {
  if (index_dtype == DType::i32) {
    const auto narrow = static_cast<int32_t>(value);
    std::memcpy(p, &narrow, sizeof narrow);
  } else {
    std::memcpy(p, &value, sizeof value);
  }
}

int64_t load_index(DType index_dtype, const std::byte* p) {
  if (index_dtype == DType::i32) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Views: each field's view over its own buffer, honest (the spec's dtype and shape, any valid
// layout) or now and then with one mutation that the plan must refuse or survive.

enum class Mutation : unsigned char {
  none,
  dtype,            // another dtype, or one outside the enum
  shape,            // one size off by one, or one dim more or less
  rank,             // rank kMaxRank + 1 or 100 in the Shape's rank field
  zero_stride,      // an output overlapping itself (or a broadcast input)
  negative_stride,  //
  huge_stride,      // INT64_MAX, 2^62, 2^40: extents that overflow
  overlap,          // strides too small: elements alias
  short_capacity,   // the buffer one element short of the view
  zero_capacity,    //
  null_data,        // null with capacity 0
  misaligned,       // the first element one byte into the buffer
};
constexpr int kMutationCount = static_cast<int>(Mutation::misaligned);

struct FieldCase {
  ArgSpec spec;
  AnyTensorMut view;                 // what the plan is given
  std::optional<FuzzBuffer> memory;  // the view's buffer (none: a default, empty view)
  size_t lead = 0;                   // bytes of the buffer before view.data
};

// The mutated dtype/shape the view will have.
void mutate_type(FuzzInput& in, Mutation m, AnyTensorMut& v) {
  if (m == Mutation::dtype) {
    DType other = static_cast<DType>(in.consume_int(0, 255));
    v.dtype = other == v.dtype ? static_cast<DType>(static_cast<int>(other) + 1) : other;
  } else if (m == Mutation::shape) {
    if (v.shape.rank > 0 && in.consume_bool()) {
      int64_t& size = v.shape.dims[in.consume_int(0, stored_rank(v.shape) - 1)];
      size = in.consume_bool() && size > kInt64Min ? size - 1 : saturating_add(std::max<int64_t>(size, 0), 1);
    } else if (v.shape.rank < kMaxRank && in.consume_bool()) {
      v.shape.dims[v.shape.rank++] = 1;  // same elements, one dim more
    } else {
      --v.shape.rank;  // may be -1
    }
  } else if (m == Mutation::rank) {
    v.shape.rank = in.consume_bool() ? kMaxRank + 1 : 100;
  }
}

// Strides that pack `shape` with its dims in `order` (innermost last), each stride widened by a
// factor (1: no gap); saturated, so that absurd shapes stay representable.
Strides packed_strides(const Shape& shape, const std::array<int, kMaxRank>& order,
                       const std::array<int64_t, kMaxRank>& widen) {
  Strides strides{};
  int64_t step = 1;
  for (int k = stored_rank(shape) - 1; k >= 0; --k) {
    const int d = order[k];
    strides[d] = saturating_mul(step, widen[d]);
    step = saturating_mul(strides[d], std::max<int64_t>(shape.dims[d], 1));
  }
  return strides;
}

// A valid layout: contiguous, with gaps, transposed, or (inputs) broadcast. A huge view fits no
// buffer unless its huge dims are broadcast, so when `huge_broadcasts` allows it, that is its
// likeliest layout; otherwise only views of few elements are broadcast.
Strides fuzz_layout(FuzzInput& in, const Shape& shape, bool output, bool huge_broadcasts) {
  const int rank = stored_rank(shape);
  std::array<int, kMaxRank> order{};
  std::iota(order.begin(), order.end(), 0);
  std::array<int64_t, kMaxRank> widen;
  widen.fill(1);
  const bool huge = exact_numel(shape) > kMaxBufferElements;
  const int broadcast = (output || (huge && !huge_broadcasts)) ? 0 : (huge ? 100 : 15);
  switch (in.consume_weighted({55, 15, 15, broadcast})) {
    case 0:
      break;
    case 1:
      for (int d = 0; d < rank; ++d) widen[d] = in.consume_int<int64_t>(1, 3);
      break;
    case 2:
      for (int k = rank - 1; k > 0; --k) std::swap(order[k], order[in.consume_int(0, k)]);
      break;
    default:
      Strides strides = packed_strides(shape, order, widen);
      for (int d = 0; d < rank; ++d)
        if (shape.dims[d] > kMaxBufferElements || in.consume_bool()) strides[d] = 0;
      return strides;
  }
  return packed_strides(shape, order, widen);
}

void mutate_strides(FuzzInput& in, Mutation m, AnyTensorMut& v) {
  const int rank = stored_rank(v.shape);
  if (rank == 0) return;
  int64_t& stride = v.strides[in.consume_int(0, rank - 1)];
  const bool few = exact_numel(v.shape) <= kMaxBufferElements;  // aliasing views of many elements: too slow
  constexpr int64_t kHuge[] = {kInt64Max, int64_t{1} << 62, int64_t{1} << 40, int64_t{1} << 32};
  switch (m) {
    case Mutation::zero_stride:
      if (few) stride = 0;
      break;
    case Mutation::negative_stride:
      stride = in.consume_bool() ? -1 : -std::max<int64_t>(stride, 1);
      break;
    case Mutation::huge_stride:
      stride = in.pick(kHuge);
      break;
    case Mutation::overlap:
      if (few)
        for (int d = 0; d < rank; ++d) v.strides[d] = std::min<int64_t>(v.strides[d], 1);
      break;
    default:
      break;
  }
}

// Sizes the view's buffer (its true reach, a little more, never past kMaxBufferElements) and places the
// view in it.
size_t place_view(FuzzInput& in, Mutation m, AnyTensorMut& v) {
  v.capacity = reach(v.shape, v.strides);
  size_t lead = 0;
  if (in.chance(20)) {
    v.capacity = saturating_add(v.capacity, in.consume_int<int64_t>(1, 4));  // spare elements after
    lead = in.consume_int<size_t>(1, 3) * element_bytes(v.dtype);            // and before the view
  }
  v.capacity = std::min(v.capacity, kMaxBufferElements);
  if (m == Mutation::short_capacity) v.capacity -= 1;  // may be -1
  if (m == Mutation::zero_capacity) v.capacity = 0;
  if (m == Mutation::null_data) v.capacity = 0;
  if (m == Mutation::misaligned) lead = 1;
  return lead;
}

// The buffer's first contents: canary bytes with values at the view's elements (outputs, whose
// old contents matter when they accumulate), index values (index fields), values (inputs), or
// arbitrary bytes (fields the descriptor does not use).
std::vector<std::byte> initial_contents(const ArgSpec& spec, const AnyTensorMut& v, size_t lead, FuzzInput& in,
                                        SplitMix64& rng) {
  const size_t esize = element_bytes(v.dtype);
  std::vector<std::byte> bytes(lead + static_cast<size_t>(std::max<int64_t>(v.capacity, 0)) * esize);
  const bool specials = in.chance(15);
  if (!spec.present) {
    fill_random_bytes(bytes, rng);
  } else if (spec.output) {
    std::fill(bytes.begin(), bytes.end(), kCanary);
    if (walkable(v))
      for_each_offset(v, [&](int64_t off) { store_value(v.dtype, rng, specials, &bytes[lead + off * esize]); });
  } else if (spec.index_bound > 0 && is_index(v.dtype)) {
    const auto mix = static_cast<IndexMix>(in.consume_weighted({70, 15, 15}));
    fill_random_bytes(bytes, rng);
    for (size_t at = lead; at + esize <= bytes.size(); at += esize)
      store_index(v.dtype, index_value(v.dtype, spec.index_bound, mix, rng), &bytes[at]);
  } else {
    fill_random_bytes(bytes, rng);
    for (size_t at = lead; at + esize <= bytes.size(); at += esize) store_value(v.dtype, rng, specials, &bytes[at]);
  }
  return bytes;
}

// A field the descriptor does not use: left empty, given garbage, or given a view of its spec.
AnyTensorMut unused_view(FuzzInput& in, const ArgSpec& spec, bool huge_broadcasts, bool& allocate) {
  AnyTensorMut v;
  allocate = true;
  // An unused output given memory is refused: mostly left empty, so that most cases run.
  switch (spec.output ? in.consume_weighted({90, 6, 4}) : in.consume_weighted({50, 30, 20})) {
    case 0:
      allocate = false;
      return v;
    case 1:
      v.dtype = static_cast<DType>(in.consume_int(0, 255));
      v.shape = fuzz_shape(in);
      break;
    default:
      v.dtype = spec.dtype;
      v.shape = spec.shape;
  }
  v.strides = fuzz_layout(in, v.shape, spec.output, huge_broadcasts);
  return v;
}

FieldCase make_field(FuzzInput& in, const ArgSpec& spec, Backend backend, bool huge_broadcasts, SplitMix64& rng) {
  FieldCase f{spec, {}, std::nullopt, 0};
  Mutation m = Mutation::none;
  bool allocate = true;
  if (!spec.present) {
    f.view = unused_view(in, spec, huge_broadcasts, allocate);
  } else {
    if (in.chance(10)) m = static_cast<Mutation>(in.consume_int(1, kMutationCount));
    f.view.dtype = spec.dtype;
    f.view.shape = spec.shape;
    mutate_type(in, m, f.view);
    f.view.strides = fuzz_layout(in, f.view.shape, spec.output, huge_broadcasts);
    mutate_strides(in, m, f.view);
  }
  if (!allocate) return f;
  f.lead = place_view(in, m, f.view);
  if (m == Mutation::null_data) return f;  // data null, capacity 0: no buffer
  f.memory.emplace(backend, initial_contents(spec, f.view, f.lead, in, rng));
  f.view.data = f.memory->data() + f.lead;
  return f;
}

// The bad_index_count slot: none, an int64 holding a preset value, or a misaligned one.
struct CountCase {
  std::optional<FuzzBuffer> memory;
  size_t offset = 0;
  int64_t preset = 0;
  int64_t* pointer() const { return memory ? reinterpret_cast<int64_t*>(memory->data() + offset) : nullptr; }
  int64_t now() {
    int64_t v;
    std::memcpy(&v, memory->current().data() + offset, sizeof v);
    return v;
  }
};

CountCase make_count(FuzzInput& in, Backend backend) {
  CountCase c;
  const size_t kind = in.consume_weighted({60, 30, 10});
  if (kind == 1) return c;
  c.offset = kind == 2 ? in.consume_int<size_t>(1, 7) : 0;
  c.preset = in.consume_int<int64_t>(0, int64_t{1} << 20);
  std::vector<std::byte> bytes(c.offset + sizeof(int64_t));
  std::memcpy(bytes.data() + c.offset, &c.preset, sizeof c.preset);
  c.memory.emplace(backend, std::move(bytes));
  return c;
}

struct CaseArgs {
  std::vector<FieldCase> fields;  // in arg_fields() order
  CountCase count;
  // The index fields are known: the plan takes no index, or one has index_bound > 0. (ArgSpec says
  // index_bound 0 both for "not an index" and for an index into a dim of size 0, where every value
  // is bad; such a case cannot tell its index field, and skips the index checks.)
  bool index_known = true;
  bool zero_when_all_bad = true;  // check_all_bad applies (not to segment reductions, nor to losses)
  bool count_per_value = true;    // check_bad_index_count applies (see make_case_args)
};

// Huge broadcast inputs (more elements than a buffer holds) are made only where a plan must refuse
// them: a broadcast view is walked element by element, so accepting a huge one is a long run. A
// plan whose CPU workspace is sized by its work (the scatters' sort and row buckets) asks for more
// than a case ever gives (kMaxWorkspace) for such a view, and must refuse to run without it, unless
// it got that size wrong (a wrapped product: what these look for). A plan without one (a gather, a
// CUDA atomic scatter), or with a fixed scratch of at most kMaxWorkspace (the CPU element scatter's
// buffers), may legitimately walk a huge view for hours.
CaseArgs make_case_args(FuzzInput& in, Backend backend, const OpSchema& schema, const std::vector<ArgSpec>& specs,
                        size_t workspace, bool has_count) {
  const bool huge_broadcasts = backend == Backend::cpu && workspace > kMaxWorkspace;
  SplitMix64 rng(in.consume_uint64());
  CaseArgs c;
  c.index_known = schema.index_dtypes.empty() ||
                  std::any_of(specs.begin(), specs.end(), [](const ArgSpec& s) { return s.index_bound > 0; });
  // Offsets (sorted index arguments: a grouped matmul's) are clamped into range, not dropped: rows
  // stay in some group. The KV cache append counts the tokens it drops, not the values (a block
  // table's entries no token reaches may hold anything); its op-table row checks its count.
  const bool offsets =
      std::any_of(specs.begin(), specs.end(), [](const ArgSpec& s) { return s.index_bound > 0 && s.sorted; });
  c.zero_when_all_bad = schema.category != "segment" && schema.category != "loss" && !offsets;
  c.count_per_value = schema.plan != "KvCacheAppendPlan";
  c.fields.reserve(specs.size());
  for (const ArgSpec& spec : specs) c.fields.push_back(make_field(in, spec, backend, huge_broadcasts, rng));
  if (has_count) c.count = make_count(in, backend);
  return c;
}

// ---------------------------------------------------------------------------------------------
// Invariants.

std::string field_name(const ArgSpec& spec) { return "args." + std::string(spec.name); }

// 1. A refusal names the plan: "<Plan>: <field>: ...".
void expect_named(const OpSchema& schema, std::string_view call, const Status& s) {
  if (s.is_ok()) return;
  const std::string prefix = std::string(schema.plan) + ": ";
  if (s.message().empty())
    fail(std::string(call) + " returned " + std::string(status_code_name(s.code())) + " with an empty message");
  if (!s.message().starts_with(prefix))
    fail(std::string(call) + "'s error does not start with '" + prefix + "': " + s.to_string());
}

void expect_refusal(const OpSchema& schema, std::string_view call, const Status& s) {
  if (s.is_ok()) fail(std::string(call) + " returned ok");
  expect_named(schema, call, s);
}

// Why a view breaks the contract can_implement enforces (tensor.hpp; check_view in
// src/ops/validate.hpp), or "": a view run accepted must keep it.
std::string contract_violation(const AnyTensorRef& v, const ArgSpec& spec) {
  if (v.dtype != spec.dtype) return "its dtype is not the spec's " + std::string(dtype_name(spec.dtype));
  if (v.shape.rank < 0 || v.shape.rank > kMaxRank) return "its rank is outside 0..kMaxRank";
  if (!(v.shape == spec.shape)) return "its shape is not the spec's " + spec.shape.to_string();
  for (int d = 0; d < v.shape.rank; ++d) {
    if (v.shape.dims[d] < 0) return "a size is negative";
    if (v.strides[d] < 0) return "a stride is negative";
  }
  if (exact_numel(v.shape) == 0) return "";
  for (int d = 0; d < v.shape.rank; ++d)
    if (spec.output && v.strides[d] == 0 && v.shape.dims[d] > 1)
      return "an output has a zero stride on a dim of size > 1";
  if (!v.data) return "its data is null";
  if (reinterpret_cast<uintptr_t>(v.data) % dtype_size(v.dtype) != 0) return "its data is misaligned";
  if (const int64_t extent = reach(v.shape, v.strides); extent > v.capacity)
    return "it reaches " + (extent == kInt64Max ? std::string("past INT64_MAX") : std::to_string(extent)) +
           " elements but its buffer holds " + std::to_string(v.capacity);
  return "";
}

// The bytes of the buffer that the view's elements occupy.
std::vector<bool> covered_bytes(const FieldCase& f) {
  std::vector<bool> covered(f.memory->initial().size(), false);
  const size_t esize = element_bytes(f.view.dtype);
  for_each_offset(f.view, [&](int64_t off) {
    std::fill_n(covered.begin() + static_cast<ptrdiff_t>(f.lead + off * esize), esize, true);
  });
  return covered;
}

// 3a, 3b. Inputs and unused fields unchanged; outputs unchanged outside their view.
void check_untouched(FieldCase& f) {
  if (!f.memory) return;
  const bool output = f.spec.present && f.spec.output;
  const std::vector<bool> covered = output ? covered_bytes(f) : std::vector<bool>();
  const std::span<const std::byte> now = f.memory->current();
  const std::vector<std::byte>& before = f.memory->initial();
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] == before[i] || (output && covered[i])) continue;
    const std::string what = output           ? "outside its view"
                             : f.spec.present ? "(an input)"
                                              : "(unused by this descriptor)";
    fail(field_name(f.spec) + " " + what + ": byte " + std::to_string(i) + " of " + std::to_string(now.size()) +
         " changed; view " + describe(f.view) + ", first element at byte " + std::to_string(f.lead));
  }
}

bool is_index_field(const FieldCase& f) { return f.spec.present && f.spec.index_bound > 0; }

// Index values of a (valid) index view outside [0, index_bound) (saturated); for a sorted one
// (ArgSpec::sorted, 1-D) each value below its predecessor too.
int64_t bad_values(const FieldCase& f) {
  int64_t bad = 0, copies = 1;
  const size_t esize = element_bytes(f.view.dtype);
  for_each_offset(distinct_elements(f.view, copies), [&](int64_t off) {
    const int64_t i = load_index(f.view.dtype, &f.memory->initial()[f.lead + off * esize]);
    bad += i < 0 || i >= f.spec.index_bound;
  });
  bad = saturating_mul(bad, copies);
  if (f.spec.sorted && f.view.rank() == 1 && f.view.strides[0] != 0) {
    int64_t descents = 0;
    for (int64_t k = 1; k < f.view.shape.dims[0]; ++k) {
      auto at = [&](int64_t j) {
        return load_index(f.view.dtype,
                          &f.memory->initial()[f.lead + static_cast<size_t>(j * f.view.strides[0]) * esize]);
      };
      descents += at(k) < at(k - 1);
    }
    bad = saturating_add(bad, descents);
  }
  return bad;
}

// 3c. The counter grew by the number of bad index values.
void check_bad_index_count(CaseArgs& c) {
  if (!c.count.memory || !c.count_per_value) return;
  int64_t expected = c.count.preset;
  for (const FieldCase& f : c.fields)
    if (is_index_field(f) && f.memory) expected = saturating_add(expected, bad_values(f));
  if (const int64_t got = c.count.now(); got != expected)
    fail("bad_index_count went from " + std::to_string(c.count.preset) + " to " + std::to_string(got) + ", expected " +
         std::to_string(expected) + " (the index view holds " + std::to_string(expected - c.count.preset) +
         " values outside [0, index_bound))");
}

bool is_zero(DType dtype, const std::byte* p) {
  const size_t n = element_bytes(dtype);
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned>(p[i]);
    // Little endian: a float's sign bit is the top bit of its last byte; -0 is zero too.
    if ((is_floating(dtype) && i == n - 1 ? (b & 0x7fu) : b) != 0) return false;
  }
  return true;
}

// 3d. With every index value bad, nothing is read or added: a gather's output is zeros, an
// accumulating scatter's table is unchanged, an overwriting one's is zeros. (The indexing family's
// rule: a segment reduction's empty segments hold their own value, -inf for a max; a loss's saved
// logsumexp reads no target, and its mean over no target is NaN.)
void check_all_bad(CaseArgs& c) {
  if (!c.zero_when_all_bad) return;
  const bool any_index = std::any_of(c.fields.begin(), c.fields.end(), is_index_field);
  const bool all_bad = std::all_of(c.fields.begin(), c.fields.end(), [](const FieldCase& f) {
    return !is_index_field(f) ||
           (!f.memory ? exact_numel(f.view.shape) == 0 : bad_values(f) == exact_numel(f.view.shape));
  });
  if (!any_index || !all_bad) return;
  for (FieldCase& f : c.fields) {
    if (!f.spec.present || !f.spec.output || !f.memory) continue;
    const std::span<const std::byte> now = f.memory->current();
    const size_t esize = element_bytes(f.view.dtype);
    for_each_offset(f.view, [&](int64_t off) {
      const size_t at = f.lead + static_cast<size_t>(off) * esize;
      const bool kept = f.spec.accumulates ? std::equal(&now[at], &now[at] + esize, &f.memory->initial()[at])
                                           : is_zero(f.view.dtype, &now[at]);
      if (!kept)
        fail("every index value is bad, yet " + field_name(f.spec) + " element at offset " + std::to_string(off) +
             (f.spec.accumulates ? " changed" : " is not zero") + "; view " + describe(f.view));
    });
  }
}

// A run that refused its args (before any kernel: not a backend error) wrote nothing.
void check_nothing_written(CaseArgs& c) {
  for (FieldCase& f : c.fields)
    if (f.memory && !std::ranges::equal(f.memory->current(), f.memory->initial()))
      fail("run refused its args but wrote " + field_name(f.spec) + " " + describe(f.view));
  if (c.count.memory && c.count.now() != c.count.preset) fail("run refused its args but changed bad_index_count");
}

// Everything run must have ensured when it returned ok.
void check_after_run(CaseArgs& c) {
  for (const FieldCase& f : c.fields) {
    if (!f.spec.present && f.spec.output && f.view.data)
      fail("run accepted " + field_name(f.spec) + " although this descriptor writes no such output");
    if (!f.spec.present || (f.spec.optional && !f.view.data)) continue;  // an optional one left empty
    if (std::string why = contract_violation(f.view, f.spec); !why.empty())
      fail("run accepted " + field_name(f.spec) + " although " + why + ": " + describe(f.view));
    // A valid view's distinct elements are walkable, unless aliasing made very many (never made here).
    int64_t copies;
    if (!walkable(distinct_elements(f.view, copies)))
      throw std::runtime_error("fuzzer: cannot walk " + field_name(f.spec) + ": " + describe(f.view));
  }
  if (c.count.offset % alignof(int64_t) != 0) fail("run accepted a misaligned bad_index_count");
  for (FieldCase& f : c.fields) check_untouched(f);
  if (!c.index_known) return;
  check_bad_index_count(c);
  check_all_bad(c);
}

// The case's views, for a failure report.
std::string describe(const CaseArgs& c) {
  std::string s;
  for (const FieldCase& f : c.fields) {
    s += "\n    " + field_name(f.spec) + " (spec " + std::string(dtype_name(f.spec.dtype)) + " " +
         f.spec.shape.to_string();
    if (!f.spec.present) s += ", unused";
    if (f.spec.output) s += f.spec.accumulates ? ", accumulated" : ", output";
    if (f.spec.index_bound) s += ", index_bound " + std::to_string(f.spec.index_bound);
    s += "): " + (f.memory || f.view.data ? describe(f.view) + ", first element at byte " + std::to_string(f.lead)
                                          : describe(f.view) + ", data null");
    if (is_index_field(f) && f.memory && walkable(f.view) && exact_numel(f.view.shape) <= 64) {
      s += ", values";
      const size_t esize = element_bytes(f.view.dtype);
      for_each_offset(f.view, [&](int64_t off) {
        s += " " + std::to_string(load_index(f.view.dtype, &f.memory->initial()[f.lead + off * esize]));
      });
    }
  }
  if (c.count.memory) s += "\n    bad_index_count preset " + std::to_string(c.count.preset);
  return s;
}

// ---------------------------------------------------------------------------------------------
// 5. Overlaps: now and then an output is made to share memory with an input. Partly (its first
// element inside the input's span, the input's inside its own, or the same first element in
// another layout): can_implement must refuse it. Exactly (the input given the output's very view,
// holding the input's values: in place): can_implement refuses it with an error naming the output,
// or a second run over fresh outputs gives the first run's bits, in which the input had a buffer of
// its own laid out as the output.

enum class Overlap : unsigned char { none, partial, exact };
struct OverlapCase {
  Overlap kind = Overlap::none;
  size_t out = 0, in = 0;  // field indices
};

// As check_alias decides (src/ops/validate.cpp): the same first element, dtype and shape, and the
// same stride along every dim of size > 1.
bool same_view(const AnyTensorRef& a, const AnyTensorRef& b) {
  if (a.data != b.data || a.dtype != b.dtype || !(a.shape == b.shape)) return false;
  for (int d = 0; d < stored_rank(a.shape); ++d)
    if (a.shape.dims[d] > 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

// The field of `guest` moves into the buffer of `host`, `offset` bytes past its first element
// (inside its span, or at it in another layout); false where that would not overlap partly.
bool overlap_partly(Backend backend, FieldCase& host, FieldCase& guest, size_t offset) {
  const int64_t span = saturating_mul(std::min(reach(host.view.shape, host.view.strides), host.view.capacity),
                                      static_cast<int64_t>(element_bytes(host.view.dtype)));
  AnyTensorMut moved = guest.view;
  moved.data = static_cast<std::byte*>(host.view.data) + offset;
  if (static_cast<int64_t>(offset) >= span || same_view(moved, host.view)) return false;
  std::vector<std::byte> bytes = host.memory->initial();
  bytes.resize(std::max(bytes.size(), host.lead + offset +
                                          static_cast<size_t>(std::max<int64_t>(guest.view.capacity, 0)) *
                                              element_bytes(guest.view.dtype)),
               kCanary);
  host.memory.emplace(backend, std::move(bytes));
  host.view.data = host.memory->data() + host.lead;
  guest.memory.reset();
  guest.view.data = static_cast<std::byte*>(host.view.data) + offset;
  return true;
}

// The input takes the output's view, in a copy of the output's buffer that holds the input's values
// at the view's elements (and so does the output's own, where the second run will put the input).
void alias_exactly(FuzzInput& in, Backend backend, FieldCase& out, FieldCase& input) {
  SplitMix64 rng(in.consume_uint64());
  const bool specials = in.chance(15);
  std::vector<std::byte> bytes = out.memory->initial();
  const size_t esize = element_bytes(out.view.dtype);
  for_each_offset(out.view, [&](int64_t off) {
    std::byte* at = &bytes[out.lead + static_cast<size_t>(off) * esize];
    if (input.spec.index_bound > 0 && is_index(out.view.dtype))
      store_index(out.view.dtype, index_value(out.view.dtype, input.spec.index_bound, IndexMix::mostly_valid, rng), at);
    else
      store_value(out.view.dtype, rng, specials, at);
  });
  out.memory.emplace(backend, bytes);
  out.view.data = out.memory->data() + out.lead;
  input.memory.emplace(backend, std::move(bytes));
  input.lead = out.lead;
  input.view = out.view;
  input.view.data = input.memory->data() + input.lead;
}

OverlapCase make_overlap(FuzzInput& in, Backend backend, CaseArgs& c) {
  const auto kind = static_cast<Overlap>(in.consume_weighted({90, 5, 5}));
  if (kind == Overlap::none) return {};
  // Present fields with elements; for an exact alias, an honest output and an input of its spec's
  // dtype and shape.
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t o = 0; o < c.fields.size(); ++o) {
    const FieldCase& out = c.fields[o];
    if (!out.spec.present || !out.spec.output || !out.memory || !out.view.data || out.view.capacity <= 0 ||
        exact_numel(out.view.shape) == 0)
      continue;
    if (kind == Overlap::exact && (!contract_violation(out.view, out.spec).empty() || !walkable(out.view))) continue;
    for (size_t i = 0; i < c.fields.size(); ++i) {
      const FieldCase& input = c.fields[i];
      if (!input.spec.present || input.spec.output) continue;
      if (kind == Overlap::exact
              ? input.spec.dtype == out.spec.dtype && input.spec.shape == out.spec.shape
              : input.memory && input.view.data && input.view.capacity > 0 && exact_numel(input.view.shape) > 0)
        pairs.emplace_back(o, i);
    }
  }
  if (pairs.empty()) return {};
  const auto [o, i] = in.pick(std::span<const std::pair<size_t, size_t>>(pairs));
  if (kind == Overlap::exact) {
    alias_exactly(in, backend, c.fields[o], c.fields[i]);
    return {kind, o, i};
  }
  const bool out_inside = in.consume_bool();
  FieldCase& host = c.fields[out_inside ? i : o];
  FieldCase& guest = c.fields[out_inside ? o : i];
  const size_t step = element_bytes(guest.view.dtype);  // the guest stays aligned where the host is
  const size_t steps = in.consume_weighted({45, 35, 20});
  const size_t offset = steps == 0 ? step : steps == 1 ? step * in.consume_int<size_t>(1, 64) : 0;
  return overlap_partly(backend, host, guest, offset) ? OverlapCase{kind, o, i} : OverlapCase{};
}

// ---------------------------------------------------------------------------------------------
// The plan-generic driver.

enum class Stage : unsigned char { select, run, ran };
struct CaseOutcome {
  Stage stage = Stage::ran;
  StatusCode code = StatusCode::ok;
  Overlap overlap = Overlap::none;  // partial: made and refused; exact: accepted, both runs compared
};

template <class Args>
constexpr bool kHasBadIndexCount = requires(Args a) {
  a.bad_index_count;
};

template <class Plan>
typename Plan::Args assemble(const CaseArgs& c) {
  typename Plan::Args args{};
  const auto fields = Plan::arg_fields();
  for (size_t i = 0; i < fields.size(); ++i) fields[i].set(args, c.fields[i].view);
  if constexpr (kHasBadIndexCount<typename Plan::Args>) args.bad_index_count = c.count.pointer();
  return args;
}

// 2. A plan not made by select refuses everything.
template <class Plan>
void check_default_plan(const Stream& stream, const typename Plan::Args& args) {
  const Plan plan{};
  expect_refusal(Plan::schema(), "a default-constructed plan's can_implement", plan.can_implement(args));
  expect_refusal(Plan::schema(), "a default-constructed plan's run", plan.run(stream, Workspace{}, args));
  if (!plan.arg_specs().empty()) fail("a default-constructed plan has arg_specs()");
  // Its descriptive members answer without reading the (never validated) default descriptor.
  if (plan.sku().variant != "unselected" || plan.sku(args).variant != "unselected")
    fail("a default-constructed plan's sku() names a kernel");
  (void)plan.precision_guarantee();
  if (plan.workspace_size() != 0) fail("a default-constructed plan needs a workspace");
}

// 1. What a selected plan answers for any descriptor select accepted.
template <class Plan>
void check_selected(const Plan& plan) {
  const OpSchema& schema = Plan::schema();
  const KernelSku sku = plan.sku();
  if (sku.op != schema.op) fail("sku() names op '" + sku.op + "', not '" + std::string(schema.op) + "'");
  (void)sku.to_string();
  (void)plan.precision_guarantee().to_string();
  (void)plan.workspace_size();
  if (plan.arg_specs().size() != Plan::arg_fields().size())
    fail("arg_specs() has " + std::to_string(plan.arg_specs().size()) + " entries for " +
         std::to_string(Plan::arg_fields().size()) + " fields");
}

void synchronize(const Stream& stream) {
  if (stream.backend() == Backend::cuda && !stream.synchronize())
    fail("the CUDA stream failed after run (a kernel faulted? run this case under compute-sanitizer)");
}

// The exact alias's second run, after the first (the case as made) ran and kept every invariant;
// true where the plan accepted the alias and both runs' bits were compared.
template <class Plan>
bool check_exact_alias(const Stream& stream, const Plan& plan, const FuzzWorkspace& workspace, CaseArgs& c,
                       const OverlapCase& overlap) {
  std::vector<std::optional<FuzzBuffer>> first(c.fields.size());
  for (size_t k = 0; k < c.fields.size(); ++k) {
    FieldCase& f = c.fields[k];
    if (!f.spec.output || !f.memory) continue;
    first[k].emplace(std::move(*f.memory));
    f.memory.emplace(stream.backend(), first[k]->initial());
    f.view.data = f.memory->data() + f.lead;
  }
  const int64_t counted = c.count.memory ? c.count.now() : 0;
  if (c.count.memory) {
    std::vector<std::byte> preset = c.count.memory->initial();
    c.count.memory.emplace(stream.backend(), std::move(preset));
  }
  FieldCase& out = c.fields[overlap.out];
  FieldCase& input = c.fields[overlap.in];
  input.view.data = out.view.data;
  const std::string alias = field_name(input.spec) + " given exactly " + field_name(out.spec) + "'s view";

  const typename Plan::Args args = assemble<Plan>(c);
  const Status implementable = plan.can_implement(args);
  const Status ran = plan.run(stream, workspace.get(), args);
  synchronize(stream);
  if (!implementable) {
    const std::string named = std::string(Plan::schema().plan) + ": " + field_name(out.spec) + ": ";
    if (implementable.code() != StatusCode::invalid_problem || !implementable.message().starts_with(named))
      fail(alias + " was refused, but not as an alias of that output: " + implementable.to_string());
    if (ran.code() != implementable.code())
      fail(alias + ": can_implement refused (" + implementable.to_string() + ") but run returned " + ran.to_string());
    check_nothing_written(c);
    return false;
  }
  if (!ran) fail(alias + ": can_implement accepted it, but run returned " + ran.to_string());
  if (!plan.precision_guarantee().deterministic) return false;
  for (size_t k = 0; k < c.fields.size(); ++k) {
    if (!first[k]) continue;
    const std::span<const std::byte> now = c.fields[k].memory->current(), before = first[k]->current();
    const auto diff = std::ranges::mismatch(now, before);
    if (diff.in1 != now.end())
      fail(alias + ": " + field_name(c.fields[k].spec) + " differs from the unaliased run's at byte " +
           std::to_string(diff.in1 - now.begin()) + " of " + std::to_string(now.size()));
  }
  if (c.count.memory && c.count.now() != counted)
    fail(alias + ": bad_index_count " + std::to_string(c.count.now()) + ", unaliased " + std::to_string(counted));
  return true;
}

// The calls that take args, on a selected plan.
template <class Plan>
CaseOutcome fuzz_args(FuzzInput& in, const Stream& stream, const Plan& plan, CaseArgs& c) {
  const OpSchema& schema = Plan::schema();
  if (in.chance(25)) (void)plan.sku(assemble<Plan>(c)).to_string();  // any args, valid or not
  if (in.chance(3)) check_default_plan<Plan>(stream, assemble<Plan>(c));
  const FuzzWorkspace workspace = fuzz_workspace(in, stream.backend(), plan.workspace_size());
  // (Drawn last, so that the bytes of a case without one decide what they did before.)
  const OverlapCase overlap = make_overlap(in, stream.backend(), c);
  const typename Plan::Args args = assemble<Plan>(c);
  const Status implementable = plan.can_implement(args);
  expect_named(schema, "can_implement", implementable);
  if (overlap.kind == Overlap::partial && implementable)
    fail("can_implement accepted " + field_name(c.fields[overlap.out].spec) + " partly overlapping " +
         field_name(c.fields[overlap.in].spec));

  const Status ran = plan.run(stream, workspace.get(), args);
  synchronize(stream);
  expect_named(schema, "run", ran);
  if (!implementable && ran.code() != implementable.code())
    fail("can_implement refused (" + implementable.to_string() + ") but run returned " + ran.to_string());
  if (!ran) {
    if (ran.code() != StatusCode::backend_error) check_nothing_written(c);
    return {Stage::run, ran.code(), overlap.kind == Overlap::partial ? Overlap::partial : Overlap::none};
  }
  check_after_run(c);
  const bool compared = overlap.kind == Overlap::exact && check_exact_alias(stream, plan, workspace, c, overlap);
  return {Stage::ran, StatusCode::ok, compared ? Overlap::exact : Overlap::none};
}

template <class Plan>
CaseOutcome fuzz_plan(FuzzInput& in, const Stream& stream) {
  using Args = typename Plan::Args;
  const OpSchema& schema = Plan::schema();
  if (in.chance(3)) check_default_plan<Plan>(stream, Args{});

  typename Plan::Descriptor desc;
  fuzz_descriptor(in, schema, desc);
  const PlanPreference preference = fuzz_preference(in, schema);
  const Expected<Plan> selected = Plan::select(stream, desc, preference);
  if (!selected) {
    expect_named(schema, "select", selected.status());
    return {Stage::select, selected.status().code()};
  }
  const Plan& plan = *selected;
  check_selected(plan);

  CaseArgs c =
      make_case_args(in, stream.backend(), schema, plan.arg_specs(), plan.workspace_size(), kHasBadIndexCount<Args>);
  try {
    return fuzz_args(in, stream, plan, c);
  } catch (const FuzzFailure& f) {
    fail(f.what() + describe(c));  // with the views, so that the report says what the case was
  }
}

// ---------------------------------------------------------------------------------------------
// The registry: every plan the fuzzer drives. A new plan is one line here (and, for a new
// descriptor type, one fuzz_descriptor overload).

struct PlanEntry {
  std::string_view name;
  CaseOutcome (*fuzz)(FuzzInput&, const Stream&);
};

template <class Plan>
PlanEntry entry() {
  return {Plan::schema().plan, &fuzz_plan<Plan>};
}

std::span<const PlanEntry> registry() {
  static const PlanEntry kPlans[] = {
      entry<LerpPlan>(),
      entry<LerpBackwardPlan>(),
      entry<AddcmulPlan>(),
      entry<AddcmulBackwardPlan>(),
      entry<UnaryPlan>(),
      entry<UnaryBackwardPlan>(),
      entry<BinaryPlan>(),
      entry<BinaryBackwardPlan>(),
      entry<TernaryPlan>(),
      entry<TernaryBackwardPlan>(),
      entry<CastPlan>(),
      entry<FillPlan>(),
      entry<GatedPlan>(),
      entry<GatedBackwardPlan>(),
      entry<GatherPlan>(),
      entry<GatherBackwardPlan>(),
      entry<ScatterAddPlan>(),
      entry<IndexSelectPlan>(),
      entry<IndexSelectBackwardPlan>(),
      entry<EmbeddingPlan>(),
      entry<EmbeddingBackwardPlan>(),
      entry<SoftmaxPlan>(),
      entry<SoftmaxBackwardPlan>(),
      entry<ReducePlan>(),
      entry<ReduceBackwardPlan>(),
      entry<ScanPlan>(),
      entry<ScanBackwardPlan>(),
      entry<SegmentSumPlan>(),
      entry<SegmentMeanPlan>(),
      entry<SegmentMaxPlan>(),
      entry<SegmentMinPlan>(),
      entry<SegmentSumBackwardPlan>(),
      entry<SegmentMeanBackwardPlan>(),
      entry<SegmentMaxBackwardPlan>(),
      entry<SegmentMinBackwardPlan>(),
      entry<LayerNormPlan>(),
      entry<RmsNormPlan>(),
      entry<LayerNormBackwardPlan>(),
      entry<RmsNormBackwardPlan>(),
      entry<GroupNormPlan>(),
      entry<GroupNormBackwardPlan>(),
      entry<BatchNormPlan>(),
      entry<BatchNormBackwardPlan>(),
      entry<CrossEntropyPlan>(),
      entry<CrossEntropyBackwardPlan>(),
      entry<LinearCrossEntropyPlan>(),
      entry<LinearCrossEntropyBackwardPlan>(),
      entry<PointwiseLossPlan>(),
      entry<PointwiseLossBackwardPlan>(),
      entry<MatmulPlan>(),
      entry<MatmulBackwardPlan>(),
      entry<GroupedMatmulPlan>(),
      entry<GroupedMatmulBackwardPlan>(),
      entry<AttentionPlan>(),
      entry<KvCacheAppendPlan>(),
      entry<AttentionBackwardPlan>(),
      entry<LinearPlan>(),
      entry<LinearBackwardPlan>(),
      entry<RandomPlan>(),
      entry<DropoutPlan>(),
      entry<DropoutBackwardPlan>(),
      entry<RandpermPlan>(),
      entry<MultinomialPlan>(),
      entry<RotaryPlan>(),
      entry<RotaryBackwardPlan>(),
  };
  return kPlans;
}

void record(PlanCounts& counts, const CaseOutcome& outcome) {
  counts.partial_overlaps += outcome.overlap == Overlap::partial;
  counts.exact_aliases += outcome.overlap == Overlap::exact;
  switch (outcome.stage) {
    case Stage::select:
      ++counts.rejected_at_select[outcome.code];
      break;
    case Stage::run:
      ++counts.rejected_at_run[outcome.code];
      break;
    case Stage::ran:
      ++counts.ran;
  }
}

int64_t sum(const std::map<StatusCode, int64_t>& counts) {
  int64_t n = 0;
  for (const auto& [code, count] : counts) n += count;
  return n;
}

}  // namespace

int64_t PlanCounts::select_rejections() const { return sum(rejected_at_select); }
int64_t PlanCounts::run_rejections() const { return sum(rejected_at_run); }

void PlanCounts::add(const PlanCounts& other) {
  for (const auto& [code, count] : other.rejected_at_select) rejected_at_select[code] += count;
  for (const auto& [code, count] : other.rejected_at_run) rejected_at_run[code] += count;
  ran += other.ran;
  partial_overlaps += other.partial_overlaps;
  exact_aliases += other.exact_aliases;
}

std::vector<std::string_view> fuzzed_plan_names() {
  std::vector<std::string_view> names;
  for (const PlanEntry& e : registry()) names.push_back(e.name);
  return names;
}

std::string_view fuzzed_plan(std::span<const uint8_t> bytes) {
  FuzzInput in(bytes);
  return in.pick(registry()).name;
}

void fuzz_one(std::span<const uint8_t> bytes, Backend backend, FuzzStats& stats) {
  FuzzInput in(bytes);
  const PlanEntry& plan = in.pick(registry());
  const Stream stream = backend == Backend::cuda ? Stream::cuda() : Stream::host();
  CaseOutcome outcome;
  try {
    outcome = plan.fuzz(in, stream);
  } catch (const FuzzFailure& f) {
    throw FuzzFailure(std::string(plan.name), f.what());
  } catch (const std::exception& e) {
    throw FuzzFailure(std::string(plan.name), std::string("an exception escaped: ") + e.what());
  }
  PlanCounts counts;
  record(counts, outcome);
  stats.plans[std::string(plan.name)].add(counts);
  stats.total.add(counts);
}

}  // namespace baracuda::fuzz
