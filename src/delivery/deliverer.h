// The built-in executor of webhook.delivery tasks. One pump per endpoint leases from the
// endpoint's queue (webhook:{id}) no more tasks than its rate limit, max_in_flight and circuit
// breaker allow right now, sends each as a signed request through the HttpSender, classifies
// the answer, and acks or fails the lease through the engine — so states, attempts, retries,
// dead letters and metrics are the core's. When the store is shared by several processes
// (Store::SharesRateLimits), a rate-limited endpoint's leased deliveries also wait for tokens
// from the store's shared bucket before they are sent, so its rate holds across processes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "core/clock.h"
#include "core/metrics.h"
#include "delivery/circuit_breaker.h"
#include "delivery/http_sender.h"
#include "delivery/webhook_service.h"
#include "engine/engine.h"

namespace madeira::delivery {

struct DelivererConfig {
  CircuitBreakerOptions breaker;
  std::string worker_id = "madeira-deliverer";
  Millis poll_wait_ms = 20'000;  // one parked long-poll per endpoint while its queue is empty
};

class Deliverer {
 public:
  Deliverer(boost::asio::any_io_executor executor, engine::Engine& engine, store::Store& store,
            WebhookService& service, HttpSender& sender, const core::Clock& clock,
            core::Metrics& metrics, DelivererConfig config);
  ~Deliverer();
  Deliverer(const Deliverer&) = delete;
  Deliverer& operator=(const Deliverer&) = delete;

  // Starts a pump for every endpoint in the service's directory, and for each one added later.
  void Start();
  // No new leases; attempts in flight finish (the sender's Stop aborts the rest, which then
  // fail back to the queue).
  void Stop();

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace madeira::delivery
