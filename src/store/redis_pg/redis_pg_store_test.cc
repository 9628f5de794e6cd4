// The conformance suite on redis-pg, plus what only this backend has: start-up checks.
// Needs a Redis (AOF, appendfsync always) and a PostgreSQL: MADEIRA_TEST_REDIS_URL and
// MADEIRA_TEST_DATABASE_URL, or the env file ctest's redis_pg_services fixture writes (see
// CMakeLists.txt and scripts/test-services.sh). Without them every case here fails, naming them.
#include "store/redis_pg/redis_pg_store.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "store/conformance/store_conformance.h"
#include "store/conformance/sync.h"
#include "store/redis_pg/backend.h"
#include "store/redis_pg/ops.h"
#include "store/redis_pg/pg_conn.h"
#include "store/redis_pg/redis_conn.h"
#include "store/redis_pg/task_codec.h"
#include "store/redis_pg/test_services_env.h"

namespace madeira::store {
namespace {

using redis_pg::test::Env;

// The namespace of a test directory: the same dir (a reopen) finds the same keys and tables.
std::string NamespaceFor(const std::string& dir) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : dir) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "t%016llx", static_cast<unsigned long long>(h));
  return buf;
}

RedisPgOptions TestOptions(const std::string& name_space) {
  RedisPgOptions o;
  o.redis_url = Env("MADEIRA_TEST_REDIS_URL");
  o.database_url = Env("MADEIRA_TEST_DATABASE_URL");
  o.name_space = name_space;
  return o;
}

bool HaveServices() {
  if (!Env("MADEIRA_TEST_REDIS_URL").empty() && !Env("MADEIRA_TEST_DATABASE_URL").empty()) {
    return true;
  }
  ADD_FAILURE() << "MADEIRA_TEST_REDIS_URL and MADEIRA_TEST_DATABASE_URL are not set: run the "
                   "tests through ctest (`make unit` / `make test`; a fixture starts Redis and "
                   "PostgreSQL), or `scripts/test-services.sh run DIR build/store_test`";
  return false;
}

// A connection to the test Redis for looking under the store (keys, TTLs, CLIENT LIST).
redis_pg::RedisConn AdminRedis() {
  return redis_pg::RedisConn(redis_pg::ParseRedisUrl(Env("MADEIRA_TEST_REDIS_URL")).value(), 5'000);
}

// Closes the connections CLIENT SETNAME named `name` from the Redis side; how many there were.
int KillClientsNamed(redis_pg::RedisConn& admin, const std::string& name) {
  const std::string clients = admin.Command({"CLIENT", "LIST"}).str;
  int killed = 0;
  for (size_t at = clients.find(" name=" + name + " "); at != std::string::npos;
       at = clients.find(" name=" + name + " ", at + 1)) {
    size_t line = clients.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    std::string id = clients.substr(line + 3, clients.find(' ', line) - line - 3);  // "id=N"
    killed += admin.Command({"CLIENT", "KILL", "ID", id}).integer == 1 ? 1 : 0;
  }
  return killed;
}

// Rewrites a live task's hash as Madeira wrote it before its fields were packed into "st": a
// field each, beside the spec.
void UnpackTaskHash(redis_pg::RedisConn& admin, const std::string& key) {
  redis_pg::Fields live{{"st", admin.Command({"HGET", key, "st"}).str}};
  redis_pg::UnpackLive(live);
  redis_pg::RedisCommand named{"HSET", key};
  for (const auto& [name, value] : live) {
    named.push_back(name);
    named.push_back(value);
  }
  admin.Command({"HDEL", key, "st"});
  admin.Command(named);
}

// A task moved out of its queue's hashes (P{q}:st, P{q}:spec) into a hash of its own holding its
// st and spec, where a Madeira from before the queue hashes kept every task.
void MoveToOwnHash(redis_pg::RedisConn& admin, const std::string& prefix, const std::string& queue,
                   const std::string& id) {
  const std::string st_key = prefix + "{" + queue + "}:st";
  const std::string spec_key = prefix + "{" + queue + "}:spec";
  const redis_pg::RedisReply st = admin.Command({"HGET", st_key, id});
  const redis_pg::RedisReply spec = admin.Command({"HGET", spec_key, id});
  ASSERT_FALSE(st.str.empty()) << id << " is not in " << st_key;
  ASSERT_FALSE(spec.str.empty()) << id << " is not in " << spec_key;
  admin.Command({"HSET", prefix + "{" + queue + "}:task:" + id, "st", st.str, "spec", spec.str});
  admin.Command({"HDEL", st_key, id});
  admin.Command({"HDEL", spec_key, id});
}

// Clients blocked in a command (a blocking XREADGROUP, say), from INFO clients.
int64_t BlockedClients(redis_pg::RedisConn& admin) {
  const std::string info = admin.Command({"INFO", "clients"}).str;
  const std::string key = "blocked_clients:";
  const size_t at = info.find(key);
  return at == std::string::npos ? -1 : std::stoll(info.substr(at + key.size()));
}

std::unique_ptr<Store> OpenForTest(const std::string& dir) {
  if (!HaveServices()) return nullptr;
  auto store = OpenRedisPgStore(TestOptions(NamespaceFor(dir)));
  if (!store) {
    ADD_FAILURE() << "open redis-pg for " << dir << ": " << store.error().message;
    return nullptr;
  }
  return std::move(*store);
}

}  // namespace

namespace testing {
INSTANTIATE_TEST_SUITE_P(RedisPg, StoreConformance,
                         ::testing::Values(StoreFactory{"redis_pg", OpenForTest}),
                         StoreFactoryName);
}  // namespace testing

namespace {

using testing::Await;
using testing::kT0;

TEST(RedisPgStore, BadOrUnreachableUrlsNameTheService) {
  ASSERT_TRUE(HaveServices());
  RedisPgOptions o = TestOptions("t_bad_urls");
  o.redis_url = "http://127.0.0.1:1";
  auto bad = OpenRedisPgStore(o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "redis_url");

  o.redis_url = "redis://127.0.0.1:1";  // nothing listens on port 1
  auto unreachable = OpenRedisPgStore(o);
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code, core::ErrorCode::kUnavailable);
  EXPECT_EQ(unreachable.error().message.rfind("redis:", 0), 0u) << unreachable.error().message;

  o = TestOptions("t_bad_urls");
  o.database_url = "postgresql://madeira@127.0.0.1:1/madeira";
  auto no_pg = OpenRedisPgStore(o);
  ASSERT_FALSE(no_pg);
  EXPECT_EQ(no_pg.error().message.rfind("postgresql:", 0), 0u) << no_pg.error().message;
}

TEST(RedisPgStore, RefusesAPostgresSchemaFromANewerMadeira) {
  ASSERT_TRUE(HaveServices());
  RedisPgOptions o = TestOptions(NamespaceFor("newer-schema-" + std::to_string(::getpid())));
  ASSERT_TRUE(MigrateRedisPgSchema(o));
  {
    redis_pg::PgConn pg(o.database_url, "madeira_" + o.name_space);
    pg.Exec("UPDATE schema_version SET version = " +
            std::to_string(redis_pg::kPgSchemaVersion + 1));
  }
  auto opened = OpenRedisPgStore(o);
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message.find("newer Madeira"), std::string::npos)
      << opened.error().message;
}

// Two stores on one Redis + PostgreSQL (as two processes would be): every task is leased by
// exactly one of them, and each sees the other's writes.
TEST(RedisPgStore, TwoStoresShareTheWorkAndLeaseEachTaskOnce) {
  ASSERT_TRUE(HaveServices());
  const std::string ns = NamespaceFor("shared-" + std::to_string(::getpid()));
  auto a = OpenRedisPgStore(TestOptions(ns));
  auto b = OpenRedisPgStore(TestOptions(ns));
  ASSERT_TRUE(a && b);
  constexpr int kTasks = 400;
  std::vector<core::TaskSpec> specs;
  for (int i = 0; i < kTasks; ++i) {
    core::TaskSpec s;
    s.task_id = "m" + std::to_string(i);
    s.task_type = "t";
    s.queue = "shared";
    s.payload = "{}";
    s.schedule_time = kT0;
    s.content_hash = "h" + std::to_string(i);
    specs.push_back(std::move(s));
  }
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { (*a)->Submit(specs, kT0, done); }));
  auto drain = [&](Store& store, std::vector<std::string>& got) {
    for (;;) {
      LeaseRequest r;
      r.worker_id = "w";
      r.queues = {"shared"};
      r.max_tasks = 7;
      r.now = kT0 + 1;
      auto batch = Await<LeaseBatch>([&](auto done) { store.Lease(r, done); });
      ASSERT_TRUE(batch);
      if (batch->leases.empty()) return;
      for (const auto& l : batch->leases) {
        got.push_back(l.task.spec.task_id);
        AckRequest ack;
        ack.lease_id = l.lease_id;
        ack.now = kT0 + 2;
        ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Ack(ack, done); }));
      }
    }
  };
  std::vector<std::string> got_a;
  std::vector<std::string> got_b;
  std::thread ta([&] { drain(**a, got_a); });
  std::thread tb([&] { drain(**b, got_b); });
  ta.join();
  tb.join();
  std::set<std::string> all(got_a.begin(), got_a.end());
  for (const auto& id : got_b) EXPECT_TRUE(all.insert(id).second) << id << " leased twice";
  EXPECT_EQ(all.size(), static_cast<size_t>(kTasks));
  EXPECT_FALSE(got_a.empty());
  EXPECT_FALSE(got_b.empty());
  // b reads what a finished, from the record.
  auto task = Await<core::Task>([&](auto done) { (*b)->Get(got_a.front(), done); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->status, core::TaskStatus::kSucceeded);
  (*a)->Close();
  (*b)->Close();
}

// Up to max_tasks of queue "q" (TestSpec's), for worker "w".
LeaseRequest LeaseFromQ(int max_tasks) {
  LeaseRequest lease;
  lease.worker_id = "w";
  lease.queues = {"q"};
  lease.max_tasks = max_tasks;
  lease.now = testing::kT0 + 1;
  return lease;
}

// Leases one task of queue "q" and acks it as `ack` says (its lease_id and, when unset, its now
// filled in). The acked task's id; empty, with the failure recorded, when a step fails.
std::string LeaseOneAndAck(Store& store, AckRequest ack = {}) {
  auto batch = testing::Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  if (!batch || batch->leases.size() != 1) {
    ADD_FAILURE() << "lease: " << (batch ? "not one task" : batch.error().message);
    return "";
  }
  ack.lease_id = batch->leases[0].lease_id;
  if (ack.now == 0) ack.now = testing::kT0 + 2;
  auto acked = testing::Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  if (!acked) {
    ADD_FAILURE() << "ack: " << acked.error().message;
    return "";
  }
  return batch->leases[0].task.spec.task_id;
}

// Redis restarted or PostgreSQL killed our backend while the store was idle: the next operations
// run on new connections instead of failing (service resumes by itself).
TEST(RedisPgStore, ResumesAfterTheServersDropItsConnections) {
  ASSERT_TRUE(HaveServices());
  const std::string ns = NamespaceFor("dropped-" + std::to_string(::getpid()));
  auto opened = OpenRedisPgStore(TestOptions(ns));
  ASSERT_TRUE(opened) << opened.error().message;
  Store& store = **opened;
  core::TaskSpec spec;
  spec.task_id = "a";
  spec.task_type = "t";
  spec.queue = "q";
  spec.payload = "{}";
  spec.schedule_time = kT0;
  spec.content_hash = "h";
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); }));
  // A search waits for the recorder's read of the outbox: both its connections are up now.
  ASSERT_TRUE(Await<SearchPage>([&](auto done) { store.Search(SearchQuery{}, done); }));

  const std::string name = "madeira:" + ns;
  redis_pg::RedisConn admin = AdminRedis();
  EXPECT_EQ(KillClientsNamed(admin, name), 2);  // the store thread's and the recorder's
  redis_pg::PgConn pg_admin(Env("MADEIRA_TEST_DATABASE_URL"), "public");
  auto terminated = pg_admin.Exec(
      "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = $1",
      {name});
  EXPECT_EQ(terminated.Rows(), 2);

  auto got = Await<core::Task>([&](auto done) { store.Get("a", done); });
  ASSERT_TRUE(got) << got.error().message;
  // A search waits for the recorder's copy, the first call on its dropped connections: that
  // copy connects again at once rather than fail (which would refuse the submit below).
  SearchQuery q;
  auto page = Await<SearchPage>([&](auto done) { store.Search(q, done); });
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->tasks.size(), 1u);
  // A submit's record goes through a new PostgreSQL session (its record tables and prepared
  // statements made again there) before it is answered, then a lease's and an ack's.
  spec.task_id = "b";
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  bool b_recorded = false;
  auto submitted = Await<std::vector<SubmitOutcome>>([&](auto done) {
    store.Submit({spec}, kT0, [&, done](Result<std::vector<SubmitOutcome>> r) {
      b_recorded = pg.Exec("SELECT 1 FROM tasks WHERE task_id = 'b'", {}).Rows() == 1;
      done(std::move(r));
    });
  });
  ASSERT_TRUE(submitted) << submitted.error().message;
  EXPECT_TRUE(b_recorded) << "answered before its row was committed";
  const std::string acked = LeaseOneAndAck(store);
  ASSERT_FALSE(acked.empty());
  page = Await<SearchPage>([&](auto done) { store.Search(q, done); });
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->tasks.size(), 2u);
  auto recorded = Await<core::Task>([&](auto done) { store.Get(acked, done); });  // from PG
  ASSERT_TRUE(recorded) << recorded.error().message;
  EXPECT_EQ(recorded->status, core::TaskStatus::kSucceeded);
  store.Close();
}

// A private redis-server with the AOF settings the store asks for, in `dir` on `port`.
class PrivateRedis {
 public:
  PrivateRedis() {
    dir_ = std::filesystem::temp_directory_path() /
           ("madeira_redis_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port_ = probe.local_endpoint().port();
  }
  ~PrivateRedis() {
    Kill();
    std::filesystem::remove_all(dir_);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Starts it (on the same dir and port every time) and waits up to 5 s for it to answer.
  bool Start() {
    std::string cmd = "redis-server --bind 127.0.0.1 --port " + std::to_string(port_) + " --dir " +
                      dir_.string() +
                      " --appendonly yes --appendfsync always --save '' --daemonize yes "
                      "--pidfile " +
                      (dir_ / "pid").string() + " --logfile " + (dir_ / "log").string();
    if (std::system(cmd.c_str()) != 0) return false;
    for (int i = 0; i < 50; ++i) {
      try {
        redis_pg::RedisConn c(redis_pg::ParseRedisUrl(url()).value(), 1'000);
        if (c.Command({"PING"}).str == "PONG") return true;
      } catch (const redis_pg::RedisIoError&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // kill -9: whatever Redis acknowledged must be in its AOF already.
  void Kill() {
    std::ifstream in(dir_ / "pid");
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) return;
    ::kill(pid, SIGKILL);
    for (int i = 0; i < 50 && ::kill(pid, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::filesystem::remove(dir_ / "pid");
  }

 private:
  static inline std::atomic<int> counter_{0};
  std::filesystem::path dir_;
  uint16_t port_ = 0;
};

// Accepted means durable: Redis is killed with SIGKILL and started again on its AOF; every
// submit that was answered, and every lease, is still there, and the same store object carries
// on once Redis is back (it answers kUnavailable while Redis is away).
TEST(RedisPgStore, AcceptedWorkSurvivesKill9OfRedisAndTheStoreResumes) {
  ASSERT_TRUE(HaveServices());
  PrivateRedis redis;
  ASSERT_TRUE(redis.Start()) << "could not start redis-server";
  RedisPgOptions o = TestOptions(NamespaceFor("kill9-" + std::to_string(::getpid())));
  o.redis_url = redis.url();
  o.io_timeout = 2'000;
  auto opened = OpenRedisPgStore(o);
  ASSERT_TRUE(opened) << opened.error().message;
  Store& store = **opened;
  std::vector<core::TaskSpec> specs;
  for (int i = 0; i < 50; ++i) {
    core::TaskSpec s;
    s.task_id = "k" + std::to_string(i);
    s.task_type = "t";
    s.queue = "q";
    s.payload = "{}";
    s.schedule_time = kT0;
    s.content_hash = "h";
    specs.push_back(std::move(s));
  }
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit(specs, kT0, done); }));
  LeaseRequest lease;
  lease.worker_id = "w";
  lease.queues = {"q"};
  lease.max_tasks = 10;
  lease.now = kT0;
  auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(lease, done); });
  ASSERT_TRUE(leased);
  ASSERT_EQ(leased->leases.size(), 10u);

  redis.Kill();
  auto away = Await<Unit>([&](auto done) { store.Ping(done); });
  ASSERT_FALSE(away);
  EXPECT_EQ(away.error().code, core::ErrorCode::kUnavailable);
  ASSERT_TRUE(redis.Start());

  auto depths = Await<std::vector<DepthRow>>([&](auto done) { store.Depths(done); });
  ASSERT_TRUE(depths) << depths.error().message;
  std::map<core::TaskStatus, int64_t> by_state;
  for (const DepthRow& r : *depths) by_state[r.state] += r.count;
  EXPECT_EQ(by_state[core::TaskStatus::kPending], 40);
  EXPECT_EQ(by_state[core::TaskStatus::kRunning], 10);
  AckRequest ack;
  ack.lease_id = leased->leases[0].lease_id;
  ack.now = kT0 + 1;
  EXPECT_TRUE(Await<AttemptReport>([&](auto done) { store.Ack(ack, done); }));
  lease.max_tasks = 100;
  auto rest = Await<LeaseBatch>([&](auto done) { store.Lease(lease, done); });
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->leases.size(), 40u);
  store.Close();
}

core::TaskSpec TestSpec(const std::string& id, core::Millis at = testing::kT0) {
  core::TaskSpec s;
  s.task_id = id;
  s.task_type = "t";
  s.queue = "q";
  s.payload = "{}";
  s.schedule_time = at;
  s.content_hash = "h-" + id;
  return s;
}

// Fails `lease_id` with {"type":"boom"} for a fast retry (pending again at once); the task as
// the retry decider saw it goes to `seen`.
core::Result<AttemptReport> FailForAFastRetry(Store& store, const std::string& lease_id,
                                              core::Millis now, core::Task* seen = nullptr) {
  FailRequest fail;
  fail.lease_id = lease_id;
  fail.now = now;
  fail.failure.error = R"({"type":"boom"})";
  return Await<AttemptReport>([&](auto done) {
    store.Fail(
        fail,
        [seen](const core::Task& t, const core::Failure&, int) {
          if (seen != nullptr) *seen = t;
          core::RetryDecision d;
          d.next = core::TaskStatus::kPending;
          d.fast = true;
          return d;
        },
        done);
  });
}

// A schema put through one process changes the set's version for all: a submit through another
// that was validated against the set before is refused as stale and stores nothing, so that
// process validates it again (the engine does); one validated against the current set, or not
// checked, is stored.
TEST(RedisPgStore, ASubmitValidatedAgainstAnOlderSchemaSetIsRefusedAndStoresNothing) {
  ASSERT_TRUE(HaveServices());
  const std::string ns = NamespaceFor("schemas-" + std::to_string(::getpid()));
  auto a = OpenRedisPgStore(TestOptions(ns));
  auto b = OpenRedisPgStore(TestOptions(ns));
  ASSERT_TRUE(a && b);
  auto before = Await<SchemaSet>([&](auto done) { (*b)->ListSchemaSet(done); });
  ASSERT_TRUE(before);
  EXPECT_EQ(before->version, "0");  // nothing put yet
  EXPECT_TRUE(before->schemas.empty());
  SchemaRecord schema{"typed", 1, R"({"type":"object"})", kT0};
  ASSERT_TRUE(Await<Unit>([&](auto done) { (*a)->PutSchema(schema, done); }));
  auto after = Await<SchemaSet>([&](auto done) { (*b)->ListSchemaSet(done); });
  ASSERT_TRUE(after);
  EXPECT_NE(after->version, before->version);
  ASSERT_EQ(after->schemas.size(), 1u);
  EXPECT_EQ(after->schemas[0].schema, schema.schema);
  // Putting the same schema again is a new version too: the version says "changed", not what.
  ASSERT_TRUE(Await<Unit>([&](auto done) { (*a)->PutSchema(schema, done); }));
  auto again = Await<SchemaSet>([&](auto done) { (*a)->ListSchemaSet(done); });
  ASSERT_TRUE(again);
  EXPECT_NE(again->version, after->version);

  auto submit = [&](Store& store, const std::string& id, const std::string& version) {
    auto out = Await<std::vector<SubmitOutcome>>(
        [&](auto done) { store.SubmitValidated({TestSpec(id)}, kT0, version, done); });
    EXPECT_TRUE(out);
    return out && out->size() == 1 ? (*out)[0].kind : SubmitKind::kConflict;
  };
  EXPECT_EQ(submit(**b, "stale", before->version), SubmitKind::kStaleSchemas);
  EXPECT_EQ(submit(**b, "stale-too", after->version), SubmitKind::kStaleSchemas);
  auto missing = Await<core::Task>([&](auto done) { (*a)->Get("stale", done); });
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, core::ErrorCode::kNotFound);
  EXPECT_EQ(submit(**b, "current", again->version), SubmitKind::kCreated);
  EXPECT_EQ(submit(**b, "unchecked", ""), SubmitKind::kCreated);
  // The stale one, validated again and resubmitted, is stored.
  EXPECT_EQ(submit(**b, "stale", again->version), SubmitKind::kCreated);
  auto task = Await<core::Task>([&](auto done) { (*a)->Get("stale", done); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->status, core::TaskStatus::kPending);
  (*a)->Close();
  (*b)->Close();
}

// An event of source "src" received at kT0.
EventRecord TestEvent(const std::string& event_id) {
  EventRecord event;
  event.source = "src";
  event.event_id = event_id;
  event.event_type = "x.y";
  event.payload = "{}";
  event.received_at = kT0;
  return event;
}

// A store on a namespace of its own (`name` and this process), or nullptr after a failure.
std::unique_ptr<Store> OpenOwn(const std::string& name, std::string* name_space = nullptr) {
  if (!HaveServices()) return nullptr;
  const std::string ns = NamespaceFor(name + "-" + std::to_string(::getpid()));
  if (name_space) *name_space = ns;
  auto opened = OpenRedisPgStore(TestOptions(ns));
  if (!opened) {
    ADD_FAILURE() << "open redis-pg: " << opened.error().message;
    return nullptr;
  }
  return std::move(*opened);
}

// A lease id names its task (<random>~<queue>~<task id>), so no key per lease is kept; a lease
// made by an older Madeira (random id only, found through P lease:<id>) can still be acked
// after an upgrade, and only the exact id holding the task is honoured.
TEST(RedisPgStore, AcksLeasesByTheirTaskAndLeasesMadeBeforeThat) {
  std::string ns;
  auto own = OpenOwn("lease-ids", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>([&](auto done) {
    store.Submit({TestSpec("new"), TestSpec("old")}, kT0, done);
  }));
  auto batch = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(2), done); });
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->leases.size(), 2u);
  std::map<std::string, std::string> lease_of;
  for (const auto& l : batch->leases) lease_of[l.task.spec.task_id] = l.lease_id;
  EXPECT_NE(lease_of["new"].find("~q~new"), std::string::npos) << lease_of["new"];

  AckRequest ack;
  ack.now = kT0 + 2;
  ack.lease_id = lease_of["new"];
  AckRequest forged = ack;  // the right task, another random part
  forged.lease_id[0] = forged.lease_id[0] == '0' ? '1' : '0';
  auto refused = Await<AttemptReport>([&](auto done) { store.Ack(forged, done); });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, core::ErrorCode::kLeaseLost);
  auto acked = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_EQ(acked->task.status, core::TaskStatus::kSucceeded);
  EXPECT_FALSE(acked->task.next_attempt_at);

  // "old" as an older Madeira would have leased it.
  const std::string prefix = "madeira:" + ns + ":";
  const std::string old_id = "00112233445566778899aabbccddeeff";
  redis_pg::RedisConn admin = AdminRedis();
  MoveToOwnHash(admin, prefix, "q", "old");
  UnpackTaskHash(admin, prefix + "{q}:task:old");
  admin.Command({"HSET", prefix + "{q}:task:old", "lease", old_id});
  admin.Command({"SET", prefix + "lease:" + old_id, "q\told"});
  ack.lease_id = lease_of["old"];  // superseded by the old-style lease
  auto lost = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().code, core::ErrorCode::kLeaseLost);
  ack.lease_id = old_id;
  auto old_acked = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_TRUE(old_acked) << old_acked.error().message;
  EXPECT_EQ(old_acked->task.spec.task_id, "old");
  EXPECT_EQ(admin.Command({"EXISTS", prefix + "lease:" + old_id}).integer, 0);
  store.Close();
}

// A task hash that a Madeira from before the packed spec wrote (a field per value, zero
// counters present, no spec) is still leased, failed, leased again and acked after an upgrade,
// and recorded whole.
TEST(RedisPgStore, TasksWrittenAFieldPerValueStillWork) {
  std::string ns;
  auto own = OpenOwn("old-layout", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec spec = TestSpec("flat");
  spec.payload = R"({"quote":"\"","accent":"é"})";
  spec.max_retries = 3;
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); }));
  const std::string key = "madeira:" + ns + ":{q}:task:flat";
  redis_pg::RedisConn admin = AdminRedis();
  MoveToOwnHash(admin, "madeira:" + ns + ":", "q", "flat");
  redis_pg::Fields packed = redis_pg::FieldsFromFlat(admin.Command({"HGETALL", key}));
  ASSERT_EQ(packed.at("payload"), spec.payload);
  EXPECT_EQ(admin.Command({"HEXISTS", key, "payload"}).integer, 0);  // it is in the spec
  // Rewritten as the previous layout held it.
  redis_pg::RedisCommand flat{"HSET", key};
  for (const auto& [name, value] : packed) {
    flat.push_back(name);
    flat.push_back(value);
  }
  for (const char* zero : {"retry", "attempts", "dedup", "fastused", "infast", "token"}) {
    flat.push_back(zero);
    flat.push_back("0");
  }
  admin.Command({"DEL", key});
  admin.Command(flat);

  auto first = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(first);
  ASSERT_EQ(first->leases.size(), 1u);
  EXPECT_EQ(first->leases[0].task.spec.payload, spec.payload);
  EXPECT_EQ(first->leases[0].fencing_token, 1);
  core::Task seen;
  auto failed = FailForAFastRetry(store, first->leases[0].lease_id, kT0 + 2, &seen);
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(seen.spec.max_retries, 3);
  EXPECT_EQ(failed->task.status, core::TaskStatus::kPending);
  auto second = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->leases.size(), 1u);
  EXPECT_EQ(second->leases[0].task.attempts, 2);
  EXPECT_EQ(second->leases[0].fencing_token, 2);
  AckRequest ack;
  ack.lease_id = second->leases[0].lease_id;
  ack.now = kT0 + 3;
  auto acked = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_EQ(acked->task.spec.task_id, "flat");
  EXPECT_EQ(acked->task.attempts, 2);
  auto recorded = Await<core::Task>([&](auto done) { store.Get("flat", done); });  // from PG
  ASSERT_TRUE(recorded) << recorded.error().message;
  EXPECT_EQ(recorded->status, core::TaskStatus::kSucceeded);
  EXPECT_EQ(recorded->spec.payload, spec.payload);
  EXPECT_EQ(recorded->attempts, 2);
  store.Close();
}

// A task hash whose spec the previous release wrote (the inside of a JSON array, not msgpack)
// is leased and acked after an upgrade, and recorded whole.
TEST(RedisPgStore, ATaskWhoseSpecIsJsonStillWorks) {
  std::string ns;
  auto own = OpenOwn("json-spec", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec spec = TestSpec("js");
  spec.payload = R"({"quote":"\"","accent":"é"})";
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); }));
  const std::string key = "madeira:" + ns + ":{q}:task:js";
  const std::string sched = std::to_string(kT0);
  redis_pg::RedisConn admin = AdminRedis();
  MoveToOwnHash(admin, "madeira:" + ns + ":", "q", "js");
  ASSERT_NE(admin.Command({"HGET", key, "spec"}).str.front(), '"');  // msgpack now
  const std::string json = R"("id","js","type","t","queue","q","pv","1","payload",)"
                           R"("{\"quote\":\"\\\"\",\"accent\":\"é\"}","sched",")" +
                           sched +
                           R"(","timeout","30000","maxr","5","prio","0","trace","",)"
                           R"("chash","h-js","created",")" +
                           sched + R"(","updated",")" + sched + R"(","next",")" + sched +
                           R"(","ready",")" + sched + R"(","ver","1")";
  admin.Command({"HSET", key, "spec", json});
  ASSERT_EQ(admin.Command({"HGET", key, "spec"}).str, json);

  auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(leased) << leased.error().message;
  ASSERT_EQ(leased->leases.size(), 1u);
  EXPECT_EQ(leased->leases[0].task.spec.payload, spec.payload);
  EXPECT_EQ(leased->leases[0].task.spec.content_hash, "h-js");
  AckRequest ack;
  ack.lease_id = leased->leases[0].lease_id;
  ack.now = kT0 + 3;
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Ack(ack, done); }));
  auto recorded = Await<core::Task>([&](auto done) { store.Get("js", done); });  // from PG
  ASSERT_TRUE(recorded) << recorded.error().message;
  EXPECT_EQ(recorded->status, core::TaskStatus::kSucceeded);
  EXPECT_EQ(recorded->spec.payload, spec.payload);
  store.Close();
}

// A live task's hash is two values, its spec and its packed fields ("st"). One that Madeira
// wrote before it packed them (a field each beside the spec) is promoted, cancelled, leased,
// failed and acked as before, and holds the two values again after its first change.
TEST(RedisPgStore, TasksWrittenBeforeTheirFieldsWerePackedStillWork) {
  std::string ns;
  auto own = OpenOwn("named-fields", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec later = TestSpec("later");
  later.schedule_time = kT0 + 1'000;
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>([&](auto done) {
    store.Submit({TestSpec("work"), TestSpec("drop"), later}, kT0, done);
  }));
  const std::string prefix = "madeira:" + ns + ":{q}:task:";
  redis_pg::RedisConn admin = AdminRedis();
  auto keys = [&](const std::string& id) {
    std::set<std::string> out;
    for (const auto& k : admin.Command({"HKEYS", prefix + id}).elements) out.insert(k.str);
    return out;
  };
  const std::set<std::string> packed = {"spec", "st"};
  for (const char* id : {"work", "drop", "later"}) {
    MoveToOwnHash(admin, "madeira:" + ns + ":", "q", id);
  }
  EXPECT_EQ(keys("work"), packed);
  for (const char* id : {"work", "drop", "later"}) UnpackTaskHash(admin, prefix + id);
  EXPECT_TRUE(keys("work").contains("status"));

  auto promoted =
      Await<std::vector<std::string>>([&](auto done) { store.PromoteDue(kT0 + 1'000, done); });
  ASSERT_TRUE(promoted);
  EXPECT_EQ(keys("later"), packed);
  auto cancelled = Await<core::Task>([&](auto done) { store.Cancel("drop", kT0 + 1, done); });
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_EQ(cancelled->status, core::TaskStatus::kCancelled);
  EXPECT_EQ(admin.Command({"EXISTS", prefix + "drop"}).integer, 0);

  auto first = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(first);
  ASSERT_EQ(first->leases.size(), 1u);
  EXPECT_EQ(first->leases[0].task.spec.task_id, "work");
  EXPECT_EQ(first->leases[0].task.spec.payload, TestSpec("work").payload);
  EXPECT_EQ(first->leases[0].fencing_token, 1);
  EXPECT_EQ(keys("work"), packed);
  auto failed = FailForAFastRetry(store, first->leases[0].lease_id, kT0 + 2);
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(failed->task.status, core::TaskStatus::kPending);
  EXPECT_EQ(failed->task.last_error, R"({"type":"boom"})");
  auto second = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(2), done); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->leases.size(), 2u);  // "work" again, then "later"
  EXPECT_EQ(second->leases[0].task.spec.task_id, "work");
  EXPECT_EQ(second->leases[0].task.attempts, 2);
  EXPECT_EQ(second->leases[0].fencing_token, 2);
  EXPECT_EQ(second->leases[1].task.spec.task_id, "later");
  AckRequest ack;
  ack.lease_id = second->leases[0].lease_id;
  ack.now = kT0 + 3;
  auto acked = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_EQ(acked->task.attempts, 2);
  auto recorded = Await<core::Task>([&](auto done) { store.Get("work", done); });  // from PG
  ASSERT_TRUE(recorded) << recorded.error().message;
  EXPECT_EQ(recorded->status, core::TaskStatus::kSucceeded);
  EXPECT_EQ(recorded->attempts, 2);
  EXPECT_EQ(recorded->last_error, R"({"type":"boom"})");
  store.Close();
}

// The acks of one lease queued together are merged into one script call: only the first
// completes the task; the task is recorded once.
TEST(RedisPgStore, TwoAcksOfOneLeaseQueuedTogetherCompleteItOnce) {
  auto own = OpenOwn("ack-twice");
  ASSERT_TRUE(own);
  Store& store = *own;
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({TestSpec("once")}, kT0, done); }));
  auto batch = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->leases.size(), 1u);
  AckRequest ack;
  ack.lease_id = batch->leases[0].lease_id;
  ack.now = kT0 + 2;
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  int succeeded = 0;
  int lost = 0;
  for (int i = 0; i < 3; ++i) {
    store.Ack(ack, [&](Result<AttemptReport> r) {
      std::lock_guard lock(mu);
      ++answered;
      if (r) ++succeeded;
      if (!r && r.error().code == core::ErrorCode::kLeaseLost) ++lost;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return answered == 3; }));
  }
  EXPECT_EQ(succeeded, 1);
  EXPECT_EQ(lost, 2);
  auto attempts =
      Await<std::vector<core::Attempt>>([&](auto done) { store.Attempts("once", done); });
  ASSERT_TRUE(attempts);
  EXPECT_EQ(attempts->size(), 1u);
  store.Close();
}

// Answers that arrive on the store's threads, counted until `want` are in (or 20 s pass).
template <typename T>
class Answers {
 public:
  explicit Answers(size_t want) : want_(want) {}
  Callback<T> Take() {
    return [this](Result<T> r) {
      std::lock_guard lock(mu_);
      results_.push_back(std::move(r));
      cv_.notify_all();
    };
  }
  std::vector<Result<T>> Wait() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return results_.size() >= want_; });
    return std::move(results_);
  }

 private:
  size_t want_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Result<T>> results_;
};

// A new task is a field of its queue's two hashes; one that an older Madeira made keeps a hash
// of its own. One lease takes both kinds from two queues, acks queued together (with one of a
// lease that does not exist) end them all, and nothing of any is left in Redis.
TEST(RedisPgStore, TasksInTheQueueHashesAndInHashesOfTheirOwnAreLeasedAndAckedTogether) {
  std::string ns;
  auto own = OpenOwn("queue-hashes", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec other = TestSpec("d");
  other.queue = "r";
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>([&](auto done) {
    store.Submit({TestSpec("a"), TestSpec("b"), TestSpec("c"), other}, kT0, done);
  }));
  const std::string prefix = "madeira:" + ns + ":";
  redis_pg::RedisConn admin = AdminRedis();
  EXPECT_EQ(admin.Command({"HLEN", prefix + "{q}:st"}).integer, 3);
  EXPECT_EQ(admin.Command({"HLEN", prefix + "{q}:spec"}).integer, 3);
  EXPECT_EQ(admin.Command({"EXISTS", prefix + "{q}:task:a"}).integer, 0);
  MoveToOwnHash(admin, prefix, "q", "b");

  LeaseRequest both = LeaseFromQ(4);
  both.queues = {"q", "r"};
  auto batch = Await<LeaseBatch>([&](auto done) { store.Lease(both, done); });
  ASSERT_TRUE(batch) << batch.error().message;
  ASSERT_EQ(batch->leases.size(), 4u);
  std::set<std::string> leased;
  for (const auto& l : batch->leases) {
    leased.insert(l.task.spec.task_id);
    EXPECT_EQ(l.task.spec.payload, TestSpec(l.task.spec.task_id).payload);
    EXPECT_EQ(l.fencing_token, 1);
  }
  EXPECT_EQ(leased, (std::set<std::string>{"a", "b", "c", "d"}));

  Answers<AttemptReport> answers(5);
  AckRequest ack;
  ack.now = kT0 + 2;
  for (const auto& l : batch->leases) {
    ack.lease_id = l.lease_id;
    store.Ack(ack, answers.Take());
  }
  ack.lease_id = "00112233445566778899aabbccddeeff~q~nobody";
  store.Ack(ack, answers.Take());
  std::vector<Result<AttemptReport>> acked = answers.Wait();
  ASSERT_EQ(acked.size(), 5u);
  std::set<std::string> ended;
  int lost = 0;
  for (const auto& r : acked) {
    if (!r) {
      EXPECT_EQ(r.error().code, core::ErrorCode::kLeaseLost) << r.error().message;
      ++lost;
      continue;
    }
    EXPECT_EQ(r->task.status, core::TaskStatus::kSucceeded);
    ended.insert(r->task.spec.task_id);
  }
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(ended, leased);
  EXPECT_EQ(admin
                .Command({"EXISTS", prefix + "{q}:st", prefix + "{q}:spec", prefix + "{r}:st",
                          prefix + "{r}:spec", prefix + "{q}:task:b"})
                .integer,
            0);
  for (const char* id : {"a", "b", "c", "d"}) {
    auto recorded = Await<core::Task>([&](auto done) { store.Get(id, done); });  // from PG
    ASSERT_TRUE(recorded) << recorded.error().message;
    EXPECT_EQ(recorded->status, core::TaskStatus::kSucceeded) << id;
  }
  store.Close();
}

// Script calls queue up while the store thread has a batch in flight (it sends the next batch
// before answering the last); every one is answered, each task leased once, even when Redis
// has lost its scripts meanwhile (SCRIPT FLUSH: the batch in flight is answered NOSCRIPT and
// run again).
TEST(RedisPgStore, CallsQueuedBehindABatchInFlightAreAllAnsweredOnce) {
  auto own = OpenOwn("in-flight");
  ASSERT_TRUE(own);
  Store& store = *own;
  constexpr int kTasks = 300;
  Answers<std::vector<SubmitOutcome>> submitted(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    store.Submit({TestSpec("f" + std::to_string(i))}, kT0, submitted.Take());
  }
  std::vector<Result<std::vector<SubmitOutcome>>> outcomes = submitted.Wait();
  ASSERT_EQ(outcomes.size(), static_cast<size_t>(kTasks));
  for (const auto& o : outcomes) {
    ASSERT_TRUE(o) << o.error().message;
    EXPECT_EQ(o->at(0).kind, SubmitKind::kCreated);
  }
  redis_pg::RedisConn admin = AdminRedis();
  ASSERT_EQ(admin.Command({"SCRIPT", "FLUSH"}).str, "OK");
  Answers<LeaseBatch> leased(kTasks);
  for (int i = 0; i < kTasks; ++i) store.Lease(LeaseFromQ(1), leased.Take());
  std::vector<Result<LeaseBatch>> leases = leased.Wait();
  ASSERT_EQ(leases.size(), static_cast<size_t>(kTasks));
  std::set<std::string> tasks;
  Answers<AttemptReport> acked(kTasks);
  for (const auto& batch : leases) {
    ASSERT_TRUE(batch) << batch.error().message;
    ASSERT_EQ(batch->leases.size(), 1u);
    tasks.insert(batch->leases[0].task.spec.task_id);
    AckRequest ack;
    ack.lease_id = batch->leases[0].lease_id;
    ack.now = kT0 + 2;
    store.Ack(ack, acked.Take());
  }
  EXPECT_EQ(tasks.size(), static_cast<size_t>(kTasks));  // no task handed out twice
  std::vector<Result<AttemptReport>> acks = acked.Wait();
  ASSERT_EQ(acks.size(), static_cast<size_t>(kTasks));
  for (const auto& a : acks) EXPECT_TRUE(a) << a.error().message;
  auto task = Await<core::Task>([&](auto done) { store.Get("f7", done); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->status, core::TaskStatus::kSucceeded);
  store.Close();
}

// A backend of its own on the test services, started (its PostgreSQL schema migrated); its
// connections are named `client_name`.
std::unique_ptr<redis_pg::Backend> StartedBackend(const std::string& name,
                                                  std::string* client_name = nullptr) {
  if (!HaveServices()) return nullptr;
  const std::string ns = NamespaceFor(name + "-" + std::to_string(::getpid()));
  if (client_name) *client_name = "backend-" + ns;
  auto backend = std::make_unique<redis_pg::Backend>(
      redis_pg::ParseRedisUrl(Env("MADEIRA_TEST_REDIS_URL")).value(), 5'000,
      Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns, "madeira:" + ns + ":", "backend-" + ns);
  auto started = backend->Start(/*allow_volatile=*/false);
  if (!started) {
    ADD_FAILURE() << "start: " << started.error().message;
    return nullptr;
  }
  return backend;
}

// The store thread sends a batch while the one before it still runs. When Redis has lost its
// scripts (SCRIPT FLUSH) both meet NOSCRIPT: the first Receive reads the second's replies too,
// loads the scripts and runs every call that failed again, and each Receive answers its own
// Send's calls, in order.
TEST(RedisPgBackend, SendsInFlightTogetherAreRunAgainInOrderAfterAScriptFlush) {
  auto backend = StartedBackend("noscript-behind");
  ASSERT_TRUE(backend);
  redis_pg::RedisConn admin = AdminRedis();
  ASSERT_EQ(admin.Command({"SCRIPT", "FLUSH"}).str, "OK");
  backend->Send({redis_pg::NextWakeupCall(), {std::nullopt, {"ECHO", "first"}}});
  backend->Send({{std::nullopt, {"ECHO", "second"}}, redis_pg::NextWakeupCall()});
  std::vector<redis_pg::RedisReply> first = backend->Receive();
  std::vector<redis_pg::RedisReply> second = backend->Receive();
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_FALSE(first[0].IsError()) << first[0].str;
  EXPECT_TRUE(redis_pg::NextWakeupReply(first[0])) << first[0].str;
  EXPECT_EQ(first[1].str, "first");
  EXPECT_EQ(second[0].str, "second");
  EXPECT_FALSE(second[1].IsError()) << second[1].str;
  // The connection is quiet again: a call of its own gets its own reply.
  EXPECT_EQ(backend->Call({std::nullopt, {"ECHO", "third"}}).str, "third");
}

// A connection lost with two Sends in flight fails both (their outcome is unknown), and never
// hands one's replies to the other; the next Send connects again.
TEST(RedisPgBackend, ALostConnectionFailsEverySendInFlightAndTheNextReconnects) {
  std::string client_name;
  auto backend = StartedBackend("lost-behind", &client_name);
  ASSERT_TRUE(backend);
  const std::string list = backend->key_prefix() + "never-pushed";
  backend->Send({{std::nullopt, {"BLPOP", list, "5"}}});  // still running when the kill comes
  backend->Send({{std::nullopt, {"ECHO", "behind"}}});
  redis_pg::RedisConn admin = AdminRedis();
  ASSERT_EQ(KillClientsNamed(admin, client_name), 1);
  EXPECT_THROW(backend->Receive(), redis_pg::RedisIoError);
  EXPECT_THROW(backend->Receive(), redis_pg::RedisIoError);
  EXPECT_EQ(backend->Call({std::nullopt, {"ECHO", "again"}}).str, "again");
}

// Submits `spec` (of queue "q") and leases it: its lease, or none, with the failure recorded.
std::optional<Lease> SubmitAndLeaseOne(Store& store, const core::TaskSpec& spec) {
  if (!Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); })) {
    ADD_FAILURE() << "submit failed";
    return std::nullopt;
  }
  auto batch = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  if (!batch || batch->leases.size() != 1) {
    ADD_FAILURE() << "lease: " << (batch ? "not one task" : batch.error().message);
    return std::nullopt;
  }
  return batch->leases[0];
}

// A succeeded idempotency key dedupes for its ttl by the engine's clock; its hash then leaves
// Redis by itself (an hour later), so keyed work does not grow Redis for ever.
TEST(RedisPgStore, ASucceededIdempotencyKeyExpiresFromRedis) {
  std::string ns;
  auto own = OpenOwn("idem-expiry", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec keyed = TestSpec("keyed");
  keyed.idempotency_key = "order-7";
  const std::optional<Lease> leased = SubmitAndLeaseOne(store, keyed);
  ASSERT_TRUE(leased);
  redis_pg::RedisConn admin = AdminRedis();
  const std::string key = "madeira:" + ns + ":idem:order-7";
  EXPECT_EQ(admin.Command({"PTTL", key}).integer, -1);  // running: held until the attempt ends
  AckRequest ack;
  ack.lease_id = leased->lease_id;
  ack.now = kT0 + 2;
  ack.idempotency_ttl = 60'000;
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Ack(ack, done); }));
  const int64_t left = admin.Command({"PTTL", key}).integer;
  EXPECT_GT(left, 3'600'000);
  EXPECT_LE(left, 3'660'000);
  store.Close();
}

// An ack's report names the task as it ran: id, queue, type, when its attempt started, its
// attempts and its idempotency key, whatever characters the key holds (the script answers them
// joined by tabs, the key last).
TEST(RedisPgStore, AnAckReportsTheTaskItEndedWithItsKeyWhole) {
  std::string ns;
  auto own = OpenOwn("ack-report", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec keyed = TestSpec("keyed-report");
  keyed.idempotency_key = "order\t7\tclose";
  const std::optional<Lease> leased = SubmitAndLeaseOne(store, keyed);
  ASSERT_TRUE(leased);
  AckRequest ack;
  ack.lease_id = leased->lease_id;
  ack.now = kT0 + 5;
  auto acked = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_EQ(acked->task.spec.task_id, "keyed-report");
  EXPECT_EQ(acked->task.spec.queue, keyed.queue);
  EXPECT_EQ(acked->task.spec.task_type, keyed.task_type);
  EXPECT_EQ(acked->task.spec.idempotency_key, keyed.idempotency_key);
  EXPECT_EQ(acked->task.attempts, 1);
  EXPECT_EQ(acked->attempt_started_at, LeaseFromQ(1).now);
  EXPECT_EQ(acked->task.status, core::TaskStatus::kSucceeded);
  // A second ack of the same lease is lost.
  auto again = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, core::ErrorCode::kLeaseLost);
  store.Close();
}

// A lease rewrites a task's packed state by position, and an ack packs its record by hand,
// each writing a value's msgpack head itself: values past the one-byte heads (32 bytes and 256)
// come through whole. The longest names the contract allows (queue, task id: 128 characters;
// the lease id holds both), a long worker id, result and excerpt, over two attempts (the second
// lease rewrites what the first wrote).
TEST(RedisPgStore, LongNamesAndValuesSurviveALeaseAFailureAndAnAck) {
  std::string ns;
  auto own = OpenOwn("long-values", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec spec = TestSpec(std::string(128, 'i'));
  spec.queue = "q" + std::string(127, 'x');
  spec.payload = R"({"note":")" + std::string(300, 'p') + R"("})";
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); }));
  LeaseRequest lease = LeaseFromQ(1);
  lease.queues = {spec.queue};
  lease.worker_id = std::string(300, 'w');
  auto first = Await<LeaseBatch>([&](auto done) { store.Lease(lease, done); });
  ASSERT_TRUE(first);
  ASSERT_EQ(first->leases.size(), 1u);
  EXPECT_GT(first->leases[0].lease_id.size(), 256u);
  ASSERT_TRUE(FailForAFastRetry(store, first->leases[0].lease_id, kT0 + 2));
  lease.worker_id = std::string(40, 'v');
  lease.now = kT0 + 3;
  auto second = Await<LeaseBatch>([&](auto done) { store.Lease(lease, done); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->leases.size(), 1u);
  const Lease& leased = second->leases[0];
  EXPECT_EQ(leased.task.spec.task_id, spec.task_id);
  EXPECT_EQ(leased.task.spec.queue, spec.queue);
  EXPECT_EQ(leased.task.spec.payload, spec.payload);
  EXPECT_EQ(leased.task.attempts, 2);
  EXPECT_EQ(leased.fencing_token, 2);
  EXPECT_EQ(leased.task.status, core::TaskStatus::kRunning);
  AckRequest ack;
  ack.lease_id = leased.lease_id;
  ack.now = kT0 + 4;
  ack.result = R"({"r":")" + std::string(70'000, 'r') + R"("})";
  ack.detail.http_status = 204;
  ack.detail.response_excerpt = std::string(300, 'e');
  auto acked = Await<AttemptReport>([&](auto done) { store.Ack(ack, done); });
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_EQ(acked->task.spec.task_id, spec.task_id);
  EXPECT_EQ(acked->task.spec.queue, spec.queue);
  EXPECT_EQ(acked->task.attempts, 2);
  auto task = Await<core::Task>([&](auto done) { store.Get(spec.task_id, done); });
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->status, core::TaskStatus::kSucceeded);
  EXPECT_EQ(task->result, ack.result);
  EXPECT_EQ(task->attempts, 2);
  auto attempts =
      Await<std::vector<core::Attempt>>([&](auto done) { store.Attempts(spec.task_id, done); });
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].worker_id, std::string(300, 'w'));
  EXPECT_EQ((*attempts)[1].worker_id, lease.worker_id);
  EXPECT_EQ((*attempts)[1].started_at, kT0 + 3);
  EXPECT_EQ((*attempts)[1].http_status, 204);
  EXPECT_EQ((*attempts)[1].response_excerpt, ack.detail.response_excerpt);
  store.Close();
}

// Copied outbox entries are trimmed away: the stream does not grow with the work done.
TEST(RedisPgStore, TheOutboxIsTrimmedOnceCopied) {
  std::string ns;
  auto own = OpenOwn("trim", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  constexpr int kTasks = 300;
  for (int i = 0; i < kTasks; ++i) {  // one call (and one outbox entry) each
    ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
        [&](auto done) { store.Submit({TestSpec("t" + std::to_string(i))}, kT0, done); }));
  }
  for (int i = 0; i < kTasks; ++i) ASSERT_FALSE(LeaseOneAndAck(store).empty());
  // A read of a finished task copies the outbox first.
  auto task = Await<core::Task>([&](auto done) { store.Get("t0", done); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->status, core::TaskStatus::kSucceeded);
  // The recorder may still hold the last entries it read: its next flush (every second when
  // idle) trims past them.
  redis_pg::RedisConn admin = AdminRedis();
  int64_t left = 0;
  for (int i = 0; i < 50; ++i) {
    left = admin.Command({"XLEN", "madeira:" + ns + ":outbox"}).integer;
    if (left < 150) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(left, 150) << "of " << 3 * kTasks << " entries written";
  // Closing copies what is left (this ack's records: an ack is answered before its copy) and
  // acknowledges that copy too, though a copy's XACK otherwise waits for the next read: no
  // other process copies those entries again.
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({TestSpec("last")}, kT0, done); }));
  ASSERT_FALSE(LeaseOneAndAck(store).empty());
  store.Close();
  redis_pg::RedisReply pending = admin.Command({"XPENDING", "madeira:" + ns + ":outbox", "pg"});
  ASSERT_FALSE(pending.elements.empty());
  EXPECT_EQ(pending.elements[0].integer, 0);
}

// The outbox carries records as JSON (cjson in the scripts, boost::json in the recorder):
// whatever text a worker or a receiver sent reaches PostgreSQL byte for byte, short or long.
TEST(RedisPgStore, RecordsKeepEveryCharacterOnTheirWayToPostgresql) {
  auto own = OpenOwn("record-bytes");
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec spec = TestSpec("odd");
  // Raw tab, newline and carriage return between JSON tokens, and backslashes: the bytes that
  // mean something in COPY's text format, which the record's full rows travel in.
  spec.payload = "{\"s\":\"a\\\"b\\\\c/d\\u0001 \\\\N é € 𝄞\",\n\t\"pad\":\r\"" +
                 std::string(400, 'p') + "\"}";
  ASSERT_TRUE(
      Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); }));
  const std::string excerpt =
      "quote \" back \\ slash / tab \t nl \n ctl \x01 é € 𝄞 " + std::string(300, 'x') + " end";
  AckRequest ack;
  ack.result = R"(["\"",	"/"])";  // a raw tab between JSON tokens
  ack.detail.http_status = 200;
  ack.detail.response_excerpt = excerpt;
  ASSERT_EQ(LeaseOneAndAck(store, ack), "odd");
  // Finished tasks and their attempts are read from PostgreSQL (the outbox copied first).
  auto task = Await<core::Task>([&](auto done) { store.Get("odd", done); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->spec.payload, spec.payload);
  EXPECT_EQ(task->result, ack.result);
  auto attempts =
      Await<std::vector<core::Attempt>>([&](auto done) { store.Attempts("odd", done); });
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].response_excerpt, excerpt);
  EXPECT_EQ((*attempts)[0].http_status, 200);
  store.Close();
}

// An outbox entry PostgreSQL refuses (or nobody can read) is set aside with its error instead
// of stopping the record: before, every later copy failed on it and every submit got a 503.
TEST(RedisPgStore, AnOutboxEntryPostgresqlRefusesIsSetAsideAndWorkGoesOn) {
  std::string ns;
  auto own = OpenOwn("set-aside", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  redis_pg::RedisConn admin = AdminRedis();
  const std::string outbox = "madeira:" + ns + ":outbox";
  // A NUL in a text column ("unsupported Unicode escape sequence"), and an entry that is no JSON.
  admin.Command({"XADD", outbox, "*", "j",
                 R"([["kind","attempt","task_id","ghost","attempt","1","worker","w","started","1",)"
                 R"("finished","2","outcome","succeeded","excerpt","a\u0000b"]])"});
  admin.Command({"XADD", outbox, "*", "j", "not json"});
  for (const char* id : {"s1", "s2", "s3"}) {  // each answered once its record is committed
    auto submitted = Await<std::vector<SubmitOutcome>>(
        [&](auto done) { store.Submit({TestSpec(id)}, kT0, done); });
    ASSERT_TRUE(submitted) << id << ": " << submitted.error().message;
  }
  const std::string acked = LeaseOneAndAck(store);
  ASSERT_FALSE(acked.empty());
  auto recorded = Await<core::Task>([&](auto done) { store.Get(acked, done); });  // from PG
  ASSERT_TRUE(recorded) << recorded.error().message;
  EXPECT_EQ(recorded->status, core::TaskStatus::kSucceeded);
  // Both bad entries wait in the rejected stream, each whole, with why.
  redis_pg::RedisReply rejected = admin.Command({"XRANGE", outbox + ":rejected", "-", "+"});
  ASSERT_EQ(rejected.elements.size(), 2u);
  std::set<std::string> errors;
  for (const redis_pg::RedisReply& e : rejected.elements) {
    redis_pg::Fields f = redis_pg::FieldsFromFlat(e.elements.at(1));
    EXPECT_FALSE(f["entry"].empty());
    EXPECT_TRUE(f.count("j"));
    errors.insert(f["error"]);
  }
  EXPECT_EQ(errors.size(), 2u);
  store.Close();
}

// A submit is answered only once its row is committed to PostgreSQL, also while submits keep
// arriving during the recorder's copies: each copy answers only what was written before it
// read the outbox (a recorder answering every waiting submit at each commit fails this, with
// 144-208 of 1,000 submits answered early in three runs).
// Submits keep arriving while the recorder reads and commits, and searches between them wait
// for the recorder on the store thread meanwhile.
TEST(RedisPgStore, EverySubmitIsInPostgresqlWhenItIsAnswered) {
  std::string ns;
  auto own = OpenOwn("answered-recorded", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  constexpr int kSubmits = 1000;
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  int searched = 0;
  std::vector<std::string> not_recorded, refused;
  for (int i = 0; i < kSubmits; ++i) {
    if (i % 16 == 0) {
      SearchQuery q;
      q.limit = 1;
      store.Search(q, [&](Result<SearchPage>) {
        std::lock_guard lock(mu);
        ++searched;
        cv.notify_all();
      });
    }
    const std::string id = "r" + std::to_string(i);
    store.Submit({TestSpec(id)}, kT0, [&, id](Result<std::vector<SubmitOutcome>> r) {
      std::lock_guard lock(mu);
      if (!r) {
        refused.push_back(id + ": " + r.error().message);
      } else if (pg.Exec("SELECT 1 FROM tasks WHERE task_id = $1", {id}).Rows() != 1) {
        not_recorded.push_back(id);
      }
      ++answered;
      cv.notify_all();
    });
    // Paced, so that submits keep arriving while the recorder copies the earlier ones.
    if (i % 8 == 7) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30),
                          [&] { return answered == kSubmits && searched == (kSubmits + 15) / 16; }))
      << answered << " of " << kSubmits << " answered, " << searched << " searches";
  EXPECT_TRUE(refused.empty()) << refused.front();
  EXPECT_TRUE(not_recorded.empty()) << not_recorded.size() << " answered before their row was "
                                    << "committed, the first " << not_recorded.front();
  lock.unlock();
  store.Close();
}

// Submits task "first" to the store of namespace `ns` and waits until its outbox is read to
// the end (a search waits for that); then a blocked XREADGROUP, standing in for another
// process's recorder, waits for the next entry added, which it takes and never copies or
// acknowledges.
std::future<redis_pg::RedisReply> AnotherProcessReadsTheNextEntry(Store& store,
                                                                  const std::string& ns) {
  EXPECT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({TestSpec("first")}, kT0, done); }));
  EXPECT_TRUE(Await<SearchPage>([&](auto done) { store.Search(SearchQuery{}, done); }));
  const std::string outbox = "madeira:" + ns + ":outbox";
  redis_pg::RedisConn admin = AdminRedis();
  const int64_t blocked_before = BlockedClients(admin);
  std::future<redis_pg::RedisReply> stolen = std::async(std::launch::async, [outbox] {
    redis_pg::RedisConn other = AdminRedis();
    return other.Command({"XREADGROUP", "GROUP", "pg", "another-process", "COUNT", "100", "BLOCK",
                          "5000", "STREAMS", outbox, ">"});
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (BlockedClients(admin) <= blocked_before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return stolen;
}

// The outbox is one stream for every process: another process's recorder can read the entry
// of this process's submit first. The submit is still answered only once its row is committed:
// here the other reader takes the entry and never copies it. A batch whose tasks are all new
// is copied from what it sent (next test); this one holds a duplicate, so its record comes from
// the outbox: the store must wait, then claim the entry and copy it itself.
TEST(RedisPgStore, ASubmitReadByAnotherProcessesRecorderIsAnsweredOnceRecorded) {
  std::string ns;
  auto own = OpenOwn("read-by-another", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  std::future<redis_pg::RedisReply> stolen = AnotherProcessReadsTheNextEntry(store, ns);

  std::promise<std::string> answered;
  store.Submit(
      {TestSpec("first"), TestSpec("taken")}, kT0, [&](Result<std::vector<SubmitOutcome>> r) {
        if (!r) return answered.set_value("refused: " + r.error().message);
        const bool recorded =
            pg.Exec("SELECT 1 FROM tasks WHERE task_id = 'taken'", {}).Rows() == 1;
        answered.set_value(recorded ? "recorded" : "answered before its row was committed");
      });
  std::future<std::string> outcome = answered.get_future();
  ASSERT_EQ(outcome.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(outcome.get(), "recorded");
  // The other reader did take the submit's entry (else this test shows nothing).
  redis_pg::RedisReply got = stolen.get();
  ASSERT_FALSE(got.IsNil()) << "the other reader got nothing";
  EXPECT_EQ(got.elements.at(0).elements.at(1).elements.size(), 1u);
  store.Close();
}

// New tasks are copied into PostgreSQL from what the submit sent, not read back from the
// outbox first (a Redis round trip, and an fsync, less before every answer): a submit whose
// entry another process's recorder took, and holds, is answered with its row committed without
// taking that entry over. The entry stays the other process's to acknowledge.
TEST(RedisPgStore, ASubmitIsRecordedFromWhatItSentNotReadBackFromTheOutbox) {
  std::string ns;
  auto own = OpenOwn("made-here", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  std::future<redis_pg::RedisReply> stolen = AnotherProcessReadsTheNextEntry(store, ns);
  const std::string outbox = "madeira:" + ns + ":outbox";

  core::TaskSpec delayed = TestSpec("later");
  delayed.schedule_time = kT0 + 60'000;
  std::promise<std::string> answered;
  store.Submit({TestSpec("now"), delayed}, kT0, [&](Result<std::vector<SubmitOutcome>> r) {
    if (!r) return answered.set_value("refused: " + r.error().message);
    redis_pg::PgResult rows = pg.Exec(
        "SELECT task_id, status, payload, seq FROM task_rows WHERE task_id IN ('now', 'later') "
        "ORDER BY task_id",
        {});
    std::string seen;
    for (int i = 0; i < rows.Rows(); ++i) {
      seen += rows.Text(i, 0) + " " + rows.Text(i, 1) + " " + rows.Text(i, 2) + "; ";
    }
    answered.set_value(seen);
  });
  std::future<std::string> outcome = answered.get_future();
  ASSERT_EQ(outcome.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const core::TaskSpec spec = TestSpec("now");
  EXPECT_EQ(outcome.get(),
            "later scheduled " + spec.payload + "; now pending " + spec.payload + "; ");
  redis_pg::RedisReply got = stolen.get();
  ASSERT_FALSE(got.IsNil()) << "the other reader got nothing";
  ASSERT_EQ(got.elements.at(0).elements.at(1).elements.size(), 1u);
  const std::string entry = got.elements.at(0).elements.at(1).elements.at(0).elements.at(0).str;
  // Still the other process's: the store did not wait for its copy, nor claim the entry.
  redis_pg::RedisConn admin = AdminRedis();
  redis_pg::RedisReply held = admin.Command({"XPENDING", outbox, "pg", entry, entry, "1"});
  ASSERT_EQ(held.elements.size(), 1u);
  EXPECT_EQ(held.elements[0].elements.at(1).str, "another-process");
  // And the seq the record holds is the one Redis gave (a search orders by it).
  auto page = Await<SearchPage>([&](auto done) { store.Search(SearchQuery{}, done); });
  ASSERT_TRUE(page);
  ASSERT_EQ(page->tasks.size(), 3u);
  EXPECT_EQ(page->tasks[0].spec.task_id, "later");
  EXPECT_EQ(page->tasks[1].spec.task_id, "now");
  EXPECT_EQ(page->tasks[2].spec.task_id, "first");
  store.Close();
}

// The recorder's temporary tables are emptied by each copy's DELETE, which leaves the rows dead
// (nothing vacuums a temporary table): now and then a TRUNCATE must give the space back, or the
// tables grow with every task ever recorded and every copy's scan of them with it.
TEST(RedisPgStore, TheRecordsTemporaryTablesDoNotGrowWithEveryTaskCopied) {
  std::string ns;
  auto own = OpenOwn("record-tables", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  constexpr int kCalls = 300, kPerCall = 100;  // 30,000 rows copied
  for (int c = 0; c < kCalls; ++c) {
    std::vector<core::TaskSpec> specs;
    for (int i = 0; i < kPerCall; ++i) {
      specs.push_back(TestSpec("g" + std::to_string(c * kPerCall + i)));
    }
    ASSERT_TRUE(
        Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit(specs, kT0, done); }));
  }
  // What 30,000 of these rows take in a table, against what the largest record table holds (the
  // tables of every session: another test's store holds a bound's worth at most). Without the
  // TRUNCATE record_tasks took as much as tasks; with it, 500 rows and one copy at most.
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  const int64_t all_rows = pg.Exec("SELECT pg_relation_size('tasks')").Int(0, 0);
  const int64_t largest =
      pg.Exec(
            "SELECT COALESCE(MAX(pg_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace "
            "n ON n.oid = c.relnamespace WHERE n.nspname LIKE 'pg_temp_%' AND c.relname IN "
            "('record_tasks', 'record_states', 'record_attempts')")
          .Int(0, 0);
  EXPECT_GT(all_rows, 0);
  EXPECT_LT(largest, all_rows / 2)
      << "the largest record table, against tasks with " << kCalls * kPerCall << " rows";
  store.Close();
}

// A change applies to its task's row when that row is older, never to a newer one; a change
// whose task has no row yet (its full record is in another process's copy) stays in the
// outbox for a later flush rather than being lost.
TEST(RedisPgStore, AChangeWaitsForItsTasksRowAndNeverOverwritesANewerOne) {
  std::string ns;
  auto own = OpenOwn("state-rows", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  for (const char* id : {"older", "newer"}) {
    ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
        [&](auto done) { store.Submit({TestSpec(id)}, kT0, done); }));
  }
  redis_pg::RedisConn admin = AdminRedis();
  const std::string outbox = "madeira:" + ns + ":outbox";
  auto state = [](const std::string& id, int ver, const std::string& status) {
    return R"(["kind","state","id",")" + id + R"(","ver",")" + std::to_string(ver) +
           R"(","status",")" + status + R"(","attempts","1","updated","5"])";
  };
  // The rows hold ver 1 (the submits): "older" gets ver 7; "newer" is first set to ver 9, and
  // a stale ver 3 in a later entry leaves it at 9; "early" has no row at all.
  admin.Command({"XADD", outbox, "*", "j",
                 "[" + state("older", 7, "running") + "," + state("newer", 9, "running") + "]"});
  const std::string early_entry =
      admin.Command({"XADD", outbox, "*", "j", "[" + state("early", 2, "running") + "]"}).str;
  admin.Command({"XADD", outbox, "*", "j", "[" + state("newer", 3, "pending") + "]"});
  // A read served from PostgreSQL waits until every entry written before it is copied.
  ASSERT_TRUE(Await<SearchPage>([&](auto done) { store.Search(SearchQuery{}, done); }));
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  auto row = [&](const std::string& id) {
    redis_pg::PgResult r = pg.Exec("SELECT ver, status FROM task_rows WHERE task_id = $1", {id});
    return r.Rows() == 0 ? std::string("none") : r.Text(0, 0) + " " + r.Text(0, 1);
  };
  EXPECT_EQ(row("older"), "7 running");
  EXPECT_EQ(row("newer"), "9 running");
  EXPECT_EQ(row("early"), "none");
  // Once the store has closed (and sent the XACK a flush otherwise leaves for the next read),
  // only the entry of "early" is still pending, for a later flush.
  store.Close();
  redis_pg::RedisReply pending = admin.Command({"XPENDING", outbox, "pg", "-", "+", "100"});
  std::vector<std::string> ids;
  for (const redis_pg::RedisReply& p : pending.elements) ids.push_back(p.elements.at(0).str);
  EXPECT_EQ(ids, std::vector<std::string>{early_entry});
}

// A lease writes nothing to the outbox (a tenth of its Redis work): its process copies the
// change into PostgreSQL itself, before a read served from there that follows the lease, and
// before the store closes. An ack over it still goes through the outbox, and the newer
// version wins whichever copy comes first.
TEST(RedisPgStore, ALeaseReachesTheRecordFromItsProcessNotTheOutbox) {
  std::string ns;
  auto own = OpenOwn("lease-record", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>([&](auto done) {
    store.Submit({TestSpec("l1"), TestSpec("l2"), TestSpec("l3")}, kT0, done);
  }));
  redis_pg::RedisConn admin = AdminRedis();
  const std::string outbox = "madeira:" + ns + ":outbox";
  auto entries_added = [&] {
    redis_pg::Fields info = redis_pg::FieldsFromFlat(admin.Command({"XINFO", "STREAM", outbox}));
    return info["entries-added"];
  };
  const std::string before = entries_added();
  auto batch = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(2), done); });
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->leases.size(), 2u);
  EXPECT_EQ(entries_added(), before) << "a lease wrote to the outbox";

  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  auto row = [&](const std::string& id) {
    redis_pg::PgResult r = pg.Exec(
        "SELECT ver, status, attempts, next_attempt_at IS NULL FROM task_rows WHERE task_id = $1",
        {id});
    return r.Rows() == 0
               ? std::string("none")
               : r.Text(0, 0) + " " + r.Text(0, 1) + " " + r.Text(0, 2) + " " + r.Text(0, 3);
  };
  SearchQuery running;
  running.status = core::TaskStatus::kRunning;
  auto page = Await<SearchPage>([&](auto done) { store.Search(running, done); });
  ASSERT_TRUE(page);
  std::set<std::string> found;
  for (const core::Task& t : page->tasks) {
    found.insert(t.spec.task_id);
    EXPECT_EQ(t.attempts, 1) << t.spec.task_id;
  }
  EXPECT_EQ(found, (std::set<std::string>{"l1", "l2"}));
  EXPECT_EQ(row("l1"), "2 running 1 t");
  EXPECT_EQ(row("l3"), "1 pending 0 f");

  AckRequest ack;
  ack.now = kT0 + 2;
  ack.lease_id = batch->leases[0].lease_id;
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Ack(ack, done); }));
  const std::string acked = batch->leases[0].task.spec.task_id;
  const std::string still = batch->leases[1].task.spec.task_id;
  // The second lease is copied by the close, with no read to wait for it.
  auto second = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(second);
  ASSERT_EQ(second->leases.size(), 1u);
  store.Close();
  EXPECT_EQ(row(acked), "3 succeeded 1 t");
  EXPECT_EQ(row(still), "2 running 1 t");
  EXPECT_EQ(row("l3"), "2 running 1 t");
}

// A task's spec is packed as msgpack, whose bytes are anything (a length over 255 is written as
// two bytes, one of them here a control character): a replay's snapshot of the hash still
// reaches PostgreSQL whole through the outbox's JSON records, its edit over the spec.
TEST(RedisPgStore, AReplayedTaskReachesTheRecordWithItsSpecWhole) {
  std::string ns;
  auto own = OpenOwn("replayed-spec", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  core::TaskSpec spec = TestSpec("r1");
  spec.payload = "{\"note\":\"" + std::string(300, 'x') + " \\\"q\\\" \u00e9\xc3\xa9 /\"}";
  spec.idempotency_key = "key \"7\"";
  spec.trace_id = "trace-r1";
  spec.owner = "team-a";
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({spec}, testing::kT0, done); }));
  auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(1), done); });
  ASSERT_TRUE(leased);
  ASSERT_EQ(leased->leases.size(), 1u);
  EXPECT_EQ(leased->leases[0].task.spec.payload, spec.payload);
  FailRequest fail;
  fail.lease_id = leased->leases[0].lease_id;
  fail.now = testing::kT0 + 2;
  RetryDecider to_dead = [](const core::Task&, const core::Failure&, int) {
    return core::RetryDecision{};
  };
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Fail(fail, to_dead, done); }));
  ReplayEdits edits;
  edits.payload = "{\"fixed\":\"" + std::string(400, 'y') + "\"}";
  auto replayed = Await<std::vector<core::Task>>([&](auto done) {
    store.Replay(
        {{"r1"}, {}}, edits,
        [](const core::Task&, const ReplayEdits&) -> core::Result<Unit> { return Unit{}; },
        testing::kT0 + 3, done);
  });
  ASSERT_TRUE(replayed);
  ASSERT_EQ(replayed->size(), 1u);
  // A read served from PostgreSQL waits for every record written before it.
  ASSERT_TRUE(Await<SearchPage>([&](auto done) { store.Search(SearchQuery{}, done); }));
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + ns);
  redis_pg::PgResult r = pg.Exec(
      "SELECT payload, idempotency_key, trace_id, owner, status FROM task_rows WHERE task_id = $1",
      {"r1"});
  ASSERT_EQ(r.Rows(), 1);
  EXPECT_EQ(r.Text(0, 0), *edits.payload);
  EXPECT_EQ(r.Text(0, 1), *spec.idempotency_key);
  EXPECT_EQ(r.Text(0, 2), spec.trace_id);
  EXPECT_EQ(r.Text(0, 3), spec.owner);
  EXPECT_EQ(r.Text(0, 4), "pending");
  store.Close();
}

// A record written before task states had their own table (schema 5: one wide `tasks` row a
// task) is migrated at start: its tasks keep every value, a search by status finds them, and
// the tasks made after the upgrade join them in the same order.
TEST(RedisPgStore, ARecordFromBeforeTheStateTableKeepsItsTasks) {
  ASSERT_TRUE(HaveServices());
  const std::string ns = NamespaceFor("schema-5-" + std::to_string(::getpid()));
  RedisPgOptions o = TestOptions(ns);
  redis_pg::PgConn pg(o.database_url, "madeira_" + ns);
  redis_pg::MigratePg(pg, "madeira_" + ns, 5);
  // Two ended tasks as Madeira 5 recorded them, in the columns' order then (PgTaskColumns).
  pg.Exec("INSERT INTO tasks (" + redis_pg::PgTaskColumns() +
          ") VALUES "
          "('old-dead', 1, 6, 'q', 't', 1, '{\"n\":1}', 1000, 5000, 3, 0, 'tr-1', NULL, 'h1', "
          "'dead', 3, 4, 1000, 9000, NULL, '{\"type\":\"Boom\"}', NULL, false, 1, false, 'alice'), "
          "('old-done', 2, 3, 'q', 't', 1, '{\"n\":2}', 2000, 5000, 3, 0, 'tr-2', 'k2', 'h2', "
          "'succeeded', 0, 1, 2000, 3000, NULL, NULL, '{\"ok\":true}', false, 0, false, '')");
  redis_pg::RedisConn admin = AdminRedis();
  admin.Command({"SET", "madeira:" + ns + ":seq", "2"});  // Redis's counter, as it was

  auto opened = OpenRedisPgStore(o);
  ASSERT_TRUE(opened) << opened.error().message;
  Store& store = **opened;
  EXPECT_EQ(pg.Exec("SELECT version FROM schema_version").Int(0, 0), redis_pg::kPgSchemaVersion);
  auto dead = Await<core::Task>([&](auto done) { store.Get("old-dead", done); });
  ASSERT_TRUE(dead) << dead.error().message;
  EXPECT_EQ(dead->status, core::TaskStatus::kDead);
  EXPECT_EQ(dead->spec.payload, "{\"n\":1}");
  EXPECT_EQ(dead->spec.trace_id, "tr-1");
  EXPECT_EQ(dead->spec.owner, "alice");
  EXPECT_EQ(dead->retry_count, 3);
  EXPECT_EQ(dead->attempts, 4);
  EXPECT_EQ(dead->updated_at, 9000);
  EXPECT_EQ(dead->last_error, std::optional<std::string>("{\"type\":\"Boom\"}"));
  EXPECT_EQ(dead->fast_retries_used, 1);

  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({TestSpec("new")}, kT0, done); }));
  ASSERT_EQ(LeaseOneAndAck(store), "new");
  auto ids = [&](core::TaskStatus status) {
    SearchQuery q;
    q.status = status;
    auto page = Await<SearchPage>([&](auto done) { store.Search(q, done); });
    std::vector<std::string> out;
    if (!page) {
      ADD_FAILURE() << page.error().message;
      return out;
    }
    for (const core::Task& t : page->tasks) out.push_back(t.spec.task_id);
    return out;
  };
  EXPECT_EQ(ids(core::TaskStatus::kSucceeded), (std::vector<std::string>{"new", "old-done"}));
  EXPECT_EQ(ids(core::TaskStatus::kDead), std::vector<std::string>{"old-dead"});
  auto done = Await<core::Task>([&](auto cb) { store.Get("old-done", cb); });
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->result, std::optional<std::string>("{\"ok\":true}"));
  EXPECT_EQ(done->spec.idempotency_key, std::optional<std::string>("k2"));
  store.Close();
}

// The recorder's copy is one pipelined transaction: every statement commits, or none does,
// and a later statement sees the rows of an earlier one (a state update, its task's insert).
TEST(RedisPgStore, PgExecAllCommitsEveryStatementOrNone) {
  if (!HaveServices()) return;
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "public");
  const std::string table = "execall_probe_" + std::to_string(::getpid());
  pg.Exec("CREATE TABLE " + table + " (k text PRIMARY KEY)");
  const std::string insert = "INSERT INTO " + table + " VALUES ($1)";
  const std::string count = "SELECT count(*) FROM " + table;
  // The second statement fails (a duplicate key): the first one's row is gone with it.
  EXPECT_THROW(pg.ExecAll({{insert, {"a"}}, {insert, {"a"}}}), redis_pg::PgError);
  EXPECT_EQ(pg.Exec(count).Text(0, 0), "0");
  auto results = pg.ExecAll({{insert, {"b"}}, {count, {}}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].Text(0, 0), "1");
  EXPECT_EQ(pg.Exec(count).Text(0, 0), "1");
  EXPECT_TRUE(pg.healthy());
  pg.Exec("DROP TABLE " + table);
}

// Full rows reach the record by COPY before the statements that read them, all in one
// transaction: a failing statement takes the copied rows with it, data COPY cannot read is
// refused as data (the entry is set aside, not retried for ever), and the connection goes on.
TEST(RedisPgStore, PgCopyThenExecAllCommitsEverythingOrNothing) {
  if (!HaveServices()) return;
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "public");
  const std::string table = "copy_probe_" + std::to_string(::getpid());
  pg.Exec("CREATE TABLE " + table + " (k text PRIMARY KEY, n int NOT NULL)");
  const std::string copy = "COPY " + table + " (k, n) FROM STDIN";
  const std::string count = "SELECT count(*) FROM " + table;
  const std::string duplicate = "INSERT INTO " + table + " VALUES ('a', 9)";
  EXPECT_THROW(pg.CopyThenExecAll({{copy, "a\t1\nb\t2\n"}}, {{duplicate, {}}}), redis_pg::PgError);
  EXPECT_EQ(pg.Exec(count).Text(0, 0), "0");
  try {
    pg.CopyThenExecAll({{copy, "c\t3\n"}, {copy, "e\tnot a number\n"}}, {});
    ADD_FAILURE() << "a row COPY cannot read was taken";
  } catch (const redis_pg::PgError& e) {
    EXPECT_TRUE(e.refused_data()) << e.sqlstate();
  }
  // Two copies, then a statement that sees both.
  auto results = pg.CopyThenExecAll({{copy, "tab\\there\t1\n"}, {copy, "d\t2\n"}}, {{count, {}}});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].Text(0, 0), "2");  // the statement sees the copied rows
  EXPECT_EQ(pg.Exec(count).Text(0, 0), "2");
  // COPY's escape \t is a tab in the row.
  EXPECT_EQ(pg.Exec("SELECT n FROM " + table + " WHERE k = $1", {"tab\there"}).Text(0, 0), "1");
  // A statement with parameters (the events' upsert) runs after the copies in the same
  // transaction: when it fails, the copied row goes with it; when it succeeds, both stay.
  const std::string insert = "INSERT INTO " + table + " VALUES ($1, 5)";
  EXPECT_THROW(pg.CopyThenExecAll({{copy, "f\t4\n"}}, {{insert, {"d"}}}), redis_pg::PgError);
  EXPECT_EQ(pg.Exec(count).Text(0, 0), "2");
  results = pg.CopyThenExecAll({{copy, "f\t4\n"}}, {{insert, {"g"}}, {count, {}}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].Text(0, 0), "4");
  EXPECT_TRUE(pg.healthy());
  pg.Exec("DROP TABLE " + table);
}

// Redis loses everything (FLUSHALL): serve refuses to start on it, `madeira recover` writes back
// every non-terminal task (the running one as pending), the id claims of ended tasks, the
// succeeded idempotency key and the event, and the store carries on from there.
TEST(RedisPgStore, RecoverRebuildsRedisFromPostgres) {
  ASSERT_TRUE(HaveServices());
  PrivateRedis redis;
  ASSERT_TRUE(redis.Start()) << "could not start redis-server";
  const std::string ns = NamespaceFor("recover-" + std::to_string(::getpid()));
  RedisPgOptions o = TestOptions(ns);
  o.redis_url = redis.url();
  constexpr core::Millis kTtl = 3'600'000;
  core::Task later_before;
  {
    auto opened = OpenRedisPgStore(o);
    ASSERT_TRUE(opened) << opened.error().message;
    Store& store = **opened;
    core::TaskSpec keyed = TestSpec("done");
    keyed.idempotency_key = "k1";
    core::TaskSpec dead = TestSpec("dead");
    dead.queue = "q2";
    ASSERT_TRUE(Await<std::vector<SubmitOutcome>>([&](auto done) {
      store.Submit(
          {keyed, dead, TestSpec("run"), TestSpec("pend"), TestSpec("later", kT0 + 60'000)}, kT0,
          done);
    }));
    LeaseRequest lease;
    lease.worker_id = "w";
    lease.queues = {"q", "q2"};
    lease.max_tasks = 3;
    lease.now = kT0;
    auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(lease, done); });
    ASSERT_TRUE(leased);
    ASSERT_EQ(leased->leases.size(), 3u);  // done, dead, run (submit order)
    std::map<std::string, std::string> lease_of;
    for (const auto& l : leased->leases) lease_of[l.task.spec.task_id] = l.lease_id;
    AckRequest ack;
    ack.lease_id = lease_of["done"];
    ack.now = kT0 + 1;
    ack.idempotency_ttl = kTtl;
    ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Ack(ack, done); }));
    FailRequest fail;
    fail.lease_id = lease_of["dead"];
    fail.now = kT0 + 1;
    RetryDecider to_dead = [](const core::Task&, const core::Failure&, int) {
      return core::RetryDecision{};
    };
    ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store.Fail(fail, to_dead, done); }));
    EventRecord event = TestEvent("e1");
    event.trace_id = "tr";
    NewDelivery delivery{"ep1", TestSpec("deliv")};
    delivery.task.queue = "webhook.ep1";
    ASSERT_TRUE(Await<EventSubmitOutcome>(
        [&](auto done) { store.SubmitEvent(event, {delivery}, kT0, done); }));
    auto got = Await<core::Task>([&](auto done) { store.Get("later", done); });
    ASSERT_TRUE(got) << got.error().message;
    later_before = *got;
    store.Close();
  }

  redis_pg::RedisConn admin(redis_pg::ParseRedisUrl(redis.url()).value(), 5'000);
  ASSERT_EQ(admin.Command({"FLUSHALL"}).str, "OK");
  auto refused = OpenRedisPgStore(o);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("madeira recover"), std::string::npos)
      << refused.error().message;

  auto report = RecoverRedisPg(o, kT0 + 10, kTtl);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->tasks, 5);  // run, pend, later, dead, deliv
  EXPECT_EQ(report->running_to_pending, 1);
  EXPECT_EQ(report->ended, 1);
  EXPECT_EQ(report->idempotency_keys, 1);
  EXPECT_EQ(report->events, 1);
  // Written back as a submit writes a task: a field of its queue's two hashes, no hash of its
  // own (the layout a lease and an ack read fastest).
  const std::string prefix = "madeira:" + ns + ":";
  for (const auto& [queue, id] : std::vector<std::pair<std::string, std::string>>{
           {"q", "run"}, {"q", "pend"}, {"q", "later"}, {"q2", "dead"}, {"webhook.ep1", "deliv"}}) {
    EXPECT_EQ(admin.Command({"HEXISTS", prefix + "{" + queue + "}:st", id}).integer, 1) << id;
    EXPECT_EQ(admin.Command({"HEXISTS", prefix + "{" + queue + "}:spec", id}).integer, 1) << id;
    EXPECT_EQ(admin.Command({"EXISTS", prefix + "{" + queue + "}:task:" + id}).integer, 0) << id;
  }
  auto again = RecoverRedisPg(o, kT0 + 10, kTtl);  // nothing left to add
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->tasks + again->ended + again->idempotency_keys + again->events, 0);

  auto opened = OpenRedisPgStore(o);
  ASSERT_TRUE(opened) << opened.error().message;
  Store& store = **opened;
  auto status_of = [&](const std::string& id) {
    auto t = Await<core::Task>([&](auto done) { store.Get(id, done); });
    return t ? std::string(core::TaskStatusName(t->status)) : t.error().message;
  };
  EXPECT_EQ(status_of("run"), "pending");
  EXPECT_EQ(status_of("pend"), "pending");
  EXPECT_EQ(status_of("later"), "scheduled");
  EXPECT_EQ(status_of("dead"), "dead");
  EXPECT_EQ(status_of("done"), "succeeded");
  EXPECT_EQ(status_of("deliv"), "pending");
  // A task comes back whole: what it was made with and where it stood.
  auto later_after = Await<core::Task>([&](auto done) { store.Get("later", done); });
  ASSERT_TRUE(later_after) << later_after.error().message;
  EXPECT_EQ(later_after->spec.payload, later_before.spec.payload);
  EXPECT_EQ(later_after->created_at, later_before.created_at);
  EXPECT_TRUE(*later_after == later_before);
  auto attempts =
      Await<std::vector<core::Attempt>>([&](auto done) { store.Attempts("run", done); });
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ(attempts->front().outcome, core::AttemptOutcome::kLeaseExpired);

  // The ended id is still claimed; the event is still a duplicate and readable.
  core::TaskSpec resubmit = TestSpec("done");
  resubmit.idempotency_key = "k1";
  auto dup = Await<std::vector<SubmitOutcome>>([&](auto done) {
    store.Submit({resubmit, TestSpec("fresh")}, kT0 + 20, done);
  });
  ASSERT_TRUE(dup) << dup.error().message;
  EXPECT_EQ((*dup)[0].kind, SubmitKind::kDuplicate);
  EXPECT_EQ((*dup)[1].kind, SubmitKind::kCreated);
  auto stored = Await<StoredEvent>([&](auto done) { store.GetEvent("e1", "src", done); });
  ASSERT_TRUE(stored) << stored.error().message;
  ASSERT_EQ(stored->deliveries.size(), 1u);
  EXPECT_EQ(stored->deliveries[0].task_id, "deliv");

  // Everything non-terminal can be leased again, in order; the new task got a fresh seq.
  LeaseRequest lease;
  lease.worker_id = "w2";
  lease.queues = {"q", "webhook.ep1"};
  lease.max_tasks = 10;
  lease.now = kT0 + 30;
  auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(lease, done); });
  ASSERT_TRUE(leased);
  std::vector<std::string> ids;
  for (const auto& l : leased->leases) ids.push_back(l.task.spec.task_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"pend", "deliv", "fresh", "run"}));  // run: ready now
  for (const auto& l : leased->leases) {
    if (l.task.spec.task_id == "run") {
      EXPECT_EQ(l.fencing_token, 2);
    }
  }
  opened->reset();  // recover refuses to run beside a connected store

  // Recovered after the retention, the claim of "done" stays in PostgreSQL only, and submits
  // ask there: it is still a duplicate (or a conflict).
  ASSERT_EQ(admin.Command({"FLUSHALL"}).str, "OK");
  auto late = RecoverRedisPg(o, kT0 + 10 + o.ended_claims_retention, kTtl);
  ASSERT_TRUE(late) << late.error().message;
  EXPECT_EQ(late->ended, 0);
  auto reopened = OpenRedisPgStore(o);
  ASSERT_TRUE(reopened) << reopened.error().message;
  core::TaskSpec changed = TestSpec("done");
  changed.content_hash = "h-other";
  auto after = Await<std::vector<SubmitOutcome>>([&](auto done) {
    (*reopened)->Submit({TestSpec("done"), changed}, kT0 + 40, done);
  });
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ((*after)[0].kind, SubmitKind::kDuplicate);
  EXPECT_EQ((*after)[0].status, core::TaskStatus::kSucceeded);
  EXPECT_EQ((*after)[1].kind, SubmitKind::kConflict);
  (*reopened)->Close();
}

// Polls Redis (the recorder rotates the claims in the background, on its flushes: about once a
// second when idle) until `done` holds; false after 10 s.
bool UntilRedis(const std::function<bool()>& done) {
  for (int i = 0; i < 200; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// A store on a namespace of its own whose id claims rotate by a clock the test moves, and a
// look at its claims in Redis.
struct RotatingClaims {
  static constexpr core::Millis kRetention = 60'000;
  core::FakeClock clock{kT0};
  RedisPgOptions options;
  std::unique_ptr<Store> store;
  redis_pg::RedisConn admin = AdminRedis();

  explicit RotatingClaims(const std::string& name)
      : options(TestOptions(NamespaceFor(name + "-" + std::to_string(::getpid())))) {
    options.ended_claims_retention = kRetention;
    options.clock = &clock;
    auto opened = OpenRedisPgStore(options);
    if (opened) {
      store = std::move(*opened);
    } else {
      ADD_FAILURE() << "open redis-pg: " << opened.error().message;
    }
  }
  std::string Key(const std::string& name) const {
    return "madeira:" + options.name_space + ":" + name;
  }
  bool Claimed(const std::string& generation, const std::string& id) {
    return admin.Command({"HEXISTS", Key(generation), id}).integer == 1;
  }
  // The recorder has begun the first generation (at the clock's time then).
  bool Started() { return admin.Command({"HEXISTS", Key("ended:gen"), "started"}).integer == 1; }
};

// Redis keeps the id claims of ended tasks for one to two retentions, not forever: a generation
// is dropped once PostgreSQL has its tasks, and a resubmit of such an id is still a duplicate (or
// a conflict), which PostgreSQL tells; a cancel of it still finds the task ended.
TEST(RedisPgStore, EndedIdClaimsLeaveRedisAfterTheirRetentionAndResubmitsStillFindThem) {
  ASSERT_TRUE(HaveServices());
  RotatingClaims claims("claims");
  ASSERT_TRUE(claims.store);
  Store& store = *claims.store;
  auto claimed = [&](const std::string& key, const std::string& id) {
    return claims.Claimed(key, id);
  };
  auto submit = [&](core::TaskSpec spec) {
    auto r = Await<std::vector<SubmitOutcome>>([&](auto done) { store.Submit({spec}, kT0, done); });
    EXPECT_TRUE(r) << r.error().message;
    return r ? r->front() : SubmitOutcome{};
  };
  ASSERT_EQ(submit(TestSpec("old")).kind, SubmitKind::kCreated);
  ASSERT_EQ(LeaseOneAndAck(store), "old");
  ASSERT_TRUE(claimed("ended", "old"));
  const EventRecord event = TestEvent("e1");
  const NewDelivery delivery{"ep1", TestSpec("deliv")};
  ASSERT_TRUE(Await<EventSubmitOutcome>(
      [&](auto done) { store.SubmitEvent(event, {delivery}, kT0, done); }));
  ASSERT_EQ(LeaseOneAndAck(store), "deliv");
  ASSERT_TRUE(UntilRedis([&] { return claims.Started(); }));

  // One retention on: the claims become the previous generation, still answered from Redis.
  claims.clock.Advance(RotatingClaims::kRetention);
  ASSERT_TRUE(UntilRedis([&] { return claimed("ended:prev", "old"); }));
  EXPECT_FALSE(claimed("ended", "old"));
  EXPECT_EQ(submit(TestSpec("old")).kind, SubmitKind::kDuplicate);
  ASSERT_EQ(submit(TestSpec("newer")).kind, SubmitKind::kCreated);
  ASSERT_EQ(LeaseOneAndAck(store), "newer");

  // Two on: that generation is gone; the next one holds "newer".
  claims.clock.Advance(RotatingClaims::kRetention);
  ASSERT_TRUE(UntilRedis([&] { return claimed("ended:prev", "newer"); }));
  EXPECT_FALSE(claimed("ended:prev", "old"));
  EXPECT_FALSE(claimed("ended", "old"));
  EXPECT_EQ(claims.admin.Command({"HGET", claims.Key("ended:gen"), "checked"}).str, "1");

  SubmitOutcome again = submit(TestSpec("old"));
  EXPECT_EQ(again.kind, SubmitKind::kDuplicate);
  EXPECT_EQ(again.status, core::TaskStatus::kSucceeded);
  core::TaskSpec changed = TestSpec("old");
  changed.content_hash = "h-other";
  EXPECT_EQ(submit(changed).kind, SubmitKind::kConflict);
  EXPECT_EQ(submit(TestSpec("newer")).kind, SubmitKind::kDuplicate);
  EXPECT_EQ(submit(TestSpec("fresh")).kind, SubmitKind::kCreated);
  core::TaskSpec made = TestSpec("made-here");  // an id the server made: nothing to ask
  made.id_made_here = true;
  EXPECT_EQ(submit(made).kind, SubmitKind::kCreated);
  // The event's delivery ended long ago: its status comes from PostgreSQL.
  auto stored = Await<StoredEvent>([&](auto done) { store.GetEvent("e1", "src", done); });
  ASSERT_TRUE(stored) << stored.error().message;
  ASSERT_EQ(stored->deliveries.size(), 1u);
  EXPECT_EQ(stored->deliveries[0].status, core::TaskStatus::kSucceeded);
  auto resent = Await<EventSubmitOutcome>(
      [&](auto done) { store.SubmitEvent(event, {delivery}, kT0, done); });
  ASSERT_TRUE(resent) << resent.error().message;
  EXPECT_TRUE(resent->duplicate);
  ASSERT_EQ(resent->stored.deliveries.size(), 1u);
  EXPECT_EQ(resent->stored.deliveries[0].status, core::TaskStatus::kSucceeded);

  // An event leaves Redis two retentions after its last change (Redis's own clock: PEXPIRE);
  // gone, it is read, resent and redelivered from PostgreSQL as before.
  const std::string ek = claims.Key("event:src\te1");
  const int64_t ttl = claims.admin.Command({"PTTL", ek}).integer;
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 2 * RotatingClaims::kRetention);
  auto expire = [&] {  // what Redis does once the ttl is over
    claims.admin.Command({"DEL", ek, ek + ":deliveries", claims.Key("eventids:e1")});
  };
  expire();
  auto from_record = Await<StoredEvent>([&](auto done) { store.GetEvent("e1", {}, done); });
  ASSERT_TRUE(from_record) << from_record.error().message;
  EXPECT_EQ(from_record->event.source, "src");
  ASSERT_EQ(from_record->deliveries.size(), 1u);
  EXPECT_EQ(from_record->deliveries[0].task_id, "deliv");
  EXPECT_EQ(from_record->deliveries[0].status, core::TaskStatus::kSucceeded);
  expire();
  auto resent_late = Await<EventSubmitOutcome>([&](auto done) {
    store.SubmitEvent(event, {NewDelivery{"ep1", TestSpec("deliv2")}}, kT0, done);
  });
  ASSERT_TRUE(resent_late) << resent_late.error().message;
  EXPECT_TRUE(resent_late->duplicate);
  ASSERT_EQ(resent_late->stored.deliveries.size(), 1u);
  expire();
  auto redelivered = Await<StoredEvent>([&](auto done) {
    store.AddDeliveries("src", "e1", {NewDelivery{"ep2", TestSpec("deliv3")}}, kT0, done);
  });
  ASSERT_TRUE(redelivered) << redelivered.error().message;
  ASSERT_EQ(redelivered->deliveries.size(), 2u);
  EXPECT_EQ(redelivered->deliveries[1].task_id, "deliv3");
  EXPECT_EQ(redelivered->deliveries[1].status, core::TaskStatus::kPending);
  // Several new events in one batch are looked up in one query: the resent ones (whatever
  // their ids hold) are duplicates, the new one is not.
  const EventRecord odd = TestEvent("e\"2\\x\n,{}");
  ASSERT_TRUE(Await<EventSubmitOutcome>([&](auto done) {
    store.SubmitEvent(odd, {NewDelivery{"ep1", TestSpec("deliv4")}}, kT0, done);
  }));
  expire();
  claims.admin.Command({"DEL", claims.Key("event:src\t" + odd.event_id),
                        claims.Key("event:src\t" + odd.event_id + ":deliveries"),
                        claims.Key("eventids:" + odd.event_id)});
  std::vector<std::promise<Result<EventSubmitOutcome>>> answers(3);
  const std::vector<EventRecord> sent = {event, odd, TestEvent("e3")};
  for (size_t i = 0; i < sent.size(); ++i) {
    store.SubmitEvent(
        sent[i], {NewDelivery{"ep1", TestSpec("deliv-x" + std::to_string(i))}}, kT0,
        [&answers, i](Result<EventSubmitOutcome> r) { answers[i].set_value(std::move(r)); });
  }
  std::vector<bool> duplicate;
  for (auto& a : answers) {
    auto r = a.get_future().get();
    ASSERT_TRUE(r) << r.error().message;
    duplicate.push_back(r->duplicate);
  }
  EXPECT_EQ(duplicate, (std::vector<bool>{true, true, false}));
  auto cancelled = Await<core::Task>([&](auto done) { store.Cancel("old", kT0 + 5, done); });
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().code, core::ErrorCode::kTaskTerminal) << cancelled.error().message;
  // Nothing was made again: only the new tasks are there to lease.
  auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(10), done); });
  ASSERT_TRUE(leased);
  std::vector<std::string> ids;
  for (const auto& l : leased->leases) ids.push_back(l.task.spec.task_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"fresh", "made-here", "deliv3", "deliv4", "deliv-x2"}));
  store.Close();
}

// A generation leaves Redis only once PostgreSQL has every record written before it was closed:
// while an older outbox entry is still to copy (here a change whose task has no row yet) the
// claims stay, and they go once it is copied.
TEST(RedisPgStore, ClaimsStayInRedisUntilPostgresqlHasTheRecordsWrittenBeforeThem) {
  ASSERT_TRUE(HaveServices());
  RotatingClaims claims("claims-wait");
  ASSERT_TRUE(claims.store);
  Store& store = *claims.store;
  auto claimed = [&](const std::string& key, const std::string& id) {
    return claims.Claimed(key, id);
  };
  claims.admin.Command(
      {"XADD", claims.Key("outbox"), "*", "j",
       R"([["kind","state","id","early","ver","2","status","running","updated","5"]])"});
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({TestSpec("a")}, kT0, done); }));
  ASSERT_EQ(LeaseOneAndAck(store), "a");
  ASSERT_TRUE(UntilRedis([&] { return claims.Started(); }));
  claims.clock.Advance(RotatingClaims::kRetention);
  ASSERT_TRUE(UntilRedis([&] { return claimed("ended:prev", "a"); }));
  claims.clock.Advance(RotatingClaims::kRetention);
  // Several flushes of the recorder (one a second when idle) try to rotate, and must not.
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(claimed("ended:prev", "a")) << "dropped while the record lacked an older entry";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // "early" gets its row (as another process's copy would bring it), so its change is copied:
  // now the generation goes.
  redis_pg::PgConn pg(Env("MADEIRA_TEST_DATABASE_URL"), "madeira_" + claims.options.name_space);
  pg.Exec("CREATE TEMPORARY TABLE early AS SELECT * FROM task_rows WHERE task_id = 'a'");
  pg.Exec("UPDATE early SET task_id = 'early', ver = 1, seq = seq + 1000");
  pg.Exec("INSERT INTO tasks (" + redis_pg::PgSpecColumns() + ") SELECT " +
          redis_pg::PgSpecColumns() + " FROM early");
  pg.Exec("INSERT INTO task_states (" + redis_pg::PgStateColumns() + ", seq) SELECT " +
          redis_pg::PgStateColumns() + ", seq FROM early");
  ASSERT_TRUE(UntilRedis([&] { return !claimed("ended:prev", "a"); }));
  EXPECT_EQ(Await<std::vector<SubmitOutcome>>(
                [&](auto done) { store.Submit({TestSpec("a")}, kT0, done); })
                ->front()
                .kind,
            SubmitKind::kDuplicate);
  store.Close();
}

// A process that has not heard yet that claims may have left Redis (another process rotated
// them a moment ago) cannot make a task again: Redis answers its unasked submit 'recheck', and
// the store asks PostgreSQL and submits again.
TEST(RedisPgStore, AProcessThatMissedTheFirstRotationStillFindsEndedIds) {
  std::string ns;
  auto own = OpenOwn("claims-stale", &ns);
  ASSERT_TRUE(own);
  Store& store = *own;
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>(
      [&](auto done) { store.Submit({TestSpec("x")}, kT0, done); }));
  ASSERT_EQ(LeaseOneAndAck(store), "x");
  const EventRecord event = TestEvent("e1");
  ASSERT_TRUE(Await<EventSubmitOutcome>([&](auto done) {
    store.SubmitEvent(event, {NewDelivery{"ep1", TestSpec("d1")}}, kT0, done);
  }));
  auto recorded = Await<core::Task>([&](auto done) { store.Get("x", done); });  // copies first
  ASSERT_TRUE(recorded);
  ASSERT_EQ(recorded->status, core::TaskStatus::kSucceeded);
  // What another process's rotations (and Redis's expiry of the event) do, as this store sees
  // it before its recorder notices.
  redis_pg::RedisConn admin = AdminRedis();
  const std::string p = "madeira:" + ns + ":";
  admin.Command({"HSET", p + "ended:gen", "checked", "1"});
  const std::string ek = p + "event:src\te1";
  admin.Command({"DEL", p + "ended", ek, ek + ":deliveries", p + "eventids:e1"});
  // Both queued at once, so that both go before either answer tells the store.
  std::promise<Result<std::vector<SubmitOutcome>>> submitted;
  std::promise<Result<EventSubmitOutcome>> resent;
  store.Submit({TestSpec("x"), TestSpec("y")}, kT0,
               [&](Result<std::vector<SubmitOutcome>> r) { submitted.set_value(std::move(r)); });
  store.SubmitEvent(event, {NewDelivery{"ep1", TestSpec("d2")}}, kT0,
                    [&](Result<EventSubmitOutcome> r) { resent.set_value(std::move(r)); });
  auto event_again = resent.get_future().get();
  ASSERT_TRUE(event_again) << event_again.error().message;
  EXPECT_TRUE(event_again->duplicate);
  auto again = submitted.get_future().get();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)[0].kind, SubmitKind::kDuplicate);
  EXPECT_EQ((*again)[0].status, core::TaskStatus::kSucceeded);
  EXPECT_EQ((*again)[1].kind, SubmitKind::kCreated);
  auto leased = Await<LeaseBatch>([&](auto done) { store.Lease(LeaseFromQ(10), done); });
  ASSERT_TRUE(leased);
  std::vector<std::string> ids;
  for (const auto& l : leased->leases) ids.push_back(l.task.spec.task_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"d1", "y"}));  // not x again, nor a d2
  store.Close();
}

// Returns once `n` connections listen on `channel` (a bounded wait: Redis knows, the stores'
// subscriber threads do not say).
void AwaitSubscribers(redis_pg::RedisConn& admin, const std::string& channel, int64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (admin.Command({"PUBSUB", "NUMSUB", channel}).elements.at(1).integer < n) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the stores never subscribed";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A submit in one process wakes the long-polls of another at once: the scripts publish what
// they made ready, each store hands other processes' wake-ups to its handler (its own submits
// it hands over itself, once).
TEST(RedisPgStore, WakesTheLongPollsOfOtherProcesses) {
  ASSERT_TRUE(HaveServices());
  const std::string ns = NamespaceFor("wake-" + std::to_string(::getpid()));
  auto a = OpenRedisPgStore(TestOptions(ns));
  auto b = OpenRedisPgStore(TestOptions(ns));
  ASSERT_TRUE(a && b);
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> woken_a, woken_b;
  (*a)->SetReadyHandler([&](const std::map<std::string, int>& ready) {
    std::lock_guard lock(mu);
    for (const auto& [q, n] : ready) woken_a[q] += n;
    cv.notify_all();
  });
  (*b)->SetReadyHandler([&](const std::map<std::string, int>& ready) {
    std::lock_guard lock(mu);
    for (const auto& [q, n] : ready) woken_b[q] += n;
    cv.notify_all();
  });
  redis_pg::RedisConn admin = AdminRedis();
  const std::string channel = "madeira:" + ns + ":wake";
  AwaitSubscribers(admin, channel, 2);
  ASSERT_TRUE(Await<std::vector<SubmitOutcome>>([&](auto done) {
    (*b)->Submit({TestSpec("w1"), TestSpec("w2")}, kT0, done);
  }));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return woken_a["q"] == 2; }))
        << woken_a["q"];
  }
  // The submitting process woke its own long-polls once, directly, before answering the submit
  // (not a second time through its own publish). A third process's wake-up, published after the
  // submit's, reaches b after the submit's would have.
  admin.Command({"PUBLISH", channel, "another-process\nbarrier\t1"});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(5), [&] { return woken_b["barrier"] == 1; }));
    EXPECT_EQ(woken_b, (std::map<std::string, int>{{"q", 2}, {"barrier", 1}}));
  }
  (*a)->Close();
  (*b)->Close();
}

// An endpoint written through one process reaches the others at once: the store announces it
// on P changed, and each other store tells its change handler (never the writer's own).
TEST(RedisPgStore, TellsOtherProcessesThatEndpointsChanged) {
  ASSERT_TRUE(HaveServices());
  const std::string ns = NamespaceFor("changed-" + std::to_string(::getpid()));
  auto a = OpenRedisPgStore(TestOptions(ns));
  auto b = OpenRedisPgStore(TestOptions(ns));
  ASSERT_TRUE(a && b);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> heard_a, heard_b;
  (*a)->SetChangeHandler([&](std::string_view what) {
    std::lock_guard lock(mu);
    heard_a.emplace_back(what);
    cv.notify_all();
  });
  (*b)->SetChangeHandler([&](std::string_view what) {
    std::lock_guard lock(mu);
    heard_b.emplace_back(what);
    cv.notify_all();
  });
  redis_pg::RedisConn admin = AdminRedis();
  const std::string channel = "madeira:" + ns + ":changed";
  AwaitSubscribers(admin, channel, 2);
  // Right after subscribing each store tells its handler once (if it was set by then). A third
  // process's announcement, heard by both, comes after that: once both have it, the counts below
  // are not moved by a late subscribe-time call.
  admin.Command({"PUBLISH", channel, "another-process\nbarrier"});
  size_t a_before = 0, b_before = 0;
  {
    std::unique_lock lock(mu);
    const auto heard_barrier = [](const std::vector<std::string>& heard) {
      return std::find(heard.begin(), heard.end(), "barrier") != heard.end();
    };
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5),
                            [&] { return heard_barrier(heard_a) && heard_barrier(heard_b); }));
    a_before = heard_a.size();
    b_before = heard_b.size();
  }

  EndpointRecord ep{"ep_1", R"({"url":"http://a/"})", testing::kT0, testing::kT0};
  ASSERT_TRUE(Await<Unit>([&](auto done) { (*a)->PutEndpoint(ep, done); }));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(5), [&] { return heard_b.size() == b_before + 1; }));
    EXPECT_EQ(heard_b.back(), kEndpointsChanged);
  }
  ASSERT_TRUE(Await<Unit>([&](auto done) { (*b)->DeleteEndpoint("ep_1", done); }));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(5), [&] { return heard_a.size() > a_before; }));
    // Messages arrive in order: a's own announcement came first and was not handed over.
    EXPECT_EQ(heard_a.size(), a_before + 1);
    EXPECT_EQ(heard_a.back(), kEndpointsChanged);
  }
  // A failed delete announces nothing.
  auto again = Await<Unit>([&](auto done) { (*b)->DeleteEndpoint("ep_1", done); });
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, core::ErrorCode::kNotFound);
  (*a)->SetChangeHandler(nullptr);
  (*b)->SetChangeHandler(nullptr);
  (*a)->Close();
  (*b)->Close();
}

// An announcement can be lost (its PUBLISH failed while Redis was away): every store also tells
// its handler every change_resync, so each process reads the endpoints again anyway.
TEST(RedisPgStore, TellsItsChangeHandlerPeriodicallyInCaseAnAnnouncementWasLost) {
  ASSERT_TRUE(HaveServices());
  RedisPgOptions options = TestOptions(NamespaceFor("resync-" + std::to_string(::getpid())));
  options.change_resync = 100;
  auto store = OpenRedisPgStore(options);
  ASSERT_TRUE(store) << store.error().message;
  std::mutex mu;
  std::condition_variable cv;
  int heard = 0;
  (*store)->SetChangeHandler([&](std::string_view what) {
    std::lock_guard lock(mu);
    if (what == kEndpointsChanged) ++heard;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(2), [&] { return heard >= 3; })) << heard;
  }
  (*store)->SetChangeHandler(nullptr);
  (*store)->Close();
}

// Commands are framed by AppendCommand, not hiredis (whose sprintf an argument cost more than
// the rest of an ack): byte for byte what hiredis writes, whatever the arguments hold.
TEST(RedisPgStore, CommandsAreFramedAsHiredisFramesThem) {
  const std::vector<redis_pg::RedisCommand> commands = {
      {"PING"},
      {"SET", "k", ""},
      {"HSET", "key", std::string("a\r\nb\0c", 7), std::string(1000, 'x')},
      {"EVALSHA", "0123456789abcdef", "0", "\xff\xfe", "$3", "*2"},
  };
  std::string ours;
  std::string theirs;
  for (const redis_pg::RedisCommand& c : commands) {
    redis_pg::AppendCommand(ours, c);
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : c) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    char* formatted = nullptr;
    const int n =
        redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(), lens.data());
    ASSERT_GT(n, 0);
    theirs.append(formatted, static_cast<size_t>(n));
    redisFreeCommand(formatted);
  }
  EXPECT_EQ(ours, theirs);
  EXPECT_TRUE(ours.starts_with("*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"));
}

TEST(RedisPgStore, ParsesRedisUrls) {
  auto full = redis_pg::ParseRedisUrl("redis://user:pw@10.0.0.5:6380/3");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->host, "10.0.0.5");
  EXPECT_EQ(full->port, 6380);
  EXPECT_EQ(full->user, "user");
  EXPECT_EQ(full->password, "pw");
  EXPECT_EQ(full->db, 3);
  auto bare = redis_pg::ParseRedisUrl("redis://localhost");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, 6379);
  EXPECT_EQ(bare->db, 0);
  auto password_only = redis_pg::ParseRedisUrl("redis://:secret@[::1]:7000");
  ASSERT_TRUE(password_only);
  EXPECT_EQ(password_only->host, "::1");
  EXPECT_EQ(password_only->password, "secret");
  for (const char* bad :
       {"http://localhost", "redis://", "redis://h:99999", "redis://h/x", "not a url"}) {
    auto r = redis_pg::ParseRedisUrl(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().field, "redis_url") << bad;
  }
}

}  // namespace
}  // namespace madeira::store
