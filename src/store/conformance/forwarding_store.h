// For tests: a Store that hands every call to another one, so a test overrides only the calls
// whose behaviour it stages (another process's changes, a refusal) and keeps the rest real.
#pragma once

#include "store/store.h"

namespace madeira::store::testing {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store& inner) : inner_(inner) {}

  void Submit(std::vector<core::TaskSpec> tasks, Millis now,
              Callback<std::vector<SubmitOutcome>> done) override {
    inner_.Submit(std::move(tasks), now, std::move(done));
  }
  void SubmitValidated(std::vector<core::TaskSpec> tasks, Millis now, std::string schemas_version,
                       Callback<std::vector<SubmitOutcome>> done) override {
    inner_.SubmitValidated(std::move(tasks), now, std::move(schemas_version), std::move(done));
  }
  void Lease(LeaseRequest request, Callback<LeaseBatch> done) override {
    inner_.Lease(std::move(request), std::move(done));
  }
  void Ack(AckRequest request, Callback<AttemptReport> done) override {
    inner_.Ack(std::move(request), std::move(done));
  }
  void AckBatch(std::vector<AckRequest> requests,
                std::vector<Callback<AttemptReport>> done) override {
    inner_.AckBatch(std::move(requests), std::move(done));
  }
  void Fail(FailRequest request, RetryDecider decide, Callback<AttemptReport> done) override {
    inner_.Fail(std::move(request), std::move(decide), std::move(done));
  }
  void Extend(ExtendRequest request, Callback<Millis> done) override {
    inner_.Extend(std::move(request), std::move(done));
  }
  void ExpireLeases(Millis now, RetryDecider decide,
                    Callback<std::vector<AttemptReport>> done) override {
    inner_.ExpireLeases(now, std::move(decide), std::move(done));
  }
  void PromoteDue(Millis now, Callback<std::vector<std::string>> done) override {
    inner_.PromoteDue(now, std::move(done));
  }
  void NextWakeup(Callback<std::optional<Millis>> done) override {
    inner_.NextWakeup(std::move(done));
  }
  void Cancel(std::string task_id, Millis now, Callback<core::Task> done) override {
    inner_.Cancel(std::move(task_id), now, std::move(done));
  }
  void Replay(DeadSelector selector, ReplayEdits edits, ReplayCheck check, Millis now,
              Callback<std::vector<core::Task>> done) override {
    inner_.Replay(std::move(selector), std::move(edits), std::move(check), now, std::move(done));
  }
  void CancelDead(DeadSelector selector, Millis now, Callback<int64_t> done) override {
    inner_.CancelDead(std::move(selector), now, std::move(done));
  }
  void Get(std::string task_id, Callback<core::Task> done) override {
    inner_.Get(std::move(task_id), std::move(done));
  }
  void Attempts(std::string task_id, Callback<std::vector<core::Attempt>> done) override {
    inner_.Attempts(std::move(task_id), std::move(done));
  }
  void Search(SearchQuery query, Callback<SearchPage> done) override {
    inner_.Search(std::move(query), std::move(done));
  }
  void Depths(Callback<std::vector<DepthRow>> done) override { inner_.Depths(std::move(done)); }
  void PutSchema(SchemaRecord schema, Callback<Unit> done) override {
    inner_.PutSchema(std::move(schema), std::move(done));
  }
  void GetSchema(std::string task_type, int version, Callback<SchemaRecord> done) override {
    inner_.GetSchema(std::move(task_type), version, std::move(done));
  }
  void ListSchemas(Callback<std::vector<SchemaRecord>> done) override {
    inner_.ListSchemas(std::move(done));
  }
  void ListSchemaSet(Callback<SchemaSet> done) override { inner_.ListSchemaSet(std::move(done)); }
  void PutEndpoint(EndpointRecord endpoint, Callback<Unit> done) override {
    inner_.PutEndpoint(std::move(endpoint), std::move(done));
  }
  void DeleteEndpoint(std::string endpoint_id, Callback<Unit> done) override {
    inner_.DeleteEndpoint(std::move(endpoint_id), std::move(done));
  }
  void GetEndpoint(std::string endpoint_id, Callback<EndpointRecord> done) override {
    inner_.GetEndpoint(std::move(endpoint_id), std::move(done));
  }
  void ListEndpoints(Callback<std::vector<EndpointRecord>> done) override {
    inner_.ListEndpoints(std::move(done));
  }
  void SubmitEvent(EventRecord event, std::vector<NewDelivery> deliveries, Millis now,
                   Callback<EventSubmitOutcome> done) override {
    inner_.SubmitEvent(std::move(event), std::move(deliveries), now, std::move(done));
  }
  void AddDeliveries(std::string source, std::string event_id, std::vector<NewDelivery> deliveries,
                     Millis now, Callback<StoredEvent> done) override {
    inner_.AddDeliveries(std::move(source), std::move(event_id), std::move(deliveries), now,
                         std::move(done));
  }
  void GetEvent(std::string event_id, std::optional<std::string> source,
                Callback<StoredEvent> done) override {
    inner_.GetEvent(std::move(event_id), std::move(source), std::move(done));
  }
  void Ping(Callback<Unit> done) override { inner_.Ping(std::move(done)); }
  bool SharesRateLimits() const override { return inner_.SharesRateLimits(); }
  void TakeTokens(TokenRequest request, Callback<TokenGrant> done) override {
    inner_.TakeTokens(std::move(request), std::move(done));
  }
  void SetReadyHandler(ReadyHandler handler) override {
    inner_.SetReadyHandler(std::move(handler));
  }
  void SetDueHandler(DueHandler handler) override { inner_.SetDueHandler(std::move(handler)); }
  bool WakesOwnSubmits() const override { return inner_.WakesOwnSubmits(); }
  bool SharedByProcesses() const override { return inner_.SharedByProcesses(); }
  void SetChangeHandler(ChangeHandler handler) override {
    inner_.SetChangeHandler(std::move(handler));
  }
  void Close() override { inner_.Close(); }

 protected:
  Store& inner() { return inner_; }

 private:
  Store& inner_;
};

}  // namespace madeira::store::testing
