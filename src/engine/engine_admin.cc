// Operator work: dead-letter replay, gauges.
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
  auto replay = [self = shared_from_this(), selector = std::move(selector),
                 edits = std::move(edits), check = std::move(check), done]() mutable {
    self->store_.Replay(std::move(selector), std::move(edits), std::move(check), self->clock_.Now(),
                        [self, done](Result<std::vector<Task>> replayed) {
                          if (!replayed) return done(replayed.error());
                          std::map<std::string, int> ready;
                          for (const auto& t : *replayed) ++ready[t.spec.queue];
                          if (!ready.empty()) self->waiters_.Wake(ready);
                          done(std::move(replayed));
                        });
  };
  if (!store_.SharedByProcesses()) return replay();
  // The check holds the payloads to this process's schemas: read them first, for those another
  // process has put since.
  ReadSchemas([replay = std::move(replay), done](Result<Unit> read) mutable {
    if (!read) return done(read.error());
    replay();
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
