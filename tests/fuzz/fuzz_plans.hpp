#pragma once
// The fuzz case: one plan of the registry driven through its whole life cycle (select,
// can_implement, workspace_size, run, and the other members) by a byte string, with the invariants
// every plan must keep checked after each call. See README.md in this directory.
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace baracuda::fuzz {

// What the cases of one plan came to.
struct PlanCounts {
  std::map<StatusCode, int64_t> rejected_at_select;  // by the status code select returned
  std::map<StatusCode, int64_t> rejected_at_run;     // by the code of can_implement / run
  int64_t ran = 0;                                   // run returned ok (and the invariants held)
  int64_t partial_overlaps = 0;                      // an output made to overlap an input partly (refused)
  int64_t exact_aliases = 0;                         // an input given an output's view, accepted: bits compared

  int64_t select_rejections() const;
  int64_t run_rejections() const;
  int64_t cases() const { return select_rejections() + run_rejections() + ran; }
  void add(const PlanCounts& other);
};

struct FuzzStats {
  std::map<std::string, PlanCounts, std::less<>> plans;  // by schema().plan
  PlanCounts total;
};

// An invariant a plan broke: the plan's name and what happened.
class FuzzFailure : public std::runtime_error {
 public:
  FuzzFailure(std::string plan, const std::string& detail) : std::runtime_error(detail), plan_(std::move(plan)) {}
  const std::string& plan() const { return plan_; }

 private:
  std::string plan_;
};

// The plans a case picks from, in registry order (the summary table lists them all).
std::vector<std::string_view> fuzzed_plan_names();

// The plan a case of these bytes drives (the first decision fuzz_one makes).
std::string_view fuzzed_plan(std::span<const uint8_t> bytes);

// One case: picks a plan, a descriptor, a preference, the views and their contents from `bytes`,
// calls the plan's members on a stream of `backend` and checks the invariants. Counts the outcome
// in `stats`; throws FuzzFailure when an invariant is broken.
void fuzz_one(std::span<const uint8_t> bytes, Backend backend, FuzzStats& stats);

}  // namespace baracuda::fuzz
