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

// One measurement id across all runs.
struct Aggregate {
  Measurement first;           // id, labels, unit and target
  std::vector<double> values;  // one per successful run
  double median = 0, min = 0, max = 0;
  // "yes"/"no" from the median against the target, "-" without a target.
  std::string Met() const;
};

struct Failure {
  std::string scenario;
  int run = 0;
  std::string error;
};

struct Report {
  MachineInfo machine;
  int runs = 0;
  double scale = 1;
  std::vector<Aggregate> results;
  std::vector<Failure> failures;

  // Folds one run's measurements in, keeping first-seen order; call Finish before printing.
  void Add(const std::vector<Measurement>& measured);
  void Finish();
  std::string Table() const;
  std::string Json() const;
};

}  // namespace madeira::bench
