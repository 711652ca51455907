#pragma once
// The profiler's cases, generated from the op table (tools/harness/op_table.hpp): one registered op per
// bench sample of every row, verified against the row's f64 reference.
#include <vector>

#include "profiler/profiler.hpp"

namespace baracuda::profiler {

std::vector<OpEntry> op_table_entries();

}  // namespace baracuda::profiler
