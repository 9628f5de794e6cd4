#include "core/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace madeira::core {

const std::vector<double> Metrics::kLatencyBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

namespace {

// Shortest text that round-trips; whole numbers (counts, timestamps) without an exponent.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const bool whole = v == std::trunc(v) && std::fabs(v) < 0x1p53;
  const auto [end, ec] = whole ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                               : std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

// Bucket bounds as Prometheus clients write them: le="0.0005", never le="5e-04".
std::string FormatBound(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

void AppendEscaped(std::string& out, std::string_view s, bool escape_quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quote) {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
  }
}

// {k="v",...,extra_key="extra_value"}, or nothing when there are no labels at all.
void AppendLabels(std::string& out, const Labels& labels, std::string_view extra_key = {},
                  std::string_view extra_value = {}) {
  if (labels.empty() && extra_key.empty()) return;
  out.push_back('{');
  bool first = true;
  auto append = [&](std::string_view key, std::string_view value) {
    if (!first) out.push_back(',');
    first = false;
    out += key;
    out += "=\"";
    AppendEscaped(out, value, /*escape_quote=*/true);
    out.push_back('"');
  };
  for (const auto& [key, value] : labels) append(key, value);
  if (!extra_key.empty()) append(extra_key, extra_value);
  out.push_back('}');
}

void AppendSample(std::string& out, std::string_view name, const Labels& labels, double value,
                  std::string_view extra_key = {}, std::string_view extra_value = {}) {
  out += name;
  AppendLabels(out, labels, extra_key, extra_value);
  out.push_back(' ');
  out += FormatValue(value);
  out.push_back('\n');
}

}  // namespace

void Metrics::Inc(const std::string& name, const Labels& labels, double by) {
  std::lock_guard lock(mu_);
  families_[name].values[labels] += by;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) it->second.type = "gauge";
  it->second.values[labels] = value;
}

void Metrics::Observe(const std::string& name, const Labels& labels, double seconds) {
  if (std::isnan(seconds)) return;  // would poison _sum for good
  std::lock_guard lock(mu_);
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) it->second.type = "histogram";
  Histogram& h = it->second.histograms[labels];
  if (h.counts.empty()) h.counts.assign(kLatencyBuckets.size(), 0);
  // Buckets are upper-inclusive (le); a value above the last lands only in +Inf.
  const auto bucket = std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds);
  if (bucket != kLatencyBuckets.end()) ++h.counts[bucket - kLatencyBuckets.begin()];
  h.sum += seconds;
  ++h.count;
}

void Metrics::Describe(const std::string& name, const std::string& type, const std::string& help) {
  std::lock_guard lock(mu_);
  Family& family = families_[name];
  family.type = type;
  family.help = help;
}

std::string Metrics::RenderPrometheus() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    if (!family.help.empty()) {
      out += "# HELP " + name + " ";
      AppendEscaped(out, family.help, /*escape_quote=*/false);
      out.push_back('\n');
    }
    out += "# TYPE " + name + " " + family.type + "\n";
    for (const auto& [labels, value] : family.values) AppendSample(out, name, labels, value);
    for (const auto& [labels, h] : family.histograms) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
        cumulative += h.counts[i];
        AppendSample(out, name + "_bucket", labels, static_cast<double>(cumulative), "le",
                     FormatBound(kLatencyBuckets[i]));
      }
      AppendSample(out, name + "_bucket", labels, static_cast<double>(h.count), "le", "+Inf");
      AppendSample(out, name + "_sum", labels, h.sum);
      AppendSample(out, name + "_count", labels, static_cast<double>(h.count));
    }
  }
  return out;
}

}  // namespace madeira::core
