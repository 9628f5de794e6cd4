// (a) Submit throughput: one task per request over 64 connections, and 100 tasks per request.
#include <boost/asio/this_coro.hpp>

#include "scenario_support.h"
#include "scenarios.h"

namespace madeira::bench {

namespace asio = boost::asio;

namespace {

constexpr auto kLimit = std::chrono::seconds(30);

// Sends `total` tasks, `per_request` at a time, over `connections` keep-alive connections as
// fast as the server answers; returns accepted tasks per second.
double MeasureSubmits(const ScenarioEnv& env, long total, int per_request, int connections) {
  FreshServer server(env);
  const auto endpoint = server.process->endpoint();
  const std::string single = Envelope();
  const std::string batch = BatchBody(per_request);
  long claimed = 0;
  long accepted = 0;
  SteadyClock::time_point start = SteadyClock::now();
  SteadyClock::time_point last = start;
  SteadyClock::time_point deadline = start + kLimit;
  std::vector<std::function<asio::awaitable<void>()>> loops;
  for (int c = 0; c < connections; ++c) {
    loops.push_back([&]() -> asio::awaitable<void> {
      HttpConnection conn(co_await asio::this_coro::executor, endpoint);
      while (claimed < total && SteadyClock::now() < deadline) {
        const long first = claimed;
        claimed += per_request;
        if (per_request == 1) {
          // Named locals, not a temporary in the co_await: GCC destroys a conditional's
          // temporary twice across a suspension.
          std::string named;
          if (env.given_ids) named = Envelope("given-" + std::to_string(first));
          const std::string& body = env.given_ids ? named : single;
          HttpResponse r = co_await conn.Post("/v1/tasks", body);
          if (r.status != 202) throw std::runtime_error("POST /v1/tasks: " + r.Describe());
          accepted += 1;
        } else {
          std::string named;
          if (env.given_ids) named = BatchBody(per_request, "given-", first);
          const std::string& body = env.given_ids ? named : batch;
          HttpResponse r = co_await conn.Post("/v1/tasks/batch", body);
          ThrowUnlessOk(r, "POST /v1/tasks/batch");
          BatchCounts counts = CountResults(r.body);
          if (counts.failed > 0) {
            throw std::runtime_error("POST /v1/tasks/batch rejected valid tasks: " +
                                     counts.first_error);
          }
          accepted += counts.ok;
        }
        last = SteadyClock::now();
      }
    });
  }
  RunOutcome run = RunCoroutines(std::move(loops), kLimit + std::chrono::seconds(30));
  if (!run.error.empty()) throw std::runtime_error(run.error);
  if (!run.finished) throw std::runtime_error("submits did not finish; a request hung");
  double seconds = std::chrono::duration<double>(last - start).count();
  return seconds > 0 ? static_cast<double>(accepted) / seconds : 0;
}

}  // namespace

std::vector<Measurement> RunSubmitThroughput(const ScenarioEnv& env) {
  std::vector<Measurement> out;
  out.push_back({"a.single", "submit: 1 task/request, 64 connections", "tasks/s",
                 MeasureSubmits(env, env.Scaled(100'000, 1000), 1, 64), 30'000, true});
  out.push_back({"a.batch", "submit: 100 tasks/request, 16 connections", "tasks/s",
                 MeasureSubmits(env, env.Scaled(500'000, 10'000), 100, 16), 150'000, true});
  return out;
}

}  // namespace madeira::bench
