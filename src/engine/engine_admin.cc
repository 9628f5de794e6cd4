// Operator work: dead-letter replay, schemas, gauges.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/json/serialize.hpp>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace madeira::engine {

using core::ErrorCode;
using core::MakeError;
using core::Task;
using core::TaskStatus;

// ---- dead letters ----

void Engine::Impl::Replay(store::DeadSelector selector, store::ReplayEdits edits,
                          Callback<std::vector<Task>> done) {
  if (edits.payload) {
    auto payload = core::ParseJson(*edits.payload);
    if (!payload || !payload->is_object()) {
      return done(MakeError(ErrorCode::kInvalidField, "payload must be a JSON object", "payload"));
    }
    if (core::JsonDepth(*payload) > config_.limits.max_depth) {
      return done(MakeError(ErrorCode::kPayloadTooDeep, "payload nests too deep", "payload"));
    }
    if (edits.payload->size() > config_.limits.max_payload_bytes) {
      return done(MakeError(ErrorCode::kPayloadTooLarge, "payload is too large", "payload"));
    }
  }
  store::ReplayCheck check = [self = shared_from_this()](
                                 const Task& task, const store::ReplayEdits& e) -> Result<Unit> {
    const int version = e.payload_version.value_or(task.spec.payload_version);
    auto payload = core::ParseJson(e.payload.value_or(task.spec.payload));
    if (!payload) return payload.error();
    if (auto ok = self->schemas_.Validate(task.spec.task_type, version, *payload); !ok) {
      return ok.error();
    }
    return Unit{};
  };
  store_.Replay(std::move(selector), std::move(edits), std::move(check), clock_.Now(),
                [self = shared_from_this(), done](Result<std::vector<Task>> replayed) {
                  if (!replayed) return done(replayed.error());
                  std::map<std::string, int> ready;
                  for (const auto& t : *replayed) ++ready[t.spec.queue];
                  if (!ready.empty()) self->waiters_.Wake(ready);
                  done(std::move(replayed));
                });
}

// ---- schemas ----

void Engine::Impl::PutSchema(std::string task_type, int version, boost::json::value schema,
                             Callback<Unit> done) {
  SchemaRegistry scratch;  // compile first: an invalid schema must change nothing
  if (auto ok = scratch.Put(task_type, version, schema); !ok) return done(ok.error());
  store::SchemaRecord record{task_type, version, boost::json::serialize(schema), clock_.Now()};
  store_.PutSchema(std::move(record), [self = shared_from_this(), task_type, version,
                                       schema = std::move(schema), done](Result<Unit> stored) {
    if (!stored) return done(stored.error());
    {
      std::lock_guard lock(self->schema_text_mu_);
      (void)self->schemas_.Put(task_type, version, schema);
      self->schema_text_[{task_type, version}] = boost::json::serialize(schema);
    }
    done(Unit{});
  });
}

// ---- gauges ----

void Engine::Impl::RefreshGauges(Callback<Unit> done) {
  store_.Depths([self = shared_from_this(), done](Result<std::vector<store::DepthRow>> rows) {
    if (!rows) return done(rows.error());
    std::lock_guard lock(self->gauges_mu_);
    std::set<core::Labels> seen;
    for (const auto& row : *rows) {
      core::Labels labels{{"queue", row.queue}, {"state", std::string(TaskStatusName(row.state))}};
      self->metrics_.Set(metric::kQueueDepth, labels, static_cast<double>(row.count));
      seen.insert(labels);
    }
    for (const auto& old : self->depth_series_) {
      if (!seen.count(old)) self->metrics_.Set(metric::kQueueDepth, old, 0);
    }
    self->depth_series_.insert(seen.begin(), seen.end());
    done(Unit{});
  });
}

}  // namespace madeira::engine
