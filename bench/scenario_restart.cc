// (d) Server memory with a large pending backlog, and (e) restart time on that backlog.
#include <boost/asio/this_coro.hpp>

#include "scenario_support.h"
#include "scenarios.h"

namespace madeira::bench {

std::vector<Measurement> RunPendingFootprint(const ScenarioEnv& env) {
  const long total = env.Scaled(1'000'000, 10'000);
  FreshServer server(env);
  double load_seconds =
      Preload(server.process->endpoint(), total, 1000, 4, std::chrono::seconds(900));
  double rss_mb = static_cast<double>(server.process->RssKib()) / 1024;
  double peak_mb = static_cast<double>(server.process->PeakRssKib()) / 1024;

  server.Restart(env.madeira);
  SteadyClock::time_point ready = WaitReady(server.process->endpoint(), std::chrono::seconds(120));
  double ready_seconds =
      std::chrono::duration<double>(ready - server.process->started_at()).count();
  double restarted_rss_mb = static_cast<double>(server.process->RssKib()) / 1024;

  // A fast restart that forgot the backlog would be no result: one task must still be there.
  {
    std::vector<std::function<boost::asio::awaitable<void>()>> probe;
    size_t found = 0;
    probe.push_back([&]() -> boost::asio::awaitable<void> {
      HttpConnection conn(co_await boost::asio::this_coro::executor, server.process->endpoint());
      const std::string body = LeaseBody("bench-restart-probe", 1, 0);
      HttpResponse r = co_await conn.Post("/v1/leases", body);
      ThrowUnlessOk(r, "POST /v1/leases " + body + " after restart");
      found = ParseLeases(r.body).size();
    });
    RunOutcome run = RunCoroutines(std::move(probe), std::chrono::seconds(10));
    if (!run.error.empty()) throw std::runtime_error(run.error);
    if (found != 1) {
      throw std::runtime_error("after a restart on " + std::to_string(total) +
                               " pending tasks, POST /v1/leases (wait_ms 0) returned no task");
    }
  }
  return {
      {"d.rss", "VmRSS with " + std::to_string(total) + " pending", "MB", rss_mb, 300, false},
      {"d.peak", "VmHWM (peak RSS) during the load", "MB", peak_mb, std::nullopt, false},
      {"d.load", "pre-load rate, batches of 1000", "tasks/s",
       static_cast<double>(total) / load_seconds, std::nullopt, true},
      {"e.ready", "restart: process start -> /readyz 200", "s", ready_seconds, 3, false},
      {"e.rss", "VmRSS right after the restart", "MB", restarted_rss_mb, std::nullopt, false},
  };
}

}  // namespace madeira::bench
