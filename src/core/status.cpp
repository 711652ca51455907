#include "baracuda/core/status.hpp"

namespace baracuda {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::ok:
      return "ok";
    case StatusCode::unsupported:
      return "unsupported";
    case StatusCode::invalid_problem:
      return "invalid_problem";
    case StatusCode::buffer_too_small:
      return "buffer_too_small";
    case StatusCode::misaligned_operand:
      return "misaligned_operand";
    case StatusCode::workspace_too_small:
      return "workspace_too_small";
    case StatusCode::backend_error:
      return "backend_error";
  }
  return "?";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s(status_code_name(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace baracuda
