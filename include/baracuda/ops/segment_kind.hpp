#pragma once
// The segment family's forms (segment.hpp documents them): plain C++ with no include, which the
// kernels compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class SegmentForm : unsigned char { sorted_ids, unsorted_ids, offsets };

}  // namespace baracuda
