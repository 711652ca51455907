#pragma once
// How an elementwise plan walks its views, decided from the views alone (backend-neutral), so that
// sku(args) and run() always agree.
#include <initializer_list>
#include <optional>
#include <string_view>

#include "baracuda/ops/binary_param.hpp"

namespace baracuda::detail {

std::string_view path_name(ElementwisePath path);
std::optional<ElementwisePath> parse_path(std::string_view name);

// Every pointer 16-byte aligned; all views contiguous: vectorized on CUDA (contiguous on the CPU,
// whose loop the compiler vectorizes). Otherwise strided_vectorized on CUDA when rows_vectorizable,
// else strided. Outputs come after inputs in `views`.
ElementwisePath layout_path(Backend backend, const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs);

// After collapsing dims: the innermost has a multiple of a 16-byte vector's elements; each input is
// either broadcast along it (stride 0: one scalar per row) or, like every output, steps through it
// with stride 1 from a 16-byte aligned pointer with every other stride a multiple of the vector.
bool rows_vectorizable(const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs);

// A forced path must fit the views: a status naming preference.variant when it does not.
Status check_forced_path(std::string_view plan, ElementwisePath forced, const Shape& shape,
                         std::initializer_list<AnyTensorRef> views, int inputs);

}  // namespace baracuda::detail
