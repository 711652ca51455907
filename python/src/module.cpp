// baracuda._baracuda: the vocabulary (streams, preferences, SKUs, precision guarantees, argument
// specs, baracuda.Error), then every descriptor and every plan (descriptors.cpp, plans.cpp).
#include "bindings.hpp"

namespace baracuda::python {

void bind_core(nb::module_& m) {
  register_error(m);

  nb::enum_<Backend>(m, "Backend").value("cpu", Backend::cpu).value("cuda", Backend::cuda);
  nb::enum_<Determinism>(m, "Determinism").value("any", Determinism::any).value("required", Determinism::required);
  nb::enum_<Layout>(m, "Layout").value("contiguous", Layout::contiguous).value("strided", Layout::strided);

  nb::class_<Stream>(m, "Stream",
                     "Where a plan runs: the host stream (the CPU backend) or a CUDA stream on a device (the CUDA "
                     "backend). A CUDA stream is its cudaStream_t as an int (torch.cuda.current_stream().cuda_stream, "
                     "cupy.cuda.get_current_stream().ptr); 0 is the legacy default stream.")
      .def_static("host", &Stream::host)
      .def_static(
          "cuda",
          [](uintptr_t handle, int device) { return Stream::cuda(reinterpret_cast<CUstream_st*>(handle), device); },
          nb::arg("handle") = 0, nb::arg("device") = 0)
      .def_static("default_stream", &Stream::default_stream,
                  "CUDA device 0's legacy default stream where a GPU is present, else the host stream.")
      .def_prop_ro("backend", &Stream::backend)
      .def_prop_ro("device", &Stream::device)
      .def_prop_ro("handle", [](const Stream& s) { return reinterpret_cast<uintptr_t>(s.cuda_stream()); })
      .def("synchronize", &Stream::synchronize)
      .def("__repr__", [](const Stream& s) {
        if (s.backend() == Backend::cpu) return std::string("Stream.host()");
        return "Stream.cuda(handle=" + std::to_string(reinterpret_cast<uintptr_t>(s.cuda_stream())) +
               ", device=" + std::to_string(s.device()) + ")";
      });

  nb::class_<PlanPreference>(m, "PlanPreference")
      .def(
          "__init__",
          [](PlanPreference* p, std::optional<size_t> workspace_limit, Determinism determinism,
             std::optional<Backend> backend, std::string variant, bool batch_invariant) {
            new (p) PlanPreference{};
            if (workspace_limit) p->workspace_limit = *workspace_limit;
            p->determinism = determinism;
            p->backend = backend;
            p->variant = std::move(variant);
            p->batch_invariant = batch_invariant;
          },
          nb::kw_only(), nb::arg("workspace_limit") = nb::none(), nb::arg("determinism") = Determinism::any,
          nb::arg("backend") = nb::none(), nb::arg("variant") = "", nb::arg("batch_invariant") = false)
      .def_rw("workspace_limit", &PlanPreference::workspace_limit)
      .def_rw("determinism", &PlanPreference::determinism)
      .def_rw("backend", &PlanPreference::backend)
      .def_rw("variant", &PlanPreference::variant)
      .def_rw("batch_invariant", &PlanPreference::batch_invariant);

  nb::class_<PrecisionGuarantee>(m, "PrecisionGuarantee")
      .def_ro("compute", &PrecisionGuarantee::compute)
      .def_ro("accumulator", &PrecisionGuarantee::accumulator)
      .def_ro("bit_stable", &PrecisionGuarantee::bit_stable)
      .def_ro("deterministic", &PrecisionGuarantee::deterministic)
      .def_ro("tf32", &PrecisionGuarantee::tf32)
      .def_ro("batch_invariant", &PrecisionGuarantee::batch_invariant)
      .def("__str__", &PrecisionGuarantee::to_string)
      .def("__repr__", [](const PrecisionGuarantee& p) { return "PrecisionGuarantee(" + p.to_string() + ")"; });

  nb::class_<KernelSku>(m, "KernelSku")
      .def_ro("category", &KernelSku::category)
      .def_ro("op", &KernelSku::op)
      .def_ro("element", &KernelSku::element)
      .def_ro("index", &KernelSku::index)
      .def_ro("layout", &KernelSku::layout)
      .def_ro("arch", &KernelSku::arch)
      .def_ro("backend", &KernelSku::backend)
      .def_ro("variant", &KernelSku::variant)
      .def_ro("precision", &KernelSku::precision)
      .def("__str__", &KernelSku::to_string)
      .def("__repr__", [](const KernelSku& s) { return "KernelSku(" + s.to_string() + ")"; });

  nb::class_<ArgSpec>(m, "ArgSpec", "What one argument must be for a plan's descriptor (Plan.arg_specs()).")
      .def_ro("name", &ArgSpec::name)
      .def_ro("output", &ArgSpec::output)
      .def_ro("accumulates", &ArgSpec::accumulates)
      .def_ro("present", &ArgSpec::present)
      .def_ro("dtype", &ArgSpec::dtype)
      .def_ro("shape", &ArgSpec::shape)
      .def_ro("index_bound", &ArgSpec::index_bound)
      .def_ro("optional", &ArgSpec::optional)
      .def_ro("sorted", &ArgSpec::sorted)
      .def("__repr__", [](const ArgSpec& a) {
        return "ArgSpec(" + std::string(a.name) + ": " + std::string(dtype_name(a.dtype)) + a.shape.to_string() +
               (a.output ? ", output" : "") + (a.present ? "" : ", unused") + (a.optional ? ", optional" : "") + ")";
      });

  m.def(
      "dtype_name", [](DType dtype) { return dtype; }, nb::arg("dtype"),
      "The baracuda name (\"f32\", \"bf16\", ...) of a dtype given as a name, a NumPy / ml_dtypes dtype or a torch "
      "dtype.");
  m.def(
      "precompile",
      [](int arch, int threads, std::vector<int64_t> row_lengths, std::vector<std::string> only) {
        const PrecompileOptions options{arch, threads, std::move(row_lengths), std::move(only)};
        std::optional<Expected<PrecompileReport>> r;
        {
          nb::gil_scoped_release release;
          r.emplace(precompile(options));
        }
        const PrecompileReport report = unwrap(std::move(*r));
        nb::dict d;
        d["arch"] = report.arch;
        d["programs"] = report.programs;
        d["compiled"] = report.compiled;
        d["from_cache"] = report.from_cache;
        d["seconds"] = report.seconds;
        d["median_seconds"] = report.median_seconds;
        d["p90_seconds"] = report.p90_seconds;
        d["cache_directory"] = report.cache_directory;
        return d;
      },
      nb::kw_only(), nb::arg("arch") = 0, nb::arg("threads") = 0, nb::arg("row_lengths") = std::vector<int64_t>{},
      nb::arg("only") = std::vector<std::string>{},
      "Compiles the CUDA kernels plans compile at select into the disk cache shared with the C++ library "
      "(arch: compute capability x 10, 0: device 0's; only: program name prefixes such as \"norm\"), so that "
      "select never waits on NVRTC. Needs no GPU. Returns what it did; raises baracuda.Error (unsupported in a "
      "build without CUDA).");
  m.def("kernel_cache_directory", &kernel_cache_directory,
        "The kernel cache directory in force (BARACUDA_CACHE_DIR, else $XDG_CACHE_HOME/baracuda, else "
        "~/.cache/baracuda); \"\" when off.");
  m.def("cuda_device_count", &cuda_device_count);
  m.def("ffi_handlers", &ffi_handlers,
        "The XLA FFI handlers (PyCapsules) by platform, for jax.ffi.register_ffi_target; empty when the module "
        "was built without XLA's FFI headers (jaxlib).");
  m.def("cuda_unavailable_reason", &cuda_unavailable_reason);
}

}  // namespace baracuda::python

NB_MODULE(_baracuda, m) {
  using namespace baracuda::python;
  m.doc() = "baracuda: ML primitives behind one plan API (select -> can_implement -> workspace_size -> run).";
  bind_core(m);
  bind_descriptors(m);
  bind_plans(m);
}
