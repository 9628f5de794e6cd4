// What the benchmark prints and writes: the machine, then per-measurement medians over runs.
#pragma once

#include <string>
#include <vector>

#include "scenarios.h"

namespace madeira::bench {

struct MachineInfo {
  unsigned cpus = 0;
  std::string cpu_model;
  std::string kernel;
};

MachineInfo ReadMachineInfo();

// The 1, 5 and 15 minute load averages from /proc/loadavg, e.g. "2.45 3.32 4.19".
std::string LoadAverage();

// One measurement id across all runs.
struct Aggregate {
  Measurement first;           // id, labels, unit and target
  std::vector<double> values;  // one per successful run
  double median = 0, min = 0, max = 0;
  // "yes"/"no" from the median against the target, "-" without a target.
  std::string Met() const;
};

struct Failure {
  std::string store;
  std::string scenario;
  int run = 0;
  std::string error;
};

// The figures of one store.
struct Report {
  MachineInfo machine;
  int runs = 0;
  double scale = 1;
  std::string store = "sqlite";
  std::string id_prefix;  // before ids in the table: "rp." for redis-pg
  std::string loadavg_start, loadavg_end;
  std::vector<Aggregate> results;
  std::vector<Failure> failures;

  // Folds one run's measurements in, keeping first-seen order; call Finish before printing.
  void Add(const std::vector<Measurement>& measured);
  void Finish();
  std::string Table() const;
  std::string Json() const;
};

// One JSON document for the reports of one or more stores: machine, runs, scale, "stores",
// load averages, and "results" / "failures" rows each with "store" and the plain id
// ("a.batch"), so a one-store file reads as before. bench/peers/report.py reads it.
std::string JsonAll(const std::vector<Report>& reports);

// The first report's medians beside the others', per id of the first (then ids only the others
// have), with each one's target and whether it was met.
std::string SideBySide(const std::vector<Report>& reports);

}  // namespace madeira::bench
