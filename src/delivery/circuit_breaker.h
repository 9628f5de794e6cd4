// Stops deliveries to an endpoint that keeps failing, then lets one probe find out whether it
// has recovered. Time is passed in.
#pragma once

#include <string_view>

#include "core/clock.h"

namespace madeira::delivery {

struct CircuitBreakerOptions {
  int failure_threshold = 5;        // consecutive failures that open the circuit
  core::Millis cool_down = 30'000;  // how long it stays open before a probe
};

// Closed → (threshold consecutive failures) → open → (cool-down) → half-open: one probe is let
// through; its success closes the circuit, its failure reopens it for another cool-down.
// Which outcomes count as failures is the caller's choice (a 4xx means the receiver is up).
// Not thread-safe: owned by whoever dispatches to the endpoint.
class CircuitBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  explicit CircuitBreaker(CircuitBreakerOptions options = {}) : options_(options) {}

  struct Decision {
    bool allowed = true;
    core::Millis retry_at = 0;  // when refused: the end of the cool-down (or now, probe busy)
  };
  // Asks to start an attempt. In half-open exactly one caller gets `allowed` until the probe's
  // result is recorded.
  Decision Allow(core::Millis now);

  void RecordSuccess();
  void RecordFailure(core::Millis now);
  // Hands back a probe permit that found nothing to send, so the next caller may probe.
  void CancelProbe() { probe_in_flight_ = false; }

  State state() const { return state_; }

 private:
  CircuitBreakerOptions options_;
  State state_ = State::kClosed;
  int consecutive_failures_ = 0;
  core::Millis opened_at_ = 0;
  bool probe_in_flight_ = false;
};

std::string_view CircuitStateName(CircuitBreaker::State s);

}  // namespace madeira::delivery
