// The CPU side of the KV cache append: each token's H_kv rows of k and v copied, as bytes, into the
// cache row its position maps to, token after token in (sequence, token) order (so that of two
// tokens mapped to one row the later wins, as the header says).
#include <algorithm>
#include <cstring>

#include "ops/kv_cache_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

int32_t read_i32(const AnyTensorRef& v, int64_t offset) { return static_cast<const int32_t*>(v.data)[offset]; }

// Token (b, i)'s rows [H_kv, dim] of `from` into rows (block, row) of `cache`.
void copy_token(const AnyTensorRef& from, int64_t b, int64_t i, const AnyTensorMut& cache, int64_t block, int64_t row) {
  const int64_t heads = from.shape.dims[2], dim = from.shape.dims[3];
  const auto size = static_cast<int64_t>(dtype_size(from.dtype));
  const char* src = static_cast<const char*>(from.data) + (b * from.strides[0] + i * from.strides[1]) * size;
  char* dst = static_cast<char*>(cache.data) + (block * cache.strides[0] + row * cache.strides[1]) * size;
  for (int64_t h = 0; h < heads; ++h) {
    const char* s = src + h * from.strides[2] * size;
    char* t = dst + h * cache.strides[2] * size;
    if (from.strides[3] == 1 && cache.strides[3] == 1) {
      std::memcpy(t, s, static_cast<size_t>(dim * size));
      continue;
    }
    for (int64_t e = 0; e < dim; ++e)
      std::memcpy(t + e * cache.strides[3] * size, s + e * from.strides[3] * size, static_cast<size_t>(size));
  }
}

}  // namespace

Status launch(const LaunchContext&, const KvCacheAppendProblem& p) {
  const KvCacheAppendDescriptor& d = p.desc;
  const KvCacheAppendArgs& a = p.args;
  int64_t bad = 0;
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t start = read_i32(a.seq_lens, b * a.seq_lens.strides[0]);
    int64_t count = d.new_tokens;
    if (a.new_lens.data) {
      const int64_t n = read_i32(a.new_lens, b * a.new_lens.strides[0]);
      count = std::clamp<int64_t>(n, 0, d.new_tokens);
      bad += n != count ? 1 : 0;
    }
    if (start < 0) {
      ++bad;
      continue;
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t position = start + i, column = position / d.block_size;
      if (column >= d.max_blocks) {  // this token and the rest of the sequence's fall past its table
        bad += count - i;
        break;
      }
      const int64_t block = read_i32(a.block_table, b * a.block_table.strides[0] + column * a.block_table.strides[1]);
      if (block < 0 || block >= d.num_blocks) {
        ++bad;
        continue;
      }
      const int64_t row = position % d.block_size;
      copy_token(a.k_new, b, i, a.k_cache, block, row);
      copy_token(a.v_new, b, i, a.v_cache, block, row);
    }
  }
  if (a.bad_index_count) *a.bad_index_count += bad;
  return Status::ok();
}

}  // namespace baracuda::detail::cpu
