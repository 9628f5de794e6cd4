#include "scenarios.h"

#include <algorithm>
#include <cmath>

namespace madeira::bench {

long ScenarioEnv::Scaled(long count, long floor) const {
  return std::max(floor, std::lround(static_cast<double>(count) * scale));
}

const std::vector<Scenario>& AllScenarios() {
  static const std::vector<Scenario> all = {
      {"a", "submit throughput", RunSubmitThroughput},
      {"b", "drain rate", RunDrainRate},
      {"c", "ready->leased latency at 5k/s", RunReadyLatency},
      {"de", "1M pending: RSS, then restart to /readyz", RunPendingFootprint},
      {"f", "delayed task lateness", RunDelayedLateness},
      {"w", "webhooks: deliveries/s, backlog drain, latency at 2k/s", RunWebhooks, "webhooks"},
  };
  return all;
}

}  // namespace madeira::bench
