#pragma once
// The reduction family's kinds (reduce.hpp documents them): plain C++ with no include, which the
// kernels compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class ReduceKind : unsigned char {
  sum,
  mean,
  prod,
  amax,
  amin,
  max,
  min,
  argmax,
  argmin,
  var,
  std,
  norm,
  logsumexp,
  any,
  all,
  count_nonzero,
  var_mean,
};

}  // namespace baracuda
