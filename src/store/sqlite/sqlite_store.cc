#include "store/sqlite/sqlite_store.h"

#include <filesystem>
#include <functional>
#include <utility>

#include "core/random.h"
#include "store/sqlite/checkpointer.h"
#include "store/sqlite/commit_queue.h"
#include "store/sqlite/counters.h"
#include "store/sqlite/db.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/task_table.h"

namespace madeira::store {

namespace {

using sqlite::DbError;

core::Error Unavailable(std::string message) {
  return core::MakeError(core::ErrorCode::kUnavailable, std::move(message));
}

template <typename T>
class TypedOp final : public sqlite::StoreOp {
 public:
  TypedOp(bool writes, std::function<Result<T>()> body, Callback<T> done)
      : StoreOp(writes), body_(std::move(body)), done_(std::move(done)) {}

  bool Run() override {
    try {
      result_.emplace(body_());
    } catch (const DbError& e) {
      result_.emplace(boost::system::in_place_error, Unavailable(e.what()));
    } catch (const std::exception& e) {
      // A throwing RetryDecider/ReplayCheck, or bad_alloc: this operation fails alone.
      result_.emplace(boost::system::in_place_error,
                      core::MakeError(core::ErrorCode::kInternal, e.what()));
    }
    return result_->has_value();
  }
  void Abort(const core::Error& error) override {
    result_.emplace(boost::system::in_place_error, error);
  }
  void Deliver() override { done_(std::move(*result_)); }

 private:
  std::function<Result<T>()> body_;
  Callback<T> done_;
  std::optional<Result<T>> result_;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<sqlite::Db> db, std::unique_ptr<sqlite::Checkpointer> checkpointer,
              std::unique_ptr<sqlite::TaskCounters> counters)
      : db_(std::move(db)),
        checkpointer_(std::move(checkpointer)),
        counters_(std::move(counters)),
        table_(*db_, *counters_, random_),
        queue_(*db_, *counters_) {}
  ~SqliteStore() override { Close(); }

  void Submit(std::vector<core::TaskSpec> tasks, Millis now,
              Callback<std::vector<SubmitOutcome>> done) override {
    Write<std::vector<SubmitOutcome>>(std::move(done), [this, tasks = std::move(tasks), now] {
      return table_.Submit(tasks, now);
    });
  }
  void Lease(LeaseRequest request, Callback<LeaseBatch> done) override {
    Write<LeaseBatch>(std::move(done),
                      [this, request = std::move(request)] { return table_.Lease(request); });
  }
  void Ack(AckRequest request, Callback<AttemptReport> done) override {
    Write<AttemptReport>(std::move(done),
                         [this, request = std::move(request)] { return table_.Ack(request); });
  }
  void Fail(FailRequest request, RetryDecider decide, Callback<AttemptReport> done) override {
    Write<AttemptReport>(std::move(done),
                         [this, request = std::move(request), decide = std::move(decide)] {
                           return table_.Fail(request, decide);
                         });
  }
  void Extend(ExtendRequest request, Callback<Millis> done) override {
    Write<Millis>(std::move(done),
                  [this, request = std::move(request)] { return table_.Extend(request); });
  }
  void ExpireLeases(Millis now, RetryDecider decide,
                    Callback<std::vector<AttemptReport>> done) override {
    Write<std::vector<AttemptReport>>(std::move(done), [this, now, decide = std::move(decide)] {
      return table_.ExpireLeases(now, decide);
    });
  }
  void PromoteDue(Millis now, Callback<std::vector<std::string>> done) override {
    Write<std::vector<std::string>>(std::move(done),
                                    [this, now] { return table_.PromoteDue(now); });
  }
  void NextWakeup(Callback<std::optional<Millis>> done) override {
    Read<std::optional<Millis>>(std::move(done), [this] { return table_.NextWakeup(); });
  }
  void Cancel(std::string task_id, Millis now, Callback<core::Task> done) override {
    Write<core::Task>(std::move(done), [this, task_id = std::move(task_id), now] {
      return table_.Cancel(task_id, now);
    });
  }
  void Replay(DeadSelector selector, ReplayEdits edits, ReplayCheck check, Millis now,
              Callback<std::vector<core::Task>> done) override {
    Write<std::vector<core::Task>>(
        std::move(done),
        [this, selector = std::move(selector), edits = std::move(edits), check = std::move(check),
         now] { return table_.Replay(selector, edits, check, now); });
  }
  void CancelDead(DeadSelector selector, Millis now, Callback<int64_t> done) override {
    Write<int64_t>(std::move(done), [this, selector = std::move(selector), now] {
      return table_.CancelDead(selector, now);
    });
  }
  void Get(std::string task_id, Callback<core::Task> done) override {
    Read<core::Task>(std::move(done),
                     [this, task_id = std::move(task_id)] { return table_.Get(task_id); });
  }
  void Attempts(std::string task_id, Callback<std::vector<core::Attempt>> done) override {
    Read<std::vector<core::Attempt>>(
        std::move(done), [this, task_id = std::move(task_id)] { return table_.Attempts(task_id); });
  }
  void Search(SearchQuery query, Callback<SearchPage> done) override {
    Read<SearchPage>(std::move(done),
                     [this, query = std::move(query)] { return table_.Search(query); });
  }
  void Depths(Callback<std::vector<DepthRow>> done) override {
    Read<std::vector<DepthRow>>(std::move(done), [this] { return table_.Depths(); });
  }
  void PutSchema(SchemaRecord schema, Callback<Unit> done) override {
    Write<Unit>(std::move(done),
                [this, schema = std::move(schema)] { return table_.PutSchema(schema); });
  }
  void GetSchema(std::string task_type, int version, Callback<SchemaRecord> done) override {
    Read<SchemaRecord>(std::move(done), [this, task_type = std::move(task_type), version] {
      return table_.GetSchema(task_type, version);
    });
  }
  void ListSchemas(Callback<std::vector<SchemaRecord>> done) override {
    Read<std::vector<SchemaRecord>>(std::move(done), [this] { return table_.ListSchemas(); });
  }
  void PutEndpoint(EndpointRecord endpoint, Callback<Unit> done) override {
    Write<Unit>(std::move(done),
                [this, endpoint = std::move(endpoint)] { return table_.PutEndpoint(endpoint); });
  }
  void DeleteEndpoint(std::string endpoint_id, Callback<Unit> done) override {
    Write<Unit>(std::move(done), [this, endpoint_id = std::move(endpoint_id)] {
      return table_.DeleteEndpoint(endpoint_id);
    });
  }
  void GetEndpoint(std::string endpoint_id, Callback<EndpointRecord> done) override {
    Read<EndpointRecord>(std::move(done), [this, endpoint_id = std::move(endpoint_id)] {
      return table_.GetEndpoint(endpoint_id);
    });
  }
  void ListEndpoints(Callback<std::vector<EndpointRecord>> done) override {
    Read<std::vector<EndpointRecord>>(std::move(done), [this] { return table_.ListEndpoints(); });
  }
  void SubmitEvent(EventRecord event, std::vector<NewDelivery> deliveries, Millis now,
                   Callback<EventSubmitOutcome> done) override {
    Write<EventSubmitOutcome>(
        std::move(done), [this, event = std::move(event), deliveries = std::move(deliveries), now] {
          return table_.SubmitEvent(event, deliveries, now);
        });
  }
  void AddDeliveries(std::string source, std::string event_id, std::vector<NewDelivery> deliveries,
                     Millis now, Callback<StoredEvent> done) override {
    Write<StoredEvent>(std::move(done),
                       [this, source = std::move(source), event_id = std::move(event_id),
                        deliveries = std::move(deliveries),
                        now] { return table_.AddDeliveries(source, event_id, deliveries, now); });
  }
  void GetEvent(std::string event_id, std::optional<std::string> source,
                Callback<StoredEvent> done) override {
    Read<StoredEvent>(std::move(done),
                      [this, event_id = std::move(event_id), source = std::move(source)] {
                        return table_.GetEvent(event_id, source);
                      });
  }
  void Ping(Callback<Unit> done) override {
    Read<Unit>(std::move(done), [this]() -> Result<Unit> {
      db_->QueryInt("SELECT 1");
      return Unit{};
    });
  }
  void Close() override { queue_.Close(); }

 private:
  template <typename T, typename Body>
  void Write(Callback<T> done, Body body) {
    Enqueue<T>(true, std::move(done), std::move(body));
  }
  template <typename T, typename Body>
  void Read(Callback<T> done, Body body) {
    Enqueue<T>(false, std::move(done), std::move(body));
  }
  template <typename T, typename Body>
  void Enqueue(bool writes, Callback<T> done, Body body) {
    auto rejected =
        queue_.Push(std::make_unique<TypedOp<T>>(writes, std::move(body), std::move(done)));
    if (rejected) {
      rejected->Abort(Unavailable("sqlite store is closed"));
      rejected->Deliver();
    }
  }

  std::unique_ptr<sqlite::Db> db_;
  // Stopped (by its destructor) after the store thread has joined, before db_ closes.
  std::unique_ptr<sqlite::Checkpointer> checkpointer_;
  std::unique_ptr<sqlite::TaskCounters> counters_;
  core::SystemRandom random_;  // lease ids
  sqlite::TaskTable table_;
  sqlite::CommitQueue queue_;  // last: its thread stops before the members it uses go
};

}  // namespace

core::Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& data_dir,
                                                     SqliteOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Unavailable("cannot create data dir " + data_dir + ": " + ec.message());
  try {
    std::string path = (std::filesystem::path(data_dir) / "madeira.db").string();
    auto db = std::make_unique<sqlite::Db>(path);
    sqlite::PrepareDatabase(*db, options.cache_kib);
    auto counters = std::make_unique<sqlite::TaskCounters>();
    counters->Load(*db);
    auto checkpointer = std::make_unique<sqlite::Checkpointer>(path, *db);
    return std::unique_ptr<Store>(
        new SqliteStore(std::move(db), std::move(checkpointer), std::move(counters)));
  } catch (const DbError& e) {
    return Unavailable(std::string("sqlite store: ") + e.what());
  }
}

}  // namespace madeira::store
