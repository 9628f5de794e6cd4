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

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return in ? a + " " + b + " " + c : "?";
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
  std::snprintf(line, sizeof line, "%-12s %-42s %-12s %12s %12s %25s  %s\n", "id", "measurement",
                "unit", "target", "median", "min-max", "met?");
  out += line;
  out += std::string(127, '-') + "\n";
  for (const Aggregate& a : results) {
    std::string range = Format(a.min, a.first.unit) + " - " + Format(a.max, a.first.unit);
    std::string id = id_prefix + a.first.id;
    std::snprintf(line, sizeof line, "%-12s %-42s %-12s %12s %12s %25s  %s\n", id.c_str(),
                  a.first.what.c_str(), a.first.unit.c_str(), Target(a.first).c_str(),
                  Format(a.median, a.first.unit).c_str(), range.c_str(), a.Met().c_str());
    out += line;
  }
  for (const Failure& f : failures) {
    out += "FAILED " + id_prefix + f.scenario + " (run " + std::to_string(f.run) + "): " + f.error +
           "\n";
  }
  return out;
}

namespace {

json::array JsonRows(const Report& report) {
  json::array rows;
  for (const Aggregate& a : report.results) {
    json::object row{{"id", a.first.id},
                     {"store", report.store},
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
  return rows;
}

json::array JsonFailures(const Report& report) {
  json::array failed;
  for (const Failure& f : report.failures) {
    failed.push_back(
        {{"store", report.store}, {"scenario", f.scenario}, {"run", f.run}, {"error", f.error}});
  }
  return failed;
}

}  // namespace

std::string Report::Json() const { return JsonAll({*this}); }

std::string JsonAll(const std::vector<Report>& reports) {
  if (reports.empty()) return "{}\n";
  const Report& first = reports.front();
  json::array stores, rows, failed;
  json::object loads;
  for (const Report& r : reports) {
    stores.push_back(json::value(r.store));
    for (auto& row : JsonRows(r)) rows.push_back(std::move(row));
    for (auto& f : JsonFailures(r)) failed.push_back(std::move(f));
    loads[r.store] = {{"start", r.loadavg_start}, {"end", r.loadavg_end}};
  }
  json::object doc{{"machine",
                    {{"cpus", first.machine.cpus},
                     {"cpu_model", first.machine.cpu_model},
                     {"kernel", first.machine.kernel}}},
                   {"runs", first.runs},
                   {"scale", first.scale},
                   {"stores", std::move(stores)},
                   {"loadavg", std::move(loads)},
                   {"results", std::move(rows)},
                   {"failures", std::move(failed)}};
  return json::serialize(doc) + "\n";
}

std::string SideBySide(const std::vector<Report>& reports) {
  std::vector<std::string> ids;
  for (const Report& r : reports) {
    for (const Aggregate& a : r.results) {
      if (std::find(ids.begin(), ids.end(), a.first.id) == ids.end()) ids.push_back(a.first.id);
    }
  }
  std::string out;
  char cell[256];
  std::snprintf(cell, sizeof cell, "%-9s %-42s %-8s", "id", "measurement", "unit");
  out += cell;
  for (const Report& r : reports) {
    std::snprintf(cell, sizeof cell, " | %-36s",
                  (r.store + ": median (min-max) target met").c_str());
    out += cell;
  }
  out += "\n" + std::string(61 + 39 * reports.size(), '-') + "\n";
  for (const std::string& id : ids) {
    const Aggregate* any = nullptr;
    for (const Report& r : reports) {
      for (const Aggregate& a : r.results) {
        if (a.first.id == id && any == nullptr) any = &a;
      }
    }
    std::string unit = any->first.unit;
    std::snprintf(cell, sizeof cell, "%-9s %-42s %-8s", id.c_str(), any->first.what.c_str(),
                  unit.c_str());
    out += cell;
    for (const Report& r : reports) {
      auto it = std::find_if(r.results.begin(), r.results.end(),
                             [&](const Aggregate& a) { return a.first.id == id; });
      std::string text = "-";
      if (it != r.results.end()) {
        text = Format(it->median, unit) + " (" + Format(it->min, unit) + "-" +
               Format(it->max, unit) + ")";
        if (it->first.target) text += " " + Target(it->first) + " " + it->Met();
      }
      std::snprintf(cell, sizeof cell, " | %-36s", text.c_str());
      out += cell;
    }
    out += "\n";
  }
  return out;
}

}  // namespace madeira::bench
