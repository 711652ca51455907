// Every family's programs, gathered for the warm-up command and the compile test; the element
// types' names the programs use.
#include "cuda/jit/jit.hpp"
#include "ops/attention_problem.hpp"
#include "ops/batch_norm_problem.hpp"
#include "ops/binary_param_problem.hpp"
#include "ops/binary_problem.hpp"
#include "ops/copy_problem.hpp"
#include "ops/gated_problem.hpp"
#include "ops/group_norm_problem.hpp"
#include "ops/indexing_problem.hpp"
#include "ops/loss_problem.hpp"
#include "ops/matmul_problem.hpp"
#include "ops/multinomial_problem.hpp"
#include "ops/norm_problem.hpp"
#include "ops/pointwise_loss_problem.hpp"
#include "ops/random_problem.hpp"
#include "ops/randperm_problem.hpp"
#include "ops/reduce_problem.hpp"
#include "ops/rotary_problem.hpp"
#include "ops/scan_problem.hpp"
#include "ops/segment_problem.hpp"
#include "ops/softmax_problem.hpp"
#include "ops/ternary_problem.hpp"
#include "ops/unary_problem.hpp"

namespace baracuda::detail::jit {

std::string type_spelling(std::string_view pretty) {
  // GCC: "... type_name() [with T = X; ...]"; Clang: "... type_name() [T = X]". X ends at the first
  // ';' or ']' outside its own brackets.
  size_t at = pretty.find("T = ");
  if (at == std::string_view::npos) return std::string(pretty);
  at += 4;
  int depth = 0;
  size_t end = at;
  for (; end < pretty.size(); ++end) {
    const char c = pretty[end];
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || (c == ']' && depth > 0)) --depth;
    if (depth < 0 || (depth == 0 && (c == ';' || c == ']'))) break;
  }
  return std::string(pretty.substr(at, end - at));
}

std::string device_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return "baracuda::device::f16";
    case DType::bf16:
      return "baracuda::device::bf16";
    case DType::f64:
      return "double";
    default:
      return "float";
  }
}

std::vector<Program> catalog(const std::vector<int64_t>& row_lengths) {
  std::vector<Program> out = norm_programs(row_lengths);
  for (Program& p : group_norm_programs()) out.push_back(std::move(p));
  for (Program& p : batch_norm_programs()) out.push_back(std::move(p));
  for (Program& p : cross_entropy_programs()) out.push_back(std::move(p));
  for (Program& p : pointwise_loss_programs()) out.push_back(std::move(p));
  for (Program& p : matmul_programs()) out.push_back(std::move(p));
  for (Program& p : grouped_matmul_programs()) out.push_back(std::move(p));
  for (Program& p : random_programs()) out.push_back(std::move(p));
  for (Program& p : randperm_programs()) out.push_back(std::move(p));
  for (Program& p : multinomial_programs()) out.push_back(std::move(p));
  for (Program& p : rotary_programs()) out.push_back(std::move(p));
  for (Program& p : attention_programs()) out.push_back(std::move(p));
  for (Program& p : unary_programs()) out.push_back(std::move(p));
  for (Program& p : gated_programs()) out.push_back(std::move(p));
  for (Program& p : copy_programs()) out.push_back(std::move(p));
  for (Program& p : binary_programs()) out.push_back(std::move(p));
  for (Program& p : ternary_programs()) out.push_back(std::move(p));
  for (Program& p : binary_param_programs()) out.push_back(std::move(p));
  for (Program& p : reduce_programs()) out.push_back(std::move(p));
  for (Program& p : scan_programs()) out.push_back(std::move(p));
  for (Program& p : segment_programs()) out.push_back(std::move(p));
  for (Program& p : softmax_programs()) out.push_back(std::move(p));
  for (Program& p : indexing_programs()) out.push_back(std::move(p));
  return out;
}

}  // namespace baracuda::detail::jit
