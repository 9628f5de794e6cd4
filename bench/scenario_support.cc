#include "scenario_support.h"

#include <unistd.h>

#include <atomic>
#include <boost/asio/this_coro.hpp>
#include <fstream>
#include <stdexcept>

namespace madeira::bench {

namespace asio = boost::asio;

FreshServer::FreshServer(const std::string& binary) {
  std::filesystem::create_directories(data_dir());
  process = std::make_unique<ServerProcess>(binary, data_dir(), log_file());
}

FreshServer::FreshServer(const std::string& binary, const std::string& config_toml) {
  std::filesystem::create_directories(data_dir());
  std::ofstream(config_file()) << config_toml;
  has_config = true;
  process = std::make_unique<ServerProcess>(binary, data_dir(), log_file(),
                                            std::chrono::seconds(120), config_file());
}

FreshServer::FreshServer(const ScenarioEnv& env) : store(env.store) {
  std::filesystem::create_directories(data_dir());
  if (store.redis_pg()) {
    static std::atomic<int> counter{0};
    namespace_name = "bench_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    store_args = {"--store",        "redis-pg",         "--redis-url", store.redis_url,
                  "--database-url", store.database_url, "--namespace", namespace_name};
    // As an installation older than its first ended_claims_retention runs (docs/architecture.md,
    // "Id claims of ended tasks"): every submit batch looks its ids up in PostgreSQL too. A
    // fresh namespace would skip that for its first hour; the figures are for the long run.
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    std::string out;
    if (RunProgram(
            {"redis-cli", "-u", store.redis_url, "HSET", "madeira:" + namespace_name + ":ended:gen",
             "checked", "1", "started", std::to_string(now_ms)},
            &out) != 0) {
      throw std::runtime_error("redis-cli HSET ...:ended:gen failed: " + out);
    }
  }
  process = std::make_unique<ServerProcess>(env.madeira, data_dir(), log_file(),
                                            std::chrono::seconds(120), std::filesystem::path(),
                                            store_args);
}

FreshServer::~FreshServer() {
  if (process) process->Stop();
  process.reset();
  if (!store.redis_pg()) return;
  // What the finished server left in Redis and PostgreSQL; best effort, a failure only costs
  // memory. Private services hold nothing else, so FLUSHALL does; shared ones lose this
  // namespace's keys ("madeira:NS:...") and schema ("madeira_NS") only.
  try {
    CleanUpNamespace();
  } catch (const std::exception&) {
  }
}

void FreshServer::CleanUpNamespace() {
  if (store.private_services) {
    std::string ok;
    RunProgram({"redis-cli", "-u", store.redis_url, "FLUSHALL"}, &ok);
  } else {
    RunProgram({"bash", "-c",
                "redis-cli -u \"$1\" --scan --pattern \"madeira:$2:*\" | "
                "xargs -r -n 1000 redis-cli -u \"$1\" UNLINK >/dev/null",
                "cleanup", store.redis_url, namespace_name});
  }
  RunProgram({"psql", "-q", "-X", store.database_url, "-c",
              "SET client_min_messages = warning; DROP SCHEMA IF EXISTS madeira_" + namespace_name +
                  " CASCADE"},
             nullptr);
}

void FreshServer::Restart(const std::string& binary) {
  std::string how = process->Stop();
  process.reset();
  if (how != "exit 0") {
    throw std::runtime_error("SIGTERM: server ended with " + how + " (SPEC §1 wants exit 0)");
  }
  process = std::make_unique<ServerProcess>(
      binary, data_dir(), log_file(), std::chrono::seconds(120),
      has_config ? config_file() : std::filesystem::path(), store_args);
}

void ThrowUnlessOk(const HttpResponse& r, std::string_view what) {
  if (!r.Ok()) throw std::runtime_error(std::string(what) + ": " + r.Describe());
}

double Preload(const asio::ip::tcp::endpoint& endpoint, long total, int batch, int connections,
               std::chrono::seconds limit) {
  long claimed = 0;
  long accepted = 0;
  SteadyClock::time_point start = SteadyClock::now();
  std::vector<std::function<asio::awaitable<void>()>> loops;
  for (int c = 0; c < connections; ++c) {
    loops.push_back([&]() -> asio::awaitable<void> {
      HttpConnection conn(co_await asio::this_coro::executor, endpoint);
      while (claimed < total) {
        int n = static_cast<int>(std::min<long>(batch, total - claimed));
        claimed += n;
        HttpResponse r = co_await conn.Post("/v1/tasks/batch", BatchBody(n));
        ThrowUnlessOk(r, "POST /v1/tasks/batch (" + std::to_string(n) + " tasks)");
        BatchCounts counts = CountResults(r.body);
        if (counts.failed > 0) {
          throw std::runtime_error("POST /v1/tasks/batch rejected " +
                                   std::to_string(counts.failed) + " of " + std::to_string(n) +
                                   " valid tasks, first: " + counts.first_error);
        }
        accepted += counts.ok;
      }
    });
  }
  RunOutcome run = RunCoroutines(std::move(loops), limit);
  if (!run.error.empty()) throw std::runtime_error(run.error);
  if (!run.finished || accepted < total) {
    throw std::runtime_error("pre-load: only " + std::to_string(accepted) + " of " +
                             std::to_string(total) + " tasks accepted within " +
                             std::to_string(limit.count()) + " s");
  }
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

asio::awaitable<void> NoOpWorker(asio::ip::tcp::endpoint endpoint, std::string worker_id,
                                 WorkerPool& pool, std::function<bool()> done,
                                 SteadyClock::time_point deadline,
                                 std::function<void(const std::vector<LeasedTask>&)> on_leased) {
  HttpConnection conn(co_await asio::this_coro::executor, endpoint);
  const std::string lease_body = LeaseBody(worker_id, 100, 1000);
  while (!done() && SteadyClock::now() < deadline) {
    HttpResponse r = co_await conn.Post("/v1/leases", lease_body);
    ThrowUnlessOk(r, "POST /v1/leases " + lease_body);
    std::vector<LeasedTask> leases = ParseLeases(r.body);
    if (leases.empty()) continue;
    pool.leased += static_cast<int64_t>(leases.size());
    if (on_leased) on_leased(leases);
    HttpResponse a = co_await conn.Post("/v1/leases/ack", AckBody(leases));
    ThrowUnlessOk(a, "POST /v1/leases/ack (" + std::to_string(leases.size()) + " acks)");
    BatchCounts counts = CountResults(a.body);
    if (counts.failed > 0) {
      throw std::runtime_error("POST /v1/leases/ack refused " + std::to_string(counts.failed) +
                               " of " + std::to_string(leases.size()) +
                               " fresh leases, first: " + counts.first_error);
    }
    pool.acked += counts.ok;
    pool.last_ack = SteadyClock::now();
  }
}

}  // namespace madeira::bench
