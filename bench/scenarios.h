// The benchmark scenarios: each starts its own server(s) and returns what it measured.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace madeira::bench {

struct Measurement {
  std::string id;    // stable key for JSON and aggregation, e.g. "a.single"
  std::string what;  // one line for the table
  std::string unit;  // "tasks/s", "ms", "MB", "s"
  double value = 0;
  std::optional<double> target;  // none: reported for context only
  bool higher_is_better = false;
};

struct ScenarioEnv {
  std::string madeira;  // path of the server binary
  double scale = 1.0;   // multiplies task counts (and the steady-state duration of c)

  // `count` scaled, never below `floor`.
  long Scaled(long count, long floor = 1) const;
};

// Each throws std::runtime_error naming the route, request and answer when the server
// misbehaves, so a failure reads as a bug report rather than as a slow figure.
std::vector<Measurement> RunSubmitThroughput(const ScenarioEnv& env);  // a
std::vector<Measurement> RunDrainRate(const ScenarioEnv& env);         // b
std::vector<Measurement> RunReadyLatency(const ScenarioEnv& env);      // c
std::vector<Measurement> RunPendingFootprint(const ScenarioEnv& env);  // d and e
std::vector<Measurement> RunDelayedLateness(const ScenarioEnv& env);   // f
std::vector<Measurement> RunWebhooks(const ScenarioEnv& env);          // w

struct Scenario {
  std::string letters;  // the --only letters it serves: "de" measures both d and e
  std::string title;
  std::vector<Measurement> (*run)(const ScenarioEnv&);
  std::string name = {};  // --only also takes this word for all its letters, e.g. "webhooks"
};

const std::vector<Scenario>& AllScenarios();

}  // namespace madeira::bench
