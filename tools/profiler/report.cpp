#include "profiler/report.hpp"

#include <cmath>
#include <cstdio>
#include <iomanip>

namespace baracuda::profiler {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

std::string verdict(const CaseResult& r) {
  if (!r.status.is_ok()) return "ERROR";
  return r.verification.passed ? "ok" : "FAIL";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string json_shape(const Shape& s) {
  std::string out = "[";
  for (int d = 0; d < s.rank; ++d) out += (d ? "," : "") + std::to_string(s.dims[d]);
  return out + "]";
}

std::string json_number(double v) { return std::isfinite(v) ? fixed(v, 9) : "null"; }

}  // namespace

bool all_passed(const Report& report) {
  for (const CaseResult& r : report.results)
    if (!r.status.is_ok() || !r.verification.passed) return false;
  return true;
}

void print_table(std::ostream& out, const Report& report) {
  out << "device: " << report.device << " (" << backend_name(report.backend) << "), copy bandwidth "
      << fixed(report.copy_gbps, 1) << " GB/s (read + write); runs timed "
      << (report.serial ? "alone (--serial)" : "queued back to back") << "\n";
  const char* header[] = {"op", "variant", "dtype", "shape", "verify", "max err / tol", "median ms", "GB/s", "% copy"};
  std::vector<std::vector<std::string>> rows;
  rows.emplace_back(std::begin(header), std::end(header));
  std::vector<std::string> notes;
  int sampled = 0;
  for (const CaseResult& r : report.results) {
    rows.push_back({r.op, r.sku.variant, std::string(dtype_name(r.dtype)), r.shape.to_string(), verdict(r),
                    r.status.is_ok() ? sci(r.verification.max_error) + " / " + sci(r.verification.tolerance) : "-",
                    r.status.is_ok() ? fixed(r.timing.median_ms, 4) : "-", r.status.is_ok() ? fixed(r.gbps, 1) : "-",
                    r.status.is_ok() ? fixed(100 * r.copy_fraction, 1) : "-"});
    if (!r.status.is_ok()) {
      notes.push_back(r.op + " " + r.shape.to_string() + ": " + r.status.to_string());
    } else if (!r.verification.passed) {
      notes.push_back(r.op + " " + std::string(dtype_name(r.dtype)) + " " + r.shape.to_string() + ": " +
                      r.verification.note);
    } else if (r.verification.checked < r.verification.total) {
      ++sampled;
    }
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t c = 0; c < rows[i].size(); ++c)
      out << (c ? "  " : "") << (c >= 6 ? std::right : std::left) << std::setw(static_cast<int>(width[c]))
          << rows[i][c];
    out << "\n";
    if (i == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out << std::string(total - 2, '-') << "\n";
    }
  }
  for (const std::string& n : notes) out << "  note: " << n << "\n";
  if (sampled)
    out << "  note: " << sampled
        << " large case(s) verified on an evenly spaced sample of about 2^20 elements per output\n";
  out << (all_passed(report) ? "all cases verified\n" : "SOME CASES FAILED\n");
}

void write_json(std::ostream& out, const Report& report) {
  out << "{\n  \"device\": " << json_string(report.device)
      << ",\n  \"backend\": " << json_string(std::string(backend_name(report.backend)))
      << ",\n  \"copy_gbps\": " << json_number(report.copy_gbps)
      << ",\n  \"timing\": " << json_string(report.serial ? "serial" : "queued") << ",\n  \"cases\": [";
  for (size_t i = 0; i < report.results.size(); ++i) {
    const CaseResult& r = report.results[i];
    out << (i ? "," : "") << "\n    {\"op\": " << json_string(r.op) << ", \"torch\": " << json_string(r.torch)
        << ", \"sku\": " << json_string(r.sku.to_string()) << ", \"variant\": " << json_string(r.sku.variant)
        << ", \"dtype\": " << json_string(std::string(dtype_name(r.dtype))) << ", \"shape\": " << json_shape(r.shape)
        << ", \"status\": " << json_string(r.status.to_string())
        << ", \"verified\": " << (r.status.is_ok() && r.verification.passed ? "true" : "false")
        << ", \"max_error\": " << json_number(r.verification.max_error)
        << ", \"tolerance\": " << json_number(r.verification.tolerance) << ", \"checked\": " << r.verification.checked
        << ", \"median_ms\": " << json_number(r.timing.median_ms) << ", \"min_ms\": " << json_number(r.timing.min_ms)
        << ", \"iterations\": " << r.timing.iterations << ", \"bytes\": " << json_number(r.bytes)
        << ", \"gbps\": " << json_number(r.gbps) << ", \"copy_fraction\": " << json_number(r.copy_fraction) << "}";
  }
  out << "\n  ]\n}\n";
}

void write_list_json(std::ostream& out, const std::vector<const OpEntry*>& ops, const Stream& stream) {
  out << "{\n  \"backend\": " << json_string(std::string(backend_name(stream.backend()))) << ",\n  \"ops\": [";
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpEntry& op = *ops[i];
    std::string dtypes, skus;
    for (DType d : op.dtypes) {
      dtypes += (dtypes.empty() ? "" : ", ") + json_string(std::string(dtype_name(d)));
      for (const KernelSku& sku : op.skus(stream, d)) skus += (skus.empty() ? "" : ", ") + json_string(sku.to_string());
    }
    out << (i ? "," : "") << "\n    {\"op\": " << json_string(op.name) << ", \"family\": " << json_string(op.family)
        << ", \"torch\": " << json_string(op.torch) << ", \"dtypes\": [" << dtypes << "], \"skus\": [" << skus << "]}";
  }
  out << "\n  ]\n}\n";
}

}  // namespace baracuda::profiler
