#include "report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdio>
#include <fstream>
#include <thread>

#include "stats.h"

namespace madeira::bench {

namespace json = boost::json;

MachineInfo ReadMachineInfo() {
  MachineInfo m;
  m.cpus = std::thread::hardware_concurrency();
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return m;
}

std::string Aggregate::Met() const {
  if (!first.target || values.empty()) return "-";
  bool met = first.higher_is_better ? median >= *first.target : median <= *first.target;
  return met ? "yes" : "no";
}

void Report::Add(const std::vector<Measurement>& measured) {
  for (const Measurement& m : measured) {
    auto it = std::find_if(results.begin(), results.end(),
                           [&](const Aggregate& a) { return a.first.id == m.id; });
    if (it == results.end()) {
      results.push_back({m, {}});
      it = results.end() - 1;
    }
    it->values.push_back(m.value);
  }
}

void Report::Finish() {
  for (Aggregate& a : results) {
    a.median = Median(a.values);
    a.min = *std::min_element(a.values.begin(), a.values.end());
    a.max = *std::max_element(a.values.begin(), a.values.end());
  }
}

namespace {

// Throughputs read best as integers, latencies and sizes with one or two decimals.
std::string Format(double v, const std::string& unit) {
  char buf[64];
  if (unit.ends_with("/s")) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (unit == "s") {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  }
  return buf;
}

std::string Target(const Measurement& m) {
  if (!m.target) return "-";
  return (m.higher_is_better ? ">= " : "<= ") + Format(*m.target, m.unit);
}

}  // namespace

std::string Report::Table() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %-42s %-12s %12s %12s %25s  %s\n", "id", "measurement",
                "unit", "target", "median", "min-max", "met?");
  out += line;
  out += std::string(125, '-') + "\n";
  for (const Aggregate& a : results) {
    std::string range = Format(a.min, a.first.unit) + " - " + Format(a.max, a.first.unit);
    std::snprintf(line, sizeof line, "%-10s %-42s %-12s %12s %12s %25s  %s\n", a.first.id.c_str(),
                  a.first.what.c_str(), a.first.unit.c_str(), Target(a.first).c_str(),
                  Format(a.median, a.first.unit).c_str(), range.c_str(), a.Met().c_str());
    out += line;
  }
  for (const Failure& f : failures) {
    out += "FAILED " + f.scenario + " (run " + std::to_string(f.run) + "): " + f.error + "\n";
  }
  return out;
}

std::string Report::Json() const {
  json::array rows;
  for (const Aggregate& a : results) {
    json::object row{{"id", a.first.id},
                     {"measurement", a.first.what},
                     {"unit", a.first.unit},
                     {"median", a.median},
                     {"min", a.min},
                     {"max", a.max},
                     {"values", json::array(a.values.begin(), a.values.end())},
                     {"met", a.Met()}};
    if (a.first.target) {
      row["target"] = *a.first.target;
      row["target_is"] = a.first.higher_is_better ? "minimum" : "maximum";
    }
    rows.push_back(std::move(row));
  }
  json::array failed;
  for (const Failure& f : failures) {
    failed.push_back({{"scenario", f.scenario}, {"run", f.run}, {"error", f.error}});
  }
  json::object doc{
      {"machine",
       {{"cpus", machine.cpus}, {"cpu_model", machine.cpu_model}, {"kernel", machine.kernel}}},
      {"runs", runs},
      {"scale", scale},
      {"results", std::move(rows)},
      {"failures", std::move(failed)}};
  return json::serialize(doc) + "\n";
}

}  // namespace madeira::bench
