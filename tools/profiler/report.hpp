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
  std::vector<CaseResult> results;
};

void print_table(std::ostream& out, const Report& report);
void write_json(std::ostream& out, const Report& report);
// True when every case ran and verified.
bool all_passed(const Report& report);

}  // namespace baracuda::profiler
