// Per-endpoint admission: a token bucket for `rate_limit` and a cap on requests in flight
// (SPEC §3 endpoints), so a recovering receiver is not hammered. Time is passed in.
#pragma once

#include "core/clock.h"

namespace madeira::delivery {

struct RateLimit {
  double per_second = 0;  // <= 0: no rate limit
  int burst = 1;          // bucket size; values below 1 act as 1
};

struct Admission {
  enum class Kind { kAdmitted, kRateLimited, kInFlightFull };
  Kind kind = Kind::kAdmitted;
  core::Millis not_before = 0;  // kRateLimited: when the next token will be there

  bool admitted() const { return kind == Kind::kAdmitted; }
};

// One endpoint's limiter. Not thread-safe: owned by whoever dispatches to the endpoint.
class EndpointLimiter {
 public:
  // max_in_flight <= 0: no cap. The bucket starts full.
  EndpointLimiter(RateLimit rate, int max_in_flight, core::Millis now);

  // On kAdmitted a token is taken and the attempt counts as in flight until Release().
  Admission TryAcquire(core::Millis now);
  void Release();

  // An endpoint update keeps the tokens already earned (capped to the new burst).
  void Update(RateLimit rate, int max_in_flight, core::Millis now);

  int in_flight() const { return in_flight_; }

 private:
  void Refill(core::Millis now);

  RateLimit rate_;
  int max_in_flight_;
  double tokens_;
  core::Millis refilled_at_;
  int in_flight_ = 0;
};

}  // namespace madeira::delivery
