#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "store/conformance/store_conformance.h"
#include "store/conformance/sync.h"

namespace madeira::store {
namespace {

std::unique_ptr<Store> OpenForTest(const std::string& dir) {
  auto store = OpenSqliteStore(dir);
  if (!store) {
    ADD_FAILURE() << "open " << dir << ": " << store.error().message;
    return nullptr;
  }
  return std::move(*store);
}

}  // namespace

namespace testing {
INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
                         ::testing::Values(StoreFactory{"sqlite", OpenForTest}), StoreFactoryName);
}  // namespace testing

namespace {

TEST(SqliteStore, KeepsOneFileUnderTheDataDirInWalMode) {
  auto dir = std::filesystem::temp_directory_path() / "madeira_sqlite_layout" / "nested";
  std::filesystem::remove_all(dir.parent_path());
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir / "madeira.db"));
  EXPECT_TRUE(std::filesystem::exists(dir / "madeira.db-wal"));
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir.parent_path());
}

// Runs SQL on the store's file directly (the store must be closed).
void RawExec(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(handle);
}

// Turns a current file back into a v3 one (before tasks named their owner).
constexpr const char* kUndoV4 = "ALTER TABLE tasks DROP COLUMN owner; PRAGMA user_version = 3;";
// Turns a current file back into a v2 one (before endpoints and events).
constexpr const char* kUndoV3 =
    "ALTER TABLE tasks DROP COLUMN owner;"
    "DROP TABLE event_deliveries; DROP TABLE events; DROP TABLE endpoints;"
    "PRAGMA user_version = 2;";

// The one task the sqlite-only cases below submit.
core::TaskSpec OneTask() {
  core::TaskSpec spec;
  spec.task_id = "a";
  spec.task_type = "t";
  spec.queue = "q";
  spec.payload = "{}";
  spec.schedule_time = testing::kT0;
  spec.content_hash = "h";
  return spec;
}

// A fresh data dir `name` under the temp dir whose file holds `spec` (submitted at kT0), closed
// again: what an older Madeira left, once a test has undone the later migrations in it.
std::filesystem::path DataDirHolding(const std::string& name, const core::TaskSpec& spec) {
  auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  auto store = OpenForTest(dir.string());
  if (store == nullptr) return dir;  // OpenForTest has failed the test
  EXPECT_TRUE((testing::Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store->Submit({spec}, testing::kT0, done); })));
  store->Close();
  return dir;
}

// A v1 file (open attempt rows, lease ids without a seq, the lease_id index) whose task was
// running when Madeira was upgraded: after the migration the old lease still acks, and the
// attempt log shows the attempt open, then finished, with its worker.
TEST(SqliteStore, MigratesAV1FileWithARunningTask) {
  using testing::Await;
  using testing::kT0;
  auto dir = DataDirHolding("madeira_sqlite_migrate_v1", OneTask());
  const std::string legacy_lease = "0123456789abcdef0123456789abcdef";
  RawExec(dir / "madeira.db",
          std::string(kUndoV3) + "UPDATE tasks SET status = 'running', lease_id = '" +
              legacy_lease + "', fencing_token = 1, attempts = 1, attempt_started_at = " +
              std::to_string(kT0) + ", lease_deadline = " + std::to_string(kT0 + 60'000) +
              " WHERE task_id = 'a';"
              "INSERT INTO attempts(task_seq, attempt, worker_id, started_at) "
              "SELECT seq, 1, 'old-worker', " +
              std::to_string(kT0) +
              " FROM tasks WHERE task_id = 'a';"
              "UPDATE queue_counts SET status = 'running' WHERE queue = 'q' AND status = "
              "'pending';"
              "ALTER TABLE tasks DROP COLUMN attempt_worker;"
              "CREATE UNIQUE INDEX tasks_lease ON tasks(lease_id) WHERE lease_id IS NOT NULL;"
              "PRAGMA user_version = 1;");
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  auto attempts = Await<std::vector<core::Attempt>>([&](auto done) { store->Attempts("a", done); });
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].worker_id, "old-worker");
  EXPECT_EQ((*attempts)[0].started_at, kT0);
  EXPECT_FALSE((*attempts)[0].finished_at.has_value());
  AckRequest ack;
  ack.lease_id = legacy_lease;
  ack.now = kT0 + 5;
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store->Ack(ack, done); }));
  attempts = Await<std::vector<core::Attempt>>([&](auto done) { store->Attempts("a", done); });
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].worker_id, "old-worker");
  EXPECT_EQ((*attempts)[0].finished_at, kT0 + 5);
  EXPECT_EQ((*attempts)[0].outcome, core::AttemptOutcome::kSucceeded);
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir);
}

// A v3 file's tasks have no owner: admins see them; new ones keep the name they are given.
TEST(SqliteStore, MigratesAV3FileToOwnedTasks) {
  using testing::Await;
  using testing::kT0;
  auto dir = DataDirHolding("madeira_sqlite_migrate_v3", OneTask());
  RawExec(dir / "madeira.db", kUndoV4);
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  auto old = Await<core::Task>([&](auto done) { store->Get("a", done); });
  ASSERT_TRUE(old);
  EXPECT_EQ(old->spec.owner, "");  // submitted before tasks had one: seen only by admins
  core::TaskSpec owned = OneTask();
  owned.task_id = "b";
  owned.owner = "orders";
  ASSERT_TRUE(
      (Await<std::vector<SubmitOutcome>>([&](auto done) { store->Submit({owned}, kT0, done); })));
  EXPECT_EQ(Await<core::Task>([&](auto done) { store->Get("b", done); }).value().spec.owner,
            "orders");
  store->Close();
  std::filesystem::remove_all(dir);
}

// A v2 file keeps its tasks through the migration and then takes endpoints and events, whose
// deliveries queue behind the tasks it already had.
TEST(SqliteStore, MigratesAV2FileToWebhooks) {
  using testing::Await;
  using testing::kT0;
  core::TaskSpec old_task = OneTask();
  old_task.queue = "webhook:ep_1";
  auto dir = DataDirHolding("madeira_sqlite_migrate_v2", old_task);
  RawExec(dir / "madeira.db", kUndoV3);
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Await<core::Task>([&](auto done) { store->Get("a", done); }).value().status,
            core::TaskStatus::kPending);
  ASSERT_TRUE(Await<Unit>([&](auto done) {
    store->PutEndpoint({"ep_1", R"({"url":"https://example.com"})", kT0, kT0}, done);
  }));
  NewDelivery delivery{"ep_1", OneTask()};
  delivery.task.task_id = "d1";
  delivery.task.queue = "webhook:ep_1";
  EventRecord event{"shop", "evt_1", "order.paid", "{}", "trace", std::nullopt, kT0 + 1};
  auto outcome = Await<EventSubmitOutcome>(
      [&](auto done) { store->SubmitEvent(event, {delivery}, kT0 + 1, done); });
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->duplicate);
  LeaseRequest req;
  req.worker_id = "w";
  req.queues = {"webhook:ep_1"};
  req.max_tasks = 10;
  req.now = kT0 + 1;
  auto batch = Await<LeaseBatch>([&](auto done) { store->Lease(req, done); });
  ASSERT_TRUE(batch);
  EXPECT_EQ(testing::LeasedIds(*batch), (std::vector<std::string>{"a", "d1"}));
  auto stored =
      Await<StoredEvent>([&](auto done) { store->GetEvent("evt_1", std::nullopt, done); });
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->deliveries.size(), 1u);
  EXPECT_EQ(stored->deliveries[0].status, core::TaskStatus::kRunning);
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir);
}

// A lease id names its task, but only the whole id fences: a forged id with the right seq and
// a wrong token is lost, and so is any id after the attempt ended.
TEST(SqliteStore, LeaseIdsFenceOnTheWholeId) {
  using testing::Await;
  using testing::kT0;
  auto dir = std::filesystem::temp_directory_path() / "madeira_sqlite_lease_ids";
  std::filesystem::remove_all(dir);
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  core::TaskSpec spec = OneTask();
  ASSERT_TRUE(
      (Await<std::vector<SubmitOutcome>>([&](auto done) { store->Submit({spec}, kT0, done); })));
  LeaseRequest req;
  req.worker_id = "w";
  req.queues = {"q"};
  req.now = kT0;
  auto batch = Await<LeaseBatch>([&](auto done) { store->Lease(req, done); });
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->leases.size(), 1u);
  const std::string id = batch->leases[0].lease_id;
  auto ack = [&](const std::string& lease_id) {
    AckRequest a;
    a.lease_id = lease_id;
    a.now = kT0 + 1;
    return Await<AttemptReport>([&](auto done) { store->Ack(a, done); });
  };
  std::string forged = id;
  forged[0] = forged[0] == '0' ? '1' : '0';
  for (const std::string& bad : {forged, std::string("-1"), std::string("x-"), std::string("")}) {
    auto r = ack(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, core::ErrorCode::kLeaseLost) << bad;
  }
  EXPECT_TRUE(ack(id));
  EXPECT_EQ(ack(id).error().code, core::ErrorCode::kLeaseLost);
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir);
}

// A lease answers with the task as its UPDATE left the row (built without reading it back), so
// it must match what a read of the row returns; a second lease counts on from the stored values.
TEST(SqliteStore, ALeaseShowsTheRowAsStored) {
  using testing::Await;
  using testing::kT0;
  auto dir = std::filesystem::temp_directory_path() / "madeira_sqlite_lease_row";
  std::filesystem::remove_all(dir);
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  core::TaskSpec spec = OneTask();
  spec.timeout_ms = 5'000;
  spec.idempotency_key = "k";
  ASSERT_TRUE(
      (Await<std::vector<SubmitOutcome>>([&](auto done) { store->Submit({spec}, kT0, done); })));
  auto lease = [&](Millis now, std::optional<Millis> lease_ms) {
    LeaseRequest request;
    request.worker_id = "w";
    request.queues = {"q"};
    request.now = now;
    request.lease_ms = lease_ms;
    return Await<LeaseBatch>([&](auto done) { store->Lease(request, done); });
  };
  for (int round = 1; round <= 2; ++round) {
    const Millis now = kT0 + round * 10'000;
    auto batch =
        lease(now, round == 1 ? std::optional<Millis>(99'000) : std::optional<Millis>(700));
    ASSERT_TRUE(batch);
    ASSERT_EQ(batch->leases.size(), 1u);
    const Lease& l = batch->leases[0];
    EXPECT_EQ(l.fencing_token, round);
    EXPECT_EQ(l.deadline, now + (round == 1 ? 5'000 : 700));
    auto stored = Await<core::Task>([&](auto done) { store->Get("a", done); });
    ASSERT_TRUE(stored);
    EXPECT_EQ(l.task.status, core::TaskStatus::kRunning);
    EXPECT_EQ(stored->status, l.task.status);
    EXPECT_EQ(stored->attempts, round);
    EXPECT_EQ(l.task.attempts, stored->attempts);
    EXPECT_EQ(l.task.updated_at, stored->updated_at);
    EXPECT_EQ(l.task.next_attempt_at, stored->next_attempt_at);
    EXPECT_EQ(l.task.created_at, stored->created_at);
    EXPECT_EQ(l.task.seq, stored->seq);
    EXPECT_EQ(l.task.spec.task_id, stored->spec.task_id);
    EXPECT_EQ(l.task.spec.payload, stored->spec.payload);
    EXPECT_EQ(l.task.spec.idempotency_key, stored->spec.idempotency_key);
    if (round == 1) {  // a failed attempt taking a fast retry: pending again at once
      FailRequest fail;
      fail.lease_id = l.lease_id;
      fail.now = now + 1;
      fail.failure.outcome = core::AttemptOutcome::kFailed;
      ASSERT_TRUE(Await<AttemptReport>([&](auto done) {
        store->Fail(
            fail,
            [](const core::Task&, const core::Failure&, int) {
              return core::RetryDecision{core::TaskStatus::kPending, kT0 + 10'001};
            },
            done);
      }));
    }
  }
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir);
}

TEST(SqliteStore, UnopenableDirIsUnavailable) {
  auto result = OpenSqliteStore("/proc/madeira-cannot-create");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, core::ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace madeira::store
