#pragma once
// The profiler's table for people and JSON for machines.
#include <ostream>
#include <string>
#include <vector>

#include "profiler/profiler.hpp"

namespace baracuda::profiler {

struct Report {
  std::string device;
  Backend backend = Backend::cpu;
  double copy_gbps = 0;
  bool serial = false;  // runs timed alone (--serial), else queued back to back
  std::vector<CaseResult> results;
};

void print_table(std::ostream& out, const Report& report);
void write_json(std::ostream& out, const Report& report);
// --list --json: every op with its PyTorch peer, dtypes and plan SKUs on the stream.
void write_list_json(std::ostream& out, const std::vector<const OpEntry*>& ops, const Stream& stream);
// True when every case ran and verified.
bool all_passed(const Report& report);

}  // namespace baracuda::profiler
