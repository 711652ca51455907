#pragma once
// What the matmul plans hand to a backend: every plan is a short list of GEMMs over views, each
// described once here (layouts, batch walks, the dims folded into M or K) for both backends, plus
// the linear plans' elementwise passes (the activation and its gradient).
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/ops/matmul.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// One matrix of a GEMM: element (i, j) at data + i * rs + j * cs elements (before the batch offset).
struct GemmMatrix {
  const void* data = nullptr;
  int64_t rs = 0, cs = 0;
};

// The GEMM tensors' slots in Gemm::stride.
enum GemmSlot : int { kGemmA, kGemmB, kGemmC, kGemmD };

// d = alpha * a @ b + beta * c, a [m, k], b [k, n], c and d [m, n], over a batch. Batch dims where
// d's stride is 0 are summed into d (a broadcast operand's gradient) and come innermost: each d
// matrix is the sum over them, in order. c absent: beta multiplies nothing (d = alpha * a @ b).
struct Gemm {
  DType in = DType::f32, out = DType::f32;
  int64_t m = 0, n = 0, k = 0;
  GemmMatrix a, b, c, d;
  double alpha = 1.0, beta = 0.0;
  bool tf32 = false;
  int batch_rank = 0;
  int64_t batch[kMaxRank] = {};
  int64_t stride[4][kMaxRank] = {};
  // The linear forward's epilogue: bias[j * bias_stride] added to column j (`out` dtype), then the
  // activation.
  const void* bias = nullptr;
  int64_t bias_stride = 1;
  Activation activation = Activation::none;
  // Each row summed alike whatever m and the batch (PlanPreference::batch_invariant): the CPU's own
  // fixed-order sums, cuBLASLt's algorithm chosen without regard to the row count and never split
  // along k.
  bool batch_invariant = false;

  int64_t batch_count() const;
  int reduced_dims() const;  // the innermost batch dims d does not step along (summed)
};

// Whether a matrix of rows x cols with these strides is one BLAS and cuBLASLt take (a unit stride
// along one dim, the other's at least the first's extent); size-1 dims are normalized first.
bool gemm_layout_ok(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs);

// The error for a matrix operand whose layout gemm_layout_ok refuses, naming its argument.
Status gemm_layout_refusal(std::string_view plan, const std::string& field, int64_t rs, int64_t cs);

// Merges batch dims every tensor steps through as one, drops size-1 ones, and folds the innermost
// batch dims into m (when b does not step along them and a, c, d continue their rows there) or, for
// a summed dim, into k (when a and b continue their k dim there): one GEMM of more rows instead of a
// batch of small ones. Then the summed dims last.
void simplify(Gemm& g);

// The elementwise pass of a linear plan over y's shape: forward y = act(pre); backward
// dpre = dy * act'(pre). Views by their strides over `shape`.
struct ActivationPass {
  Activation activation = Activation::none;
  bool backward = false;
  DType dtype = DType::f32;
  Shape shape;
  AnyTensorRef src;  // forward: pre; backward: dy
  AnyTensorRef pre;  // backward
  AnyTensorMut dst;  // forward: y; backward: dpre (contiguous, in the workspace)
};

// A plan's work: the passes and GEMMs in order. `ones`: a vector of `ones_count` ones (in dtype
// `ones_dtype`) the backend writes at workspace offset `ones_offset` first (dbias as a GEMM by it);
// `accumulator_offset`: where a GEMM with summed batch dims and 16-bit output accumulates in
// f32 first (Gemm::d is then cast from there).
struct MatmulProblem {
  std::string_view plan;
  std::vector<ActivationPass> passes_before;  // the backward's dpre
  std::vector<Gemm> gemms;
  std::vector<ActivationPass> passes_after;  // the forward's act(pre)
  int64_t ones_count = 0;
  DType ones_dtype = DType::f32;
  size_t ones_offset = 0;
  size_t accumulator_offset = 0;
  size_t blas_offset = 0;  // cuBLASLt's workspace, to the end of the plan's
};

// A grouped plan's work: its views. The CPU learns the group ends from `offsets` (in the stream's
// memory) and runs grouped_gemms; CUDA reads them on the device (cuda/grouped_matmul.cpp).
struct GroupedMatmulProblem {
  std::string_view plan;
  GroupedMatmulDescriptor desc;
  bool backward = false;
  AnyTensorRef a, b, offsets, dout;
  AnyTensorMut out, da, db;
  int64_t* bad_index_count = nullptr;
};

// Each group's last row + 1 from the offsets as given, a chunk of groups at a time (`state` carries
// the previous group's over): each clamped into [0, T] and to at least the previous end; the offsets
// outside [0, T], and those below their predecessor, counted into `bad` (the library's rule for
// sorted index arguments).
struct GroupedEnds {
  bool any = false;  // a group came before
  int64_t raw = 0;   // the previous group's offset as given
  int64_t end = 0;   // and its end
};
void grouped_ends(const GroupedMatmulProblem& p, std::span<const int64_t> offsets, GroupedEnds& state,
                  std::span<int64_t> ends, int64_t& bad);

// The GEMMs of the groups from `first` on, whose ends are `ends`, the first starting at row
// `next_row` (an empty group's db[g] is a GEMM of K = 0: zeros).
MatmulProblem grouped_gemms(const GroupedMatmulProblem& p, int64_t first, int64_t next_row,
                            std::span<const int64_t> ends);

// The workspace a GEMM with summed dims and 16-bit output needs on CUDA for its f32 accumulator.
int64_t gemm_accumulator_elements(const Gemm& g);

namespace cpu {
Status launch(const LaunchContext& ctx, const MatmulProblem& problem);
Status launch(const LaunchContext& ctx, const GroupedMatmulProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const MatmulProblem& problem);
Status launch(const LaunchContext& ctx, const GroupedMatmulProblem& problem);
// The grouped plans' kernels (cuda/grouped_matmul.cpp): a jit::Module; and the workspace a run needs
// (the group ends and tile starts, found on the device).
Expected<const void*> grouped_matmul_kernels(const PlanTarget& target, const GroupedMatmulDescriptor& d, bool backward,
                                             std::string_view plan);
size_t grouped_matmul_workspace(const GroupedMatmulDescriptor& d);
// Whether the grouped plans' 16-bit products run on wgmma (sm_90a: Hopper), else on mma.sync.
// BARACUDA_GROUPED_MMA_SYNC=1 keeps Hopper on mma.sync, so that one GPU tests both kernels.
inline bool grouped_matmul_on_wgmma(const PlanTarget& target, DType dtype) {
  static const bool mma_sync = [] {
    const char* e = std::getenv("BARACUDA_GROUPED_MMA_SYNC");
    return e && e[0] == '1';
  }();
  return !mma_sync && target.backend == Backend::cuda && target.arch == 90 &&
         (dtype == DType::f16 || dtype == DType::bf16);
}
// Chooses cuBLASLt's algorithm for each GEMM as laid out for contiguous, 16-byte aligned views (the
// choice is cached for the process; other layouts get theirs at run): the workspace they need, or
// an error naming the plan when cuBLASLt has none.
Expected<size_t> prepare_gemms(const PlanTarget& target, const MatmulProblem& problem, size_t workspace_limit);
// The kernels of the elementwise passes (the activation, its gradient, ones, the f32 accumulator's
// cast) for a dtype: a jit::Module.
Expected<const void*> matmul_kernels(const PlanTarget& target, DType dtype, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
std::vector<Program> matmul_programs();          // every dtype's passes (cuda/matmul.cpp)
std::vector<Program> grouped_matmul_programs();  // cuda/grouped_matmul.cpp
}  // namespace baracuda::detail::jit
