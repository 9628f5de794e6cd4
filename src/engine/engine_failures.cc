// After a failed attempt: retry decisions, expiry of leases, the due-time timer.
#include <algorithm>
#include <boost/asio/post.hpp>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace madeira::engine {

using core::ErrorCode;
using core::MakeError;
using core::Task;
using core::TaskStatus;

// After RunDueWork failed (the store was away), when to try again.
constexpr Millis kDueWorkRetryMs = 1000;

// ---- failures and retries ----

std::shared_ptr<const core::RetryPolicy> Engine::Impl::PolicyFor(const Task& task) const {
  {
    std::lock_guard lock(policies_mu_);
    if (auto it = queue_policies_.find(task.spec.queue); it != queue_policies_.end()) {
      return it->second;
    }
  }
  // The configured policies live as long as the engine: alias them without owning.
  auto borrow = [](const core::RetryPolicy& p) {
    return std::shared_ptr<const core::RetryPolicy>(std::shared_ptr<void>(), &p);
  };
  if (auto it = config_.retry_by_type.find(task.spec.task_type);
      it != config_.retry_by_type.end()) {
    return borrow(it->second);
  }
  if (auto it = config_.retry_by_queue.find(task.spec.queue); it != config_.retry_by_queue.end()) {
    return borrow(it->second);
  }
  return borrow(config_.default_retry);
}

store::RetryDecider Engine::Impl::MakeDecider(Millis now) {
  return [self = shared_from_this(), now](const Task& task, const core::Failure& failure,
                                          int fast_in_flight) {
    core::RetryState state;
    state.retry_count = task.retry_count;
    state.max_retries = task.spec.max_retries;
    state.fast_retries_used = task.fast_retries_used;
    state.fast_in_flight_for_type = fast_in_flight;
    return core::DecideRetry(*self->PolicyFor(task), state, failure, now, self->random_);
  };
}

void Engine::Impl::OnAttemptFailed(const store::AttemptReport& report, Millis now,
                                   core::AttemptOutcome outcome) {
  const auto& spec = report.task.spec;
  const auto& decision = report.decision;
  const std::string outcome_name(core::AttemptOutcomeName(outcome));
  metrics_.Inc(metric::kOutcomes, {{"task_type", spec.task_type}, {"outcome", outcome_name}});
  metrics_.Observe(
      metric::kTaskDuration, {{"task_type", spec.task_type}, {"outcome", outcome_name}},
      static_cast<double>(std::max<Millis>(0, now - report.attempt_started_at)) / 1000.0);
  switch (decision.next) {
    case TaskStatus::kDead:
      metrics_.Inc(metric::kDeadLetters, {{"queue", spec.queue}, {"task_type", spec.task_type}});
      core::Log(core::LogLevel::kWarn, "task dead",
                {{"task_id", spec.task_id}, {"task_type", spec.task_type}}, spec.trace_id);
      break;
    case TaskStatus::kPending:
      metrics_.Inc(metric::kRetries, {{"task_type", spec.task_type}, {"tier", "fast"}});
      WakeQueue(spec.queue);
      break;
    default:
      metrics_.Inc(metric::kRetries, {{"task_type", spec.task_type}, {"tier", "backoff"}});
      ArmNoLaterThan(decision.due);
      break;
  }
  if (spec.idempotency_key && decision.next != TaskStatus::kPending) WakeQueue(spec.queue);
}

void Engine::Impl::Fail(FailParams params, Callback<FailResult> done) {
  store::FailRequest request;
  request.lease_id = std::move(params.lease_id);
  request.failure.outcome = core::AttemptOutcome::kFailed;
  request.failure.mode = params.retry;
  request.failure.retry_after = params.retry_after_ms;
  request.failure.retry_after_is_floor = params.retry_after_is_floor;
  request.failure.error = std::move(params.error);
  request.detail = std::move(params.detail);
  request.now = clock_.Now();
  const Millis now = request.now;
  store_.Fail(std::move(request), MakeDecider(now),
              [self = shared_from_this(), now, done](Result<store::AttemptReport> report) {
                if (!report) return done(report.error());
                self->OnAttemptFailed(*report, now, core::AttemptOutcome::kFailed);
                FailResult result{report->decision.next, std::nullopt};
                if (report->decision.next != TaskStatus::kDead) {
                  result.next_attempt_at = report->decision.due;
                }
                done(result);
              });
}

// ---- time-driven work ----

void Engine::Impl::RunDueWork(Callback<Unit> done) {
  const Millis now = clock_.Now();
  store_.PromoteDue(now, [self = shared_from_this()](Result<std::vector<std::string>> queues) {
    if (!queues || queues->empty()) return;
    std::map<std::string, int> ready;
    for (const auto& q : *queues) ++ready[q];
    self->waiters_.Wake(ready);
  });
  store_.ExpireLeases(
      now, MakeDecider(now),
      [self = shared_from_this(), now, done](Result<std::vector<store::AttemptReport>> expired) {
        if (expired) {
          for (const auto& report : *expired) {
            self->OnAttemptFailed(report, now, core::AttemptOutcome::kLeaseExpired);
          }
        }
        self->store_.NextWakeup([self, done](Result<std::optional<Millis>> next) {
          if (next && *next) self->ArmNoLaterThan(**next);
          if (!next) return done(next.error());
          done(Unit{});
        });
      });
}

void Engine::Impl::ArmNoLaterThan(Millis due) {
  if (!config_.run_timers) return;
  {
    std::lock_guard lock(timer_mu_);
    if (due >= armed_for_) return;
    armed_for_ = due;
  }
  asio::post(strand_, [self = shared_from_this(), due] {
    if (self->stopped_) return;
    {
      std::lock_guard lock(self->timer_mu_);
      if (self->armed_for_ != due) return;  // a sooner arm superseded this one
    }
    const Millis delay =
        std::clamp<Millis>(due - self->clock_.Now(), 0, self->config_.max_timer_interval);
    self->timer_.expires_after(std::chrono::milliseconds(delay));
    self->timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->OnTimer();
    });
  });
}

void Engine::Impl::OnTimer() {
  {
    std::lock_guard lock(timer_mu_);
    armed_for_ = std::numeric_limits<Millis>::max();
  }
  RunDueWork([self = shared_from_this()](Result<Unit> r) {
    if (r) return;
    core::Log(core::LogLevel::kError, "due work failed", {{"error", r.error().message}});
    // The store is away (it says when work is due next only once it is back): try again soon,
    // so promotions and lease expiry resume by themselves.
    self->ArmNoLaterThan(self->clock_.Now() + kDueWorkRetryMs);
  });
}

}  // namespace madeira::engine
