#include "cli/serve.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "api/http_server.h"
#include "cli/store_open.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/random.h"
#include "delivery/deliverer.h"
#include "delivery/http_sender.h"
#include "delivery/standard_webhooks.h"
#include "delivery/webhook_service.h"
#include "engine/engine.h"

namespace madeira::cli {
namespace {

namespace asio = boost::asio;
using core::Log;
using core::LogLevel;

// In-flight requests get this long after a stop signal; the rest of SPEC §1's 10 s budget is
// for the store flush.
constexpr auto kDrainTimeout = std::chrono::seconds(8);

int Fail(int code, std::string_view msg, std::string_view detail) {
  Log(LogLevel::kError, msg, {{"error", detail}});
  std::cerr << "madeira serve: " << msg << ": " << detail << std::endl;
  return code;
}

// --role splits a process's background duties; every role serves the HTTP API (so health,
// metrics and the protocol answer everywhere). `scheduler`: due-time promotion and lease
// expiry; `deliverer`: webhook deliveries; `api`: neither; `all`: both.
bool RunsDeliveries(const ServeConfig& cfg) { return cfg.role == "all" || cfg.role == "deliverer"; }
bool RunsTimers(const ServeConfig& cfg) { return cfg.role == "all" || cfg.role == "scheduler"; }

engine::EngineConfig ToEngineConfig(const ServeConfig& cfg) {
  engine::EngineConfig out;
  out.limits = cfg.limits;
  out.idempotency_ttl = cfg.idempotency_ttl;
  out.default_retry = cfg.default_retry;
  out.retry_by_type = cfg.retry_by_type;
  out.retry_by_queue = cfg.retry_by_queue;
  out.retry_by_type.emplace(std::string(delivery::kDeliveryTaskType), cfg.webhook_retry);
  out.run_timers = RunsTimers(cfg);
  return out;
}

delivery::WebhookConfig ToWebhookConfig(const ServeConfig& cfg) {
  delivery::WebhookConfig out;
  for (const SourceConfig& s : cfg.sources) {
    out.sources.push_back({s.id, s.secrets, s.allow_target_uri, s.target_secrets});
  }
  out.retry = cfg.webhook_retry;
  out.max_retries = cfg.webhook_max_retries;
  out.disable_after = cfg.disable_after;
  out.max_payload_bytes = cfg.limits.max_payload_bytes;
  out.max_depth = cfg.limits.max_depth;
  return out;
}

api::ApiConfig ToApiConfig(const ServeConfig& cfg) {
  api::ApiConfig out;
  for (const TokenConfig& t : cfg.tokens) {
    api::ApiToken tok{t.name, t.sha256_hex, {}};
    for (const std::string& s : t.scopes) {
      tok.scopes.push_back(s == "admin"    ? api::Scope::kAdmin
                           : s == "worker" ? api::Scope::kWorker
                                           : api::Scope::kProducer);
    }
    out.tokens.push_back(std::move(tok));
  }
  return out;
}

// Blocks until an asynchronous start-up step answers; start-up is the one place that waits.
template <typename T>
core::Result<T> Await(const std::function<void(store::Callback<T>)>& op) {
  auto promise = std::make_shared<std::promise<core::Result<T>>>();
  auto future = promise->get_future();
  op([promise](core::Result<T> r) { promise->set_value(std::move(r)); });
  return future.get();
}

// Runs the io_context on N threads and tells when all of them returned.
class IoThreads {
 public:
  IoThreads(asio::io_context& io, unsigned n) : io_(io) {
    running_ = n;
    for (unsigned i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        io_.run();
        std::lock_guard lock(mu_);
        if (--running_ == 0) cv_.notify_all();
      });
    }
  }
  // Waits until the io_context ran out of work, or stops it when the deadline passes.
  bool Drain(std::chrono::steady_clock::duration timeout) {
    std::unique_lock lock(mu_);
    bool drained = cv_.wait_for(lock, timeout, [this] { return running_ == 0; });
    lock.unlock();
    if (!drained) io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    return drained;
  }
  ~IoThreads() {
    if (!threads_.empty()) Drain(std::chrono::seconds(0));
  }

 private:
  asio::io_context& io_;
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned running_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace

int RunServe(const ServeFlags& flags) {
  auto loaded = LoadServeConfig(flags, ProcessEnv());
  if (!loaded) return Fail(kServeBadConfig, "invalid configuration", loaded.error().message);
  const ServeConfig cfg = std::move(*loaded);
  if (auto ok = CheckListenAllowed(cfg); !ok) {
    return Fail(kServeBadConfig, "refusing to listen", ok.error().message);
  }
  auto hp = ParseHostPort(cfg.listen);  // validated by LoadServeConfig

  std::error_code fs_ec;
  std::filesystem::create_directories(cfg.data_dir, fs_ec);
  if (fs_ec) return Fail(kServeFailed, "cannot create data_dir", fs_ec.message());

  core::SystemClock clock;
  core::SystemRandom random;
  core::Metrics metrics;

  auto opened = OpenConfiguredStore(cfg);
  if (!opened) {
    // A missing or malformed URL is configuration; a service that does not answer is not.
    int code =
        opened.error().code == core::ErrorCode::kInvalidField ? kServeBadConfig : kServeFailed;
    return Fail(code, "cannot open the store", opened.error().message);
  }
  std::unique_ptr<store::Store> store = std::move(*opened);

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  unsigned n_threads = std::max(2u, std::thread::hardware_concurrency());
  IoThreads threads(io, n_threads);

  // Armed before anything can print "listening", so a signal sent right after that line is
  // never met by the default disposition (which would kill without flushing).
  std::promise<int> stop_signal;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (!ec) stop_signal.set_value(sig);
  });

  int exit_code = kServeOk;
  {
    engine::Engine engine(io.get_executor(), *store, clock, random, metrics, ToEngineConfig(cfg));
    auto started = Await<store::Unit>([&](store::Callback<store::Unit> cb) { engine.Start(cb); });
    if (!started) {
      exit_code = Fail(kServeFailed, "cannot start the engine", started.error().message);
    }

    delivery::OpenSslRandom secret_random;
    delivery::WebhookService webhooks(engine, *store, clock, random, secret_random, metrics,
                                      ToWebhookConfig(cfg));
    std::optional<delivery::HttpSender> sender;
    std::optional<delivery::Deliverer> deliverer;
    if (exit_code == kServeOk) {
      auto loaded_endpoints =
          Await<store::Unit>([&](store::Callback<store::Unit> cb) { webhooks.Start(cb); });
      if (!loaded_endpoints) {
        exit_code = Fail(kServeFailed, "cannot load the webhook endpoints",
                         loaded_endpoints.error().message);
      }
    }
    if (exit_code == kServeOk && RunsDeliveries(cfg)) {
      // LoadServeConfig already checked every CIDR, so this cannot fail here.
      auto guard = delivery::AddressGuard::Create({cfg.allow_private_targets, cfg.allow_cidrs});
      delivery::SenderOptions options;
      if (guard) options.guard = *guard;
      sender.emplace(options);
      delivery::DelivererConfig dcfg;
      dcfg.breaker = {cfg.breaker_failures, cfg.breaker_cool_down};
      deliverer.emplace(io.get_executor(), engine, *store, webhooks, *sender, clock, metrics, dcfg);
      deliverer->Start();
    }

    std::optional<api::HttpServer> server;
    if (exit_code == kServeOk) {
      server.emplace(io, engine, metrics, ToApiConfig(cfg), &webhooks);
      auto ep = server->Listen(hp->host, hp->port);
      if (!ep) {
        exit_code = Fail(kServeFailed, "cannot listen on " + cfg.listen, ep.error().message);
      } else {
        std::string host = ep->address().to_string();
        std::string addr =
            (ep->address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(ep->port());
        Log(LogLevel::kInfo, "listening",
            {{"address", addr},
             {"store", cfg.store},
             {"role", cfg.role},
             {"data_dir", cfg.data_dir},
             {"auth", cfg.auth_enabled() ? "on" : "off"}});
        // Tests and scripts read the port from this line when listening on port 0.
        std::cout << "listening on " << addr << std::endl;
      }
    }

    if (exit_code == kServeOk) {
      int sig = stop_signal.get_future().get();
      Log(LogLevel::kInfo, "stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      // Stopped on an io thread, the executor the server and engine run on.
      std::promise<void> stopped;
      asio::post(io, [&] {
        server->Stop();
        if (deliverer) deliverer->Stop();
        engine.Stop();
        stopped.set_value();
      });
      stopped.get_future().wait();
      // Attempts still in flight end as aborted and go back to their queues.
      if (sender) sender->Stop();
    } else {
      if (deliverer) deliverer->Stop();
      engine.Stop();
      if (sender) sender->Stop();
      signals.cancel();
    }
    work.reset();
    if (!threads.Drain(kDrainTimeout)) {
      Log(LogLevel::kWarn, "in-flight requests did not finish in time; closing them");
    }
    server.reset();
  }
  // After the engine is gone no new work reaches the store; Close flushes what is queued.
  store->Close();
  Log(LogLevel::kInfo, "stopped");
  return exit_code;
}

}  // namespace madeira::cli
