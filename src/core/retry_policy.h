// The two retry tiers of SPEC §2 as pure maths: what happens to a task after a failed attempt.
#pragma once

#include <optional>

#include "core/clock.h"
#include "core/random.h"
#include "core/task.h"

namespace madeira::core {

struct RetryPolicy {
  int fast_retries = 2;
  int fast_retry_concurrency = 5;
  Millis initial = 30'000;
  double multiplier = 2.0;
  Millis max = 30 * 60'000;
  double jitter = 0.2;

  static RetryPolicy TaskDefaults() { return {}; }
  static RetryPolicy WebhookDefaults() {
    RetryPolicy p;
    p.initial = 60'000;
    return p;
  }

  // Back-off before back-off retry n (1-based): min(initial * multiplier^(n-1), max) ± jitter.
  Millis BackoffDelay(int n, Random& random) const;
};

enum class RetryMode { kAuto, kFast, kBackoff, kNever };
std::optional<RetryMode> ParseRetryMode(std::string_view s);

// What went wrong in one attempt.
struct Failure {
  AttemptOutcome outcome = AttemptOutcome::kFailed;  // kFailed or kLeaseExpired
  RetryMode mode = RetryMode::kAuto;
  std::optional<Millis> retry_after;  // replaces the computed delay...
  bool retry_after_is_floor = false;  // ...or, for a receiver's Retry-After, bounds it below
  std::string error;                  // JSON object {"type","message","stack"?}
};

// The facts about the task the decision needs.
struct RetryState {
  int retry_count = 0;
  int max_retries = kDefaultMaxRetries;
  int fast_retries_used = 0;
  int fast_in_flight_for_type = 0;  // other tasks of this task_type now in fast retry
};

struct RetryDecision {
  TaskStatus next = TaskStatus::kDead;  // kPending (fast retry), kRetrying or kDead
  Millis due = 0;                       // when it becomes ready again (unused when dead)
  bool fast = false;
};

// Fast tier: for mode kFast, or a lease expiry under kAuto, while fast retries remain and
// fewer than fast_retry_concurrency tasks of the type are in fast retry. Else back-off.
// retry_count == max_retries, or kNever, is dead.
RetryDecision DecideRetry(const RetryPolicy& policy, const RetryState& state,
                          const Failure& failure, Millis now, Random& random);

}  // namespace madeira::core
