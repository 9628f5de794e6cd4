#include "store/redis_pg/backend.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/log.h"

namespace madeira::store::redis_pg {

namespace {

using core::ErrorCode;
using core::MakeError;
using core::TaskStatus;

constexpr int kOutboxBatch = 256;   // entries; one holds up to 64 records
constexpr int kFlushRounds = 1000;  // bounds one flush; what is left waits for the next
constexpr int kCopyTries = 3;       // a copy aborted by a deadlock runs again
constexpr auto kClaimInterval = std::chrono::seconds(2);
// Copied entries are trimmed at most this often: a trim costs two round trips, and a flush
// that waits for them answers the next submits that much later.
constexpr auto kTrimInterval = std::chrono::milliseconds(200);
constexpr int64_t kClaimIdleMs = 5'000;
// How long a flush waits for other processes' copies of entries they read before its own read
// (one of them may be a submit waiting here) before it claims and copies them itself, and how
// often it asks meanwhile. Their copies take a few milliseconds; copying twice is harmless.
constexpr auto kOthersCopyWait = std::chrono::milliseconds(50);
constexpr auto kOthersCopyPoll = std::chrono::milliseconds(1);

// What a flush reading the outbox needs to tell this process's submit entries ("o" first).
struct OwnSubmits {
  const std::string& origin;
  OwnEntries& entries;
};

// Parses entries as XRANGE and XCLAIM answer them ([id, fields] each) into `into` (pointing
// into `entries`); how many there were. This process's submit entries are parsed only when
// OwnEntries says they must be copied.
size_t ParseOutboxEntries(const RedisReply& entries, OutboxRead& into, OwnSubmits own) {
  const size_t before = into.ids.size();
  const auto now = OwnEntries::Clock::now();
  for (const RedisReply& e : entries.elements) {
    if (e.IsNil() || e.elements.empty()) continue;  // XCLAIM of an entry trimmed meanwhile
    into.ids.push_back(e.elements.at(0).str);
    if (e.elements.size() < 2 || e.elements[1].IsNil()) continue;
    const std::vector<RedisReply>& flat = e.elements[1].elements;
    if (flat.size() >= 2 && flat[0].str == "o" && flat[1].str == own.origin) {
      const OwnEntries::Verdict verdict = own.entries.Judge(into.ids.back(), now);
      if (verdict == OwnEntries::Verdict::kPass) continue;
      if (verdict == OwnEntries::Verdict::kWait) {
        into.waiting.push_back(into.ids.back());
        continue;
      }
    }
    OutboxEntry& entry = into.entries.emplace_back();
    entry.id = into.ids.back();
    entry.fields = &e.elements[1];
    try {
      entry.records = RecordsFromFlat(e.elements[1]);
    } catch (const std::exception& unreadable) {
      entry.unreadable = unreadable.what();
    }
  }
  return into.ids.size() - before;
}

// Parses one XREADGROUP reply into `into` (pointing into `reply`); how many entries it held.
size_t ParseOutboxRead(const RedisReply& reply, OutboxRead& into, OwnSubmits own) {
  if (reply.IsError()) throw RedisIoError("redis: XREADGROUP: " + reply.str);
  if (reply.IsNil() || reply.elements.empty()) return 0;
  return ParseOutboxEntries(reply.elements[0].elements.at(1), into, own);
}

// The consumers other than `self` holding pending entries in an XPENDING summary ([count, min
// id, max id, [[consumer, count], ...]]), and the newest id pending.
std::vector<std::string> OtherHolders(const RedisReply& summary, const std::string& self,
                                      std::string& newest) {
  if (summary.IsError()) throw RedisIoError("redis: XPENDING: " + summary.str);
  std::vector<std::string> others;
  if (summary.elements.size() < 4 || summary.elements[3].IsNil()) return others;
  for (const RedisReply& c : summary.elements[3].elements) {
    if (c.elements.size() == 2 && c.elements[0].str != self) others.push_back(c.elements[0].str);
  }
  newest = summary.elements[2].str;
  return others;
}

// The full rows a flush COPYed into record_tasks (see CopyToRecord), each over an older version:
// what a task is made with into `tasks`, its state into `task_states` (migration 6), each part
// replacing only an older one (a state changes without the full row, which keeps its ver).
const std::string& UpsertTasksSql() {
  static const std::string sql =
      "WITH spec AS (INSERT INTO tasks (" + PgSpecColumns() + ") SELECT " + PgSpecColumns() +
      " FROM record_tasks ON CONFLICT (task_id) DO UPDATE SET " + PgSpecAssignments("EXCLUDED") +
      " WHERE tasks.ver < EXCLUDED.ver) "
      "INSERT INTO task_states (" +
      PgStateColumns() + ", seq) SELECT " + PgStateColumns() +
      ", seq FROM record_tasks ON CONFLICT (task_id) DO UPDATE SET " +
      PgStateAssignments("EXCLUDED") + " WHERE task_states.ver < EXCLUDED.ver";
  return sql;
}

// The state rows of tasks whose row exists and is older (the rows COPYed into record_states);
// returns the ids without a row. The rows are found through `= ANY (ARRAY(...))`, which the
// planner takes as a few index probes: a temporary table has no statistics, so a plain join
// guesses it holds hundreds of rows and, below a few hundred thousand tasks, hashes the whole
// table by a sequential scan on every flush (2.9 ms with 8,000 tasks for 12 rows, 0.6 ms this
// way).
const std::string& UpdateStatesSql() {
  static const std::string sql =
      "WITH u AS (UPDATE task_states SET " + PgStateAssignments("x") +
      " FROM record_states x "
      "WHERE task_states.task_id = ANY (ARRAY(SELECT task_id FROM record_states)) "
      "AND task_states.task_id = x.task_id AND task_states.ver < x.ver "
      "RETURNING task_states.task_id) "
      "SELECT task_id FROM record_states EXCEPT SELECT task_id FROM task_states "
      "WHERE task_id = ANY (ARRAY(SELECT task_id FROM record_states))";
  return sql;
}

// The attempts COPYed into record_attempts.
const std::string& InsertAttemptsSql() {
  static const std::string sql = "INSERT INTO attempts (" + std::string(kPgAttemptRowColumns) +
                                 ") SELECT " + kPgAttemptRowColumns +
                                 " FROM record_attempts ON CONFLICT (task_id, attempt) DO NOTHING";
  return sql;
}

// The temporary tables a copy's rows go to by COPY: made once a connection, emptied by the
// copy's own transaction (a DELETE or a TRUNCATE, in CopyToRecord). record_states takes its
// columns' types from tasks but none of its NOT NULLs (CREATE TABLE AS copies no constraints; LIKE
// tasks would): a state row may lack a value. Not ON COMMIT DELETE ROWS: PostgreSQL then truncates
// the tables at every commit that touched a temporary table, ~0.9 ms of file work (pgbench
// here: 1.9 ms a transaction against 0.9 ms emptied by DELETE), and every submit waits for that
// commit. The statements that apply the rows are prepared here too, once a connection, not
// planned again in every copy that submits wait for (one submit at a time: answered ~0.5 ms
// sooner at the median, docs/benchmarks.md). They take no parameters, so their plan is the one
// a plain query would get, and PostgreSQL plans them again when the tables' statistics change.
const std::string& RecordTablesSql() {
  static const std::string sql =
      "CREATE TEMPORARY TABLE IF NOT EXISTS record_tasks AS SELECT " + PgTaskColumns() +
      " FROM task_rows WITH NO DATA; "
      "CREATE TEMPORARY TABLE IF NOT EXISTS record_states AS SELECT " +
      PgStateColumns() +
      " FROM task_states WITH NO DATA; "
      "CREATE TEMPORARY TABLE IF NOT EXISTS record_attempts (LIKE attempts); "
      "DEALLOCATE ALL; "
      "PREPARE record_upsert_tasks AS " +
      UpsertTasksSql() + "; PREPARE record_update_states AS " + UpdateStatesSql() +
      "; PREPARE record_insert_attempts AS " + InsertAttemptsSql();
  return sql;
}

// Rows deleted from the record tables before they are truncated instead. A DELETE leaves its
// rows dead (no autovacuum runs on temporary tables, and a page's line pointers are not reused
// without one): every later copy scans them again (~0.3 µs a row), and without a TRUNCATE now
// and then (~0.9 ms of file work) the tables would grow for ever. 500 keeps the two costs about
// even for the ~20-row copies of single submits; a copy of 500 rows or more is truncated at once.
constexpr size_t kRecordRowsBeforeTruncate = 500;

const std::string& UpsertEventsSql() {
  static const std::string cols =
      "source, event_id, seq, event_type, payload, trace_id, target_uri, received_at, "
      "deliveries, n_deliveries";
  static const std::string sql =
      "INSERT INTO events (" + cols + ") SELECT " + cols +
      " FROM json_populate_recordset(NULL::events, $1::json) "
      "ON CONFLICT (source, event_id) DO UPDATE SET deliveries = EXCLUDED.deliveries, "
      "n_deliveries = EXCLUDED.n_deliveries WHERE events.n_deliveries < EXCLUDED.n_deliveries";
  return sql;
}

}  // namespace

Backend::Backend(RedisEndpoint redis, core::Millis io_timeout, std::string pg_url,
                 std::string pg_schema, std::string key_prefix, std::string client_name)
    : redis_endpoint_(redis),
      io_timeout_(io_timeout),
      redis_(std::move(redis), io_timeout, client_name),
      pg_(std::move(pg_url), pg_schema, client_name),
      pg_schema_(std::move(pg_schema)),
      prefix_(std::move(key_prefix)),
      client_name_(client_name) {
  std::random_device rd;
  consumer_ = "c" + std::to_string(::getpid()) + "-" + std::to_string(rd());
}

core::Result<Unit> Backend::Start(bool allow_volatile, bool check_lost_data) {
  try {
    redis_.EnsureConnected();
    RedisReply info = redis_.Command({"INFO", "persistence"});
    bool aof = info.str.find("aof_enabled:1") != std::string::npos;
    RedisReply fsync = redis_.Command({"CONFIG", "GET", "appendfsync"});
    std::string mode = fsync.elements.size() == 2 ? fsync.elements[1].str : "unknown";
    if (!allow_volatile && (!aof || mode != "always")) {
      return MakeError(ErrorCode::kUnavailable,
                       "redis: persistence is appendonly " + std::string(aof ? "yes" : "no") +
                           " with appendfsync " + mode +
                           "; accepted tasks are durable only with appendonly yes and "
                           "appendfsync always (or pass --allow-volatile-redis)");
    }
    LoadScripts();
    RedisReply group =
        redis_.Command({"XGROUP", "CREATE", prefix_ + "outbox", "pg", "0", "MKSTREAM"});
    if (group.IsError() && group.str.rfind("BUSYGROUP", 0) != 0) {
      return MakeError(ErrorCode::kUnavailable, "redis: " + group.str);
    }
    // Entries another process read but never copied (it died): copying twice is harmless.
    redis_.Command({"XAUTOCLAIM", prefix_ + "outbox", "pg", consumer_, "60000", "0-0", "COUNT",
                    Num(kOutboxBatch * 10)});
  } catch (const RedisIoError& e) {
    return MakeError(ErrorCode::kUnavailable, e.what());
  }
  try {
    MigratePg(pg_, pg_schema_);
  } catch (const PgError& e) {
    return MakeError(ErrorCode::kUnavailable, e.what());
  }
  if (!check_lost_data) return Unit{};
  try {
    // Every task's seq comes from P seq, so a record ahead of the counter means Redis lost data
    // (a FLUSHALL, an AOF lost or turned off): carrying on would hand out seqs again and hide
    // tasks that only PostgreSQL still has.
    const int64_t recorded = pg_.Exec("SELECT COALESCE(MAX(seq), 0) FROM tasks").Int(0, 0);
    RedisReply seq = redis_.Command({"GET", prefix_ + "seq"});
    const int64_t counter = seq.IsNil() ? 0 : std::stoll(seq.str);
    if (recorded > counter) {
      return MakeError(ErrorCode::kUnavailable,
                       "redis: it has lost data (PostgreSQL records tasks up to seq " +
                           std::to_string(recorded) + ", Redis's counter is at " +
                           std::to_string(counter) +
                           "); run `madeira recover` with the same settings, then start again");
    }
  } catch (const PgError& e) {
    return MakeError(ErrorCode::kUnavailable, e.what());
  } catch (const RedisIoError& e) {
    return MakeError(ErrorCode::kUnavailable, e.what());
  }
  return Unit{};
}

void Backend::LoadScripts() {
  std::vector<RedisCommand> loads;
  for (int i = 0; i < kScriptCount; ++i) {
    loads.push_back({"SCRIPT", "LOAD", ScriptSource(static_cast<Script>(i))});
  }
  auto replies = redis_.Pipeline(loads);
  for (int i = 0; i < kScriptCount; ++i) {
    if (replies[i].IsError()) throw RedisIoError("redis: SCRIPT LOAD: " + replies[i].str);
    shas_[i] = replies[i].str;
  }
  scripts_generation_ = redis_.generation();
}

std::vector<RedisReply> Backend::Pipeline(std::vector<RedisCall> calls) {
  if (!sent_.empty()) throw std::logic_error("redis-pg: a call while a Send's replies are unread");
  Send(std::move(calls));
  return Receive();
}

RedisCommand Backend::Command(const RedisCall& call) const {
  if (!call.script) return call.args;
  RedisCommand cmd{"EVALSHA", shas_[static_cast<int>(*call.script)], "0",
                   prefix_ + "\n" + consumer_};
  cmd.insert(cmd.end(), call.args.begin(), call.args.end());
  return cmd;
}

void Backend::Send(std::vector<RedisCall> calls) {
  // Behind calls still running on this connection it cannot be checked for being idle; a
  // connection lost since (their Receive reported it) is replaced as usual.
  const bool behind =
      redis_.connected() && !sent_.empty() && sent_.back().generation == redis_.generation();
  if (!behind) {
    redis_.EnsureConnected();
    if (scripts_generation_ != redis_.generation()) LoadScripts();
  }
  std::vector<RedisCommand> commands;
  commands.reserve(calls.size());
  for (const RedisCall& c : calls) commands.push_back(Command(c));
  if (behind) {
    redis_.SendBehind(commands);
  } else {
    redis_.Send(commands);
  }
  sent_.push_back({std::move(calls), redis_.generation(), std::nullopt});
}

std::vector<RedisReply> Backend::Receive() {
  if (sent_.empty()) throw std::logic_error("redis-pg: a Receive without a Send");
  Unread oldest = std::move(sent_.front());
  sent_.pop_front();
  if (oldest.replies) return std::move(*oldest.replies);
  if (!redis_.connected() || oldest.generation != redis_.generation()) {
    throw RedisIoError("redis: the connection was lost with these commands in flight");
  }
  std::vector<RedisReply> replies = redis_.Receive(oldest.calls.size());
  const auto noscript = [](const RedisReply& r) {
    return r.IsError() && r.str.rfind("NOSCRIPT", 0) == 0;
  };
  if (std::none_of(replies.begin(), replies.end(), noscript)) return replies;
  // SCRIPT FLUSH or a Redis restart without the script cache: read the later Sends' replies
  // first (so that the connection is quiet), load the scripts again and repeat every call that
  // met NOSCRIPT, in the order they were sent.
  for (Unread& later : sent_) {
    if (!later.replies && later.generation == oldest.generation) {
      later.replies = redis_.Receive(later.calls.size());
    }
  }
  LoadScripts();
  const auto repeat = [&](const std::vector<RedisCall>& calls, std::vector<RedisReply>& got) {
    for (size_t i = 0; i < got.size(); ++i) {
      if (noscript(got[i])) got[i] = redis_.Command(Command(calls[i]));
    }
  };
  repeat(oldest.calls, replies);
  for (Unread& later : sent_) {
    if (later.replies) repeat(later.calls, *later.replies);
  }
  return replies;
}

bool Backend::AwaitReply(core::Millis timeout, int interrupt_fd) {
  if (sent_.empty() || sent_.front().replies) return true;
  return redis_.AwaitReply(timeout, interrupt_fd);
}

bool Backend::FlushOutbox(const std::function<void()>& caught_up, std::vector<HeldState>* held) {
  const std::string stream = prefix_ + "outbox";
  // Entries a process read and never copied (it was killed in between) would wait for its
  // restart: every few seconds, take over those idle for a while. A live process holds entries
  // only for the moment of its copy, and copying twice is harmless.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_claim_ >= kClaimInterval) {
    last_claim_ = now;
    Call({std::nullopt,
          {"XAUTOCLAIM", stream, "pg", consumer_, Num(kClaimIdleMs), "0-0", "COUNT",
           Num(kOutboxBatch), "JUSTID"}});
  }
  // Our consumer's pending entries first (read before but not copied: a failed copy, a
  // deferred change, entries claimed from a crashed process), then new ones to the end of the
  // stream. After that every entry added before the call is in PostgreSQL, but for deferred ones
  // (below). The first pending read and the first new one go in one round trip: each round trip
  // before the copy delays the answers of the submits waiting for it. No other flush of the
  // consumer may run meanwhile (it could hold entries added before the call: see recorder.h).
  enum class Phase { kPending, kNew };
  Phase phase = Phase::kPending;
  // Other processes' recorders read new entries too, so an entry written here before the call
  // may be in one of their copies: the consumers holding entries at our first read, and the
  // newest id they held then.
  std::vector<std::string> others;
  std::string others_newest;
  std::string after = "0";  // pending entries are read past this id (deferred ones stay behind)
  auto read = [&](const std::string& from) {
    return RedisCall{std::nullopt,
                     {"XREADGROUP", "GROUP", "pg", consumer_, "COUNT", Num(kOutboxBatch), "STREAMS",
                      stream, from}};
  };
  // A round's XACK goes with the next read, the next flush's when this one ends: a round trip
  // less each (each waits behind whatever scripts Redis runs meanwhile). Until then the entries
  // stay pending: copied again if this process dies, which is harmless.
  for (int round = 0; round < kFlushRounds; ++round) {
    std::vector<RedisCall> calls;
    if (ack_later_) calls.push_back(*ack_later_);
    const bool first = phase == Phase::kPending && round == 0;
    if (first) {
      calls.push_back(read(after));
      calls.push_back(read(">"));
      // Right after our read of new entries: who else holds entries read before it.
      calls.push_back(RedisCall{std::nullopt, {"XPENDING", stream, "pg"}});
    } else {
      calls.push_back(read(phase == Phase::kNew ? ">" : after));
    }
    std::vector<RedisReply> replies = Pipeline(calls);
    if (ack_later_) {
      ack_later_.reset();
      replies.erase(replies.begin());  // an XACK that failed leaves entries to copy again
    }
    if (first) {
      others = OtherHolders(replies.back(), consumer_, others_newest);
      if (!others.empty()) saw_others_ = std::chrono::steady_clock::now();
      replies.pop_back();
    }
    OutboxRead got;
    std::vector<size_t> read_counts;  // entries each read returned
    for (const RedisReply& r : replies) {
      read_counts.push_back(ParseOutboxRead(r, got, {consumer_, own_entries_}));
    }
    // Where this round leaves the phases: a read that returned less than a batch reached the end
    // of what it reads.
    const bool pending_done =
        phase == Phase::kPending && static_cast<int>(read_counts[0]) < kOutboxBatch;
    const bool new_done =
        (phase == Phase::kNew && static_cast<int>(read_counts[0]) < kOutboxBatch) ||
        (replies.size() == 2 && static_cast<int>(read_counts[1]) < kOutboxBatch);
    // Everything written before the flush began is read once the new entries are, and the
    // pending ones before them.
    const bool all_read = new_done && (phase == Phase::kNew || pending_done);
    if (phase == Phase::kPending && read_counts[0] > 0) after = got.ids[read_counts[0] - 1];
    CopyAndAckLater(stream, got, round == 0 ? held : nullptr);
    // Committed (or nothing to copy): the work written before this flush began is answered now,
    // its XACK still to go.
    if (all_read) {
      if (!others.empty()) AwaitOthersCopies(stream, others, others_newest);
      if (caught_up) caught_up();
      TrimOutbox();
      return true;
    }
    if (phase == Phase::kPending && !pending_done) continue;  // more pending entries
    phase = Phase::kNew;
  }
  TrimOutbox();
  return false;
}

void Backend::CopyAndAckLater(const std::string& stream, const OutboxRead& got,
                              std::vector<HeldState>* held) {
  if (got.ids.empty() && (held == nullptr || held->empty())) return;
  const std::set<std::string> deferred = CopyEntries(got.entries, held);
  if (got.ids.empty()) return;
  // A change whose task has no row yet (its full record is with another process's copy)
  // stays pending, for a later flush, and so does a submit entry the store has not named yet
  // (OwnEntries); everything else is done.
  std::set<std::string> keep(got.waiting.begin(), got.waiting.end());
  if (!deferred.empty()) {  // rare: looked for here rather than indexed for every read
    for (const OutboxEntry& e : got.entries) {
      for (const Record& r : e.records) {
        const auto* change = std::get_if<StateRecord>(&r);
        if (change != nullptr && deferred.count(std::string(change->id())) != 0) keep.insert(e.id);
      }
    }
  }
  RedisCommand ack{"XACK", stream, "pg"};
  for (const std::string& id : got.ids) {
    if (keep.count(id) == 0) ack.push_back(id);
  }
  if (ack.size() == 3) return;  // XACK stream group: no ids
  if (!ack_later_) {
    ack_later_ = RedisCall{std::nullopt, ack};
  } else {
    ack_later_->args.insert(ack_later_->args.end(), ack.begin() + 3, ack.end());
  }
}

void Backend::AwaitOthersCopies(const std::string& stream, const std::vector<std::string>& others,
                                const std::string& newest) {
  // The entries up to `newest` still pending with those consumers (acknowledged once copied).
  auto held = [&] {
    std::vector<RedisCall> calls;
    for (const std::string& c : others) {
      calls.push_back(RedisCall{std::nullopt, {"XPENDING", stream, "pg", "-", newest, "1000", c}});
    }
    std::vector<std::string> ids;
    for (const RedisReply& r : Pipeline(calls)) {
      if (r.IsError()) throw RedisIoError("redis: XPENDING: " + r.str);
      for (const RedisReply& e : r.elements) ids.push_back(e.elements.at(0).str);
    }
    return ids;
  };
  std::vector<std::string> ids = held();
  const auto deadline = std::chrono::steady_clock::now() + kOthersCopyWait;
  while (!ids.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kOthersCopyPoll);
    ids = held();
  }
  if (ids.empty()) return;
  // Still held: their process is slow, stuck or gone. Take them over and copy them here.
  RedisCommand claim{"XCLAIM", stream, "pg", consumer_, "0"};
  claim.insert(claim.end(), ids.begin(), ids.end());
  RedisReply claimed = Call(RedisCall{std::nullopt, claim});
  if (claimed.IsError()) throw RedisIoError("redis: XCLAIM: " + claimed.str);
  OutboxRead got;
  ParseOutboxEntries(claimed, got, {consumer_, own_entries_});
  CopyAndAckLater(stream, got);
}

bool Backend::SharesOutbox() const {
  return std::chrono::steady_clock::now() - saw_others_ < std::chrono::seconds(10);
}

void Backend::CatchUpRecord() {
  if (catch_up_record_) {
    catch_up_record_();
  } else {
    FlushOutbox();
  }
}

void Backend::CopyNewTasks(const NewTasks& made) {
  try {
    std::vector<MadeTask> tasks;
    for (const NewTasks::Submit& s : made.submits) {
      for (size_t i = 0; i < s.specs->size() && i < s.made->size(); ++i) {
        tasks.push_back({&(*s.specs)[i], (*s.made)[i], s.now});
      }
    }
    CopyToRecord(NewTasksRecordBatch(std::move(tasks)));
  } catch (...) {
    own_entries_.LeftToOutbox(made.entries);
    throw;
  }
  own_entries_.Copied(made.entries);
}

void Backend::SendDeferredAck() {
  if (!ack_later_) return;
  RedisCall ack = std::move(*ack_later_);
  ack_later_.reset();
  Call(ack);
}

std::set<std::string> Backend::CopyEntries(const std::vector<OutboxEntry>& entries,
                                           std::vector<HeldState>* held) {
  std::vector<const Record*> records;  // not copies: a flush holds hundreds of payloads
  bool all_readable = true;
  for (const OutboxEntry& e : entries) {
    all_readable = all_readable && e.unreadable.empty();
    for (const Record& r : e.records) records.push_back(&r);
  }
  std::vector<const Record*> held_records;
  if (held != nullptr) {
    for (const HeldState& h : *held) held_records.push_back(&h.record);
  }
  // What is left of `held` once its copy is committed: the changes that found no row.
  auto keep_deferred = [&](const std::set<std::string>& deferred) {
    if (held == nullptr) return;
    std::erase_if(*held, [&](const HeldState& h) {
      return deferred.count(std::string(std::get<StateRecord>(h.record).id())) == 0;
    });
  };
  if (all_readable) {
    try {
      records.insert(records.end(), held_records.begin(), held_records.end());
      std::set<std::string> deferred = CopyToRecord(BuildRecordBatch(records));
      keep_deferred(deferred);
      return deferred;
    } catch (const PgError& e) {
      if (!e.refused_data()) throw;    // PostgreSQL away: the outbox keeps everything for later
    } catch (const std::exception&) {  // a record BuildRecordBatch cannot read
    }
  }
  // Something in the batch cannot be copied, ever: copy entry by entry and set aside the ones
  // refused, so that one bad record does not stop the record of everything behind it (and with
  // it every submit, refused while the record lags).
  std::set<std::string> deferred;
  // One part copied: "" once committed (its changes that found no row added to `deferred`),
  // else why it cannot be copied. PostgreSQL away throws.
  auto copy_part = [&](const std::vector<const Record*>& part) -> std::string {
    try {
      std::set<std::string> d = CopyToRecord(BuildRecordBatch(part));
      deferred.insert(d.begin(), d.end());
      return "";
    } catch (const PgError& refused) {
      if (!refused.refused_data()) throw;
      // Not what(): PostgreSQL's DETAIL and CONTEXT quote the data, which stays out of logs.
      return "postgresql refused it: " + refused.primary() + " (SQLSTATE " + refused.sqlstate() +
             ")";
    } catch (const std::exception& unreadable) {
      return unreadable.what();
    }
  };
  std::vector<RedisCall> set_aside;
  for (const OutboxEntry& e : entries) {
    std::string why = e.unreadable;
    if (why.empty()) {
      std::vector<const Record*> part;
      for (const Record& r : e.records) part.push_back(&r);
      why = copy_part(part);
      if (why.empty()) continue;
    }
    core::Log(core::LogLevel::kError,
              "redis-pg: an outbox entry cannot be copied into postgresql; it is set aside",
              {{"entry", e.id}, {"stream", prefix_ + "outbox:rejected"}, {"error", why}});
    RedisCommand add{"XADD", prefix_ + "outbox:rejected", "*", "entry", e.id, "error", why};
    for (const RedisReply& v : e.fields->elements) add.push_back(v.str);
    set_aside.push_back({std::nullopt, std::move(add)});
  }
  if (!held_records.empty()) {
    if (const std::string why = copy_part(held_records); why.empty()) {
      keep_deferred(deferred);
    } else {
      // Only this process had them: the tasks' next changes bring their record up to date.
      core::Log(core::LogLevel::kError, "redis-pg: leases' states cannot be copied into postgresql",
                {{"leases", std::to_string(held->size())}, {"error", why}});
      held->clear();
    }
  }
  if (!set_aside.empty()) {
    for (const RedisReply& r : Pipeline(set_aside)) {
      if (r.IsError()) throw RedisIoError("redis: XADD: " + r.str);
    }
  }
  return deferred;
}

void Backend::TrimOutbox() {
  // Runs at the end of every flush (the idle ones too: another process may have held the
  // oldest entry the last time). Copied entries go by trimming the stream up to the oldest one
  // still needed: the oldest entry read but not acknowledged by any process, else the group's
  // last read one (those after it are unread). XDEL of each copied entry cost Redis several µs
  // an entry; trimming whole nodes ("~") costs next to nothing. Only acknowledgements happen
  // between the two reads and the trim, and they only move the bound later, so the bound read
  // is safe.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_trim_ < kTrimInterval) return;
  last_trim_ = now;
  const std::string stream = prefix_ + "outbox";
  std::vector<RedisReply> r = Pipeline(
      {{std::nullopt, {"XPENDING", stream, "pg"}}, {std::nullopt, {"XINFO", "GROUPS", stream}}});
  std::string bound;
  if (!r[0].IsError() && r[0].elements.size() >= 2 && !r[0].elements[1].IsNil()) {
    bound = r[0].elements[1].str;  // [count, smallest id, greatest id, consumers]
  } else if (!r[1].IsError()) {
    for (const RedisReply& group : r[1].elements) {
      Fields g = FieldsFromFlat(group);
      if (g["name"] == "pg") bound = g["last-delivered-id"];
    }
  }
  const bool bound_read = r[0].IsError() || r[0].elements.size() < 2 || r[0].elements[1].IsNil();
  std::vector<RedisCall> calls;
  if (!bound.empty() && bound != "0-0") {
    calls.push_back({std::nullopt, {"XTRIM", stream, "MINID", "~", bound}});
  }
  if (clock_ != nullptr) {
    calls.push_back({Script::kRotateEnded,
                     {Num(clock_->Now()), Num(ended_retention_), bound.empty() ? "0-0" : bound,
                      bound_read ? "1" : "0"}});
  }
  if (calls.empty()) return;
  std::vector<RedisReply> replies = Pipeline(std::move(calls));
  if (clock_ == nullptr) return;
  const RedisReply& rotated = replies.back();
  if (rotated.IsError()) throw RedisIoError("redis: rotating the ended id claims: " + rotated.str);
  if (rotated.elements.size() >= 2) {
    if (rotated.elements[0].integer == 1) ended_checked_->store(true);
    if (rotated.elements[1].integer > 0) {
      core::Log(core::LogLevel::kInfo,
                "redis-pg: id claims of tasks ended over a retention ago left redis (postgresql "
                "keeps them)",
                {{"claims", std::to_string(rotated.elements[1].integer)}});
    }
  }
}

bool Backend::EndedClaimsChecked() {
  RedisReply r = Call({std::nullopt, {"HGET", prefix_ + "ended:gen", "checked"}});
  if (r.IsError()) throw RedisIoError("redis: HGET: " + r.str);
  return !r.IsNil() && r.str == "1";
}

std::map<std::string, std::string> Backend::RecordedIds(const std::vector<std::string>& ids) {
  std::map<std::string, std::string> out;
  if (ids.empty()) return out;
  std::string list;  // task ids hold no newline (the envelope's id alphabet; UUIDs)
  for (const std::string& id : ids) {
    if (!list.empty()) list += '\n';
    list += id;
  }
  PgResult r = pg_.Exec(
      "SELECT task_id, status, content_hash FROM task_rows WHERE task_id = ANY "
      "(string_to_array($1, E'\\n'))",
      {list});
  for (int i = 0; i < r.Rows(); ++i) out[r.Text(i, 0)] = r.Text(i, 1) + "\t" + r.Text(i, 2);
  return out;
}

std::set<std::string> Backend::CopyToRecord(const RecordBatch& batch) {
  // One transaction: the rows by COPY into temporary tables, then the statements that apply
  // them in one round trip with the COMMIT (PgConn::CopyThenExecAll). Submits wait for it.
  std::vector<PgCopy> copies;
  std::vector<PgStatement> statements;
  int states_at = -1;
  auto copy = [&](const char* table, const std::string& columns, const std::string& rows) {
    copies.push_back({"COPY " + std::string(table) + " (" + columns + ") FROM STDIN", rows});
  };
  if (batch.tasks > 0) {
    copy("record_tasks", PgTaskColumns(), batch.tasks_copy);
    statements.push_back({"EXECUTE record_upsert_tasks", {}});
  }
  if (batch.states > 0) {
    copy("record_states", PgStateColumns(), batch.states_copy);
    states_at = static_cast<int>(statements.size());
    statements.push_back({"EXECUTE record_update_states", {}});
  }
  if (batch.attempts > 0) {
    copy("record_attempts", kPgAttemptRowColumns, batch.attempts_copy);
    statements.push_back({"EXECUTE record_insert_attempts", {}});
  }
  if (batch.events > 0) statements.push_back({UpsertEventsSql(), {batch.events_json}});
  if (statements.empty()) return {};
  // The rows COPYed go again in the same transaction (a rolled-back copy takes its rows along).
  const size_t copied = batch.tasks + batch.states + batch.attempts;
  const bool truncate = record_rows_deleted_ + copied >= kRecordRowsBeforeTruncate;
  if (truncate) {
    statements.push_back({"TRUNCATE record_tasks, record_states, record_attempts", {}});
  } else {
    if (batch.tasks > 0) statements.push_back({"DELETE FROM record_tasks", {}});
    if (batch.states > 0) statements.push_back({"DELETE FROM record_states", {}});
    if (batch.attempts > 0) statements.push_back({"DELETE FROM record_attempts", {}});
  }
  // Two processes' copies touching the same tasks (one leased a task, the other acked it) can lock
  // the same rows in another order: PostgreSQL then aborts one, which simply runs again.
  for (int attempt = 1;; ++attempt) {
    try {
      std::vector<PgResult> results;
      if (copies.empty()) {
        results = pg_.ExecAll(statements);
      } else {
        if (record_tables_generation_ != pg_.generation() || pg_.generation() == 0) {
          pg_.Exec(RecordTablesSql());
          record_tables_generation_ = pg_.generation();
        }
        results = pg_.CopyThenExecAll(copies, statements);
      }
      record_rows_deleted_ = truncate ? 0 : record_rows_deleted_ + copied;
      std::set<std::string> missing;
      if (states_at >= 0) {
        const PgResult& r = results[states_at];
        for (int i = 0; i < r.Rows(); ++i) missing.insert(r.Text(i, 0));
      }
      return missing;
    } catch (const PgError& e) {
      const bool deadlock = std::string(e.what()).find("deadlock detected") != std::string::npos;
      if (!deadlock || attempt == kCopyTries) throw;
    }
  }
}

std::optional<LiveTask> Backend::GetLive(const std::string& task_id) {
  RedisReply r = Call({Script::kGet, {task_id}});
  if (r.IsError()) throw RedisIoError("redis: " + r.str);
  if (r.IsNil()) return std::nullopt;
  return TaskFromFields(FieldsFromFlat(r));
}

std::optional<core::Task> Backend::GetRecorded(const std::string& task_id) {
  CatchUpRecord();
  PgResult r = pg_.Exec(TaskSelect() + " WHERE task_id = $1", {task_id});
  if (r.Rows() == 0) return std::nullopt;
  return TaskFromRow(r, 0);
}

Result<core::Task> Backend::Get(const std::string& task_id) {
  if (auto live = GetLive(task_id)) return std::move(live->task);
  if (auto rec = GetRecorded(task_id)) return std::move(*rec);
  return MakeError(ErrorCode::kNotFound, "no task " + task_id);
}

Result<Unit> Backend::Ping() {
  RedisReply r = Call({std::nullopt, {"PING"}});
  if (r.IsError()) return MakeError(ErrorCode::kUnavailable, "redis: " + r.str);
  pg_.Exec("SELECT 1");
  return Unit{};
}

}  // namespace madeira::store::redis_pg
