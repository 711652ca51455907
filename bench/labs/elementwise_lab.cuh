#pragma once
// What the elementwise labs (rows_lab.cu, unary_lab.cu) share: the library's launcher from its
// headers, the labs' timing, and the one library function the launch calls (the labs link no library).
#include "cuda/common/elementwise.cuh"
#include "lab.cuh"

int64_t baracuda::Shape::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}
