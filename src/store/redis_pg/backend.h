// What the store thread holds: the Redis and PostgreSQL connections, the loaded scripts, and
// every operation as a blocking function. Used from the store thread only.
//
// Redis is the truth for live tasks (each transition one Lua script); PostgreSQL keeps the
// record: every task's latest state, the attempt log and schemas. Scripts append what they
// changed to an outbox stream; FlushOutbox() copies it into PostgreSQL (idempotently: a task row
// is only replaced by a newer `ver`) and then acknowledges it, so a crash in between repeats
// the copy instead of losing it.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/random.h"
#include "store/redis_pg/own_entries.h"
#include "store/redis_pg/pg_conn.h"
#include "store/redis_pg/redis_conn.h"
#include "store/redis_pg/redis_pg_store.h"
#include "store/redis_pg/scripts.h"
#include "store/redis_pg/task_codec.h"
#include "store/store.h"

namespace madeira::store::redis_pg {

// One outbox entry as read: its fields as XREADGROUP answered them (to set it aside whole; the
// reply outlives the entry) and its records, or why they cannot be read.
struct OutboxEntry {
  std::string id;
  const RedisReply* fields = nullptr;
  std::vector<Record> records;
  std::string unreadable;
};

// What one round of a flush read (FlushOutbox): every entry id (entries without fields too) and
// the entries. Entries whose tasks are in PostgreSQL already are among the ids only.
struct OutboxRead {
  std::vector<OutboxEntry> entries;
  std::vector<std::string> ids;
  std::vector<std::string> waiting;  // this process's submit entries left pending (OwnEntries)
};

// New tasks a store batch made, as their submits' outbox entries hold them: the recorder copies
// them into PostgreSQL from here (Backend::CopyNewTasks), without reading them back from Redis
// first, and passes over those entries when it reads them later.
struct NewTasks {
  // One submit's tasks as it sent them (shared with the submit: nothing is copied), the
  // script's answer for each ("seq\tstatus", in order) and the submit's time.
  struct Submit {
    std::shared_ptr<const std::vector<core::TaskSpec>> specs;
    std::shared_ptr<const std::vector<std::string>> made;
    core::Millis now = 0;
  };
  std::vector<Submit> submits;
  std::vector<std::string> entries;  // the outbox entries holding them, and nothing else
};

// A state change its process copies into PostgreSQL itself, not through the outbox (a lease's:
// kLease writes no record), and when it was handed to the recorder.
struct HeldState {
  Record record;  // a StateRecord (StateRecordOf)
  std::chrono::steady_clock::time_point since;
};

// A command for the pipeline: a script with its arguments (the key prefix is added), or a
// plain command when `script` is empty.
struct RedisCall {
  std::optional<Script> script;
  std::vector<std::string> args;
};

class Backend {
 public:
  // `client_name` names both connections (CLIENT SETNAME, application_name).
  Backend(RedisEndpoint redis, core::Millis io_timeout, std::string pg_url, std::string pg_schema,
          std::string key_prefix, std::string client_name);

  // Start-up checks: connects both, checks Redis persistence (unless allow_volatile), migrates
  // the PostgreSQL schema and, with check_lost_data, refuses a Redis that has lost what
  // PostgreSQL recorded (its submit counter is behind the record's: `madeira recover` first).
  // Returns the error to show, naming the service at fault.
  core::Result<Unit> Start(bool allow_volatile, bool check_lost_data = true);

  // `madeira recover`: writes back into Redis every non-terminal task PostgreSQL recorded
  // (running ones as pending), the id claims of tasks ended within ended_claims_retention,
  // succeeded idempotency keys younger than idempotency_ttl, every event, and the counters;
  // never over what Redis still has.
  Result<RecoverReport> Recover(Millis now, Millis idempotency_ttl, Millis ended_claims_retention);
  // The addresses of the other connections named like this backend's (another `madeira serve`
  // of the same namespace: its store, recorder and wake-up connections), from CLIENT LIST.
  std::vector<std::string> OtherConnectionsOfThisNamespace();

  // For a second connection (the wake-up subscriber) to the same Redis.
  const RedisEndpoint& redis_endpoint() const { return redis_endpoint_; }
  core::Millis io_timeout() const { return io_timeout_; }
  const std::string& key_prefix() const { return prefix_; }
  // Names this process in the wake-ups its scripts publish.
  const std::string& origin() const { return consumer_; }

  // Runs calls pipelined (one write, then the replies in order). Throws RedisIoError.
  std::vector<RedisReply> Pipeline(std::vector<RedisCall> calls);
  RedisReply Call(const RedisCall& call) { return std::move(Pipeline({call}).front()); }
  // Pipeline in two halves: Send writes the calls, Receive reads their replies, so the store
  // thread can parse one batch's replies while Redis runs the next. Sends may follow each other
  // (Redis runs them in order); each Receive reads the oldest unread one's replies, and no other
  // call may come while one is unread. Both throw RedisIoError: a Send that fails, or a Receive
  // whose connection was lost since its Send, leaves the outcome of those calls unknown.
  void Send(std::vector<RedisCall> calls);
  std::vector<RedisReply> Receive();
  // Waits until the oldest unread Send's replies can be read (true), or `interrupt_fd` becomes
  // readable (false); see RedisConn::AwaitReply.
  bool AwaitReply(core::Millis timeout, int interrupt_fd);

  // Copies the outbox into PostgreSQL. True when it read the outbox to its end (everything
  // written to Redis before the call is recorded), false when it stopped after a bounded amount.
  // `caught_up` runs as soon as what was added before the call and read by this backend is
  // committed (before the acknowledgements go and the stream is trimmed). `held` is copied with
  // the first entries read (in one transaction, so a lease and its ack make one row update);
  // what is left in it after the call found no row yet (its task's record is still to come).
  // Throws PgError / RedisIoError; what was not copied is copied by a later call (`held` is
  // left as it was when its copy failed).
  bool FlushOutbox(const std::function<void()>& caught_up = {},
                   std::vector<HeldState>* held = nullptr);
  // Copies tasks a submit made into PostgreSQL as their outbox entries hold them, and notes
  // those entries: a later FlushOutbox acknowledges them without copying them again. Throws
  // PgError (then the entries are left to the outbox's copy, as LeftToOutbox).
  void CopyNewTasks(const NewTasks& made);
  // This process's submit entries whose batch waits for the outbox's copy: a FlushOutbox that
  // meets them copies them (until then it leaves them pending, see OwnEntries).
  void LeftToOutbox(const std::vector<std::string>& entries) { own_entries_.LeftToOutbox(entries); }
  // Sends the acknowledgement the last FlushOutbox left for the next one's first read (before
  // closing: entries left pending are copied again by another process after 5 s).
  void SendDeferredAck();
  // Whether other processes' recorders read this outbox lately (their entries were seen
  // pending): they wait for our acknowledgements (AwaitOthersCopies), so an idle recorder sends
  // its deferred one at once.
  bool SharesOutbox() const;

  // What the reads served from PostgreSQL (Search, Attempts, a terminal task, dead-task filters)
  // do first so that they see every change made before them: by default a FlushOutbox of their
  // own; a store with a recorder waits for the recorder instead (see recorder.h), so that one
  // consumer's flushes never run at once.
  void SetCatchUpRecord(std::function<void()> catch_up) { catch_up_record_ = std::move(catch_up); }

  // Makes every outbox trim also rotate the id claims of ended tasks (kRotateEnded) by `clock`
  // and `retention`, and keep `checked` at what Redis says: whether a claim may have left Redis,
  // so that submits must look their ids up in PostgreSQL (RecordedIds). For the recorder.
  void RotateEndedClaims(core::Millis retention, const core::Clock* clock,
                         std::atomic<bool>* checked) {
    ended_retention_ = retention;
    clock_ = clock;
    ended_checked_ = checked;
  }
  // Whether Redis says a claim may have left it (P ended:gen checked). Throws RedisIoError.
  bool EndedClaimsChecked();
  // What PostgreSQL holds of these task ids: id -> "status\tcontent_hash". Throws PgError.
  std::map<std::string, std::string> RecordedIds(const std::vector<std::string>& ids);
  // Writes the recorded event (the one received last when no source is given) back into Redis
  // for `ttl` ms unless Redis has it; false when PostgreSQL has none. Throws PgError and
  // RedisIoError.
  bool RestoreEventFromRecord(const std::string& event_id, const std::optional<std::string>& source,
                              Millis ttl);
  // The same for several (source, event_id), in one query; how many PostgreSQL has. Throws
  // PgError and RedisIoError.
  int RestoreEventsFromRecord(const std::vector<std::pair<std::string, std::string>>& events,
                              Millis ttl);

  // Makes this backend read the outbox as `other`'s consumer and name the same process in
  // wake-ups (the store's backend and its recorder's: the entries the store claims at start
  // from crashed processes are the recorder's to copy).
  void ShareConsumerWith(const Backend& other) { consumer_ = other.consumer_; }

  // Operations that need more than one round trip (the single-script ones are built by the
  // store and parsed by the functions in ops.h).
  Result<AttemptReport> Fail(const FailRequest& request, const RetryDecider& decide,
                             bool expire_only);
  Result<std::vector<AttemptReport>> ExpireLeases(Millis now, const RetryDecider& decide);
  Result<core::Task> Get(const std::string& task_id);
  Result<std::vector<core::Attempt>> Attempts(const std::string& task_id);
  Result<SearchPage> Search(const SearchQuery& query);
  Result<std::vector<core::Task>> Replay(const DeadSelector& selector, const ReplayEdits& edits,
                                         const ReplayCheck& check, Millis now);
  Result<int64_t> CancelDead(const DeadSelector& selector, Millis now);
  Result<Unit> PutSchema(const SchemaRecord& schema);
  Result<SchemaRecord> GetSchema(const std::string& task_type, int version);
  Result<std::vector<SchemaRecord>> ListSchemas();
  Result<SchemaSet> ListSchemaSet();  // version from Redis (P schemas), then the schemas
  Result<Unit> PutEndpoint(const EndpointRecord& endpoint);
  Result<Unit> DeleteEndpoint(const std::string& endpoint_id);
  Result<EndpointRecord> GetEndpoint(const std::string& endpoint_id);
  Result<std::vector<EndpointRecord>> ListEndpoints();
  // Tells the other processes' subscribers that `what` changed (PUBLISH P changed
  // "origin\nwhat"). Best effort: they also read again after reconnecting and periodically.
  void PublishChange(std::string_view what);
  Result<Unit> Ping();
  // PostgreSQL alone (SELECT 1), so that record_healthy() says what it says now. Throws PgError.
  void PingRecord() { pg_.Exec("SELECT 1"); }
  // PostgreSQL answered the last statement sent to it (or nothing failed yet).
  bool record_healthy() const { return pg_.healthy(); }

 private:
  void LoadScripts();
  RedisCommand Command(const RedisCall& call) const;  // EVALSHA of a script call, else as is
  // One transaction: the batch's rows into PostgreSQL. Returns the ids of the tasks whose state
  // changes found no row to change (their full record is not copied yet).
  std::set<std::string> CopyToRecord(const RecordBatch& batch);
  // CopyToRecord of the entries' records; entries PostgreSQL refuses (or that cannot be read)
  // go to the stream P outbox:rejected with the error, logged, instead of stopping the copy.
  // `held` goes with them (see FlushOutbox); a held change PostgreSQL refuses is logged and
  // dropped. Returns the ids of the tasks whose changes found no row.
  std::set<std::string> CopyEntries(const std::vector<OutboxEntry>& entries,
                                    std::vector<HeldState>* held);
  void CatchUpRecord();  // SetCatchUpRecord's, else FlushOutbox
  // Waits (briefly) until the entries the consumers `others` held up to id `newest` are
  // acknowledged, i.e. copied by their processes; claims and copies what is still held then.
  void AwaitOthersCopies(const std::string& stream, const std::vector<std::string>& others,
                         const std::string& newest);
  // CopyEntries of a read's entries (and `held`), then their XACK added to ack_later_ (but for
  // the entries deferred: state changes whose task has no row yet).
  void CopyAndAckLater(const std::string& stream, const OutboxRead& got,
                       std::vector<HeldState>* held = nullptr);
  void TrimOutbox();  // drops the entries every process has copied
  // Writes recorded events (rows of recover.cc's kEventColumns) back into Redis for `ttl` ms
  // unless Redis has them; returns how many rows there were.
  int RestoreEventRows(const PgResult& rows, Millis ttl);
  std::optional<LiveTask> GetLive(const std::string& task_id);
  std::optional<core::Task> GetRecorded(const std::string& task_id);
  Result<std::vector<LiveTask>> SelectDead(const DeadSelector& selector);

  RedisEndpoint redis_endpoint_;
  core::Millis io_timeout_;
  RedisConn redis_;
  PgConn pg_;
  std::string pg_schema_;
  std::string prefix_;
  std::string client_name_;
  std::string consumer_;
  uint64_t scripts_generation_ = 0;
  std::array<std::string, kScriptCount> shas_;
  std::chrono::steady_clock::time_point last_claim_{};  // of a crashed process's entries
  std::chrono::steady_clock::time_point last_trim_{};   // of copied outbox entries
  uint64_t record_tables_generation_ = 0;  // the PostgreSQL connection kRecordTables ran on
  size_t record_rows_deleted_ = 0;  // rows the record tables hold as dead since their last TRUNCATE
  // What Send wrote and Receive has not returned the replies of, oldest first: the calls, the
  // connection they went on (RedisConn::generation) and, once read ahead of their Receive (to
  // load the scripts again after a NOSCRIPT, which needs the connection quiet), their replies.
  struct Unread {
    std::vector<RedisCall> calls;
    uint64_t generation = 0;
    std::optional<std::vector<RedisReply>> replies;
  };
  std::deque<Unread> sent_;
  std::optional<RedisCall> ack_later_;  // the last copy's XACK, sent with the next read
  OwnEntries own_entries_;              // this process's submit entries: copied already, or not
  std::chrono::steady_clock::time_point saw_others_{};  // other consumers' entries pending
  // RotateEndedClaims: none (nullptr) on backends that do not rotate.
  core::Millis ended_retention_ = 0;
  const core::Clock* clock_ = nullptr;
  std::atomic<bool>* ended_checked_ = nullptr;
  std::function<void()> catch_up_record_;
};

}  // namespace madeira::store::redis_pg
