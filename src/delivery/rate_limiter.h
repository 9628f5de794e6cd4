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
  // How many TryAcquire calls would be admitted now (free in-flight slots and whole tokens);
  // kUnbounded when neither limit is set. Lets a caller fetch no more work than it may send.
  int Available(core::Millis now);
  // When Available will next be above 0 because of the bucket (now when it already is).
  core::Millis NextTokenAt(core::Millis now);
  static constexpr int kUnbounded = 1 << 30;

  // Takes up to n admissions now (a token and an in-flight slot each) for attempts whose work
  // is fetched asynchronously, so the time the fetch takes is not lost from a full bucket
  // (with burst 1 that loss would be paid on every send). Returns how many were taken.
  int Reserve(int n, core::Millis now);
  // A reserved admission taken at `reserved_at` is used now. One that waited longer than a
  // token's worth (a fetch that parked on an empty queue) pays a token again from the bucket
  // as it is now, so the sends after a quiet spell still fit in `burst`.
  void UseReservation(core::Millis reserved_at, core::Millis now);
  // Hands back n reserved admissions that found no work (slots, and tokens up to the burst).
  void CancelReservations(int n, core::Millis now);

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
