// Python <-> the library's vocabulary: dtypes, shapes, streams, tensors (DLPack, zero-copy), errors.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "bindings.hpp"

namespace baracuda::python {
namespace {

PyObject* error_type = nullptr;  // baracuda.Error, created by register_error

std::optional<DType> dtype_from_name(std::string name) {
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  if (name.rfind("jax.numpy.", 0) == 0) name = name.substr(10);
  static const std::pair<std::string_view, DType> kNames[] = {
      {"f16", DType::f16},       {"float16", DType::f16},  {"half", DType::f16},     {"bf16", DType::bf16},
      {"bfloat16", DType::bf16}, {"f32", DType::f32},      {"float32", DType::f32},  {"float", DType::f32},
      {"f64", DType::f64},       {"float64", DType::f64},  {"double", DType::f64},   {"i8", DType::i8},
      {"int8", DType::i8},       {"u8", DType::u8},        {"uint8", DType::u8},     {"i32", DType::i32},
      {"int32", DType::i32},     {"int", DType::i32},      {"i64", DType::i64},      {"int64", DType::i64},
      {"long", DType::i64},      {"bool", DType::boolean}, {"bool_", DType::boolean}};
  for (const auto& [n, d] : kNames)
    if (n == name) return d;
  return std::nullopt;
}

std::optional<DType> dtype_of_dlpack(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<nb::dlpack::dtype_code>(t.code)) {
    case nb::dlpack::dtype_code::Int:
      if (t.bits == 8) return DType::i8;
      if (t.bits == 32) return DType::i32;
      if (t.bits == 64) return DType::i64;
      break;
    case nb::dlpack::dtype_code::UInt:
      if (t.bits == 8) return DType::u8;
      break;
    case nb::dlpack::dtype_code::Float:
      if (t.bits == 16) return DType::f16;
      if (t.bits == 32) return DType::f32;
      if (t.bits == 64) return DType::f64;
      break;
    case nb::dlpack::dtype_code::Bfloat:
      if (t.bits == 16) return DType::bf16;
      break;
    case nb::dlpack::dtype_code::Bool:
      if (t.bits == 8) return DType::boolean;
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::string describe_dlpack(nb::dlpack::dtype t) {
  static const char* kCodes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string code = t.code < std::size(kCodes) ? kCodes[t.code] : "code " + std::to_string(t.code);
  return code + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

// The CPU backend reads host memory (pinned and managed memory included); CUDA, its own device's.
bool device_fits(int device_type, int device_id, const Stream& stream) {
  if (stream.backend() == Backend::cpu)
    return device_type == nb::device::cpu::value || device_type == nb::device::cuda_host::value ||
           device_type == nb::device::cuda_managed::value;
  return (device_type == nb::device::cuda::value || device_type == nb::device::cuda_managed::value) &&
         device_id == stream.device();
}

std::string device_text(int device_type, int device_id) {
  if (device_type == nb::device::cpu::value) return "the CPU";
  if (device_type == nb::device::cuda::value) return "CUDA device " + std::to_string(device_id);
  return "DLPack device type " + std::to_string(device_type) + " (id " + std::to_string(device_id) + ")";
}

std::string stream_text(const Stream& stream) {
  return stream.backend() == Backend::cpu ? "the CPU" : "CUDA device " + std::to_string(stream.device());
}

template <class Array>
AnyTensorMut view_of(const Array& a, std::optional<DType> forced, const Stream& stream, std::string_view plan,
                     std::string_view field) {
  const std::optional<DType> dtype = forced ? forced : dtype_of_dlpack(a.dtype());
  if (!dtype)
    throw_error(StatusCode::unsupported, plan, field,
                "dtype " + describe_dlpack(a.dtype()) +
                    " is not one baracuda takes (f16, bf16, f32, f64, i8, u8, i32, i64, bool)");
  if (!device_fits(a.device_type(), a.device_id(), stream))
    throw_error(StatusCode::invalid_problem, plan, field,
                "a tensor on " + device_text(a.device_type(), a.device_id()) + " for a plan on " + stream_text(stream));
  if (a.ndim() > static_cast<size_t>(kMaxRank))
    throw_error(StatusCode::invalid_problem, plan, field,
                "rank " + std::to_string(a.ndim()) + " is past the largest, " + std::to_string(kMaxRank));
  AnyTensorMut view;
  view.data = const_cast<void*>(static_cast<const void*>(a.data()));
  view.dtype = *dtype;
  view.shape.rank = static_cast<int>(a.ndim());
  for (int d = 0; d < view.shape.rank; ++d) {
    view.shape.dims[d] = static_cast<int64_t>(a.shape(d));
    view.strides[d] = a.stride(d);
    if (a.stride(d) < 0 && a.shape(d) > 1)
      throw_error(StatusCode::invalid_problem, plan, field,
                  "has a negative stride along dim " + std::to_string(d) +
                      " (a reversed view); strides must be non-negative: copy it first");
  }
  view.capacity = view.extent();  // the elements the view spans: the most a DLPack view promises
  return view;
}

// NumPy arrays of ml_dtypes' bfloat16 have neither a DLPack nor a buffer export: take their bits.
bool is_numpy_bfloat16(nb::handle obj) {
  if (!nb::hasattr(obj, "dtype") || !nb::hasattr(obj, "view")) return false;
  nb::object dtype = obj.attr("dtype");
  return nb::hasattr(dtype, "name") && nb::str(dtype.attr("name")).equal(nb::str("bfloat16"));
}

}  // namespace

[[noreturn]] void throw_status(const Status& status) { throw StatusError{status}; }

[[noreturn]] void throw_error(StatusCode code, std::string_view plan, std::string_view field, const std::string& what) {
  throw_status(Status::error(code, std::string(plan) + ": " + std::string(field) + ": " + what));
}

void register_error(nb::module_& m) {
  error_type = PyErr_NewExceptionWithDoc(
      "baracuda.Error",
      "A baracuda Status that is not ok: `code` (\"unsupported\", \"invalid_problem\", \"buffer_too_small\", "
      "\"misaligned_operand\", \"workspace_too_small\", \"backend_error\"), `message` (it names the plan and the "
      "field), and for the too-small codes `needed` and `got`.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(error_type);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object error = nb::handle(error_type)(nb::str(e.status.to_string().c_str()));
      nb::setattr(error, "code", nb::str(std::string(status_code_name(e.status.code())).c_str()));
      nb::setattr(error, "message", nb::str(e.status.message().c_str()));
      nb::setattr(error, "needed", nb::int_(e.status.needed()));
      nb::setattr(error, "got", nb::int_(e.status.got()));
      PyErr_SetObject(error_type, error.ptr());
    }
  });
}

DType dtype_from_python(nb::handle obj) {
  std::string name;
  if (nb::isinstance<nb::str>(obj)) {
    name = nb::cast<std::string>(obj);
  } else if (PyType_Check(obj.ptr())) {
    // A scalar type: numpy.float32, ml_dtypes.bfloat16, jax.numpy.float32 (which carries .dtype).
    if (nb::hasattr(obj, "dtype") && !PyType_Check(obj.attr("dtype").ptr()) && nb::hasattr(obj.attr("dtype"), "name"))
      name = nb::cast<std::string>(nb::str(obj.attr("dtype").attr("name")));
    else
      name = nb::cast<std::string>(nb::str(nb::module_::import_("numpy").attr("dtype")(obj).attr("name")));
  } else if (nb::hasattr(obj, "name") && nb::isinstance<nb::str>(obj.attr("name"))) {
    name = nb::cast<std::string>(obj.attr("name"));  // a NumPy dtype
  } else {
    name = nb::cast<std::string>(nb::str(obj));  // torch.float32
  }
  if (std::optional<DType> d = dtype_from_name(name)) return *d;
  throw nb::value_error(("not a baracuda dtype: '" + name + "' (f16, bf16, f32, f64, i8, u8, i32, i64, bool)").c_str());
}

Shape shape_from_python(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj) || !PySequence_Check(obj.ptr()))
    throw nb::type_error("a shape is a sequence of ints");
  const Py_ssize_t n = PySequence_Size(obj.ptr());
  if (n < 0) nb::raise_python_error();
  if (n > kMaxRank) throw nb::value_error(("a shape has at most " + std::to_string(kMaxRank) + " dims").c_str());
  Shape shape;
  shape.rank = static_cast<int>(n);
  for (Py_ssize_t i = 0; i < n; ++i) shape.dims[i] = nb::cast<int64_t>(obj[i]);
  return shape;
}

nb::tuple shape_to_python(const Shape& shape) {
  nb::list dims;
  for (int d = 0; d < shape.rank && d < kMaxRank; ++d) dims.append(shape.dims[d]);
  return nb::tuple(dims);
}

Stream stream_from_python(nb::handle obj) {
  if (obj.is_none()) return Stream::default_stream();
  if (nb::isinstance<Stream>(obj)) return nb::cast<Stream>(obj);
  if (nb::isinstance<nb::str>(obj)) {
    const std::string s = nb::cast<std::string>(obj);
    if (s == "cpu" || s == "host") return Stream::host();
    if (s == "cuda") return Stream::cuda();
    if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.find_first_not_of("0123456789", 5) == std::string::npos)
      return Stream::cuda(nullptr, std::stoi(s.substr(5)));
    throw nb::value_error(("not a stream: '" + s + "' (\"cpu\", \"cuda\", \"cuda:N\" or a baracuda.Stream)").c_str());
  }
  throw nb::type_error("a stream is None, \"cpu\", \"cuda\", \"cuda:N\" or a baracuda.Stream");
}

Stream run_stream(nb::handle obj, const Stream& selected) {
  if (obj.is_none()) return selected;
  if (nb::isinstance<Stream>(obj)) return nb::cast<Stream>(obj);
  if (nb::isinstance<nb::int_>(obj)) {
    const auto handle = nb::cast<uintptr_t>(obj);
    if (selected.backend() == Backend::cpu) {
      if (handle != 0) throw nb::value_error("a CUDA stream handle for a plan selected on the CPU");
      return selected;
    }
    return Stream::cuda(reinterpret_cast<CUstream_st*>(handle), selected.device());
  }
  throw nb::type_error("stream: None, an int cudaStream_t handle or a baracuda.Stream");
}

AnyTensorMut tensor_from_python(nb::handle obj, bool written, const Stream& stream, std::string_view plan,
                                std::string_view field, HeldTensors& held) {
  nb::object source = nb::borrow(obj);
  std::optional<DType> forced;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (written) {
      nb::ndarray<> a;
      if (nb::try_cast(source, a, false)) {
        held.written.push_back(a);
        return view_of(a, forced, stream, plan, field);
      }
    } else {
      nb::ndarray<nb::ro> a;
      if (nb::try_cast(source, a, false)) {
        held.read.push_back(a);
        return view_of(a, forced, stream, plan, field);
      }
    }
    if (attempt == 0 && is_numpy_bfloat16(source)) {
      source = source.attr("view")("uint16");
      forced = DType::bf16;
    } else {
      break;
    }
  }
  nb::ndarray<nb::ro> readable;
  if (written && nb::try_cast(source, readable, false))
    throw_error(StatusCode::invalid_problem, plan, field, "is read-only, and the plan writes it");
  throw_error(StatusCode::invalid_problem, plan, field,
              "a " + nb::cast<std::string>(nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))))) +
                  " is not a tensor (no __dlpack__ or buffer protocol)");
}

Workspace workspace_from_python(nb::handle obj, const Stream& stream, std::string_view plan, HeldTensors& held) {
  if (obj.is_none()) return {};
  const AnyTensorMut view = tensor_from_python(obj, true, stream, plan, "workspace", held);
  if (view.numel() == 0) return {};
  if (!view.is_contiguous()) throw_error(StatusCode::invalid_problem, plan, "workspace", "must be contiguous");
  return Workspace{view.data, static_cast<size_t>(view.numel()) * dtype_size(view.dtype)};
}

nb::dict schema_to_python(const OpSchema& schema) {
  nb::dict d;
  d["plan"] = schema.plan;
  d["op"] = schema.op;
  d["category"] = schema.category;
  nb::list dtypes, index_dtypes, variants;
  for (DType t : schema.dtypes) dtypes.append(dtype_name(t));
  for (DType t : schema.index_dtypes) index_dtypes.append(dtype_name(t));
  for (const VariantInfo& v : schema.variants) {
    nb::dict variant;
    variant["name"] = v.name;
    variant["deterministic"] = v.deterministic;
    variant["cpu"] = v.cpu;
    variant["cuda"] = v.cuda;
    variant["summary"] = v.summary;
    variants.append(variant);
  }
  d["dtypes"] = dtypes;
  d["index_dtypes"] = index_dtypes;
  d["variants"] = variants;
  d["variant_by_views"] = schema.variant_by_views;
  return d;
}

}  // namespace baracuda::python

namespace nanobind::detail {

bool type_caster<baracuda::DType>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  try {
    value = baracuda::python::dtype_from_python(src);
    return true;
  } catch (python_error& e) {
    e.restore();
    PyErr_Clear();
    return false;
  } catch (...) {
    return false;
  }
}

handle type_caster<baracuda::DType>::from_cpp(baracuda::DType value, rv_policy, cleanup_list*) noexcept {
  const std::string_view name = baracuda::dtype_name(value);
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

bool type_caster<baracuda::Shape>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  try {
    value = baracuda::python::shape_from_python(src);
    return true;
  } catch (python_error& e) {
    e.restore();
    PyErr_Clear();
    return false;
  } catch (...) {
    return false;
  }
}

handle type_caster<baracuda::Shape>::from_cpp(const baracuda::Shape& value, rv_policy, cleanup_list*) noexcept {
  return baracuda::python::shape_to_python(value).release();
}

bool type_caster<baracuda::ReduceDims>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  try {
    baracuda::ReduceDims dims;
    if (PyLong_Check(src.ptr())) {
      dims.count = 1;
      dims.dims[0] = nanobind::cast<int>(src);
    } else {
      const baracuda::Shape shape = baracuda::python::shape_from_python(src);
      dims.count = shape.rank;
      for (int d = 0; d < shape.rank; ++d) dims.dims[d] = static_cast<int>(shape.dims[d]);
    }
    value = dims;
    return true;
  } catch (python_error& e) {
    e.restore();
    PyErr_Clear();
    return false;
  } catch (...) {
    return false;
  }
}

handle type_caster<baracuda::ReduceDims>::from_cpp(const baracuda::ReduceDims& value, rv_policy,
                                                   cleanup_list*) noexcept {
  nanobind::list dims;
  for (int d = 0; d < value.count && d < baracuda::kMaxRank; ++d) dims.append(value.dims[d]);
  return nanobind::tuple(dims).release();
}

}  // namespace nanobind::detail
