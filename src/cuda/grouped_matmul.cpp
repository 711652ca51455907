// The grouped matmul plans on CUDA (ops/grouped_matmul.cpp): the offsets turned into group ends and
// tile starts on the device, then one kernel a product: the forward's out and the backward's da split
// the rows among the groups, db sums over each group's rows (cuda/device/grouped_matmul.cuh). Nothing
// is read back to the host, so a run may be captured in a CUDA graph whatever the routing.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/device/params.h"
#include "cuda/jit/launch.hpp"
#include "ops/matmul_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

bool on_tensor_cores(DType t) { return t == DType::f16 || t == DType::bf16; }
int64_t tile_size(DType t) { return on_tensor_cores(t) ? device::kGroupedMmaTile : device::kGroupedFmaTile; }
// Blocks past this many take further tiles in turn (groups of empty tiles beyond them cost a lookup).
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// The program's kernels: grouped_prepare for i32 then i64 offsets, then the products: the split of
// the rows (forward, da), then the backward's split of the sum (db); on the tensor cores each for
// A's and B's unit stride along r or not.
size_t product_index(DType t, bool split_r, bool a_along_r, bool b_along_r) {
  if (!on_tensor_cores(t)) return 2 + (split_r ? 1 : 0);
  return 2 + (split_r ? 4 : 0) + (a_along_r ? 2 : 0) + (b_along_r ? 1 : 0);
}

// An operand's strides along its own dim (m or n) and along r, one of them a unit stride: along r
// where both could be (an extent of 1 takes any stride).
struct Operand {
  const void* data;
  int64_t stride_i, stride_r;
  bool along_r;
};
Expected<Operand> operand(std::string_view plan, const char* field, const void* data, int64_t extent_i,
                          int64_t stride_i, int64_t extent_r, int64_t stride_r) {
  if (stride_r == 1 || extent_r <= 1) return Operand{data, stride_i, 1, true};
  if (stride_i == 1 || extent_i <= 1) return Operand{data, 1, stride_r, false};
  return plan_error(StatusCode::invalid_problem, plan, field, "has no unit stride in either matrix dim");
}

struct Product {
  Operand a, b;
  void* c;
  int64_t c_m, c_n, c_group = 0, b_group = 0;
  int64_t m, n, r;
  bool split_r;
  const char* what;
};

Status run_product(const LaunchContext& ctx, const GroupedMatmulProblem& p, const device::GroupedMatmulParams& base,
                   const Product& x) {
  if (x.m == 0 || x.n == 0) return Status::ok();
  const DType t = p.desc.dtype;
  const bool wgmma = grouped_matmul_on_wgmma(ctx.target, t);
  const int64_t tile = tile_size(t), tile_n = wgmma ? device::kGroupedWgmmaTileN : tile;
  const int64_t tiles_n = (x.n + tile_n - 1) / tile_n;
  // Splitting the rows: at most one partial tile a group, and the rows in no group's.
  const int64_t tiles_m =
      x.split_r ? p.desc.groups * ((x.m + tile - 1) / tile) : (x.m + tile - 1) / tile + p.desc.groups + 1;
  device::GroupedMatmulParams q = base;
  q.a = x.a.data;
  q.a_m = x.a.stride_i;
  q.a_r = x.a.stride_r;
  q.b = x.b.data;
  q.b_n = x.b.stride_i;
  q.b_r = x.b.stride_r;
  q.b_group = x.b_group;
  q.c = x.c;
  q.c_m = x.c_m;
  q.c_n = x.c_n;
  q.c_group = x.c_group;
  q.m = x.m;
  q.n = x.n;
  q.r = x.r;
  const void* kernel = jit_module(ctx).kernels[product_index(t, x.split_r, x.a.along_r, x.b.along_r)];
  size_t shared = 0;
  if (on_tensor_cores(t)) {
    shared = wgmma ? device::kGroupedWgmmaSharedBytes : device::kGroupedMmaSharedBytes;
    if (Status s = raise_kernel_attribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared),
                                          x.what);
        !s)
      return s;
  }
  return launch_jit(kernel, std::min(tiles_m * tiles_n, kMaxBlocks), device::kGroupedProductThreads, q, ctx.stream,
                    x.what, shared);
}

}  // namespace

// wgmma: the 16-bit products on Hopper's wgmma (the program compiled for sm_90a), else mma.sync.
jit::Program grouped_matmul_program(DType dtype, DType out_dtype, bool backward, bool wgmma) {
  jit::Program p;
  const std::string T = jit::device_type(dtype), O = jit::device_type(out_dtype);
  p.name = std::string(backward ? "grouped_matmul_backward<" : "grouped_matmul<") + std::string(dtype_name(dtype)) +
           (out_dtype == dtype ? "" : ", " + std::string(dtype_name(out_dtype))) + (wgmma ? ">.wgmma" : ">");
  if (wgmma) p.only_arch = 90;
  p.source = "#include \"cuda/device/grouped_matmul.cuh\"\n";
  const std::string tile = std::to_string(tile_size(dtype));
  for (const std::string& index : {jit::type_name<int32_t>(), jit::type_name<int64_t>()})
    p.kernels.push_back("baracuda::device::grouped_prepare<" + index + ", " + tile + ">");
  for (int split = 0; split <= (backward ? 1 : 0); ++split) {
    const char* split_r = split ? "true" : "false";
    if (!on_tensor_cores(dtype)) {
      p.kernels.push_back("baracuda::device::grouped_fma<" + T + ", " + split_r + ">");
      continue;
    }
    for (const char* a_along_r : {"false", "true"})
      for (const char* b_along_r : {"false", "true"})
        p.kernels.push_back(std::string("baracuda::device::") + (wgmma ? "grouped_wgmma<" : "grouped_mma<") + T + ", " +
                            O + ", " + a_along_r + ", " + b_along_r + ", " + split_r + ">");
  }
  return p;
}

Expected<const void*> grouped_matmul_kernels(const PlanTarget& target, const GroupedMatmulDescriptor& d, bool backward,
                                             std::string_view plan) {
  Expected<const jit::Module*> m =
      jit::load(grouped_matmul_program(d.dtype, backward ? d.dtype : d.out_dtype.value_or(d.dtype), backward,
                                       grouped_matmul_on_wgmma(target, d.dtype)),
                target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

size_t grouped_matmul_workspace(const GroupedMatmulDescriptor& d) {
  return static_cast<size_t>(2 * d.groups + 3) * sizeof(int64_t);
}

Status launch(const LaunchContext& ctx, const GroupedMatmulProblem& p) {
  const GroupedMatmulDescriptor& d = p.desc;
  auto* ws = static_cast<long long*>(ctx.workspace.data);
  device::GroupedMatmulParams base{};
  base.groups = d.groups;
  base.offsets = p.offsets.data;
  base.offsets_stride = p.offsets.strides[0];
  base.ends = ws;
  base.tile_starts = ws + d.groups + 1;
  base.bad_index_count = reinterpret_cast<unsigned long long*>(p.bad_index_count);
  device::GroupedMatmulParams prepare = base;
  prepare.m = d.rows;
  if (Status s = launch_jit(jit_module(ctx).kernels[d.index_dtype == DType::i64 ? 1 : 0], 1,
                            device::kGroupedPrepareThreads, prepare, ctx.stream, "grouped_matmul prepare");
      !s)
    return s;
  // op(b[g]) as [K, N]: its strides along K and N.
  const int64_t b_k = d.transpose_b ? p.b.strides[2] : p.b.strides[1];
  const int64_t b_n = d.transpose_b ? p.b.strides[1] : p.b.strides[2];
  auto run = [&](Expected<Operand> a, Expected<Operand> b, Product x) -> Status {
    if (!a) return a.status();
    if (!b) return b.status();
    x.a = *a;
    x.b = *b;
    return run_product(ctx, p, base, x);
  };
  if (!p.backward)  // out [T, N] = a [T, K] @ op(b[g]) [K, N], the rows split
    return run(operand(p.plan, "args.a", p.a.data, d.rows, p.a.strides[0], d.k, p.a.strides[1]),
               operand(p.plan, "args.b", p.b.data, d.n, b_n, d.k, b_k),
               Product{{},
                       {},
                       p.out.data,
                       p.out.strides[0],
                       p.out.strides[1],
                       0,
                       p.b.strides[0],
                       d.rows,
                       d.n,
                       d.k,
                       false,
                       "grouped_matmul"});
  if (p.da.data)  // da [T, K] = dout [T, N] @ op(b[g])^T [N, K], the rows split
    if (Status s = run(operand(p.plan, "args.dout", p.dout.data, d.rows, p.dout.strides[0], d.n, p.dout.strides[1]),
                       operand(p.plan, "args.b", p.b.data, d.k, b_k, d.n, b_n),
                       Product{{},
                               {},
                               p.da.data,
                               p.da.strides[0],
                               p.da.strides[1],
                               0,
                               p.b.strides[0],
                               d.rows,
                               d.k,
                               d.n,
                               false,
                               "grouped_matmul_backward da"});
        !s)
      return s;
  if (p.db.data) {  // op(db[g]) [K, N] = a^T [K, T] @ dout [T, N] over the group's rows
    const int64_t db_k = d.transpose_b ? p.db.strides[2] : p.db.strides[1];
    const int64_t db_n = d.transpose_b ? p.db.strides[1] : p.db.strides[2];
    return run(
        operand(p.plan, "args.a", p.a.data, d.k, p.a.strides[1], d.rows, p.a.strides[0]),
        operand(p.plan, "args.dout", p.dout.data, d.n, p.dout.strides[1], d.rows, p.dout.strides[0]),
        Product{
            {}, {}, p.db.data, db_k, db_n, p.db.strides[0], 0, d.k, d.n, d.rows, true, "grouped_matmul_backward db"});
  }
  return Status::ok();
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> grouped_matmul_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const bool sixteen = t == DType::f16 || t == DType::bf16;
    for (bool wgmma : {false, true}) {
      if (wgmma && !sixteen) continue;
      out.push_back(cuda::grouped_matmul_program(t, t, false, wgmma));
      if (sixteen) out.push_back(cuda::grouped_matmul_program(t, DType::f32, false, wgmma));
      out.push_back(cuda::grouped_matmul_program(t, t, true, wgmma));
    }
  }
  return out;
}
}  // namespace baracuda::detail::jit
