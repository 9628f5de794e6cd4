#include "scenarios.h"

#include <algorithm>
#include <cmath>

namespace madeira::bench {

long ScenarioEnv::Scaled(long count, long floor) const {
  return std::max(floor, std::lround(static_cast<double>(count) * scale));
}

const std::vector<Scenario>& AllScenarios() {
  static const std::vector<Scenario> all = {
      {"a", "submit throughput", RunSubmitThroughput, "", true},
      {"b", "drain rate", RunDrainRate, "", true},
      {"c", "ready->leased latency at 5k/s", RunReadyLatency, "", true},
      {"de", "1M pending: RSS, then restart to /readyz", RunPendingFootprint},
      {"f", "delayed task lateness", RunDelayedLateness, "", true},
      {"w", "webhooks: deliveries/s, backlog drain, latency at 2k/s", RunWebhooks, "webhooks"},
      // Not in the default set: `make bench-peers` runs it, in the same window as the peers.
      {"p", "c at 2k/s and 10k delayed tasks, the peers' shapes", RunPeerShapes, "peers", true},
  };
  return all;
}

std::vector<Measurement> RunPeerShapes(const ScenarioEnv& env) {
  std::vector<Measurement> all = RunLatencyAt(env, 2000, "pc", "2k/s");
  std::vector<Measurement> delayed = RunDelayedRounds(env, 10'000, "pd");
  all.insert(all.end(), delayed.begin(), delayed.end());
  return all;
}

void ApplyStoreTarget(const StoreSetup& store, Measurement& m) {
  if (!store.redis_pg()) return;
  if (m.id == "a.batch") {
    m.target = 20'000;
  } else if (m.id == "b.drain") {
    m.target = 25'000;
  } else {
    m.target.reset();
  }
}

}  // namespace madeira::bench
