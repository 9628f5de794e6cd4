// A small metrics registry rendered as Prometheus text (the format is small enough to write;
// prometheus-cpp is not packaged in Debian 12).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace madeira::core {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  void Inc(const std::string& name, const Labels& labels, double by = 1.0);
  void Set(const std::string& name, const Labels& labels, double value);
  // Histograms use kLatencyBuckets (seconds).
  void Observe(const std::string& name, const Labels& labels, double seconds);
  // Declares HELP/TYPE for a family so it renders even before its first sample.
  void Describe(const std::string& name, const std::string& type, const std::string& help);
  std::string RenderPrometheus() const;

  static const std::vector<double> kLatencyBuckets;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    std::string type = "counter";
    std::string help;
    std::map<Labels, double> values;
    std::map<Labels, Histogram> histograms;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace madeira::core
