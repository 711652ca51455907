// The XLA FFI side of baracuda.jax: the targets' registry and one handler a platform, which turns
// XLA's buffers into views and runs the target's plan on XLA's stream (the host on the CPU). A
// failing Status becomes an XLA error carrying its message, which JAX raises.
#include "ffi.hpp"

#include <deque>

#if BARACUDA_XLA_FFI
#include "xla/ffi/api/ffi.h"
#endif

namespace baracuda::python {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<FfiTarget> targets;  // (a deque: handlers hold references while others register)
};
Registry& registry() {
  static Registry r;
  return r;
}

const FfiTarget* find_target(int64_t id) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return id >= 0 && id < static_cast<int64_t>(r.targets.size()) ? &r.targets[static_cast<size_t>(id)] : nullptr;
}

}  // namespace

int64_t add_ffi_target(FfiTarget target) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.targets.push_back(std::move(target));
  return static_cast<int64_t>(r.targets.size()) - 1;
}

#if BARACUDA_XLA_FFI
namespace {
namespace ffi = xla::ffi;

std::optional<DType> dtype_of(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::F16:
      return DType::f16;
    case ffi::DataType::BF16:
      return DType::bf16;
    case ffi::DataType::F32:
      return DType::f32;
    case ffi::DataType::F64:
      return DType::f64;
    case ffi::DataType::S8:
      return DType::i8;
    case ffi::DataType::U8:
      return DType::u8;
    case ffi::DataType::S32:
      return DType::i32;
    case ffi::DataType::S64:
      return DType::i64;
    case ffi::DataType::PRED:
      return DType::boolean;
    default:
      return std::nullopt;
  }
}

ffi::Error error(const std::string& plan, const std::string& field, const std::string& what) {
  return ffi::Error::InvalidArgument("invalid_problem: " + plan + ": " + field + ": " + what);
}

// A buffer as a contiguous view (XLA's default layout: row-major, dense).
std::optional<AnyTensorMut> view_of(const ffi::AnyBuffer& buffer) {
  const std::optional<DType> dtype = dtype_of(buffer.element_type());
  const auto dims = buffer.dimensions();
  if (!dtype || dims.size() > static_cast<size_t>(kMaxRank)) return std::nullopt;
  Shape shape;
  shape.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) shape.dims[d] = dims[d];
  return AnyTensorMut::contiguous(buffer.untyped_data(), *dtype, shape);
}

ffi::Error run_call(const Stream& stream, int64_t id, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  const FfiTarget* target = find_target(id);
  if (!target) return error("baracuda", "target", "no FFI target " + std::to_string(id) + " in this process");
  const std::string& plan = target->plan;
  if (target->backend != stream.backend())
    return error(plan, "stream",
                 "selected for " + std::string(backend_name(target->backend)) + ", called on " +
                     std::string(backend_name(stream.backend())));
  const size_t results = target->outputs.size() + (target->workspace ? 1 : 0);
  if (args.size() != target->inputs.size() || rets.size() != results)
    return error(plan, "args",
                 "the call has " + std::to_string(args.size()) + " operands and " + std::to_string(rets.size()) +
                     " results; the target takes " + std::to_string(target->inputs.size()) + " and " +
                     std::to_string(results));
  std::vector<AnyTensorMut> in, out;
  // The operands' or the results' buffers as views, in the target's order (a result is a Result<AnyBuffer>).
  auto views = [&](const auto& buffers, const std::vector<std::string>& names,
                   std::vector<AnyTensorMut>& to) -> std::optional<ffi::Error> {
    for (size_t i = 0; i < names.size(); ++i) {
      auto buffer = buffers.template get<ffi::AnyBuffer>(i);
      if (!buffer.has_value()) return buffer.error();
      std::optional<AnyTensorMut> view;
      if constexpr (std::is_same_v<std::decay_t<decltype(buffers)>, ffi::RemainingArgs>)
        view = view_of(*buffer);
      else
        view = view_of(**buffer);
      if (!view) return error(plan, "args." + names[i], "a dtype or rank baracuda does not take");
      to.push_back(*view);
    }
    return std::nullopt;
  };
  if (auto e = views(args, target->inputs, in)) return std::move(*e);
  if (auto e = views(rets, target->outputs, out)) return std::move(*e);
  Workspace workspace{};
  if (target->workspace) {
    auto buffer = rets.get<ffi::AnyBuffer>(results - 1);
    if (!buffer.has_value()) return buffer.error();
    workspace = Workspace{(*buffer)->untyped_data(), (*buffer)->size_bytes()};
  }
  if (Status status = target->run(stream, in, out, workspace); !status)
    return ffi::Error(
        status.code() == StatusCode::invalid_problem ? ffi::ErrorCode::kInvalidArgument : ffi::ErrorCode::kInternal,
        status.to_string());
  return ffi::Error::Success();
}

ffi::Error run_on_host(int64_t target, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return run_call(Stream::host(), target, args, rets);
}

ffi::Error run_on_cuda(void* stream, int32_t device, int64_t target, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return run_call(Stream::cuda(static_cast<CUstream_st*>(stream), device), target, args, rets);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(baracuda_ffi_host, run_on_host,
                              ffi::Ffi::Bind().Attr<int64_t>("target").RemainingArgs().RemainingRets());
XLA_FFI_DEFINE_HANDLER_SYMBOL(baracuda_ffi_cuda, run_on_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<void*>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Attr<int64_t>("target")
                                  .RemainingArgs()
                                  .RemainingRets());

nb::dict ffi_handlers() {
  nb::dict out;
  out["cpu"] = nb::capsule(reinterpret_cast<void*>(&baracuda_ffi_host), "xla._CUSTOM_CALL_TARGET");
  if (cuda_device_count() > 0)
    out["cuda"] = nb::capsule(reinterpret_cast<void*>(&baracuda_ffi_cuda), "xla._CUSTOM_CALL_TARGET");
  return out;
}
#else
nb::dict ffi_handlers() { return nb::dict(); }
#endif

}  // namespace baracuda::python
