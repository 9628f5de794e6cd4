// Pieces several scenarios share: a fresh server, bulk pre-loading, and a no-op worker.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http_load.h"
#include "scenarios.h"
#include "server_process.h"
#include "workload.h"

namespace madeira::bench {

using SteadyClock = std::chrono::steady_clock;

// A server on its own temp data dir; both go away together. On redis-pg it also has a
// namespace of its own, whose keys and schema go away with it too.
struct FreshServer {
  // An embedded-store server.
  explicit FreshServer(const std::string& binary);
  // The same with `config_toml` written to config.toml in the temp dir and passed as --config.
  FreshServer(const std::string& binary, const std::string& config_toml);
  // env.madeira on env.store.
  explicit FreshServer(const ScenarioEnv& env);
  ~FreshServer();
  FreshServer(const FreshServer&) = delete;
  FreshServer& operator=(const FreshServer&) = delete;

  // Stops the running server and starts another on the same data dir and namespace (scenario e).
  void Restart(const std::string& binary);
  std::filesystem::path data_dir() const { return dir.path() / "data"; }
  std::filesystem::path log_file() const { return dir.path() / "server.log"; }
  std::filesystem::path config_file() const { return dir.path() / "config.toml"; }

  TempDir dir;
  bool has_config = false;
  StoreSetup store;                     // sqlite unless FreshServer(env) said otherwise
  std::string namespace_name;           // redis-pg: "bench_<pid>_<n>"
  std::vector<std::string> store_args;  // passed to every start
  std::unique_ptr<ServerProcess> process;

 private:
  void CleanUpNamespace();
};

// Throws unless `r` is a 2xx: "<what>: HTTP 500 {...}".
void ThrowUnlessOk(const HttpResponse& r, std::string_view what);

// Submits `total` tasks in POST /v1/tasks/batch requests of `batch` over `connections`
// connections; throws on any rejected request or item. Returns the seconds it took.
double Preload(const boost::asio::ip::tcp::endpoint& endpoint, long total, int batch,
               int connections, std::chrono::seconds limit);

// Shared by the workers of one pool; the client is single-threaded, so plain fields do.
struct WorkerPool {
  int64_t leased = 0;
  int64_t acked = 0;
  SteadyClock::time_point last_ack{};
};

// A worker that does nothing with its tasks: long-polls POST /v1/leases (max_tasks 100,
// wait_ms 1000), hands each non-empty answer to `on_leased` the moment it arrives, and acks the
// whole answer with one POST /v1/leases/ack. Stops when `done()` or at `deadline`.
boost::asio::awaitable<void> NoOpWorker(
    boost::asio::ip::tcp::endpoint endpoint, std::string worker_id, WorkerPool& pool,
    std::function<bool()> done, SteadyClock::time_point deadline,
    std::function<void(const std::vector<LeasedTask>&)> on_leased = {});

}  // namespace madeira::bench
