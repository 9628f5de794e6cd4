#include "delivery/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace madeira::delivery {
namespace {

RateLimit Normalise(RateLimit r) {
  r.burst = std::max(r.burst, 1);
  return r;
}

}  // namespace

EndpointLimiter::EndpointLimiter(RateLimit rate, int max_in_flight, core::Millis now)
    : rate_(Normalise(rate)),
      max_in_flight_(max_in_flight),
      tokens_(rate_.burst),
      refilled_at_(now) {}

void EndpointLimiter::Refill(core::Millis now) {
  if (now <= refilled_at_) return;  // a clock step backwards earns nothing
  const double earned = static_cast<double>(now - refilled_at_) * rate_.per_second / 1000.0;
  tokens_ = std::min<double>(rate_.burst, tokens_ + earned);
  refilled_at_ = now;
}

Admission EndpointLimiter::TryAcquire(core::Millis now) {
  if (max_in_flight_ > 0 && in_flight_ >= max_in_flight_) {
    return {Admission::Kind::kInFlightFull, 0};
  }
  if (rate_.per_second > 0) {
    Refill(now);
    if (tokens_ < 1.0) {
      const double wait_ms = (1.0 - tokens_) * 1000.0 / rate_.per_second;
      return {Admission::Kind::kRateLimited,
              std::max(now, refilled_at_) + static_cast<core::Millis>(std::ceil(wait_ms))};
    }
    tokens_ -= 1.0;
  }
  ++in_flight_;
  return {Admission::Kind::kAdmitted, now};
}

void EndpointLimiter::Release() { in_flight_ = std::max(0, in_flight_ - 1); }

int EndpointLimiter::Available(core::Millis now) {
  int slots = max_in_flight_ > 0 ? std::max(0, max_in_flight_ - in_flight_) : kUnbounded;
  if (rate_.per_second > 0) {
    Refill(now);
    slots = std::min(slots, static_cast<int>(std::floor(tokens_)));
  }
  return slots;
}

core::Millis EndpointLimiter::NextTokenAt(core::Millis now) {
  if (rate_.per_second <= 0) return now;
  Refill(now);
  if (tokens_ >= 1.0) return now;
  const double wait_ms = (1.0 - tokens_) * 1000.0 / rate_.per_second;
  return std::max(now, refilled_at_) + static_cast<core::Millis>(std::ceil(wait_ms));
}

int EndpointLimiter::Reserve(int n, core::Millis now) {
  int taken = 0;
  while (taken < n && TryAcquire(now).admitted()) ++taken;
  return taken;
}

void EndpointLimiter::UseReservation(core::Millis reserved_at, core::Millis now) {
  if (rate_.per_second <= 0) return;
  if (static_cast<double>(now - reserved_at) * rate_.per_second <= 1000.0) return;
  // The token taken then is forfeit (the bucket has refilled meanwhile, up to the burst); one
  // is taken now, if need be on credit (below 0), which the next refills pay back.
  Refill(now);
  tokens_ -= 1.0;
}

void EndpointLimiter::CancelReservations(int n, core::Millis now) {
  if (n <= 0) return;
  in_flight_ = std::max(0, in_flight_ - n);
  if (rate_.per_second <= 0) return;
  Refill(now);
  tokens_ = std::min<double>(rate_.burst, tokens_ + n);
}

void EndpointLimiter::Update(RateLimit rate, int max_in_flight, core::Millis now) {
  Refill(now);
  rate_ = Normalise(rate);
  max_in_flight_ = max_in_flight;
  tokens_ = std::min<double>(tokens_, rate_.burst);
  refilled_at_ = std::max(refilled_at_, now);
}

}  // namespace madeira::delivery
