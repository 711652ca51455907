// The attention plans' CUDA side: cuDNN's fused attention (flash attention on Hopper), through the
// cuDNN frontend's graph API. A graph is built for the plan's sizes and the views' strides, once,
// and kept for the process (building one takes milliseconds); select builds the one for contiguous
// views to learn the workspace and whether cuDNN takes the case. cuDNN is opened at first use
// (dlopen), so the library loads where it is absent and attention says so as a Status. The masks go
// in as cuDNN's diagonal band (ops/attention_problem.hpp's cudnn_band), the bias as its bias tensor
// (broadcast batch and head dims declared as extent 1, the shapes cuDNN documents for it; broadcast
// queries by a zero stride, as PyTorch passes an expanded key-padding mask).
#include "ops/attention_problem.hpp"
#include "ops/validate.hpp"
#if BARACUDA_HAS_CUDA
#include "cuda/common/check.cuh"
#include "cuda/device/params.h"
#include "cuda/jit/launch.hpp"
#include "cuda/runtime.hpp"
#endif

#if BARACUDA_HAS_CUDNN
#include <cudnn_frontend.h>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

// The frontend's handle on the cuDNN library it calls through (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING).
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}
#endif

namespace baracuda::detail::cuda {

#if BARACUDA_HAS_CUDNN
namespace {

namespace fe = cudnn_frontend;
using Strides4 = std::array<int64_t, 4>;

// The tensors of the graphs, by uid.
// Packed sequences add the lengths and, from kRagged on, the ragged offsets of q, k, v, out, dout, dq,
// dk, dv (cuda/device/params.h's VarlenParams order).
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kBias, kSeqQ, kSeqKV, kRagged };

Status cudnn_error(std::string_view plan, const std::string& what) {
  return plan_error(StatusCode::unsupported, plan, "stream", "cuDNN: " + what);
}

// The version of the cuDNN opened (0 where it cannot say).
size_t cudnn_version() {
  static const size_t version = [] {
    try {
      return fe::detail::get_backend_version();
    } catch (const std::exception&) {
      return size_t{0};
    }
  }();
  return version;
}

// The canonical directories of the cuDNN libraries mapped into the process.
std::set<std::string> cudnn_directories() {
  std::set<std::string> dirs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::filesystem::path path(info->dlpi_name ? info->dlpi_name : "");
        if (path.filename().string().rfind("libcudnn", 0) == 0) {
          std::error_code ec;
          const std::filesystem::path dir = std::filesystem::canonical(path.parent_path(), ec);
          static_cast<std::set<std::string>*>(out)->insert(ec ? path.parent_path().string() : dir.string());
        }
        return 0;
      },
      &dirs);
  return dirs;
}

// cuDNN 9's dispatcher loads its engine libraries (libcudnn_graph, libcudnn_engines_*, ...) by soname
// when first used. Where another library loaded a pip wheel's cuDNN (PyTorch, JAX), the loader may find
// those sonames in a system cuDNN of another version, and the mix crashes (on the H200, select died
// in a segmentation fault in a process where JAX or PyTorch had loaded theirs). So every libcudnn_*.so.9
// beside the dispatcher opened is loaded first, from its directory; a name already loaded is kept.
void load_engine_libraries(void* dispatcher) {
  link_map* map = nullptr;
  if (dlinfo(dispatcher, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(map->l_name).parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libcudnn_", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".so.9") == 0 &&
        !dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
      dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL);  // best effort: cuDNN says what is missing
  }
}

// cuDNN 9, opened once for the process: the one already loaded (PyTorch's, JAX's) if there is one,
// else the loader's.
Status open_cudnn(std::string_view plan) {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
      cudnn_frontend::cudnn_dlhandle = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (cudnn_frontend::cudnn_dlhandle) break;
    }
    if (!cudnn_frontend::cudnn_dlhandle) {
      const char* e = dlerror();
      error = std::string("libcudnn.so.9 could not be opened (") + (e ? e : "?") +
              "): attention on CUDA needs cuDNN 9 on the library path";
      return;
    }
    load_engine_libraries(cudnn_frontend::cudnn_dlhandle);
    if (const std::set<std::string> dirs = cudnn_directories(); dirs.size() > 1) {
      error = "cuDNN's libraries are loaded from more than one directory (";
      for (const std::string& d : dirs) error += (d == *dirs.begin() ? "" : ", ") + d;
      error += "): versions mixed in one process crash; load one cuDNN (LD_LIBRARY_PATH)";
    }
  });
  if (error.empty()) {
    const size_t version = cudnn_version();
    if (version < 90000)
      return plan_error(StatusCode::unsupported, plan, "stream",
                        "the cuDNN found is version " + std::to_string(version) + ": attention on CUDA needs cuDNN 9");
  }
  return error.empty() ? Status::ok() : plan_error(StatusCode::unsupported, plan, "stream", error);
}

// One cuDNN handle per device, for the process; its mutex covers set_stream and the enqueue.
struct Handle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
};
Expected<Handle*> handle_for(int device, std::string_view plan) {
  static std::mutex& mutex = *new std::mutex;
  static std::map<int, std::unique_ptr<Handle>>& handles = *new std::map<int, std::unique_ptr<Handle>>;
  std::lock_guard lock(mutex);
  if (auto it = handles.find(device); it != handles.end()) return it->second.get();
  auto h = std::make_unique<Handle>();
  const DeviceScope scope(device);  // a handle belongs to the device current at its creation
  try {
    if (fe::detail::create_handle(&h->handle) != CUDNN_STATUS_SUCCESS) return cudnn_error(plan, "cudnnCreate failed");
  } catch (const std::exception& e) {
    return cudnn_error(plan, std::string("cudnnCreate threw: ") + e.what());
  }
  return handles.emplace(device, std::move(h)).first->second.get();
}

// What a graph depends on: the sizes, the options and the views' strides ([B, S, H, D] order; the
// statistics' [B, H, S]), the band the mask becomes, and the bias's dtype and strides.
struct GraphKey {
  bool backward = false;
  int device = 0;
  AttentionDescriptor d;
  double scale = 1;
  bool stats = false;
  bool deterministic = true;  // the backward's algorithm
  std::vector<int64_t> strides;
  std::array<int64_t, 4> bias_strides{};  // [B, H, S_q, S_kv]; zero: broadcast
  std::string text() const {
    std::ostringstream s;
    const CudnnBand band = cudnn_band(d);
    s << std::setprecision(17) << backward << ' ' << device << ' ' << static_cast<int>(d.dtype) << ' ' << d.batch << ' '
      << d.seq_q << ' ' << d.seq_kv << ' ' << d.heads_q << ' ' << d.heads_kv << ' ' << d.head_dim << ' ' << d.head_dim_v
      << ' ' << band.bottom_right << ' ' << band.left.value_or(-1) << ' ' << band.right.value_or(-1) << ' '
      << band.left.has_value() << band.right.has_value() << ' ' << scale << ' ' << stats << ' ' << deterministic << ' '
      << d.varlen << " |";
    for (int64_t v : strides) s << ' ' << v;
    if (d.has_bias) {
      s << " | bias " << static_cast<int>(d.bias_dtype.value_or(d.dtype));
      for (int64_t v : bias_strides) s << ' ' << v;
    }
    return s.str();
  }
};

struct Built {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};

// [B, S, H, D] strides as cuDNN's [B, H, S, D].
std::vector<int64_t> bhsd(const int64_t* s) { return {s[0], s[2], s[1], s[3]}; }

// A graph cuDNN does not take: at select "cudnn" (a case ops/attention.cpp's cudnn_refusal let
// through), at a run the views' ("args"): `field`.
Expected<Built> build(const GraphKey& key, cudnnHandle_t handle, std::string_view plan, std::string_view field) {
  const AttentionDescriptor& d = key.d;
  const fe::DataType_t io = d.dtype == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const int64_t* s = key.strides.data();
  auto tensor = [&](const char* name, Uid uid, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides));
  };
  const int64_t B = d.batch, Hq = d.heads_q, Hk = d.heads_kv, Sq = d.seq_q, Sk = d.seq_kv;
  // Strides in key order: q, k, v, out (4 each), then the statistics (3), then dout, dq, dk, dv.
  auto q = tensor("q", kQ, {B, Hq, Sq, d.head_dim}, bhsd(s));
  auto k = tensor("k", kK, {B, Hk, Sk, d.head_dim}, bhsd(s + 4));
  auto v = tensor("v", kV, {B, Hk, Sk, d.head_dim_v}, bhsd(s + 8));
  // Packed sequences: each tensor's sequences from its ragged offsets (the first element of each), the
  // lengths through cuDNN's padding mask.
  std::shared_ptr<fe::graph::Tensor_attributes> seq_q, seq_kv;
  auto int_tensor = [&](const char* name, int64_t uid, int64_t n) {
    auto t = tensor(name, static_cast<Uid>(uid), {n, 1, 1, 1}, {1, 1, 1, 1});
    t->set_data_type(fe::DataType_t::INT32);
    return t;
  };
  auto ragged = [&](const std::shared_ptr<fe::graph::Tensor_attributes>& t, const char* name, int which) {
    if (d.varlen) t->set_ragged_offset(int_tensor(name, kRagged + which, B + 1));
  };
  if (d.varlen) {
    seq_q = int_tensor("seq_q", kSeqQ, B);
    seq_kv = int_tensor("seq_kv", kSeqKV, B);
  }
  ragged(q, "q_rows", 0);
  ragged(k, "k_rows", 1);
  ragged(v, "v_rows", 2);
  auto padded = [&](auto& options) {
    if (d.varlen) options.set_padding_mask(true).set_seq_len_q(seq_q).set_seq_len_kv(seq_kv);
  };
  const std::vector<int64_t> o_stride = bhsd(s + 12), stats_stride = {s[16], s[17], s[18], 1};
  // The bias [B, H_q, S_q, S_kv]: a broadcast batch or head dim (stride 0) declared as extent 1.
  std::shared_ptr<fe::graph::Tensor_attributes> bias;
  if (d.has_bias) {
    const std::array<int64_t, 4>& bs = key.bias_strides;
    std::vector<int64_t> dims = {bs[0] == 0 ? 1 : B, bs[1] == 0 ? 1 : Hq, Sq, Sk};
    std::vector<int64_t> strides(bs.begin(), bs.end());
    if (bs[1] == 0) strides[1] = Sq * Sk;  // any stride serves an extent of 1
    if (bs[0] == 0) strides[0] = dims[1] * Sq * Sk;
    bias = tensor("bias", kBias, dims, strides);
    bias->set_data_type(d.bias_dtype.value_or(d.dtype) == DType::f32 ? fe::DataType_t::FLOAT : io);
  }
  // The mask as cuDNN's diagonal band, its bounds clamped to where they still mask a key (cuDNN takes
  // them as int).
  const CudnnBand band = cudnn_band(d);
  const int64_t reach = std::min<int64_t>(Sq + Sk + 1, std::numeric_limits<int>::max());
  auto masked = [&](auto& options) {
    if (!band.left && !band.right) return;
    options.set_diagonal_alignment(band.bottom_right ? fe::DiagonalAlignment_t::BOTTOM_RIGHT
                                                     : fe::DiagonalAlignment_t::TOP_LEFT);
    if (band.left) options.set_diagonal_band_left_bound(static_cast<int>(std::min(*band.left, reach)));
    if (band.right) options.set_diagonal_band_right_bound(static_cast<int>(std::min(*band.right, reach)));
  };
  if (!key.backward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("attention")
                       .set_generate_stats(key.stats)
                       .set_attn_scale(static_cast<float>(key.scale));
    masked(options);
    padded(options);
    if (bias) options.set_bias(bias);
    auto [o, stats] = g->sdpa(q, k, v, options);
    o->set_output(true).set_uid(kO).set_dim({B, Hq, Sq, d.head_dim_v}).set_stride(o_stride);
    ragged(o, "out_rows", 3);
    if (key.stats)
      stats->set_output(true)
          .set_uid(kStats)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim({B, Hq, Sq, 1})
          .set_stride(stats_stride);
  } else {
    auto o = tensor("out", kO, {B, Hq, Sq, d.head_dim_v}, o_stride);
    auto stats = tensor("lse", kStats, {B, Hq, Sq, 1}, stats_stride);
    stats->set_data_type(fe::DataType_t::FLOAT);
    auto dout = tensor("dout", kDO, {B, Hq, Sq, d.head_dim_v}, bhsd(s + 19));
    ragged(o, "out_rows", 3);
    ragged(dout, "dout_rows", 4);
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("attention_backward")
                       .set_attn_scale(static_cast<float>(key.scale));
    options.set_deterministic_algorithm(key.deterministic);
    masked(options);
    padded(options);
    if (bias) options.set_bias(bias);
    auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dout, stats, options);
    dq->set_output(true).set_uid(kDQ).set_dim({B, Hq, Sq, d.head_dim}).set_stride(bhsd(s + 23));
    dk->set_output(true).set_uid(kDK).set_dim({B, Hk, Sk, d.head_dim}).set_stride(bhsd(s + 27));
    dv->set_output(true).set_uid(kDV).set_dim({B, Hk, Sk, d.head_dim_v}).set_stride(bhsd(s + 31));
    ragged(dq, "dq_rows", 5);
    ragged(dk, "dk_rows", 6);
    ragged(dv, "dv_rows", 7);
  }
  auto check = [&](fe::error_t e, const char* step) -> Status {
    if (e.is_good()) return Status::ok();
    return plan_error(StatusCode::unsupported, plan, field, "cuDNN: " + std::string(step) + ": " + e.get_message());
  };
  if (Status st = check(g->validate(), "validate"); !st) return st;
  if (Status st = check(g->build_operation_graph(handle), "build_operation_graph"); !st) return st;
  if (Status st = check(g->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans"); !st) return st;
  if (Status st = check(g->check_support(handle), "check_support (no engine takes this case)"); !st) return st;
  if (Status st = check(g->build_plans(handle), "build_plans"); !st) return st;
  Built b{g, 0};
  if (Status st = check(g->get_workspace_size(b.workspace), "get_workspace_size"); !st) return st;
  return b;
}

// The graph of a key, built at its first use and kept.
Expected<Built> graph_for(const GraphKey& key, std::string_view plan, std::string_view field) {
  // Never destroyed: cuDNN's own state may be gone by the time static destructors run at exit.
  static std::mutex& mutex = *new std::mutex;
  static std::map<std::string, Built>& graphs = *new std::map<std::string, Built>;
  const std::string text = key.text();
  {
    std::lock_guard lock(mutex);
    if (auto it = graphs.find(text); it != graphs.end()) return it->second;
  }
  if (Status s = open_cudnn(plan); !s) return s;
  Expected<Handle*> h = handle_for(key.device, plan);
  if (!h) return h.status();
  Expected<Built> b = [&]() -> Expected<Built> {
    try {
      std::lock_guard lock((*h)->mutex);
      const DeviceScope scope(key.device);
      return build(key, (*h)->handle, plan, field);
    } catch (const std::exception& e) {
      return cudnn_error(plan, std::string("building the graph threw: ") + e.what());
    }
  }();
  if (!b) return b;
  std::lock_guard lock(mutex);
  return graphs.emplace(text, *b).first->second;
}

// The bias's part of the key: its strides.
void key_bias(GraphKey& key, const AnyTensorRef& bias) {
  if (key.d.has_bias) std::copy(bias.strides.begin(), bias.strides.begin() + 4, key.bias_strides.begin());
}

// Why cuDNN does not take the views ("": it does), as (field, reason). Its kernels move q, k, v, out
// and the gradients with 16-byte vector loads and TMA: unit stride along the head dim, 16-byte
// aligned addresses and strides (the frontend checks the strides at validate and the addresses at
// execute; a failure there would name no field). Before cuDNN 9.12 the forward writes lse packed
// whatever its strides, and before 9.26 the backward reads it packed. The bias is read along the
// keys with unit stride, from a 16-byte aligned address: the tensors' default alignment, which the
// graph declares for it as PyTorch's cuDNN attention does, its rows starting anywhere (any key
// length).
std::pair<std::string, std::string> view_refusal(std::initializer_list<std::pair<const char*, AnyTensorRef>> bshd,
                                                 const AnyTensorRef& lse, bool backward, const AnyTensorRef* bias) {
  for (const auto& [name, v] : bshd) {
    if (!v.data || v.numel() == 0) continue;
    const std::string field = std::string("args.") + name;
    const int last = v.shape.rank - 1;  // the head dim ([B, S, H, D], or packed [T, H, D])
    if (v.strides[last] != 1)
      return {field + ".strides[" + std::to_string(last) + "]",
              "cuDNN's fused attention reads and writes it with unit stride along the head dim"};
    if (reinterpret_cast<uintptr_t>(v.data) % 16 != 0)
      return {field + ".data", "cuDNN's fused attention takes 16-byte aligned addresses"};
    for (int i = 0; i < last; ++i)
      if (v.shape.dims[i] > 1 && (v.strides[i] * static_cast<int64_t>(dtype_size(v.dtype))) % 16 != 0)
        return {field + ".strides[" + std::to_string(i) + "]",
                "cuDNN's fused attention takes strides of whole 16-byte vectors"};
  }
  if (lse.data && lse.numel() > 0) {
    const size_t version = cudnn_version();
    if (version < (backward ? 92600u : 91200u)) {
      const Strides packed = contiguous_strides(lse.shape);
      for (int i = 0; i < 3; ++i)
        if (lse.shape.dims[i] > 1 && lse.strides[i] != packed[i])
          return {"args.lse.strides[" + std::to_string(i) + "]",
                  "cuDNN " + std::to_string(version) + " reads and writes lse packed, as [B, H, S_q]"};
    }
  }
  if (bias && bias->data && bias->numel() > 0) {
    if (bias->shape.dims[3] > 1 && bias->strides[3] != 1)
      return {"args.bias.strides[3]", "cuDNN reads the bias with unit stride along the keys"};
    if (reinterpret_cast<uintptr_t>(bias->data) % 16 != 0)
      return {"args.bias.data", "cuDNN reads the bias from a 16-byte aligned address"};
  }
  return {};
}

template <class View>
void append(std::vector<int64_t>& out, const View& t, int rank) {
  for (int i = 0; i < rank; ++i) out.push_back(t.data ? t.strides[i] : 0);
}

// Contiguous strides of a shape (select's graph: the views' strides are not known yet).
void append_contiguous(std::vector<int64_t>& out, const Shape& shape) {
  int64_t stride = 1;
  std::vector<int64_t> s(static_cast<size_t>(shape.rank));
  for (int i = shape.rank - 1; i >= 0; --i) {
    s[static_cast<size_t>(i)] = stride;
    stride *= shape.dims[i];
  }
  out.insert(out.end(), s.begin(), s.end());
}

Status execute(const Built& b, const LaunchContext& ctx, std::unordered_map<int64_t, void*> pack,
               std::string_view plan) {
  if (b.workspace > ctx.choice.knob)
    return plan_error(StatusCode::unsupported, plan, "args",
                      "these views' strides need " + std::to_string(b.workspace) +
                          " bytes of cuDNN workspace, more than the " + std::to_string(ctx.choice.knob) +
                          " select planned for contiguous views");
  Expected<Handle*> h = handle_for(ctx.target.device, plan);
  if (!h) return h.status();
  try {
    std::lock_guard lock((*h)->mutex);
    if (fe::detail::set_stream((*h)->handle, native(ctx.stream)) != CUDNN_STATUS_SUCCESS)
      return cudnn_error(plan, "cudnnSetStream failed");
    fe::error_t e = b.graph->execute((*h)->handle, pack, ctx.workspace.data);
    if (!e.is_good()) return cudnn_error(plan, "execute: " + e.get_message());
  } catch (const std::exception& e) {
    return cudnn_error(plan, std::string("execute threw: ") + e.what());
  }
  return Status::ok();
}

// Packed sequences (varlen): cuDNN's ragged graphs, with the kernels of cuda/device/attention_varlen.cuh
// around them. The graph's key takes a packed [T, H, D] view as [B, S, H, D] strides (the batch
// stride, which ragged offsets replace, as if padded); the statistics go through a padded [B, H_q,
// S_q] buffer in the scratch.
template <class View>
void append_packed(std::vector<int64_t>& out, const View& t, int64_t seq) {
  if (!t.data) {
    out.insert(out.end(), {0, 0, 0, 0});
    return;
  }
  out.insert(out.end(), {t.strides[0] * seq, t.strides[0], t.strides[1], t.strides[2]});
}

struct VarlenScratch {
  int* ragged;  // [8][B + 1]
  int* lens_q;
  int* lens_kv;
  int* flag;
  float* stats;
  unsigned char* end;  // the backward's gradient scratch
};
VarlenScratch varlen_scratch(const LaunchContext& ctx, const AttentionDescriptor& d) {
  auto* base = static_cast<unsigned char*>(ctx.workspace.data) + attention_scratch_offset(ctx.choice.knob);
  VarlenScratch v{};
  v.ragged = reinterpret_cast<int*>(base);
  v.lens_q = v.ragged + 8 * (d.batch + 1);
  v.lens_kv = v.lens_q + d.batch;
  v.flag = v.lens_kv + d.batch;
  v.stats = reinterpret_cast<float*>(base + ((8 * (d.batch + 1) + 2 * d.batch + 1) * 4 + 255) / 256 * 256);
  v.end = base + attention_varlen_bytes(d);
  return v;
}

// The parameters of the glue kernels, rows[t] the tensors in VarlenParams order (null views: absent).
device::VarlenParams varlen_params(const AttentionDescriptor& d, const AttentionMask& m, const AnyTensorRef& cu_q,
                                   const AnyTensorRef& cu_kv, const VarlenScratch& v,
                                   const std::array<AnyTensorRef, 8>& rows) {
  device::VarlenParams p{};
  p.cu_q = static_cast<const int*>(cu_q.data);
  p.cu_kv = static_cast<const int*>(cu_kv.data);
  p.cu_q_stride = cu_q.strides[0];
  p.cu_kv_stride = cu_kv.strides[0];
  p.lens_q = v.lens_q;
  p.lens_kv = v.lens_kv;
  p.ragged = v.ragged;
  p.flag = v.flag;
  for (int t = 0; t < 8; ++t) p.row_strides[t] = rows[t].data ? rows[t].strides[0] : 0;
  p.batch = d.batch;
  p.seq_q = d.seq_q;
  p.seq_kv = d.seq_kv;
  p.total_q = d.total_q;
  p.total_kv = d.total_kv;
  p.heads_q = d.heads_q;
  p.heads_kv = d.heads_kv;
  p.head_dim = d.head_dim;
  p.head_dim_v = d.head_dim_v;
  p.window_left = m.left;
  p.window_right = m.right;
  p.bottom_right = d.alignment == CausalAlignment::bottom_right ? 1 : 0;
  p.stats = v.stats;
  return p;
}

// cuDNN's ragged offsets are i32 and count forward: every view's last row must start below 2^31
// elements, rows in increasing memory.
Status varlen_offsets_fit(std::string_view plan, std::initializer_list<std::pair<const char*, AnyTensorRef>> views) {
  for (const auto& [name, t] : views) {
    if (!t.data || t.shape.dims[0] == 0) continue;
    if (t.strides[0] < 0)
      return plan_error(StatusCode::unsupported, plan, std::string("args.") + name + ".strides[0]",
                        "packed rows in decreasing memory: cuDNN's ragged offsets count forward");
    if (static_cast<double>(t.shape.dims[0]) * static_cast<double>(t.strides[0]) >= 0x1p31)
      return plan_error(StatusCode::unsupported, plan, std::string("args.") + name,
                        "packed rows past 2^31 elements: cuDNN's ragged offsets are 32-bit");
  }
  return Status::ok();
}

// The varlen graph's key strides for the tensors of `rows` (VarlenParams order: q, k, v, out, then
// the backward's dout, dq, dk, dv; absent views are skipped), the padded statistics after out, once
// the views' ragged offsets are known to fit.
Status varlen_key(std::string_view plan, const AttentionDescriptor& d, const std::array<AnyTensorRef, 8>& rows,
                  bool backward, std::vector<int64_t>& strides) {
  static constexpr const char* kNames[8] = {"q", "k", "v", "out", "dout", "dq", "dk", "dv"};
  const int count = backward ? 8 : 4;
  for (int t = 0; t < count; ++t) {
    const AnyTensorRef& v = rows[static_cast<size_t>(t)];
    if (Status st = varlen_offsets_fit(plan, {{kNames[t], v}}); !st) return st;
    append_packed(strides, v, t == 1 || t == 2 || t == 6 || t == 7 ? d.seq_kv : d.seq_q);
    if (t == 3) append_contiguous(strides, Shape{d.batch, d.heads_q, d.seq_q});  // the padded statistics
  }
  return Status::ok();
}

Status launch_glue(const LaunchContext& ctx, int which, int64_t threads, int64_t work, device::VarlenParams& p,
                   const char* what) {
  const void* kernel = static_cast<const jit::Module*>(ctx.choice.kernels)->kernels[static_cast<size_t>(which)];
  const int64_t blocks = std::clamp<int64_t>((work + threads - 1) / threads, 1, 64 * std::max(ctx.target.sm_count, 1));
  return launch_jit(kernel, blocks, static_cast<int>(threads), p, ctx.stream, what);
}

}  // namespace

Expected<size_t> attention_workspace(const PlanTarget& target, const AttentionDescriptor& d, double scale,
                                     bool backward, bool deterministic, std::string_view plan) {
  GraphKey key{backward, target.device, d, scale, true, deterministic, {}};
  const Shape q{d.batch, d.seq_q, d.heads_q, d.head_dim}, k{d.batch, d.seq_kv, d.heads_kv, d.head_dim},
      v{d.batch, d.seq_kv, d.heads_kv, d.head_dim_v}, o{d.batch, d.seq_q, d.heads_q, d.head_dim_v},
      lse{d.batch, d.heads_q, d.seq_q};
  for (const Shape* s : {&q, &k, &v, &o, &lse}) append_contiguous(key.strides, *s);
  if (backward)
    for (const Shape* s : {&o, &q, &k, &v}) append_contiguous(key.strides, *s);
  if (d.has_bias) {
    const Strides strides = contiguous_strides(Shape{d.batch, d.heads_q, d.seq_q, d.seq_kv});
    std::copy(strides.begin(), strides.begin() + 4, key.bias_strides.begin());
  }
  Expected<Built> b = graph_for(key, plan, "cudnn");
  if (!b) return b.status();
  return static_cast<size_t>(b->workspace);
}

Status attention_views(std::string_view plan, const AttentionDescriptor& d, const AttentionArgs& a) {
  if (Status s = open_cudnn(plan); !s) return s;
  auto [field, why] = view_refusal({{"q", a.q}, {"k", a.k}, {"v", a.v}, {"out", a.out}},
                                   d.varlen ? AnyTensorRef{} : a.lse, false, d.has_bias ? &a.bias : nullptr);
  return field.empty() ? Status::ok() : plan_error(StatusCode::unsupported, plan, field, why);
}

Status attention_views(std::string_view plan, const AttentionDescriptor& d, const AttentionBackwardArgs& a) {
  if (Status s = open_cudnn(plan); !s) return s;
  auto [field, why] = view_refusal({{"q", a.q},
                                    {"k", a.k},
                                    {"v", a.v},
                                    {"out", a.out},
                                    {"dout", a.dout},
                                    {"dq", AnyTensorRef(a.dq)},
                                    {"dk", AnyTensorRef(a.dk)},
                                    {"dv", AnyTensorRef(a.dv)}},
                                   d.varlen ? AnyTensorRef{} : a.lse, true, d.has_bias ? &a.bias : nullptr);
  return field.empty() ? Status::ok() : plan_error(StatusCode::unsupported, plan, field, why);
}

Status launch(const LaunchContext& ctx, const AttentionProblem& p) {
  if (p.split_kv) return launch_split_kv(ctx, p);  // the kernel of ours, not cuDNN
  const AttentionDescriptor& d = p.desc;
  const AttentionArgs& a = p.args;
  GraphKey key{false, ctx.target.device, d, p.scale, a.lse.data != nullptr, true, {}};
  VarlenScratch scratch{};
  device::VarlenParams vp{};
  if (d.varlen) {
    const std::array<AnyTensorRef, 8> rows{a.q, a.k, a.v, a.out, {}, {}, {}, {}};
    if (Status st = varlen_key("AttentionPlan", d, rows, false, key.strides); !st) return st;
    scratch = varlen_scratch(ctx, d);
    vp = varlen_params(d, p.mask, a.cu_seqlens_q, a.cu_seqlens_kv, scratch, rows);
    if (Status st = launch_glue(ctx, 0, 1024, 1, vp, "varlen_prepare"); !st) return st;
  } else {
    append(key.strides, a.q, 4);
    append(key.strides, a.k, 4);
    append(key.strides, a.v, 4);
    append(key.strides, a.out, 4);
    append(key.strides, a.lse, 3);
  }
  key_bias(key, a.bias);
  Expected<Built> b = graph_for(key, "AttentionPlan", "args");
  if (!b) return b.status();
  std::unordered_map<int64_t, void*> pack{{kQ, const_cast<void*>(a.q.data)},
                                          {kK, const_cast<void*>(a.k.data)},
                                          {kV, const_cast<void*>(a.v.data)},
                                          {kO, a.out.data}};
  if (a.lse.data) pack.emplace(kStats, d.varlen ? static_cast<void*>(scratch.stats) : a.lse.data);
  if (d.has_bias) pack.emplace(kBias, const_cast<void*>(a.bias.data));
  if (d.varlen) {
    pack.emplace(kSeqQ, scratch.lens_q);
    pack.emplace(kSeqKV, scratch.lens_kv);
    for (int t = 0; t < 4; ++t) pack.emplace(kRagged + t, scratch.ragged + t * (d.batch + 1));
  }
  if (Status st = execute(*b, ctx, std::move(pack), "AttentionPlan"); !st || !d.varlen) return st;
  // The lse out of the padded statistics, rows with no key, and NaN everywhere for bad offsets.
  if (a.lse.data) {
    vp.lse = static_cast<float*>(a.lse.data);
    vp.lse_strides[0] = a.lse.strides[0];
    vp.lse_strides[1] = a.lse.strides[1];
  }
  vp.out = a.out.data;
  for (int i = 0; i < 3; ++i) vp.out_strides[i] = a.out.strides[i];
  return launch_glue(ctx, 1, 256, std::max(d.batch * d.heads_q * d.seq_q, d.total_q * d.heads_q * d.head_dim_v), vp,
                     "varlen_finish");
}

Status launch(const LaunchContext& ctx, const AttentionBackwardProblem& p) {
  if (p.split_kv) return launch_split_kv_backward(ctx, p);  // the kernels of ours, not cuDNN
  const AttentionDescriptor& d = p.desc;
  constexpr std::string_view kPlan = "AttentionBackwardPlan";
  // cuDNN writes the three gradients together: one not given goes to the workspace, past cuDNN's own.
  AttentionBackwardArgs a = p.args;
  const VarlenScratch vs = d.varlen ? varlen_scratch(ctx, d) : VarlenScratch{};
  auto* scratch =
      d.varlen ? vs.end : static_cast<unsigned char*>(ctx.workspace.data) + attention_scratch_offset(ctx.choice.knob);
  const Shape q_shape =
                  d.varlen ? Shape{d.total_q, d.heads_q, d.head_dim} : Shape{d.batch, d.seq_q, d.heads_q, d.head_dim},
              k_shape = d.varlen ? Shape{d.total_kv, d.heads_kv, d.head_dim}
                                 : Shape{d.batch, d.seq_kv, d.heads_kv, d.head_dim},
              v_shape = d.varlen ? Shape{d.total_kv, d.heads_kv, d.head_dim_v}
                                 : Shape{d.batch, d.seq_kv, d.heads_kv, d.head_dim_v};
  for (auto [view, shape] : {std::pair{&a.dq, &q_shape}, std::pair{&a.dk, &k_shape}, std::pair{&a.dv, &v_shape}}) {
    if (!view->data) {
      view->data = scratch;
      view->shape = *shape;
      view->strides = contiguous_strides(*shape);
    }
    scratch += attention_scratch_bytes(*shape, d.dtype);
  }
  GraphKey key{true, ctx.target.device, d, p.scale, true, p.deterministic, {}};
  device::VarlenParams vp{};
  if (d.varlen) {
    const std::array<AnyTensorRef, 8> rows{
        a.q, a.k, a.v, a.out, a.dout, AnyTensorRef(a.dq), AnyTensorRef(a.dk), AnyTensorRef(a.dv)};
    if (Status st = varlen_key(kPlan, d, rows, true, key.strides); !st) return st;
    vp = varlen_params(d, p.mask, a.cu_seqlens_q, a.cu_seqlens_kv, vs, rows);
    if (Status st = launch_glue(ctx, 0, 1024, 1, vp, "varlen_prepare"); !st) return st;
    vp.lse_in = static_cast<const float*>(a.lse.data);
    vp.lse_strides[0] = a.lse.strides[0];
    vp.lse_strides[1] = a.lse.strides[1];
    if (Status st = launch_glue(ctx, 2, 256, d.batch * d.heads_q * d.seq_q, vp, "varlen_stats_in"); !st) return st;
  } else {
    append(key.strides, a.q, 4);
    append(key.strides, a.k, 4);
    append(key.strides, a.v, 4);
    append(key.strides, a.out, 4);
    append(key.strides, a.lse, 3);
    append(key.strides, a.dout, 4);
    append(key.strides, a.dq, 4);
    append(key.strides, a.dk, 4);
    append(key.strides, a.dv, 4);
  }
  key_bias(key, a.bias);
  Expected<Built> b = graph_for(key, kPlan, "args");
  if (!b) return b.status();
  std::unordered_map<int64_t, void*> pack{
      {kQ, const_cast<void*>(a.q.data)},
      {kK, const_cast<void*>(a.k.data)},
      {kV, const_cast<void*>(a.v.data)},
      {kO, const_cast<void*>(a.out.data)},
      {kDO, const_cast<void*>(a.dout.data)},
      {kStats, d.varlen ? static_cast<void*>(vs.stats) : const_cast<void*>(a.lse.data)},
      {kDQ, a.dq.data},
      {kDK, a.dk.data},
      {kDV, a.dv.data}};
  if (d.has_bias) pack.emplace(kBias, const_cast<void*>(a.bias.data));
  if (d.varlen) {
    pack.emplace(kSeqQ, vs.lens_q);
    pack.emplace(kSeqKV, vs.lens_kv);
    for (int t = 0; t < 8; ++t) pack.emplace(kRagged + t, vs.ragged + t * (d.batch + 1));
  }
  if (Status st = execute(*b, ctx, std::move(pack), kPlan); !st || !d.varlen) return st;
  // The keys of sequences with no query: zero dk and dv (cuDNN leaves them); NaN for bad offsets.
  const AnyTensorMut given[3] = {p.args.dq, p.args.dk, p.args.dv};
  for (int g = 0; g < 3; ++g) {
    vp.grads[g] = given[g].data;
    for (int i = 0; i < 3 && given[g].data; ++i) vp.grad_strides[g][i] = given[g].strides[i];
  }
  return launch_glue(
      ctx, 3, 256,
      std::max(d.total_q * d.heads_q * d.head_dim, d.total_kv * d.heads_kv * std::max(d.head_dim, d.head_dim_v)), vp,
      "varlen_zero_keys");
}

bool cudnn_built() { return true; }

#else  // built without the cuDNN frontend's headers

bool cudnn_built() { return false; }

Expected<size_t> attention_workspace(const PlanTarget&, const AttentionDescriptor&, double, bool, bool,
                                     std::string_view plan) {
  return plan_error(StatusCode::unsupported, plan, "stream",
                    "this build has no CUDA attention (configured without the cuDNN frontend's headers: "
                    "pip install nvidia-cudnn-frontend, then configure again)");
}
Status attention_views(std::string_view plan, const AttentionDescriptor&, const AttentionArgs&) {
  return plan_error(StatusCode::unsupported, plan, "stream", "this build has no CUDA attention");
}
Status attention_views(std::string_view plan, const AttentionDescriptor&, const AttentionBackwardArgs&) {
  return plan_error(StatusCode::unsupported, plan, "stream", "this build has no CUDA attention");
}
Status launch(const LaunchContext& ctx, const AttentionProblem& p) {
  if (p.split_kv) return launch_split_kv(ctx, p);
  return plan_error(StatusCode::unsupported, "AttentionPlan", "stream", "this build has no CUDA attention");
}
Status launch(const LaunchContext& ctx, const AttentionBackwardProblem& p) {
  if (p.split_kv) return launch_split_kv_backward(ctx, p);
  return plan_error(StatusCode::unsupported, "AttentionBackwardPlan", "stream", "this build has no CUDA attention");
}

#endif

}  // namespace baracuda::detail::cuda
