#include "delivery/circuit_breaker.h"

namespace madeira::delivery {

CircuitBreaker::Decision CircuitBreaker::Allow(core::Millis now) {
  switch (state_) {
    case State::kClosed:
      return {true, now};
    case State::kOpen:
      if (now < opened_at_ + options_.cool_down) return {false, opened_at_ + options_.cool_down};
      state_ = State::kHalfOpen;
      probe_in_flight_ = true;
      return {true, now};
    case State::kHalfOpen:
      if (probe_in_flight_) return {false, now};
      probe_in_flight_ = true;
      return {true, now};
  }
  return {true, now};
}

void CircuitBreaker::RecordSuccess() {
  state_ = State::kClosed;
  consecutive_failures_ = 0;
  probe_in_flight_ = false;
}

void CircuitBreaker::RecordFailure(core::Millis now) {
  probe_in_flight_ = false;
  if (state_ == State::kHalfOpen) {
    state_ = State::kOpen;
    opened_at_ = now;
    return;
  }
  if (state_ == State::kOpen) return;  // a late result from before it opened changes nothing
  if (++consecutive_failures_ >= options_.failure_threshold) {
    state_ = State::kOpen;
    opened_at_ = now;
    consecutive_failures_ = 0;
  }
}

std::string_view CircuitStateName(CircuitBreaker::State s) {
  switch (s) {
    case CircuitBreaker::State::kClosed:
      return "closed";
    case CircuitBreaker::State::kOpen:
      return "open";
    case CircuitBreaker::State::kHalfOpen:
      return "half_open";
  }
  return "closed";
}

}  // namespace madeira::delivery
