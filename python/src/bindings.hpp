#pragma once
// What the module's files share: the conversions between Python and the library's vocabulary (DType,
// Shape, Stream, tensors through DLPack, Status as baracuda.Error) and the two templates that expose
// the library generically: bind_descriptor (a descriptor struct, its fields by name) and bind_plan
// (every Plan<Op>, from its schema and argument table). Nothing here is written per op.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace nb = nanobind;

// Python <-> DType (a str on the way out), Shape (a tuple) and ReduceDims (a tuple; an int is one dim).
namespace nanobind::detail {
template <>
struct type_caster<baracuda::DType> {
  NB_TYPE_CASTER(baracuda::DType, const_name("str"))
  bool from_python(handle src, uint32_t, cleanup_list*) noexcept;
  static handle from_cpp(baracuda::DType value, rv_policy, cleanup_list*) noexcept;
};
template <>
struct type_caster<baracuda::Shape> {
  NB_TYPE_CASTER(baracuda::Shape, const_name("tuple[int, ...]"))
  bool from_python(handle src, uint32_t, cleanup_list*) noexcept;
  static handle from_cpp(const baracuda::Shape& value, rv_policy, cleanup_list*) noexcept;
};
template <>
struct type_caster<baracuda::ReduceDims> {
  NB_TYPE_CASTER(baracuda::ReduceDims, const_name("tuple[int, ...]"))
  bool from_python(handle src, uint32_t, cleanup_list*) noexcept;
  static handle from_cpp(const baracuda::ReduceDims& value, rv_policy, cleanup_list*) noexcept;
};
}  // namespace nanobind::detail

namespace baracuda::python {

// A failing Status on its way to Python, where it becomes baracuda.Error (a RuntimeError carrying
// `code`, `message`, `needed` and `got`); registered in module.cpp.
struct StatusError {
  Status status;
};
[[noreturn]] void throw_status(const Status& status);
// An error of the binding itself (a wrong keyword, a tensor on the wrong device), phrased as the
// library's are: "invalid_problem: <Plan>: <field>: <what>".
[[noreturn]] void throw_error(StatusCode code, std::string_view plan, std::string_view field, const std::string& what);
void register_error(nb::module_& m);

template <class T>
T unwrap(Expected<T> expected) {
  if (!expected) throw_status(expected.status());
  return std::move(*expected);
}

// "f32", "float32", "bf16", "bool", ... or a NumPy / ml_dtypes dtype or scalar type, torch.float32.
DType dtype_from_python(nb::handle obj);
Shape shape_from_python(nb::handle obj);  // a sequence of ints
nb::tuple shape_to_python(const Shape& shape);
// None: Stream::default_stream(); a Stream; "cpu" / "host"; "cuda" / "cuda:N" (the legacy default stream).
Stream stream_from_python(nb::handle obj);
// The stream a plan selected on `selected` runs on: the same, or `obj` (None; a Stream; an int
// cudaStream_t handle on the selected device, 0 being the legacy default stream).
Stream run_stream(nb::handle obj, const Stream& selected);

// The caller's tensors, held (and their DLPack capsules with them) while a call uses their memory.
struct HeldTensors {
  std::vector<nb::ndarray<nb::ro>> read;
  std::vector<nb::ndarray<>> written;
};

// A DLPack-capable object (NumPy, PyTorch, JAX, CuPy, ...) as a view: no copy. Strides in elements, the
// capacity the elements the view spans. Its device must be the stream's (a CPU array for the host
// stream, a CUDA one on the stream's device); a written view must be writable. Errors name plan and field.
AnyTensorMut tensor_from_python(nb::handle obj, bool written, const Stream& stream, std::string_view plan,
                                std::string_view field, HeldTensors& held);
// A workspace: a contiguous tensor on the stream's device, its size in bytes.
Workspace workspace_from_python(nb::handle obj, const Stream& stream, std::string_view plan, HeldTensors& held);

nb::dict schema_to_python(const OpSchema& schema);

// ---------------------------------------------------------------------------------------------
// Descriptors: a class whose fields are read and written by name, constructed from keywords
// (`NormDescriptor(dtype="bf16", shape=(4, 512), eps=1e-6)`), printed with its fields.
template <class D>
class DescriptorClass {
 public:
  DescriptorClass(nb::module_& m, const char* name) : cls_(m, name) {
    cls_.def("__init__", [](D* self, nb::kwargs kwargs) {
      new (self) D{};
      for (auto [key, value] : kwargs) {
        const std::string field = nb::cast<std::string>(key);
        auto setter = setters().find(field);
        if (setter == setters().end())
          throw nb::type_error((std::string(type_name()) + " has no field '" + field + "'").c_str());
        setter->second(*self, value);
      }
    });
    cls_.def("__repr__", [](const D& self) {
      std::string out = std::string(type_name()) + "(";
      bool first = true;
      for (const auto& [field, getter] : getters()) {
        out += (first ? "" : ", ") + field + "=" + nb::cast<std::string>(nb::repr(getter(self)));
        first = false;
      }
      return out + ")";
    });
    type_name() = name;
  }

  // One field, read and written by name; a value it cannot take raises an error naming the field.
  template <class T>
  DescriptorClass& field(const char* name, T D::*member) {
    auto set = [member, name](D& d, nb::handle value) { d.*member = field_value<T>(value, name); };
    cls_.def_prop_rw(
        name, [member](const D& d) -> const T& { return d.*member; }, set, nb::rv_policy::reference_internal);
    setters()[name] = set;
    getters().emplace_back(name, [member](const D& d) { return nb::cast(d.*member); });
    return *this;
  }
  nb::class_<D>& cls() { return cls_; }

 private:
  template <class T>
  static T field_value(nb::handle value, const char* field) {
    const std::string where = type_name() + "." + field + ": ";
    try {
      if constexpr (std::is_same_v<T, DType>) return dtype_from_python(value);
      if constexpr (std::is_same_v<T, std::optional<DType>>)
        return value.is_none() ? std::nullopt : std::optional<DType>(dtype_from_python(value));
      return nb::cast<T>(value);
    } catch (const nb::builtin_exception& e) {
      throw nb::value_error((where + e.what()).c_str());
    } catch (const nb::cast_error&) {
      throw nb::type_error((where + "cannot take " + nb::cast<std::string>(nb::repr(value))).c_str());
    }
  }
  static std::map<std::string, std::function<void(D&, nb::handle)>>& setters() {
    static std::map<std::string, std::function<void(D&, nb::handle)>> map;
    return map;
  }
  static std::vector<std::pair<std::string, std::function<nb::object(const D&)>>>& getters() {
    static std::vector<std::pair<std::string, std::function<nb::object(const D&)>>> list;
    return list;
  }
  static std::string& type_name() {
    static std::string name;
    return name;
  }
  nb::class_<D> cls_;
};

// An enum whose names the library gives (unary_kind_name, ...): every value up to the first "?".
template <class E, class NameOf>
nb::enum_<E> bind_named_enum(nb::module_& m, const char* name, NameOf name_of) {
  nb::enum_<E> e(m, name);
  for (int i = 0; i < 256; ++i) {
    const std::string value_name(name_of(static_cast<E>(i)));
    if (value_name == "?" || value_name.empty()) break;
    e.value(value_name.c_str(), static_cast<E>(i));
  }
  return e;
}

// ---------------------------------------------------------------------------------------------
// Plans. The Python object is the plan with the stream it was selected on; its tensors are keyword
// arguments named as the op's argument table names them (Plan::arg_fields()), an absent one an empty view.
template <class P>
struct BoundPlan {
  P plan;
  Stream stream;
  PlanPreference preference;  // (an FFI target selects the plan again with it on another device)
};

template <class P>
typename P::Args args_from_python(const nb::kwargs& kwargs, const Stream& stream, HeldTensors& held) {
  typename P::Args args{};
  const std::string_view plan = P::schema().plan;
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    const ArgField<typename P::Args>* field = nullptr;
    for (const auto& f : P::arg_fields())
      if (f.name == name) field = &f;
    if constexpr (requires { args.bad_index_count; }) {
      if (name == "bad_index_count") {
        // One i64 element on the stream's device, which the kernels count bad indices into.
        if (value.is_none()) continue;
        const AnyTensorMut counter = tensor_from_python(value, true, stream, plan, "args.bad_index_count", held);
        if (counter.dtype != DType::i64 || counter.numel() != 1)
          throw_error(StatusCode::invalid_problem, plan, "args.bad_index_count", "must be one i64 element");
        args.bad_index_count = static_cast<int64_t*>(counter.data);
        continue;
      }
    }
    if (!field) {
      std::string names;
      for (const auto& f : P::arg_fields()) names += (names.empty() ? "" : ", ") + std::string(f.name);
      if constexpr (requires { args.bad_index_count; }) names += ", bad_index_count";
      throw_error(StatusCode::invalid_problem, plan, "args." + name, "no such argument (the arguments: " + names + ")");
    }
    if (value.is_none()) continue;
    field->set(args, tensor_from_python(value, field->out != nullptr, stream, plan, "args." + name, held));
  }
  return args;
}

// The plan as an XLA FFI target (baracuda.jax; defined in ffi.hpp, which plans.cpp includes): its id.
template <class P>
int64_t register_ffi_target(const P& plan, const Stream& selected, const PlanPreference& preference,
                            std::vector<std::string> inputs, std::vector<std::string> outputs);

template <class P>
nb::class_<BoundPlan<P>> bind_plan(nb::module_& m, const char* name) {
  using Bound = BoundPlan<P>;
  using Descriptor = typename P::Descriptor;
  nb::class_<Bound> cls(m, name);
  cls.def_static(
         "select",
         [](const Descriptor& desc, nb::handle stream, const PlanPreference* preference) {
           const Stream s = stream_from_python(stream);
           const PlanPreference pref = preference ? *preference : PlanPreference{};
           return Bound{unwrap(P::select(s, desc, pref)), s, pref};
         },
         nb::arg("descriptor"), nb::arg("stream") = nb::none(), nb::arg("preference") = nb::none(),
         "Validates the descriptor and picks a kernel for the stream's backend (None: CUDA device 0 where a GPU "
         "is, else the CPU; \"cpu\"; \"cuda\" / \"cuda:N\"; a Stream). Raises baracuda.Error.")
      .def(
          "can_implement",
          [](const Bound& self, nb::kwargs kwargs) {
            HeldTensors held;
            const auto args = args_from_python<P>(kwargs, self.stream, held);
            if (Status s = self.plan.can_implement(args); !s) throw_status(s);
          },
          "Checks the tensors (keyword arguments) against the descriptor; raises baracuda.Error.")
      .def(
          "run",
          [](const Bound& self, nb::handle workspace, nb::handle stream, nb::kwargs kwargs) {
            const Stream s = run_stream(stream, self.stream);
            HeldTensors held;
            const auto args = args_from_python<P>(kwargs, s, held);
            Workspace ws = workspace_from_python(workspace, s, P::schema().plan, held);
            // A CPU plan given no workspace gets one here; a CUDA plan's must come from the caller.
            std::unique_ptr<std::max_align_t[]> host_workspace;
            if (!ws.data && s.backend() == Backend::cpu && self.plan.workspace_size() > 0) {
              const size_t n = (self.plan.workspace_size() + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
              host_workspace.reset(new std::max_align_t[n]);
              ws = Workspace{host_workspace.get(), n * sizeof(std::max_align_t)};
            }
            Status status;
            {
              nb::gil_scoped_release release;
              status = self.plan.run(s, ws, args);
            }
            if (!status) throw_status(status);
          },
          nb::kw_only(), nb::arg("workspace") = nb::none(), nb::arg("stream") = nb::none(), nb::arg("kwargs"),
          "Runs on the tensors (keyword arguments, by the names of arg_names()); queued on the stream, no "
          "synchronization. workspace: a tensor of at least workspace_size() bytes on the plan's device "
          "(None: allocated here on the CPU). stream: an int cudaStream_t on the plan's device (None: the "
          "stream selected on). Raises baracuda.Error.")
      .def(
          "ffi_target",
          [](const Bound& self, std::vector<std::string> inputs, std::vector<std::string> outputs) {
            return register_ffi_target(self.plan, self.stream, self.preference, std::move(inputs), std::move(outputs));
          },
          nb::arg("inputs"), nb::arg("outputs"),
          "Registers the plan as an XLA FFI target (baracuda.jax): the call's operands are the arguments named "
          "in `inputs`, its results those in `outputs`, then the workspace when workspace_size() > 0. Returns "
          "the id the custom call's attribute `target` carries.")
      .def("workspace_size", [](const Bound& self) { return self.plan.workspace_size(); })
      .def(
          "sku",
          [](const Bound& self, nb::kwargs kwargs) {
            if (kwargs.size() == 0) return self.plan.sku();
            HeldTensors held;
            return self.plan.sku(args_from_python<P>(kwargs, self.stream, held));
          },
          "The kernel contiguous views (or these tensors) run.")
      .def("precision_guarantee", [](const Bound& self) { return self.plan.precision_guarantee(); })
      .def(
          "arg_specs", [](const Bound& self) { return self.plan.arg_specs(); },
          "Each argument's dtype and shape for this descriptor, and whether it is used.")
      .def_prop_ro("descriptor", [](const Bound& self) { return self.plan.descriptor(); })
      .def_prop_ro("stream", [](const Bound& self) { return self.stream; })
      .def_prop_ro_static("schema",
                          [](nb::handle) {
                            // The op's schema, and its argument table: each argument's name and direction.
                            nb::dict schema = schema_to_python(P::schema());
                            nb::list args;
                            for (const auto& f : P::arg_fields()) {
                              nb::dict arg;
                              arg["name"] = f.name;
                              arg["output"] = f.out != nullptr;
                              args.append(arg);
                            }
                            schema["args"] = args;
                            return schema;
                          })
      .def_static("arg_names",
                  [] {
                    std::vector<std::string> names;
                    for (const auto& f : P::arg_fields()) names.emplace_back(f.name);
                    return names;
                  })
      .def("__repr__",
           [name](const Bound& self) { return std::string(name) + "(" + self.plan.sku().to_string() + ")"; });
  return cls;
}

void bind_core(nb::module_& m);
void bind_descriptors(nb::module_& m);
void bind_plans(nb::module_& m);
nb::dict ffi_handlers();  // ffi.cpp

}  // namespace baracuda::python
