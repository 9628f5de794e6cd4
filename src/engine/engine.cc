#include "engine/engine.h"

#include "engine/engine_impl.h"

namespace madeira::engine {

using core::ErrorCode;
using core::MakeError;
using core::Task;

// ---- Engine: thin forwarding to Impl ----

Engine::Engine(asio::any_io_executor executor, store::Store& store, const core::Clock& clock,
               core::Random& random, core::Metrics& metrics, EngineConfig config)
    : impl_(std::make_shared<Impl>(executor, store, clock, random, metrics, std::move(config))) {}

Engine::~Engine() { impl_->Stop(); }

const EngineConfig& Engine::config() const { return impl_->config(); }

void Engine::Start(Callback<Unit> done) { impl_->Start(std::move(done)); }
void Engine::Stop() { impl_->Stop(); }

void Engine::Submit(std::vector<boost::json::value> envelopes, std::string owner,
                    Callback<std::vector<Result<store::SubmitOutcome>>> done) {
  impl_->Submit(std::move(envelopes), std::move(owner), std::move(done));
}

void Engine::Lease(LeaseParams params, Callback<std::vector<store::Lease>> done) {
  impl_->Lease(std::move(params), std::move(done));
}

void Engine::Ack(std::string lease_id, std::optional<std::string> result, Callback<Unit> done) {
  impl_->Ack(std::move(lease_id), std::move(result), {}, std::move(done));
}

void Engine::Ack(std::string lease_id, std::optional<std::string> result,
                 store::AttemptDetail detail, Callback<Unit> done) {
  impl_->Ack(std::move(lease_id), std::move(result), std::move(detail), std::move(done));
}

void Engine::AckBatch(std::vector<AckParams> acks, std::vector<Callback<Unit>> done) {
  impl_->AckBatch(std::move(acks), std::move(done));
}

void Engine::Fail(FailParams params, Callback<FailResult> done) {
  impl_->Fail(std::move(params), std::move(done));
}

void Engine::Extend(std::string lease_id, Millis extend_ms, Callback<Millis> done) {
  impl_->store().Extend({std::move(lease_id), extend_ms, impl_->Now()}, std::move(done));
}

void Engine::Heartbeat(WorkerHeartbeat heartbeat) { impl_->Heartbeat(heartbeat); }

void Engine::Cancel(std::string task_id, Callback<Task> done) {
  impl_->store().Cancel(std::move(task_id), impl_->Now(), std::move(done));
}

void Engine::Replay(std::string task_id, store::ReplayEdits edits, Callback<Task> done) {
  store::DeadSelector selector;
  selector.task_ids.push_back(std::move(task_id));
  impl_->Replay(std::move(selector), std::move(edits), [done](Result<std::vector<Task>> replayed) {
    if (!replayed) return done(replayed.error());
    if (replayed->empty()) {
      return done(MakeError(ErrorCode::kTaskNotDead, "task is not dead"));
    }
    done(std::move(replayed->front()));
  });
}

void Engine::ReplayDead(store::DeadSelector selector, store::ReplayEdits edits,
                        Callback<int64_t> done) {
  impl_->Replay(std::move(selector), std::move(edits), [done](Result<std::vector<Task>> replayed) {
    if (!replayed) return done(replayed.error());
    done(static_cast<int64_t>(replayed->size()));
  });
}

void Engine::CancelDead(store::DeadSelector selector, Callback<int64_t> done) {
  impl_->store().CancelDead(std::move(selector), impl_->Now(), std::move(done));
}

void Engine::SubmitEvent(store::EventRecord event, std::vector<store::NewDelivery> deliveries,
                         Callback<store::EventSubmitOutcome> done) {
  impl_->SubmitEvent(std::move(event), std::move(deliveries), std::move(done));
}

void Engine::AddDeliveries(std::string source, std::string event_id,
                           std::vector<store::NewDelivery> deliveries,
                           Callback<store::StoredEvent> done) {
  impl_->AddDeliveries(std::move(source), std::move(event_id), std::move(deliveries),
                       std::move(done));
}

void Engine::SetQueuePolicy(const std::string& queue, std::optional<core::RetryPolicy> policy) {
  impl_->SetQueuePolicy(queue, std::move(policy));
}

void Engine::Get(std::string task_id, Callback<Task> done) {
  impl_->store().Get(std::move(task_id), std::move(done));
}

void Engine::Attempts(std::string task_id, Callback<std::vector<core::Attempt>> done) {
  impl_->store().Attempts(std::move(task_id), std::move(done));
}

void Engine::Search(store::SearchQuery query, Callback<store::SearchPage> done) {
  impl_->store().Search(std::move(query), std::move(done));
}

void Engine::PutSchema(std::string task_type, int version, boost::json::value schema,
                       Callback<Unit> done) {
  impl_->PutSchema(std::move(task_type), version, std::move(schema), std::move(done));
}

void Engine::GetSchema(std::string task_type, int version, Callback<store::SchemaRecord> done) {
  impl_->store().GetSchema(std::move(task_type), version, std::move(done));
}

void Engine::ListSchemas(Callback<std::vector<store::SchemaRecord>> done) {
  impl_->store().ListSchemas(std::move(done));
}

void Engine::RefreshGauges(Callback<Unit> done) { impl_->RefreshGauges(std::move(done)); }
void Engine::Ping(Callback<Unit> done) { impl_->store().Ping(std::move(done)); }
void Engine::RunDueWork(Callback<Unit> done) { impl_->RunDueWork(std::move(done)); }

}  // namespace madeira::engine
