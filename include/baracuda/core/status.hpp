#pragma once
// Status and Expected: how every plan reports success or an error a person can act on.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace baracuda {

enum class StatusCode : uint8_t {
  ok,
  unsupported,          // valid request this backend, dtype or variant cannot do
  invalid_problem,      // the descriptor or the views are wrong
  buffer_too_small,     // a view reaches past its buffer's capacity (needed/got in elements)
  misaligned_operand,   // a pointer is not aligned to its element (or to what the plan needs)
  workspace_too_small,  // needed/got in bytes
  backend_error,        // the backend (CUDA) failed; the message names its error
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status ok() { return {}; }
  static Status error(StatusCode code, std::string message, int64_t needed = 0, int64_t got = 0) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    s.needed_ = needed;
    s.got_ = got;
    return s;
  }

  bool is_ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // For buffer_too_small (elements) and workspace_too_small (bytes).
  int64_t needed() const { return needed_; }
  int64_t got() const { return got_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
  int64_t needed_ = 0;
  int64_t got_ = 0;
};

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}         // NOLINT: implicit by design
  Expected(Status status) : storage_(std::move(status)) {}  // NOLINT: implicit by design

  bool has_value() const { return storage_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // The error; ok() when a value is present.
  Status status() const { return has_value() ? Status::ok() : std::get<1>(storage_); }

 private:
  std::variant<T, Status> storage_;
};

}  // namespace baracuda
