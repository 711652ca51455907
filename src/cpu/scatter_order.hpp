#pragma once
// How the CPU's deterministic scatters (indexing's and segment's) order their work: a destination's
// entries are either bucketed together (a stable counting sort) or added in entry order by the one
// thread that owns the destination.
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace baracuda::detail::cpu {

// A stable counting sort of items into buckets. visit(f) calls f(item, bucket) for every item in
// order (a negative bucket: the item goes nowhere); it is called twice. Leaves starts[b] where bucket
// b's items begin in `order` (buckets + 1 of them: starts[buckets] is how many were placed), each
// bucket's items in visiting order.
template <class Visit>
void bucket_items(int64_t buckets, int64_t* starts, int64_t* order, Visit&& visit) {
  std::fill(starts, starts + buckets + 1, int64_t{0});
  visit([&](int64_t, int64_t b) {
    if (b >= 0) ++starts[b + 1];
  });
  for (int64_t b = 0; b < buckets; ++b) starts[b + 1] += starts[b];
  visit([&](int64_t item, int64_t b) {
    if (b >= 0) order[starts[b]++] = item;  // starts[b] walks on to b + 1's start
  });
  for (int64_t b = buckets; b > 0; --b) starts[b] = starts[b - 1];
  starts[0] = 0;
}

// Threads of an in-order scatter: every owner reads every entry, so a few only (a many-core machine
// would otherwise read the entries dozens of times over).
inline constexpr int kScatterOwners = 8;
inline int scatter_owners() { return std::min(omp_get_max_threads(), kScatterOwners); }

// The calling thread's share [lo, hi) of `count` destinations, inside a parallel region.
inline void owned_range(int64_t count, int64_t& lo, int64_t& hi) {
  const int64_t threads = omp_get_num_threads(), share = (count + threads - 1) / threads;
  lo = std::min(count, share * omp_get_thread_num());
  hi = std::min(count, lo + share);
}

}  // namespace baracuda::detail::cpu
