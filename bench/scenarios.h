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

// The store the servers of a run use. sqlite: each server on its own data dir. redis-pg: every
// server on the same Redis + PostgreSQL, each with a namespace of its own.
struct StoreSetup {
  std::string name = "sqlite";  // "sqlite" or "redis-pg"
  std::string redis_url;        // redis-pg only
  std::string database_url;     // redis-pg only
  // The services are the benchmark's own (scripts/test-services.sh): a finished server's data
  // goes with FLUSHALL. Otherwise only its namespace's keys and schema are removed.
  bool private_services = false;

  bool redis_pg() const { return name == "redis-pg"; }
  // Put before measurement ids in tables ("rp.a.batch"); JSON keeps the plain id + "store".
  std::string IdPrefix() const { return redis_pg() ? "rp." : ""; }
};

struct ScenarioEnv {
  std::string madeira;  // path of the server binary
  double scale = 1.0;   // multiplies task counts (and the steady-state duration of c)
  StoreSetup store;     // what FreshServer(env) runs on
  // a's envelopes name their task_id (unique ones), as a producer that sets its own ids does;
  // by default the server makes them (on redis-pg, only given ids are looked up in PostgreSQL
  // once ended ones may have left Redis).
  bool given_ids = false;

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
// p: c and f in the shapes bench/peers runs BullMQ and Asynq in (issue 6): c at 2,000 tasks/s
// (ids pc.*) and 10,000 delayed tasks (ids pd.*), so the comparison is of the same scenarios.
std::vector<Measurement> RunPeerShapes(const ScenarioEnv& env);

// c at `rate_per_second` for 10 s (scaled); `id` names the figures ("c" gives c.p50 ...) and
// `rate_name` ("5k/s") says the rate in their descriptions. Issue 2's targets hold at 5k/s only.
std::vector<Measurement> RunLatencyAt(const ScenarioEnv& env, double rate_per_second,
                                      const std::string& id, const std::string& rate_name);
// f with `count` tasks (scaled) in ten rounds 100 ms apart, each one batch due 2 s after it is
// sent; `id` names the figures.
std::vector<Measurement> RunDelayedRounds(const ScenarioEnv& env, long count,
                                          const std::string& id);

struct Scenario {
  std::string letters;  // the --only letters it serves: "de" measures both d and e
  std::string title;
  std::vector<Measurement> (*run)(const ScenarioEnv&);
  std::string name = {};  // --only also takes this word for all its letters, e.g. "webhooks"
  bool redis_pg = false;  // also runs with --store redis-pg (the core scenarios a, b, c and f)
};

const std::vector<Scenario>& AllScenarios();

// The targets that hold for `store`: the embedded store keeps the scenarios' own; redis-pg has
// issue 5's two (batched submits >= 20,000/s, drain >= 25,000/s) and reports the rest for context.
void ApplyStoreTarget(const StoreSetup& store, Measurement& m);

}  // namespace madeira::bench
