// (b) Drain rate: no-op workers lease and batch-ack a pre-loaded backlog.
#include "scenario_support.h"
#include "scenarios.h"

namespace madeira::bench {

namespace asio = boost::asio;

std::vector<Measurement> RunDrainRate(const ScenarioEnv& env) {
  constexpr int kWorkers = 4;
  constexpr auto kLimit = std::chrono::seconds(180);
  const long total = env.Scaled(200'000, 1000);
  FreshServer server(env);
  const auto endpoint = server.process->endpoint();
  Preload(endpoint, total, 1000, 4, std::chrono::seconds(300));

  WorkerPool pool;
  SteadyClock::time_point start = SteadyClock::now();
  SteadyClock::time_point deadline = start + kLimit;
  std::vector<std::function<asio::awaitable<void>()>> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back([&, w]() -> asio::awaitable<void> {
      co_await NoOpWorker(
          endpoint, "bench-drain-" + std::to_string(w), pool, [&] { return pool.acked >= total; },
          deadline);
    });
  }
  RunOutcome run = RunCoroutines(std::move(workers), kLimit + std::chrono::seconds(30));
  if (!run.error.empty()) throw std::runtime_error(run.error);
  if (pool.acked < total) {
    throw std::runtime_error("drain: only " + std::to_string(pool.acked) + " of " +
                             std::to_string(total) + " tasks acked within " +
                             std::to_string(kLimit.count()) + " s (" + std::to_string(pool.leased) +
                             " leased)");
  }
  double seconds = std::chrono::duration<double>(pool.last_ack - start).count();
  return {{"b.drain", "drain: lease 100 + batch ack, 4 workers", "tasks/s",
           static_cast<double>(pool.acked) / seconds, 50'000, true}};
}

}  // namespace madeira::bench
