// Submit and hand out: validation, leases, long-polls, acks.
#include <algorithm>
#include <boost/asio/post.hpp>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace madeira::engine {

using core::ErrorCode;
using core::MakeError;
using core::Task;
using core::TaskStatus;

// A submit whose schemas another process changed meanwhile is validated again this many times.
constexpr int kStaleSchemaRetries = 3;

void Engine::Impl::Start(Callback<Unit> done) {
  // Tasks another process (sharing the store) made ready wake the long-polls parked here.
  store_.SetReadyHandler([weak = weak_from_this()](const std::map<std::string, int>& ready) {
    if (auto self = weak.lock()) self->waiters_.Wake(ready);
  });
  // Work another process made due (a delayed submit, a lease it handed out) is this one's to
  // promote or expire when it runs the timers.
  store_.SetDueHandler([weak = weak_from_this()](Millis due) {
    if (auto self = weak.lock()) self->ArmNoLaterThan(due);
  });
  ReadSchemas([self = shared_from_this(), done](Result<Unit> read) {
    if (!read) return done(read.error());
    if (self->store_.SharedByProcesses()) self->SyncSchemasLater();
    if (!self->config_.run_timers) return done(Unit{});
    self->RunDueWork(done);
  });
}

// ---- submit ----

void Engine::Impl::Submit(std::vector<boost::json::value> envelopes, std::string owner,
                          Callback<std::vector<Result<store::SubmitOutcome>>> done) {
  Submit(std::move(envelopes), std::move(owner), kStaleSchemaRetries, std::move(done));
}

void Engine::Impl::Submit(std::vector<boost::json::value> envelopes, std::string owner,
                          int schema_retries,
                          Callback<std::vector<Result<store::SubmitOutcome>>> done) {
  const Millis now = clock_.Now();
  // Before validating: a set loaded meanwhile is newer than the version the store checks.
  std::string schemas_version = SchemasVersion();
  auto slots = std::make_shared<std::vector<SubmitSlot>>(envelopes.size());
  std::vector<core::TaskSpec> specs;
  std::vector<size_t> positions;
  specs.reserve(envelopes.size());  // a batch's specs are not moved again as the vector grows
  positions.reserve(envelopes.size());
  for (size_t i = 0; i < envelopes.size(); ++i) {
    auto spec = core::ParseEnvelope(envelopes[i], config_.limits, now, random_);
    if (!spec) {
      (*slots)[i] = spec.error();
      continue;
    }
    const auto& payload = envelopes[i].as_object().at("payload");
    if (auto valid = schemas_.Validate(spec->task_type, spec->payload_version, payload); !valid) {
      (*slots)[i] = valid.error();
      continue;
    }
    spec->owner = owner;
    specs.push_back(std::move(*spec));
    positions.push_back(i);
  }
  auto finish = [slots, done] {
    std::vector<Result<store::SubmitOutcome>> out;
    out.reserve(slots->size());
    for (auto& slot : *slots) out.push_back(std::move(*slot));
    done(std::move(out));
  };
  if (specs.empty()) return finish();

  std::vector<CreatedTask> meta;
  meta.reserve(specs.size());
  for (const auto& s : specs) meta.push_back({s.queue, s.task_type, s.schedule_time});
  // Kept for validating again, on a store that checks the version (shared by processes) only.
  std::shared_ptr<std::vector<boost::json::value>> kept;
  if (!schemas_version.empty()) {
    kept = std::make_shared<std::vector<boost::json::value>>(std::move(envelopes));
  }

  store_.SubmitValidated(
      std::move(specs), now, std::move(schemas_version),
      [self = shared_from_this(), slots, positions = std::move(positions), meta = std::move(meta),
       now, finish, kept, owner = std::move(owner),
       schema_retries](Result<std::vector<store::SubmitOutcome>> outcomes) mutable {
        std::vector<CreatedTask> created;
        created.reserve(positions.size());
        std::vector<size_t> stale;  // validated against schemas another process has changed
        for (size_t k = 0; k < positions.size(); ++k) {
          auto& slot = (*slots)[positions[k]];
          if (!outcomes) {
            slot = outcomes.error();
            continue;
          }
          auto& outcome = (*outcomes)[k];
          if (outcome.kind == store::SubmitKind::kConflict) {
            slot = MakeError(ErrorCode::kTaskIdConflict,
                             "a task with this task_id exists with different content", "task_id");
            continue;
          }
          if (outcome.kind == store::SubmitKind::kStaleSchemas) {
            stale.push_back(positions[k]);
            continue;
          }
          // Moved, not copied: this runs on the completion thread, once per task.
          if (outcome.kind == store::SubmitKind::kCreated) created.push_back(std::move(meta[k]));
          slot = std::move(outcome);
        }
        self->OnCreated(created, now);
        if (stale.empty()) return finish();
        self->SubmitAgain(std::move(stale), std::move(kept), std::move(owner), schema_retries,
                          slots, std::move(finish));
      });
}

void Engine::Impl::SubmitAgain(std::vector<size_t> stale,
                               std::shared_ptr<std::vector<boost::json::value>> envelopes,
                               std::string owner, int schema_retries,
                               std::shared_ptr<std::vector<SubmitSlot>> slots,
                               std::function<void()> finish) {
  if (schema_retries == 0 || !envelopes) {
    for (size_t i : stale) {
      (*slots)[i] = MakeError(ErrorCode::kUnavailable,
                              "the payload schemas kept changing while this was submitted");
    }
    return finish();
  }
  std::vector<boost::json::value> again;
  again.reserve(stale.size());
  for (size_t i : stale) again.push_back(std::move((*envelopes)[i]));
  ReadSchemas([self = shared_from_this(), stale = std::move(stale), again = std::move(again),
               owner = std::move(owner), schema_retries, slots,
               finish = std::move(finish)](Result<Unit>) mutable {
    // A failed read leaves the set as it was: the store answers the submit (stale again, or
    // unavailable) and the retries stay bounded.
    self->Submit(std::move(again), std::move(owner), schema_retries - 1,
                 [stale = std::move(stale), slots, finish = std::move(finish)](
                     Result<std::vector<Result<store::SubmitOutcome>>> outcomes) {
                   for (size_t k = 0; k < stale.size(); ++k) {
                     if (outcomes) {
                       (*slots)[stale[k]] = std::move((*outcomes)[k]);
                     } else {
                       (*slots)[stale[k]] = outcomes.error();
                     }
                   }
                   finish();
                 });
  });
}

void Engine::Impl::OnCreated(const std::vector<CreatedTask>& created, Millis now) {
  std::map<std::string, int> ready;
  Millis earliest = std::numeric_limits<Millis>::max();
  // One Inc per (queue, task_type) of the batch, not per task: each takes the registry's lock.
  std::map<std::pair<std::string_view, std::string_view>, int> submitted;
  for (const CreatedTask& t : created) {
    ++submitted[{t.queue, t.task_type}];
    if (t.due > now) {
      earliest = std::min(earliest, t.due);
    } else {
      ++ready[t.queue];
    }
  }
  for (const auto& [key, count] : submitted) {
    metrics_.Inc(metric::kSubmitted,
                 {{"queue", std::string(key.first)}, {"task_type", std::string(key.second)}},
                 count);
  }
  if (!ready.empty() && !store_.WakesOwnSubmits()) waiters_.Wake(ready);
  if (earliest != std::numeric_limits<Millis>::max()) ArmNoLaterThan(earliest);
}

// ---- built-in deliveries ----

std::vector<Engine::Impl::CreatedTask> Engine::Impl::CreatedFrom(
    const std::vector<store::NewDelivery>& deliveries) {
  std::vector<CreatedTask> out;
  out.reserve(deliveries.size());
  for (const auto& d : deliveries) {
    out.push_back({d.task.queue, d.task.task_type, d.task.schedule_time});
  }
  return out;
}

void Engine::Impl::SubmitEvent(store::EventRecord event, std::vector<store::NewDelivery> deliveries,
                               Callback<store::EventSubmitOutcome> done) {
  const Millis now = clock_.Now();
  auto created = CreatedFrom(deliveries);
  store_.SubmitEvent(std::move(event), std::move(deliveries), now,
                     [self = shared_from_this(), created = std::move(created), now,
                      done](Result<store::EventSubmitOutcome> outcome) {
                       if (outcome && !outcome->duplicate) self->OnCreated(created, now);
                       done(std::move(outcome));
                     });
}

void Engine::Impl::AddDeliveries(std::string source, std::string event_id,
                                 std::vector<store::NewDelivery> deliveries,
                                 Callback<store::StoredEvent> done) {
  const Millis now = clock_.Now();
  auto created = CreatedFrom(deliveries);
  store_.AddDeliveries(std::move(source), std::move(event_id), std::move(deliveries), now,
                       [self = shared_from_this(), created = std::move(created), now,
                        done](Result<store::StoredEvent> stored) {
                         if (stored) self->OnCreated(created, now);
                         done(std::move(stored));
                       });
}

// ---- leases ----

void Engine::Impl::TryLease(std::shared_ptr<const LeaseParams> params, SteadyTime deadline,
                            Callback<std::vector<store::Lease>> done) {
  const uint64_t generation = waiters_.Generation();
  store::LeaseRequest request;
  request.worker_id = params->worker_id;
  request.queues = params->queues;
  request.task_types = params->task_types;
  request.max_tasks = params->max_tasks;
  request.lease_ms = params->lease_ms;
  request.now = clock_.Now();
  request.idempotency_ttl = config_.idempotency_ttl;
  store_.Lease(std::move(request), [self = shared_from_this(), params, deadline, generation,
                                    done](Result<store::LeaseBatch> batch) {
    if (!batch) return done(batch.error());
    if (!batch->leases.empty()) {
      self->OnLeased(batch->leases, self->clock_.Now());
      return done(std::move(batch->leases));
    }
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero() || self->stopped_) {
      return done(std::vector<store::Lease>{});
    }
    bool parked =
        self->waiters_.Park(generation, params->queues, !params->task_types.empty(),
                            params->max_tasks, left, [self, params, deadline, done](bool woken) {
                              if (!woken) return done(std::vector<store::Lease>{});
                              self->TryLease(params, deadline, done);
                            });
    // Work became ready while the store answered: ask again now instead of parking.
    if (!parked) self->TryLease(params, deadline, done);
  });
}

void Engine::Impl::OnLeased(const std::vector<store::Lease>& leases, Millis now) {
  Millis earliest_deadline = std::numeric_limits<Millis>::max();
  for (const auto& lease : leases) {
    earliest_deadline = std::min(earliest_deadline, lease.deadline);
    metrics_.Observe(metric::kDispatchLatency, {},
                     static_cast<double>(std::max<Millis>(0, now - lease.ready_at)) / 1000.0);
  }
  ArmNoLaterThan(earliest_deadline);
}

void Engine::Impl::Ack(std::string lease_id, std::optional<std::string> result,
                       store::AttemptDetail detail, Callback<Unit> done) {
  const Millis now = clock_.Now();
  store_.Ack(AckRequestFor(std::move(lease_id), std::move(result), std::move(detail), now),
             OnAcked(now, std::move(done)));
}

void Engine::Impl::AckBatch(std::vector<AckParams> acks, std::vector<Callback<Unit>> done) {
  const Millis now = clock_.Now();
  std::vector<store::AckRequest> requests;
  std::vector<Callback<store::AttemptReport>> answers;
  requests.reserve(acks.size());
  answers.reserve(acks.size());
  for (size_t i = 0; i < acks.size(); ++i) {
    requests.push_back(
        AckRequestFor(std::move(acks[i].lease_id), std::move(acks[i].result), {}, now));
    answers.push_back(OnAcked(now, std::move(done[i])));
  }
  store_.AckBatch(std::move(requests), std::move(answers));
}

store::AckRequest Engine::Impl::AckRequestFor(std::string lease_id,
                                              std::optional<std::string> result,
                                              store::AttemptDetail detail, Millis now) const {
  store::AckRequest request;
  request.lease_id = std::move(lease_id);
  request.result = std::move(result);
  request.detail = std::move(detail);
  request.now = now;
  request.idempotency_ttl = config_.idempotency_ttl;
  return request;
}

Callback<store::AttemptReport> Engine::Impl::OnAcked(Millis now, Callback<Unit> done) {
  return [self = shared_from_this(), now,
          done = std::move(done)](Result<store::AttemptReport> report) {
    if (!report) return done(report.error());
    const auto& spec = report->task.spec;
    self->metrics_.Inc(metric::kOutcomes,
                       {{"task_type", spec.task_type}, {"outcome", "succeeded"}});
    self->metrics_.Observe(metric::kTaskDuration,
                           {{"task_type", spec.task_type}, {"outcome", "succeeded"}},
                           static_cast<double>(now - report->attempt_started_at) / 1000.0);
    // Siblings with the same idempotency_key may now complete as deduplicated.
    if (spec.idempotency_key) self->WakeQueue(spec.queue);
    done(Unit{});
  };
}

}  // namespace madeira::engine
