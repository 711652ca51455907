// The grouped matmul plans (a mixture of experts' layers, forward and backward): validation, and on
// the CPU the GEMMs of each group once it has read where the groups end (ops/matmul_problem.hpp),
// MatmulPlan's products (matmul.cpp) over slices of the packed views. CUDA reads the offsets on the
// device (cuda/grouped_matmul.cpp).
#include <algorithm>
#include <string>

#include "baracuda/ops/matmul.hpp"
#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/matmul_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {

void grouped_ends(const GroupedMatmulProblem& p, std::span<const int64_t> offsets, GroupedEnds& state,
                  std::span<int64_t> ends, int64_t& bad) {
  const int64_t rows = p.desc.rows;
  for (size_t g = 0; g < offsets.size(); ++g) {
    const int64_t raw = offsets[g];
    if (raw < 0 || raw > rows) ++bad;
    if (state.any && raw < state.raw) ++bad;
    state.any = true;
    state.raw = raw;
    ends[g] = state.end = std::max(std::clamp<int64_t>(raw, 0, rows), state.end);
  }
}

namespace {

// The element `offset` elements into a view (only formed for a group that has rows, so in bounds).
const void* element(const AnyTensorRef& v, int64_t offset) {
  return static_cast<const char*>(v.data) + offset * static_cast<int64_t>(dtype_size(v.dtype));
}

// Rows [start, start + count) of a [rows, cols] view as a GEMM matrix; transposed: its [cols, count].
GemmMatrix rows_of(const AnyTensorRef& v, int64_t start, int64_t count, bool transposed = false) {
  const void* at = count > 0 ? element(v, start * v.strides[0]) : v.data;
  return transposed ? GemmMatrix{at, v.strides[1], v.strides[0]} : GemmMatrix{at, v.strides[0], v.strides[1]};
}

// Group g's matrix of a [G, K, N] view, or of a [G, N, K] one with transpose_b, as op(b) [K, N];
// transposed: as op(b)^T [N, K].
GemmMatrix group_of(const GroupedMatmulDescriptor& d, const AnyTensorRef& v, int64_t g, bool transposed = false) {
  const int64_t ks = d.transpose_b ? v.strides[2] : v.strides[1], ns = d.transpose_b ? v.strides[1] : v.strides[2];
  const void* at = element(v, g * v.strides[0]);
  return transposed ? GemmMatrix{at, ns, ks} : GemmMatrix{at, ks, ns};
}

Gemm gemm(const GroupedMatmulDescriptor& d, DType out, int64_t m, int64_t n, int64_t k) {
  Gemm g;
  g.in = d.dtype;
  g.out = out;
  g.m = m;
  g.n = n;
  g.k = k;
  g.tf32 = d.allow_tf32;
  return g;
}

}  // namespace

MatmulProblem grouped_gemms(const GroupedMatmulProblem& p, int64_t first, int64_t next_row,
                            std::span<const int64_t> ends) {
  const GroupedMatmulDescriptor& d = p.desc;
  MatmulProblem out;
  out.plan = p.plan;
  for (size_t i = 0; i < ends.size(); ++i) {
    const int64_t g = first + static_cast<int64_t>(i), start = next_row, count = ends[i] - start;
    next_row = ends[i];
    if (!p.backward) {  // out rows [count, N] = a rows [count, K] @ op(b[g]) [K, N]
      if (count == 0 || d.n == 0) continue;
      Gemm x = gemm(d, d.out_dtype.value_or(d.dtype), count, d.n, d.k);
      x.a = rows_of(p.a, start, count);
      x.b = d.k > 0 ? group_of(d, p.b, g) : GemmMatrix{};
      x.d = rows_of(p.out, start, count);
      out.gemms.push_back(x);
      continue;
    }
    if (p.da.data && count > 0 && d.k > 0) {  // da rows [count, K] = dout rows [count, N] @ op(b[g])^T [N, K]
      Gemm x = gemm(d, d.dtype, count, d.k, d.n);
      x.a = rows_of(p.dout, start, count);
      x.b = d.n > 0 ? group_of(d, p.b, g, true) : GemmMatrix{};
      x.d = rows_of(p.da, start, count);
      out.gemms.push_back(x);
    }
    if (p.db.data && d.k > 0 && d.n > 0) {  // op(db[g]) [K, N] = a rows^T [K, count] @ dout rows [count, N]
      Gemm x = gemm(d, d.dtype, d.k, d.n, count);
      x.a = rows_of(p.a, start, count, true);
      x.b = rows_of(p.dout, start, count);
      x.d = group_of(d, p.db, g);
      out.gemms.push_back(x);
    }
  }
  return out;
}

namespace {

constexpr VariantInfo kVariants[] = {
    {"blas", true, true, false, "CPU: each group's product by oneDNN or OpenBLAS, as MatmulPlan's"},
    {"tiles", true, false, true,
     "CUDA: the library's tiled kernels, the group sizes read on the device; 16-bit types on the tensor cores "
     "(SKU tiles.wgmma on Hopper, tiles.mma elsewhere), f32 and f64 by FMA (tiles.fma)"},
};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

// The most multiply-adds one CPU plan may ask for (as MatmulPlan's), and the most groups (MoE layers
// have tens to thousands of experts; each group is a step of the run, empty or not).
constexpr int64_t kCpuMultiplyAdds = int64_t{1} << 40;
constexpr int64_t kMaxGroups = int64_t{1} << 24;

Shape b_shape(const GroupedMatmulDescriptor& d) {
  return d.transpose_b ? Shape{d.groups, d.n, d.k} : Shape{d.groups, d.k, d.n};
}

template <bool kBackward>
struct GroupedMatmulHooks {
  using Descriptor = GroupedMatmulDescriptor;
  using Args = std::conditional_t<kBackward, GroupedMatmulBackwardArgs, GroupedMatmulArgs>;
  static constexpr std::string_view kPlan = kBackward ? "GroupedMatmulBackwardPlan" : "GroupedMatmulPlan";
  static constexpr OpSchema kSchema{
      kPlan, kBackward ? "grouped_matmul_backward" : "grouped_matmul", "matmul", kFloats, kIndexTypes, kVariants};
  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 6>{{{"dout", &Args::dout},
                                            {"a", &Args::a},
                                            {"b", &Args::b},
                                            {"offsets", &Args::offsets},
                                            {"da", nullptr, &Args::da},
                                            {"db", nullptr, &Args::db}}};
    else
      return std::array<ArgField<Args>, 4>{
          {{"a", &Args::a}, {"b", &Args::b}, {"offsets", &Args::offsets}, {"out", nullptr, &Args::out}}};
  }
  static constexpr auto kFields = fields();

  static Status check(const Descriptor& d) {
    for (auto [field, size] :
         {std::pair{"descriptor.rows", d.rows}, std::pair{"descriptor.k", d.k}, std::pair{"descriptor.n", d.n}})
      if (size < 0) return plan_error(StatusCode::invalid_problem, kPlan, field, std::to_string(size) + " is negative");
    if (d.groups < 1 || d.groups > kMaxGroups)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.groups",
                        std::to_string(d.groups) + ": a grouped matmul has 1 to 2^24 groups");
    const DType out = d.out_dtype.value_or(d.dtype);
    const bool sixteen = d.dtype == DType::f16 || d.dtype == DType::bf16;
    if (out != d.dtype && (kBackward || !(sixteen && out == DType::f32)))
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.out_dtype",
                        std::string(valid_dtype(out) ? dtype_name(out) : "?") +
                            (kBackward ? " is not dtype: the backward takes dout in dtype"
                                       : " is neither dtype nor f32 with 16-bit inputs"));
    // Every view's size and elements countable (a Shape's checks), and offsets counting T rows.
    for (auto [field, shape] :
         {std::pair{"descriptor.rows", Shape{d.rows, d.k}}, std::pair{"descriptor.n", Shape{d.rows, d.n}},
          std::pair{"descriptor.groups", b_shape(d)}})
      if (Status s = check_shape(kPlan, field, shape); !s) return s;
    if (d.index_dtype == DType::i32 && d.rows > INT32_MAX)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.index_dtype",
                        "i32 offsets cannot count " + std::to_string(d.rows) + " rows: use i64");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const Shape a{d.rows, d.k}, out{d.rows, d.n}, b = b_shape(d);
    auto set = [&](int i, DType dtype, const Shape& shape, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].optional = optional;
    };
    auto offsets = [&](int i) {
      set(i, d.index_dtype, Shape{d.groups});
      specs[i].index_bound = d.rows + 1;
      specs[i].sorted = true;
    };
    if constexpr (kBackward) {
      set(0, d.dtype, out);
      set(1, d.dtype, a);
      set(2, d.dtype, b);
      offsets(3);
      set(4, d.dtype, a, true);
      set(5, d.dtype, b, true);
    } else {
      set(0, d.dtype, a);
      set(1, d.dtype, b);
      offsets(2);
      set(3, d.out_dtype.value_or(d.dtype), out);
    }
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    c.variant = t.backend == Backend::cuda ? 1 : 0;
    if (t.backend == Backend::cuda) {
#if BARACUDA_HAS_CUDA
      Expected<const void*> kernels = cuda::grouped_matmul_kernels(t, d, kBackward, kPlan);
      if (!kernels) return kernels.status();
      c.kernels = *kernels;
      c.workspace = cuda::grouped_matmul_workspace(d);
#endif
      return c;
    }
    int64_t multiply_adds = 0;
    if (__builtin_mul_overflow(d.rows, d.k, &multiply_adds) ||
        __builtin_mul_overflow(multiply_adds, d.n, &multiply_adds) || multiply_adds > kCpuMultiplyAdds)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor",
                        "the CPU takes at most 2^40 multiply-adds a product (hours of work past that)");
    return c;
  }

  static bool nothing_to_do(const Descriptor&) { return false; }  // (bad offsets are counted even so)

  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice&, const Args* a) {
    const bool sixteen = d.dtype == DType::f16 || d.dtype == DType::bf16;
    KernelShape k{t.backend == Backend::cpu                   ? "blas"
                  : cuda::grouped_matmul_on_wgmma(t, d.dtype) ? "tiles.wgmma"
                  : sixteen                                   ? "tiles.mma"
                                                              : "tiles.fma",
                  Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(kFields, *a));
    return k;
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice& c) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    g.tf32 = d.allow_tf32 && d.dtype == DType::f32 && !c.kernels;  // (CUDA's kernels: f32 by FMA, never TF32)
    // CUDA's forward: a row of out from its row of a and its group's weights alone, by one order of sums
    // whatever the routing (fixed tiles, no split along K).
    g.batch_invariant = !kBackward && c.kernels;
    return g;
  }

  static GroupedMatmulProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) {
    GroupedMatmulProblem p;
    p.plan = kPlan;
    p.desc = d;
    p.backward = kBackward;
    p.a = a.a;
    p.b = a.b;
    p.offsets = a.offsets;
    p.bad_index_count = a.bad_index_count;
    if constexpr (kBackward) {
      p.dout = a.dout;
      p.da = a.da;
      p.db = a.db;
    } else {
      p.out = a.out;
    }
    return p;
  }

  // Each matrix in a layout BLAS takes (a unit stride along one dim), named by its argument.
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice&, const Args& a) {
    const Shape b = b_shape(d);
    for (const ArgField<Args>& f : kFields) {
      const AnyTensorRef v = f.get(a);
      if (f.name == "offsets" || !v.data || v.numel() == 0) continue;
      const bool grouped = v.shape.rank == 3;
      const int64_t rows = grouped ? b.dims[1] : v.shape.dims[0], cols = v.shape.dims[v.shape.rank - 1];
      const int64_t rs = v.strides[grouped ? 1 : 0], cs = v.strides[grouped ? 2 : 1];
      if (int64_t r = rs, c = cs; gemm_layout_ok(rows, cols, r, c)) continue;
      return gemm_layout_refusal(kPlan, "args." + std::string(f.name), rs, cs);
    }
    return Status::ok();
  }
};

}  // namespace

template <>
struct OpHooks<GroupedMatmulOp> : GroupedMatmulHooks<false> {};
template <>
struct OpHooks<GroupedMatmulBackwardOp> : GroupedMatmulHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<GroupedMatmulOp>;
template class Plan<GroupedMatmulBackwardOp>;
}  // namespace baracuda
