// The packed task layout (task_codec.h) without Redis: what a hash or an outbox entry holds
// reads back as the task that was submitted, with the hash's own fields over its spec.
#include "store/redis_pg/task_codec.h"

#include <gtest/gtest.h>
#include <msgpuck.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_text.h"
#include "store/redis_pg/scripts.h"

namespace madeira::store::redis_pg {
namespace {

core::TaskSpec Spec() {
  core::TaskSpec t;
  t.task_id = "t-1";
  t.task_type = "email.send";
  t.queue = "mail";
  t.payload_version = 2;
  // Everything a JSON string must escape, and text beyond ASCII.
  t.payload = "{\"to\":\"a\\\"b@example.com\",\"note\":\"tab\\there \\u00e9\xc3\xa9\",\"n\":[1,2]}";
  t.schedule_time = 1'700'000'000'000;
  t.timeout_ms = 30'000;
  t.max_retries = 5;
  t.priority = 3;
  t.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  t.idempotency_key = "order-7\n\"closed\"";
  t.content_hash = "abc123";
  return t;
}

// A record by name, as a JSON record writes it ("kind" included): what these tests read of one.
Fields Named(const Record& record) {
  if (const auto* f = std::get_if<Fields>(&record)) return *f;
  Fields named;
  auto add = [&named](const auto& r, std::span<const char* const> names) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (r.values[i]) named[names[i]] = *r.values[i];
    }
  };
  if (const auto* s = std::get_if<StateRecord>(&record)) {
    named["kind"] = "state";
    add(*s, kStateRecordFields);
  } else {
    named["kind"] = "attempt";
    add(std::get<AttemptRecord>(record), kAttemptRecordFields);
  }
  return named;
}

RedisReply Str(const std::string& s) {
  RedisReply r;
  r.type = RedisReply::Type::kString;
  r.str = s;
  return r;
}

RedisReply Flat(const std::vector<std::string>& values) {
  RedisReply r;
  r.type = RedisReply::Type::kArray;
  for (const std::string& v : values) r.elements.push_back(Str(v));
  return r;
}

constexpr core::Millis kNow = 1'699'999'999'000;

TEST(PackedTask, AHashOfAFewFieldsAndItsSpecReadsAsTheSubmittedTask) {
  const core::TaskSpec spec = Spec();
  // What create_task in scripts.cc writes: the fields the scripts use, and the packed spec.
  LiveTask live = TaskFromFields(FieldsFromFlat(Flat({"type",    spec.task_type,
                                                      "queue",   spec.queue,
                                                      "pv",      "2",
                                                      "timeout", "30000",
                                                      "prio",    "3",
                                                      "chash",   spec.content_hash,
                                                      "status",  "scheduled",
                                                      "updated", std::to_string(kNow),
                                                      "next",    std::to_string(spec.schedule_time),
                                                      "ready",   std::to_string(spec.schedule_time),
                                                      "seq",     "41",
                                                      "ver",     "1",
                                                      "spec",    PackedSpec(spec, kNow)})));
  const core::Task& t = live.task;
  EXPECT_EQ(t.spec.task_id, spec.task_id);
  EXPECT_EQ(t.spec.payload, spec.payload);
  EXPECT_EQ(t.spec.trace_id, spec.trace_id);
  EXPECT_EQ(t.spec.idempotency_key, spec.idempotency_key);
  EXPECT_EQ(t.spec.max_retries, 5);
  EXPECT_EQ(t.spec.schedule_time, spec.schedule_time);
  EXPECT_EQ(t.created_at, kNow);
  EXPECT_EQ(t.seq, 41);
  EXPECT_EQ(t.status, core::TaskStatus::kScheduled);
  // The counters and flags absent until set read as zero.
  EXPECT_EQ(t.retry_count, 0);
  EXPECT_EQ(t.attempts, 0);
  EXPECT_FALSE(t.deduplicated);
  EXPECT_FALSE(t.in_fast_retry);
  EXPECT_EQ(live.fencing_token, 0);
}

TEST(PackedTask, TheHashsOwnFieldsWinOverItsSpec) {
  // A replay's edit writes payload and maxr next to the spec; a transition changes next.
  Fields f = FieldsFromFlat(Flat({"spec", PackedSpec(Spec(), kNow), "payload", "{\"edited\":1}",
                                  "maxr", "0", "status", "pending", "seq", "1", "next", "5"}));
  LiveTask live = TaskFromFields(f);
  EXPECT_EQ(live.task.spec.payload, "{\"edited\":1}");
  EXPECT_EQ(live.task.spec.max_retries, 0);
  EXPECT_EQ(live.task.next_attempt_at, 5);
  EXPECT_EQ(live.task.spec.trace_id, Spec().trace_id);  // from the spec
  EXPECT_EQ(f.count("spec"), 0u);
}

TEST(PackedTask, AnOutboxEntryKeepsItsRecordsInOrder) {
  const core::TaskSpec spec = Spec();
  // A run of flat records (JSON), a new task (meta, spec), then another run.
  RedisReply entry = Flat({"j", R"([["kind","state","id","t-0","ver","3","status","running"]])",
                           "t", "41\tscheduled", "s", PackedSpec(spec, kNow), "j",
                           R"([["kind","attempt","task_id","t-0","attempt","1"]])"});
  std::vector<Record> records = RecordsFromFlat(entry);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(Named(records[0]).at("kind"), "state");
  EXPECT_EQ(Named(records[1]).at("kind"), "task");
  EXPECT_EQ(Named(records[1]).at("seq"), "41");
  EXPECT_EQ(Named(records[1]).at("status"), "scheduled");
  EXPECT_EQ(Named(records[1]).at("payload"), spec.payload);
  EXPECT_EQ(Named(records[1]).at("ikey"), *spec.idempotency_key);
  EXPECT_EQ(Named(records[2]).at("kind"), "attempt");
  // The task's record becomes a full row for PostgreSQL.
  RecordBatch batch = BuildRecordBatch({records[1]});
  EXPECT_EQ(batch.tasks, 1u);
  // One line of COPY text: task_id, seq, ver first (PgTaskColumns), then the rest; the
  // payload's backslashes escaped.
  EXPECT_EQ(batch.tasks_copy.rfind(spec.task_id + "\t41\t1\t", 0), 0u) << batch.tasks_copy;
  EXPECT_EQ(batch.tasks_copy.back(), '\n');
  EXPECT_EQ(std::count(batch.tasks_copy.begin(), batch.tasks_copy.end(), '\n'), 1);
  std::string escaped;  // the payload's backslashes doubled, as COPY reads them back
  for (char c : spec.payload) escaped += c == '\\' ? std::string("\\\\") : std::string(1, c);
  EXPECT_NE(batch.tasks_copy.find("\t" + escaped + "\t"), std::string::npos) << batch.tasks_copy;
}

// A task's change read before its full record (a reordered outbox) still gives the full row,
// with the change over it: the task is written, at the change's version.
TEST(PackedTask, AChangeBeforeItsTasksRecordStillWritesTheTask) {
  const core::TaskSpec spec = Spec();
  RedisReply entry = Flat({"j",
                           R"([["kind","state","id",")" + spec.task_id +
                               R"(","ver","5","status","running","attempts","1","updated","7"]])",
                           "t", "41\tpending", "s", PackedSpec(spec, kNow)});
  RecordBatch batch = BuildRecordBatch(RecordsFromFlat(entry));
  EXPECT_EQ(batch.tasks, 1u);
  EXPECT_EQ(batch.states, 0u);
  EXPECT_EQ(batch.tasks_copy.rfind(spec.task_id + "\t41\t5\t", 0), 0u) << batch.tasks_copy;
  EXPECT_NE(batch.tasks_copy.find("\trunning\t"), std::string::npos) << batch.tasks_copy;
}

// A flush's changes and attempts become lines in the column order of PgStateColumns and
// kPgAttemptRowColumns, absent values \N, the newest change of a task only.
TEST(PackedTask, ChangesAndAttemptsBecomeRowsInColumnOrder) {
  RedisReply entry = Flat(
      {"j", R"([["kind","state","id","t-1","ver","2","status","running","attempts","1",)"
            R"("updated","10","next",""],)"
            R"(["kind","attempt","task_id","t-1","attempt","1","worker","w\t1","started","10",)"
            R"("finished","12","outcome","failed","error","{\"e\":1}","http","503"],)"
            R"(["kind","state","id","t-1","ver","3","status","retrying","retry","1",)"
            R"("attempts","1","updated","12","next","99","lerr","bad\nline","fastused","1",)"
            R"("infast","1"]])"});
  RecordBatch batch = BuildRecordBatch(RecordsFromFlat(entry));
  EXPECT_EQ(batch.tasks, 0u);
  EXPECT_EQ(batch.states, 1u);
  EXPECT_EQ(batch.states_copy, "t-1\t3\tretrying\t1\t1\t12\t99\tbad\\nline\t\\N\tf\t1\tt\n");
  EXPECT_EQ(batch.attempts, 1u);
  EXPECT_EQ(batch.attempts_copy, "t-1\t1\tw\\t1\t10\t12\tfailed\t{\"e\":1}\t503\t\\N\n");
}

// A submit's own tasks are copied from the specs it sent (NewTasksRecordBatch), not from their
// packed specs read back: the rows must be the very ones the outbox's records give, escapes,
// optional fields, a scheduled task and the order by id included.
TEST(PackedTask, MadeTasksBecomeTheRowsTheirRecordsWould) {
  core::TaskSpec full = Spec();
  full.owner = "ci\tbot";
  full.trace_id = "trace\\with\nbreaks";
  core::TaskSpec bare = Spec();
  bare.task_id = "a-0";
  bare.idempotency_key.reset();
  bare.payload = "{}";
  bare.max_retries = 0;
  bare.priority = -2;
  std::vector<MadeTask> made = {{&full, "41\tscheduled", kNow}, {&bare, "42\tpending", kNow + 7}};
  std::vector<Record> records = {NewTaskRecord("41\tscheduled", PackedSpec(full, kNow)),
                                 NewTaskRecord("42\tpending", PackedSpec(bare, kNow + 7))};
  RecordBatch direct = NewTasksRecordBatch(made);
  RecordBatch read_back = BuildRecordBatch(records);
  EXPECT_EQ(direct.tasks, 2u);
  EXPECT_EQ(direct.tasks_copy, read_back.tasks_copy);
  EXPECT_LT(direct.tasks_copy.find("a-0\t"), direct.tasks_copy.find("t-1\t"));
  EXPECT_NE(direct.tasks_copy.find("\tscheduled\t"), std::string::npos);
  EXPECT_NE(direct.tasks_copy.find("ci\\tbot"), std::string::npos);  // COPY's escape
  EXPECT_EQ(direct.states + direct.attempts + direct.events, 0u);
  EXPECT_THROW(NewTasksRecordBatch({{&bare, "42", kNow}}), std::runtime_error);
}

// Values as the scripts' cmsgpack.pack encodes them (Lua strings, integers, nil, false), one
// after another: packed records as a field 'm' holds them.
class Packed {
 public:
  Packed& S(std::string_view text) {
    return Put(mp_sizeof_str(text.size()),
               [&](char* p) { return mp_encode_str(p, text.data(), text.size()); });
  }
  Packed& U(uint64_t n) {
    return Put(mp_sizeof_uint(n), [&](char* p) { return mp_encode_uint(p, n); });
  }
  Packed& Nil() {
    return Put(mp_sizeof_nil(), [](char* p) { return mp_encode_nil(p); });
  }
  Packed& False() { return Bool(false); }
  Packed& True() { return Bool(true); }
  const std::string& bytes() const { return bytes_; }

 private:
  Packed& Bool(bool b) {
    return Put(mp_sizeof_bool(b), [&](char* p) { return mp_encode_bool(p, b); });
  }
  template <typename Encode>
  Packed& Put(size_t size, Encode encode) {
    const size_t at = bytes_.size();
    bytes_.resize(at + size);
    encode(bytes_.data() + at);
    return *this;
  }
  std::string bytes_;
};

// The lease's and the ack's records go packed ('m'): the same rows as their JSON form, in the
// same order among the entry's other fields; nil, false and a state's '' are none, an attempt's
// '' is kept (its worker), integers read as text.
TEST(PackedTask, PackedRecordsBecomeTheRowsTheirJsonFormWould) {
  Packed packed;
  // One record a statement, as the scripts pack it.
  // clang-format off
  packed.S("state").S("t-1").S("2").S("running").False().S("1").S("10").S("").False().False()
      .False().False().False();
  packed.S("attempt").S("t-1").S("1").S("w\t1").S("10").U(12).S("failed").S("{\"e\":1}").S("503")
      .Nil();
  packed.S("state").S("t-1").S("3").S("retrying").S("1").S("1").S("12").S("99").S("bad\nline")
      .Nil().Nil().S("1").S("1");
  packed.S("attempt").S("t-2").S("1").S("").S("10").S("12").S("succeeded").Nil().Nil().Nil();
  // clang-format on
  RedisReply entry = Flat(
      {"j", R"([["kind","state","id","t-0","ver","4","status","dead"]])", "m", packed.bytes()});
  std::vector<Record> records = RecordsFromFlat(entry);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(Named(records[0]).at("id"), "t-0");  // the JSON run first, as written
  EXPECT_EQ(Named(records[1]).count("next"), 0u);
  EXPECT_EQ(Named(records[1]).count("retry"), 0u);
  EXPECT_EQ(Named(records[4]).at("worker"), "");
  RecordBatch batch = BuildRecordBatch({records[1], records[2], records[3]});
  EXPECT_EQ(batch.states_copy, "t-1\t3\tretrying\t1\t1\t12\t99\tbad\\nline\t\\N\tf\t1\tt\n");
  EXPECT_EQ(batch.attempts_copy, "t-1\t1\tw\\t1\t10\t12\tfailed\t{\"e\":1}\t503\t\\N\n");
}

// An ack's one packed record ("acked") reads as the attempt that succeeded and then the task's
// state after it: the rows the two records it replaced gave, the shared values in both.
TEST(PackedTask, AnAckedRecordBecomesItsAttemptAndItsState) {
  Packed packed;
  // id ver attempts worker started finished http excerpt result retry lerr dedup fastused
  // One record a statement, as the scripts pack it.
  // clang-format off
  packed.S("acked").S("t-1").S("4").S("2").S("w\t1").S("10").S("12").S("200").S("ok").S("{}")
      .S("1").S("bad\nline").Nil().S("1");
  packed.S("acked").S("t-2").S("2").S("1").S("").S("20").U(25).Nil().Nil().Nil().Nil().Nil()
      .Nil().Nil();
  // clang-format on
  std::vector<Record> records = RecordsFromFlat(Flat({"m", packed.bytes()}));
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(Named(records[0]).at("kind"), "attempt");
  EXPECT_EQ(Named(records[1]).at("kind"), "state");
  EXPECT_EQ(Named(records[3]).at("updated"), "25");
  EXPECT_EQ(Named(records[3]).count("retry"), 0u);
  RecordBatch first = BuildRecordBatch({records[0], records[1]});
  EXPECT_EQ(first.states_copy, "t-1\t4\tsucceeded\t1\t2\t12\t\\N\tbad\\nline\t{}\tf\t1\tf\n");
  EXPECT_EQ(first.attempts_copy, "t-1\t2\tw\\t1\t10\t12\tsucceeded\t\\N\t200\tok\n");
  RecordBatch second = BuildRecordBatch({records[2], records[3]});
  EXPECT_EQ(second.states_copy, "t-2\t2\tsucceeded\t0\t1\t25\t\\N\t\\N\t\\N\tf\t0\tf\n");
  EXPECT_EQ(second.attempts_copy, "t-2\t1\t\t20\t25\tsucceeded\t\\N\t\\N\t\\N\n");
  Packed cut;  // one value short: an error, not a read past its end
  cut.S("acked").S("t-1").S("4").S("2").S("w").S("10").S("12").Nil().Nil().Nil().Nil().Nil().Nil();
  EXPECT_THROW(RecordsFromFlat(Flat({"m", cut.bytes()})), std::runtime_error);
}

// COPY's text format gives four bytes a meaning: each is escaped wherever it stands in a value,
// a NUL before it included (PostgreSQL refuses a NUL; the escapes must not stop at one).
TEST(PackedTask, EveryByteCopyGivesAMeaningIsEscaped) {
  Packed packed;
  const std::string error = std::string("\\a\tb\nc\rd") + '\0' + "\te\\";
  // clang-format off
  packed.S("attempt").S("t-1").S("1").S("w").S("10").S("12").S("failed").S(error).Nil()
      .S("plain excerpt, long enough to be scanned in more than one step");
  // clang-format on
  RecordBatch batch = BuildRecordBatch(RecordsFromFlat(Flat({"m", packed.bytes()})));
  EXPECT_EQ(batch.attempts_copy,
            std::string("t-1\t1\tw\t10\t12\tfailed\t\\\\a\\tb\\nc\\rd") + '\0' +
                "\\te\\\\\t\\N\tplain excerpt, long enough to be scanned in more "
                "than one step\n");
}

// A damaged 'm' costs its entry an error (set aside by the recorder), never a read past its end.
TEST(PackedTask, PackedRecordsThatCannotBeReadSaySo) {
  Packed whole;
  // One record a statement, as the scripts pack it.
  // clang-format off
  whole.S("state").S("t-1").S("2").S("running").Nil().S("1").S("10").Nil().Nil().Nil().Nil().Nil()
      .Nil();
  // clang-format on
  ASSERT_EQ(RecordsFromFlat(Flat({"m", whole.bytes()})).size(), 1u);
  for (size_t cut = 1; cut < whole.bytes().size(); ++cut) {
    EXPECT_THROW(RecordsFromFlat(Flat({"m", whole.bytes().substr(0, cut)})), std::runtime_error)
        << "cut at " << cut;
  }
  Packed no_kind;
  no_kind.S("task").S("t-1");
  EXPECT_THROW(RecordsFromFlat(Flat({"m", no_kind.bytes()})), std::runtime_error);
  Packed truth;  // true is no value the scripts write
  truth.S("attempt").S("t-1").S("1").S("w").S("10").S("12").S("failed").True().Nil().Nil();
  EXPECT_THROW(RecordsFromFlat(Flat({"m", truth.bytes()})), std::runtime_error);
}

// A task's "st" as the scripts' pack_live writes it: kLiveFields' values in order, nil where
// `values` has none.
std::string LiveState(const std::map<std::string, std::string>& values) {
  Packed st;
  for (const char* name : kLiveFields) {
    auto it = values.find(name);
    if (it == values.end()) {
      st.Nil();
    } else {
      st.S(it->second);
    }
  }
  return st.bytes();
}

// A task's st with the values every task has (`spec`'s, a submit order and a ready time) and
// `more`, which win.
std::string StateOf(const core::TaskSpec& spec, std::map<std::string, std::string> more) {
  more.insert({{"type", spec.task_type},
               {"queue", spec.queue},
               {"pv", "1"},
               {"timeout", "30000"},
               {"prio", "3"},
               {"chash", spec.content_hash},
               {"seq", "41"},
               {"ready", "1700000000000"},
               {"updated", "1700000000500"}});
  return LiveState(more);
}

// A leased task as the lease answers it ("st", then the spec): the packed fields over the spec
// (a replay's payload, the lease's state), absent ones taken from the spec, '' kept.
TEST(PackedTask, APackedStateOverItsSpecReadsAsTheLeasedTask) {
  const core::TaskSpec spec = Spec();
  const std::string st = StateOf(spec, {{"pv", "3"},
                                        {"status", "running"},
                                        {"ver", "4"},
                                        {"updated", "1700000000500"},
                                        {"next", ""},
                                        {"token", "2"},
                                        {"attempts", "2"},
                                        {"retry", "1"},
                                        {"lerr", "{\"type\":\"boom\"}"},
                                        {"lease", "ab~mail~t-1"},
                                        {"astart", "1700000000500"},
                                        {"deadline", "1700000030500"},
                                        {"worker", "w\t1"},
                                        {"payload", "{\"edited\":true}"}});
  LiveTask live = LeasedTask(st, PackedSpec(spec, kNow), nullptr);
  EXPECT_EQ(live.task.spec.task_id, "t-1");
  EXPECT_EQ(live.task.spec.payload, "{\"edited\":true}");
  EXPECT_EQ(live.task.spec.payload_version, 3);
  EXPECT_EQ(live.task.spec.idempotency_key, spec.idempotency_key);  // from the spec
  EXPECT_EQ(live.task.spec.trace_id, spec.trace_id);
  EXPECT_EQ(live.task.status, core::TaskStatus::kRunning);
  EXPECT_FALSE(live.task.next_attempt_at);
  EXPECT_EQ(live.task.last_error, "{\"type\":\"boom\"}");
  EXPECT_EQ(live.task.retry_count, 1);
  EXPECT_EQ(live.task.attempts, 2);
  EXPECT_EQ(live.task.seq, 41);
  EXPECT_EQ(live.task.created_at, kNow);
  EXPECT_FALSE(live.task.in_fast_retry);
  EXPECT_EQ(live.lease_id, "ab~mail~t-1");
  EXPECT_EQ(live.fencing_token, 2);
  EXPECT_EQ(live.deadline, 1'700'000'030'500);
  EXPECT_EQ(live.worker, "w\t1");
  EXPECT_EQ(live.ver, 4);
  // The same hash through HGETALL reads the same.
  LiveTask flat = TaskFromFields(FieldsFromFlat(Flat({"spec", PackedSpec(spec, kNow), "st", st})));
  EXPECT_EQ(flat.task.spec.payload, live.task.spec.payload);
  EXPECT_EQ(flat.lease_id, live.lease_id);
  EXPECT_EQ(flat.ver, live.ver);
}

// A task that died or ended has no next attempt: nil in its st, which the spec's next (the
// schedule time it was made with) must not stand in for, however it is read.
TEST(PackedTask, NoNextInTheStateIsNoNextAttempt) {
  const core::TaskSpec spec = Spec();
  const std::string packed = PackedSpec(spec, kNow);
  const std::string dead = StateOf(spec, {{"status", "dead"}, {"ver", "4"}, {"attempts", "1"}});
  EXPECT_FALSE(LeasedTask(dead, packed, nullptr).task.next_attempt_at);
  const LiveTask flat = TaskFromFields(FieldsFromFlat(Flat({"st", dead, "spec", packed})));
  EXPECT_EQ(flat.task.status, core::TaskStatus::kDead);
  EXPECT_FALSE(flat.task.next_attempt_at);
  // A task waiting for its next attempt reads it from its st.
  const std::string waiting =
      StateOf(spec, {{"status", "retrying"}, {"ver", "4"}, {"next", "1700000009000"}});
  EXPECT_EQ(LeasedTask(waiting, packed, nullptr).task.next_attempt_at, 1'700'000'009'000);
  const LiveTask read = TaskFromFields(FieldsFromFlat(Flat({"st", waiting, "spec", packed})));
  EXPECT_EQ(read.task.next_attempt_at, 1'700'000'009'000);
  // The same in a hash an older Madeira wrote a field each, beside the spec.
  const LiveTask by_field = TaskFromFields(FieldsFromFlat(
      Flat({"status", "dead", "ver", "4", "seq", "41", "ready", "1700000000000", "spec", packed})));
  EXPECT_EQ(by_field.task.status, core::TaskStatus::kDead);
  EXPECT_FALSE(by_field.task.next_attempt_at);
}

void ExpectSameLiveTask(const LiveTask& a, const LiveTask& b) {
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.lease_id, b.lease_id);
  EXPECT_EQ(a.fencing_token, b.fencing_token);
  EXPECT_EQ(a.deadline, b.deadline);
  EXPECT_EQ(a.attempt_started_at, b.attempt_started_at);
  EXPECT_EQ(a.worker, b.worker);
  EXPECT_EQ(a.ready_at, b.ready_at);
  EXPECT_EQ(a.ver, b.ver);
}

// LeasedTask reads a lease's reply straight into the task: the same task and state record as
// through a map of its fields, for states that override the spec, leave it alone, or hold
// numbers rather than text.
TEST(PackedTask, ALeasedTaskReadsAsThroughItsFields) {
  core::TaskSpec spec = Spec();
  core::TaskSpec plain = Spec();
  plain.idempotency_key.reset();
  plain.owner = "team-a";
  Packed numbers;  // cmsgpack packs a Lua number as one
  for (const char* name : kLiveFields) {
    const std::string_view n = name;
    if (n == "status") {
      numbers.S("running");
    } else if (n == "ver" || n == "token" || n == "attempts" || n == "seq") {
      numbers.U(7);
    } else if (n == "lerr") {
      numbers.S("");  // '' is none in a state record, text in the task
    } else {
      numbers.Nil();
    }
  }
  const std::vector<std::pair<std::string, const core::TaskSpec*>> cases = {
      {LiveState({{"status", "running"},
                  {"seq", "41"},
                  {"ver", "2"},
                  {"next", ""},
                  {"lease", "ab~mail~t-1"},
                  {"token", "1"},
                  {"deadline", "1700000030000"},
                  {"payload", "{\"edited\":true}"},
                  {"dedup", "1"},
                  {"infast", "1"},
                  {"fastused", "2"},
                  {"result", "r"}}),
       &spec},
      {LiveState({{"status", "running"}, {"seq", "41"}, {"ver", "2"}}), &plain},
      {numbers.bytes(), &spec}};
  for (const auto& [st, task] : cases) {
    const std::string packed = PackedSpec(*task, kNow);
    const Fields fields = FieldsFromFlat(Flat({"st", st, "spec", packed}));
    StateRecord state;
    const LiveTask leased = LeasedTask(st, packed, &state);
    ExpectSameLiveTask(leased, TaskFromFields(fields));
    EXPECT_EQ(state, StateRecordOf(fields));
    EXPECT_EQ(Named(state).at("kind"), "state");
    EXPECT_EQ(Named(state).at("id"), "t-1");
    EXPECT_EQ(Named(state).at("status"), "running");
  }
}

// A spec as an older Madeira packed it: the inside of a flat JSON array, the same fields.
std::string JsonSpec(const core::TaskSpec& t, core::Millis now) {
  std::string out;
  auto pair = [&out](std::string_view name, std::string_view value) {
    if (!out.empty()) out += ',';
    core::AppendJsonString(out, name);
    out += ',';
    core::AppendJsonString(out, value);
  };
  pair("id", t.task_id);
  pair("type", t.task_type);
  pair("queue", t.queue);
  pair("pv", std::to_string(t.payload_version));
  pair("payload", t.payload);
  pair("sched", std::to_string(t.schedule_time));
  pair("timeout", std::to_string(t.timeout_ms));
  pair("maxr", std::to_string(t.max_retries));
  pair("prio", std::to_string(t.priority));
  pair("trace", t.trace_id);
  if (t.idempotency_key) pair("ikey", *t.idempotency_key);
  pair("chash", t.content_hash);
  if (!t.owner.empty()) pair("owner", t.owner);
  pair("created", std::to_string(now));
  pair("updated", std::to_string(now));
  pair("next", std::to_string(t.schedule_time));
  pair("ready", std::to_string(t.schedule_time));
  pair("ver", "1");
  return out;
}

// Tasks submitted before specs were packed as msgpack are still in Redis after an upgrade: their
// JSON specs read as the same task everywhere a spec is read (a lease, a hash read whole, a new
// task's outbox record).
TEST(PackedTask, ASpecAnOlderMadeiraWroteReadsAsTheSameTask) {
  core::TaskSpec spec = Spec();
  spec.owner = "team-a";
  const std::string packed = PackedSpec(spec, kNow);
  const std::string json = JsonSpec(spec, kNow);
  ASSERT_NE(packed.front(), '"');
  ASSERT_EQ(json.front(), '"');
  const std::string st = LiveState({{"status", "running"}, {"seq", "41"}, {"ver", "2"}});
  StateRecord state_packed;
  StateRecord state_json;
  const LiveTask from_packed = LeasedTask(st, packed, &state_packed);
  ExpectSameLiveTask(LeasedTask(st, json, &state_json), from_packed);
  EXPECT_EQ(state_json, state_packed);
  EXPECT_EQ(from_packed.task.spec.payload, spec.payload);
  EXPECT_EQ(from_packed.task.spec.idempotency_key, spec.idempotency_key);
  EXPECT_EQ(from_packed.task.spec.owner, "team-a");
  ExpectSameLiveTask(TaskFromFields(FieldsFromFlat(Flat({"st", st, "spec", json}))), from_packed);
  EXPECT_EQ(NewTaskRecord("41\tpending", json), NewTaskRecord("41\tpending", packed));
  // The msgpack spec is the shorter: names and values carry no quotes and no escapes.
  EXPECT_LT(packed.size(), json.size());
}

// A spec holds a task's fields, never a packed value of its own: a damaged one naming "spec" or
// "st" (found by the record fuzzer) must not put back what unpacking took out.
TEST(PackedTask, ASpecNeverPutsBackAPackedValue) {
  for (const std::string& spec : {Packed().S("spec").S("3").S("st").S("x").S("type").S("t").bytes(),
                                  std::string(R"("spec","3","st","x","type","t")")}) {
    Fields f{{"spec", spec}, {"status", "pending"}, {"seq", "1"}};
    UnpackSpec(f);
    EXPECT_EQ(f.count("spec"), 0u);
    EXPECT_EQ(f.count("st"), 0u);
    EXPECT_EQ(f.at("type"), "t");
  }
}

// A damaged reply is an error for the lease that read it (the map's errors), never a read past
// its end or a task made up.
TEST(PackedTask, ALeasedTaskThatCannotBeReadSaysSo) {
  const std::string st = LiveState({{"status", "running"}, {"seq", "41"}, {"ver", "2"}});
  const std::string spec = PackedSpec(Spec(), kNow);
  ASSERT_EQ(LeasedTask(st, spec, nullptr).task.seq, 41);
  for (size_t cut = 0; cut < st.size(); ++cut) {
    EXPECT_THROW(LeasedTask(st.substr(0, cut), spec, nullptr), std::runtime_error) << cut;
  }
  EXPECT_THROW(LeasedTask(st + Packed().S("extra").bytes(), spec, nullptr), std::runtime_error);
  EXPECT_THROW(LeasedTask(Packed().True().bytes() + st.substr(1), spec, nullptr),
               std::runtime_error);
  EXPECT_THROW(LeasedTask(st, "\"id\",\"t-1\",{", nullptr), std::runtime_error);
  // Cut anywhere before its optional last fields (next, ready, ver: st has the lease's), or
  // inside a value, a spec lacks what a task needs or cannot be read.
  const size_t optional_from = spec.find("\xa4next");
  ASSERT_NE(optional_from, std::string::npos);
  for (size_t cut = 1; cut < optional_from; ++cut) {
    EXPECT_THROW(LeasedTask(st, spec.substr(0, cut), nullptr), std::runtime_error) << cut;
    const RedisReply hash = Flat({"st", st, "spec", spec.substr(0, cut)});
    EXPECT_THROW(TaskFromFields(FieldsFromFlat(hash)), std::runtime_error) << cut;
  }
  EXPECT_THROW(LeasedTask(st, spec.substr(0, spec.size() - 1), nullptr), std::runtime_error);
  EXPECT_THROW(LeasedTask(st, spec + Packed().U(5).bytes(), nullptr), std::runtime_error);
  EXPECT_THROW(LeasedTask(st, spec.substr(0, spec.size() / 2), nullptr), std::runtime_error);
  // A field it needs missing, or a number that is none.
  EXPECT_THROW(LeasedTask(st, "\"id\",\"t-1\"", nullptr), std::runtime_error);
  EXPECT_THROW(LeasedTask(std::nullopt, spec, nullptr), std::runtime_error);  // no seq
  EXPECT_THROW(
      LeasedTask(LiveState({{"status", "running"}, {"seq", "41"}, {"ver", "2x"}}), spec, nullptr),
      std::runtime_error);
  EXPECT_THROW(LeasedTask(LiveState({{"status", "sleeping"}, {"seq", "41"}}), spec, nullptr),
               std::runtime_error);
}

// A damaged "st" is an error for the call that read it, never a read past its end.
TEST(PackedTask, APackedStateThatCannotBeReadSaysSo) {
  const std::string st = LiveState({{"status", "pending"}, {"ver", "1"}});
  Fields whole{{"st", st}};
  UnpackLive(whole);
  EXPECT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole.at("status"), "pending");
  for (size_t cut = 0; cut < st.size(); ++cut) {
    Fields f{{"st", st.substr(0, cut)}};
    EXPECT_THROW(UnpackLive(f), std::runtime_error) << "cut at " << cut;
  }
  Fields longer{{"st", st + Packed().S("extra").bytes()}};
  EXPECT_THROW(UnpackLive(longer), std::runtime_error);
  Packed truth;
  truth.True();
  Fields odd{{"st", truth.bytes() + st.substr(1)}};
  EXPECT_THROW(UnpackLive(odd), std::runtime_error);
}

TEST(PackedTask, ARecordWithABadNumberIsNotCopied) {
  RedisReply entry =
      Flat({"j", R"([["kind","state","id","t-1","ver","2","status","running","updated","1x"]])"});
  EXPECT_THROW(BuildRecordBatch(RecordsFromFlat(entry)), std::runtime_error);
}

TEST(PackedTask, AnEntryThatCannotBeReadSaysSo) {
  EXPECT_THROW(RecordsFromFlat(Flat({"s", PackedSpec(Spec(), kNow)})), std::runtime_error);
  EXPECT_THROW(RecordsFromFlat(Flat({"t", "41"})), std::runtime_error);
  EXPECT_THROW(FieldsFromFlat(Flat({"spec", "\"id\",\"t-1\",{"})), std::runtime_error);
}

}  // namespace
}  // namespace madeira::store::redis_pg
