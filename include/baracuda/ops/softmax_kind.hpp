#pragma once
// The softmax family's kinds (softmax.hpp documents them): plain C++ with no include, which the
// kernels compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class SoftmaxKind : unsigned char { softmax, log_softmax, sparsemax, entmax15 };

}  // namespace baracuda
