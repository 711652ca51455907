#include "harness/op_table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/op_row.hpp"

namespace baracuda::harness {

std::string_view views_name(Views views) {
  switch (views) {
    case Views::contiguous:
      return "contiguous";
    case Views::padded:
      return "padded";
    case Views::transposed:
      return "transposed";
    case Views::broadcast:
      return "broadcast";
    case Views::misaligned:
      return "misaligned";
    case Views::channels_last:
      return "channels_last";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// References

RefOutput::RefOutput(int64_t total, int64_t max_checks)
    : total_(total), max_checks_(max_checks), step_(std::max<int64_t>(1, total / std::max<int64_t>(1, max_checks))) {
  const int64_t slots = total == 0 ? 0 : (total - 1) / step_ + 1 + ((total - 1) % step_ != 0 ? 1 : 0);
  value_.assign(static_cast<size_t>(slots), 0.0);
  magnitude_.assign(value_.size(), 0.0);
  terms_.assign(value_.size(), 0);
}

int64_t RefOutput::slot(int64_t i) const {
  if (i < 0 || i >= total_) return -1;
  if (i % step_ == 0) return i / step_;
  return i == total_ - 1 ? (total_ - 1) / step_ + 1 : -1;
}

void RefOutput::set(int64_t i, double value) {
  if (const int64_t s = slot(i); s >= 0) {
    value_[s] = value;
    magnitude_[s] = std::fabs(value);
    terms_[s] = 1;
  }
}

void RefOutput::add(int64_t i, double term) {
  if (const int64_t s = slot(i); s >= 0) {
    value_[s] += term;
    magnitude_[s] += std::fabs(term);
    ++terms_[s];
  }
}

void RefOutput::set(int64_t i, double value, double magnitude, int64_t terms) {
  if (const int64_t s = slot(i); s >= 0) {
    value_[s] = value;
    magnitude_[s] = magnitude;
    terms_[s] = terms;
  }
}

double RefOutput::value(int64_t i) const {
  const int64_t s = slot(i);
  return s >= 0 ? value_[s] : std::numeric_limits<double>::quiet_NaN();
}

double RefOutput::magnitude(int64_t i) const {
  const int64_t s = slot(i);
  return s >= 0 ? magnitude_[s] : 0.0;
}

int64_t RefOutput::terms(int64_t i) const {
  const int64_t s = slot(i);
  return s >= 0 ? terms_[s] : 0;
}

double RefOutput::verify_scale(int64_t i, double tol, DType accumulator) const {
  const double extra = static_cast<double>(std::max<int64_t>(0, terms(i) - 1)) * unit_roundoff(accumulator);
  if (tol <= 0 || extra == 0) return magnitude(i);
  return (1.0 + magnitude(i)) * (tol + extra) / tol - 1.0;
}

void RefOutput::start_from(const HostView& before) {
  for (int64_t i = 0; i < total_; i += step_) set(i, before.at(i));
  if (total_ > 0) set(total_ - 1, before.at(total_ - 1));
}

RefIO::RefIO(std::vector<ArgSpec> arg_specs)
    : specs(std::move(arg_specs)), inputs(specs.size()), outputs(specs.size()) {}

int RefIO::index_of(std::string_view name) const {
  for (size_t k = 0; k < specs.size(); ++k)
    if (specs[k].name == name) return static_cast<int>(k);
  throw std::out_of_range("the op has no argument '" + std::string(name) + "'");
}

const HostView& RefIO::in(std::string_view name) const { return inputs[index_of(name)]; }
RefOutput& RefIO::out(std::string_view name) { return outputs[index_of(name)]; }

// ---------------------------------------------------------------------------------------------
// The table

std::span<const OpRow* const> op_table() {
  static const std::vector<std::unique_ptr<OpRow>> rows = [] {
    std::vector<std::unique_ptr<OpRow>> all;
    for (auto family : {binary_param_rows, unary_rows, binary_rows, ternary_rows, copy_rows, gated_rows, indexing_rows,
                        softmax_rows, reduce_rows, scan_rows, segment_rows, norm_rows, loss_rows, matmul_rows,
                        attention_rows, random_rows, rotary_rows})
      for (std::unique_ptr<OpRow>& row : family()) all.push_back(std::move(row));
    return all;
  }();
  static const std::vector<const OpRow*> pointers = [] {
    std::vector<const OpRow*> p;
    for (const auto& row : rows) p.push_back(row.get());
    return p;
  }();
  return pointers;
}

// ---------------------------------------------------------------------------------------------
// Tensors for the tests

double poison_value(DType dtype) {
  if (dtype == DType::boolean) return kBoolPoison;
  if (dtype == DType::i8) return -91.0;  // 0xa5: the 8-bit types have no value outside their random range
  if (dtype == DType::u8) return 165.0;
  return is_floating(dtype) ? std::numeric_limits<double>::quiet_NaN() : -999999.0;  // random ints stay in +-1000
}

TensorSpec layout(const ArgSpec& spec, Views views) {
  const Shape& shape = spec.shape;
  TensorSpec t{shape, contiguous_strides(shape), false, 0};
  switch (views) {
    case Views::contiguous:
      return t;
    case Views::misaligned:
      t.offset = 1;
      return t;
    case Views::channels_last: {
      if (shape.rank < 3) return t;
      int64_t step = std::max<int64_t>(1, shape.dims[1]);
      t.strides[1] = 1;
      for (int d = shape.rank - 1; d >= 0; --d) {
        if (d == 1) continue;
        t.strides[d] = step;
        step *= std::max<int64_t>(1, shape.dims[d]);
      }
      t.strided = true;
      return t;
    }
    case Views::transposed: {
      int64_t step = 1;
      for (int d = 0; d < shape.rank; ++d) {
        t.strides[d] = step;
        step *= std::max<int64_t>(1, shape.dims[d]);
      }
      t.strided = true;
      return t;
    }
    case Views::broadcast:
      if (!spec.output) {
        for (int d = 0; d < shape.rank; ++d) {
          if (shape.dims[d] > 1) {
            t.strides[d] = 0;
            break;
          }
        }
        t.strided = true;
        return t;
      }
      [[fallthrough]];  // outputs cannot repeat: padded instead
    case Views::padded: {
      // 1-D: every other element. Otherwise rows 16 elements apart (whole 16-byte vectors for every
      // dtype, so rows that are themselves whole vectors keep the row-vectorized kernels).
      int64_t step = shape.rank == 1 ? 2 : 1;
      for (int d = shape.rank - 1; d >= 0; --d) {
        t.strides[d] = step;
        step = step * std::max<int64_t>(1, shape.dims[d]) + (d < shape.rank - 1 || shape.rank == 1 ? 0 : 16);
      }
      t.strided = true;
      return t;
    }
  }
  return t;
}

namespace {
// The sample's own range, else for an integer whole numbers in [-1000, 1000) (i8 [-128, 128), u8
// [0, 256)), a bool 0 or 1, a float
// the row's range or [-1, 1).
ValueRange value_range(const ArgSpec& spec, std::span<const ValueRange> sample, std::span<const ValueRange> row) {
  for (const ValueRange& r : sample)
    if (r.arg == spec.name) return r;
  if (spec.dtype == DType::boolean) return {spec.name, 0.0, 2.0};
  if (spec.dtype == DType::i8) return {spec.name, -128.0, 128.0};
  if (spec.dtype == DType::u8) return {spec.name, 0.0, 256.0};
  if (!is_floating(spec.dtype)) return {spec.name, -1000.0, 1000.0};
  for (const ValueRange& r : row)
    if (r.arg == spec.name) return r;
  return {spec.name, -1.0, 1.0};
}

// Replaces a tensor's values by a shuffled grid over [lo, hi): cell k holds lo + (k + 1/4) * step.
void spread_distinct(Tensor& t, double lo, double hi, std::mt19937_64& rng) {
  std::vector<double> grid(t.host.size());
  const double step = (hi - lo) / static_cast<double>(std::max<size_t>(grid.size(), 1));
  for (size_t k = 0; k < grid.size(); ++k) grid[k] = quantize(t.dtype, lo + (static_cast<double>(k) + 0.25) * step);
  std::shuffle(grid.begin(), grid.end(), rng);
  t.host = std::move(grid);
}

// The view of an output's buffer as it was before a run.
HostView initial_view(const Tensor& t, const std::vector<double>& initial) {
  return {t.dtype, t.shape, t.strides, initial.data() + t.offset, nullptr};
}
}  // namespace

Expected<ProblemTensors> allocate(Problem& problem, Backend backend, std::span<const ValueRange> ranges,
                                  std::mt19937_64& rng, bool contiguous_only) {
  ProblemTensors t;
  t.specs = problem.arg_specs();
  t.tensors.resize(t.specs.size());
  t.initial.resize(t.specs.size());
  for (size_t k = 0; k < t.specs.size(); ++k) {
    const ArgSpec& spec = t.specs[k];
    if (!spec.present) continue;
    const bool laid_out = !contiguous_only && (problem.only.empty() || problem.only == spec.name);
    const ValueRange range = value_range(spec, problem.value_ranges, ranges);
    Expected<Tensor> tensor = random_tensor(
        backend, spec.dtype, layout(spec, laid_out ? problem.views : Views::contiguous), rng, range.lo, range.hi);
    if (!tensor) return tensor.status();
    Tensor& x = t.tensors[k] = std::move(*tensor);
    if (range.distinct && is_floating(spec.dtype) && !spec.output) {
      spread_distinct(x, range.lo, range.hi, rng);
      if (Status s = x.upload(); !s) return s;
    }
    if (spec.index_bound > 0) {
      const IndexRange r = problem.index_values.value_or(IndexRange{-2, spec.index_bound + 2});
      std::uniform_int_distribution<int64_t> dist(r.lo, r.hi - 1);
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      const double log_range = std::log(static_cast<double>(r.hi - r.lo) + 1.0);
      for (double& v : x.host)
        v = problem.skewed_indices
                ? static_cast<double>(r.lo) +
                      std::min(std::floor(std::exp(unit(rng) * log_range)) - 1.0, static_cast<double>(r.hi - r.lo - 1))
                : static_cast<double>(dist(rng));
      if (spec.sorted) {  // nondecreasing along the view (a sorted plan's segment ids, offsets)
        const int64_t n = x.shape.numel();
        std::vector<double> along(static_cast<size_t>(n));
        if (r.hi - r.lo <= 4 * n + 4096) {
          // A counting sort of the whole values in [r.lo, r.hi): the profiler's 2^26 ids took
          // seconds a buffer under std::sort.
          std::vector<int64_t> count(static_cast<size_t>(r.hi - r.lo), 0);
          for (int64_t i = 0; i < n; ++i) ++count[static_cast<size_t>(static_cast<int64_t>(x.at(i)) - r.lo)];
          size_t i = 0;
          for (size_t v = 0; v < count.size(); ++v)
            for (int64_t c = 0; c < count[v]; ++c) along[i++] = static_cast<double>(r.lo + static_cast<int64_t>(v));
        } else {
          for (size_t i = 0; i < along.size(); ++i) along[i] = x.at(static_cast<int64_t>(i));
          std::sort(along.begin(), along.end());
        }
        for (size_t i = 0; i < along.size(); ++i)
          x.host[static_cast<size_t>(x.offset + x.element_offset(static_cast<int64_t>(i)))] = along[i];
      }
      if (Status s = x.upload(); !s) return s;
    }
    if (spec.output) {
      if (!spec.accumulates) std::fill(x.host.begin(), x.host.end(), poison_value(spec.dtype));
      t.initial[k] = x.host;
    }
    problem.bind(0, static_cast<int>(k), x.mut());
  }
  t.backend = backend;
  if (problem.counts_bad_indices()) {
    Expected<Buffer> counter = Buffer::allocate(backend, sizeof(int64_t));
    if (!counter) return counter.status();
    t.counter = std::move(*counter);
    problem.bind_bad_index_count(0, static_cast<int64_t*>(t.counter.data()));
  }
  return t;
}

Status ProblemTensors::run(const Problem& problem, const Stream& stream) {
  if (workspace.size() < problem.workspace_size()) {
    Expected<Buffer> ws = Buffer::allocate(backend, problem.workspace_size());
    if (!ws) return ws.status();
    workspace = std::move(*ws);
  }
  for (size_t k = 0; k < specs.size(); ++k) {
    if (!specs[k].present || !specs[k].output) continue;
    tensors[k].host = initial[k];
    if (Status s = tensors[k].upload(); !s) return s;
  }
  if (counter.data()) {
    const int64_t zero = 0;
    if (Status s = counter.upload(&zero, sizeof zero); !s) return s;
  }
  return problem.run(stream, {workspace.data(), workspace.size()});
}

Status ProblemTensors::download_outputs() {
  for (size_t k = 0; k < specs.size(); ++k)
    if (specs[k].present && specs[k].output)
      if (Status s = tensors[k].download(); !s) return s;
  return Status::ok();
}

Expected<int64_t> ProblemTensors::bad_index_count() const {
  int64_t n = 0;
  if (Status s = counter.download(&n, sizeof n); !s) return s;
  return n;
}

RefIO ProblemTensors::reference(const Problem& problem) const {
  RefIO io(specs);
  for (size_t k = 0; k < specs.size(); ++k) {
    if (!specs[k].present) continue;
    const Tensor& t = tensors[k];
    if (!specs[k].output) {
      io.inputs[k] = HostView::of(t);
      continue;
    }
    io.outputs[k] = RefOutput(t.shape.numel(), t.shape.numel());
    if (specs[k].accumulates) io.outputs[k].start_from(initial_view(t, initial[k]));
  }
  problem.reference(io);
  return io;
}

std::string ProblemTensors::written_outside_views() const {
  std::string found;
  for (size_t k = 0; k < specs.size(); ++k) {
    if (!specs[k].present || !specs[k].output) continue;
    const Tensor& t = tensors[k];
    std::vector<char> in_view(t.host.size(), 0);
    for (const int64_t off : element_offsets(t.shape, t.strides)) in_view[static_cast<size_t>(t.offset + off)] = 1;
    int reported = 0;
    for (size_t j = 0; j < t.host.size() && reported < 3; ++j) {
      const double before = initial[k][j], now = t.host[j];
      if (in_view[j] || now == before || (std::isnan(now) && std::isnan(before))) continue;
      found += std::string(found.empty() ? "" : "; ") + std::string(specs[k].name) + " buffer element " +
               std::to_string(j) + " (outside the view) became " + std::to_string(now);
      ++reported;
    }
  }
  return found;
}

}  // namespace baracuda::harness
