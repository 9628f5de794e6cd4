// Runs `madeira serve` as a child process on a free loopback port with its own data dir.
#pragma once

#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace madeira::bench {

// A fresh directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class ServerProcess {
 public:
  // Starts the binary and waits for its "listening on HOST:PORT" line; throws
  // std::runtime_error when it exits or stays silent for `startup_timeout`. A non-empty
  // `config_file` is passed as --config (e.g. [[sources]] and [delivery] for webhooks).
  // `store_args` select the store (e.g. --store redis-pg --redis-url ...); empty: --store sqlite.
  ServerProcess(const std::string& binary, const std::filesystem::path& data_dir,
                const std::filesystem::path& log_file,
                std::chrono::seconds startup_timeout = std::chrono::seconds(120),
                const std::filesystem::path& config_file = {},
                const std::vector<std::string>& store_args = {});
  // Stops the server if it is still running.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  const boost::asio::ip::tcp::endpoint& endpoint() const { return endpoint_; }
  // When fork() ran: the origin of start-up timings.
  std::chrono::steady_clock::time_point started_at() const { return started_at_; }

  // VmRSS and VmHWM from /proc/PID/status, in KiB; 0 when unreadable.
  long RssKib() const;
  long PeakRssKib() const;

  // SIGTERM, then SIGKILL if it has not exited after `grace`. Returns the exit status text,
  // e.g. "exit 0", "signal 9".
  std::string Stop(std::chrono::seconds grace = std::chrono::seconds(15));

 private:
  long StatusField(const char* name) const;

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::thread stdout_drain_;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::chrono::steady_clock::time_point started_at_;
};

// Runs `argv` (PATH lookup) and waits; its stdout goes to `out` when given (else inherited),
// stderr is inherited. Returns the exit status (128 + signal when killed, 127 when not found).
int RunProgram(const std::vector<std::string>& argv, std::string* out = nullptr);

// A private Redis + PostgreSQL from scripts/test-services.sh in a temp dir: `start` on
// construction (throws on failure), `stop` on destruction.
class TestServices {
 public:
  explicit TestServices(const std::string& script);
  ~TestServices();
  TestServices(const TestServices&) = delete;
  TestServices& operator=(const TestServices&) = delete;

  const std::string& redis_url() const { return redis_url_; }
  const std::string& database_url() const { return database_url_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

 private:
  std::string script_;
  TempDir dir_;
  std::string redis_url_;
  std::string database_url_;
};

// Polls GET /readyz every few ms until it answers 200; returns when it did, or throws after
// `timeout`.
std::chrono::steady_clock::time_point WaitReady(const boost::asio::ip::tcp::endpoint& endpoint,
                                                std::chrono::seconds timeout);

}  // namespace madeira::bench
