// `madeira recover`: Redis lost data (a FLUSHALL, a lost AOF); PostgreSQL still has the record.
// Everything is written through the restore script, which never overwrites what Redis still
// has, so recover is safe to repeat and harmless against a Redis that lost nothing.
#include <string_view>

#include "store/redis_pg/backend.h"

namespace madeira::store::redis_pg {

namespace {

using core::TaskStatus;

constexpr int kTasksPerCall = 500;
constexpr int kRowsPerCall = 2000;

void Field(std::vector<std::string>& out, int& n, const char* name, std::string value) {
  out.push_back(name);
  out.push_back(std::move(value));
  ++n;
}

constexpr const char* kEventColumns =
    "source, event_id, event_type, payload, trace_id, target_uri, received_at, seq, deliveries";

// A recorded event (a row of kEventColumns) as the restore script's 9 arguments.
void AppendEventRestoreArgs(std::vector<std::string>& args, const PgResult& r, int row) {
  for (int c : {0, 1, 2, 3, 4}) args.push_back(r.Text(row, c));
  args.push_back(OptArg(r.OptText(row, 5)));
  for (int c : {6, 7, 8}) args.push_back(r.Text(row, c));
}

// A text[] literal for a statement parameter: every element quoted, `"` and `\` escaped (event
// ids may hold any character).
std::string TextArray(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const std::string& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// A recorded task as restore-script arguments (count first): its id, its spec packed as a submit
// packs it (with the payload and retries a replay may have edited) and its live fields, which the
// script packs into its st. A running task comes back pending, ready now: its lease lived only in
// Redis.
void AppendRestoreArgs(std::vector<std::string>& args, const core::Task& recorded, int64_t ver,
                       Millis now) {
  core::Task t = recorded;
  const bool was_running = t.status == TaskStatus::kRunning;
  Millis ready = t.next_attempt_at.value_or(t.updated_at);
  if (was_running) {
    t.status = TaskStatus::kPending;
    t.next_attempt_at = now;
    ready = now;
    ver += 1;  // changed: the record gets this version
  }
  std::vector<std::string> f;
  int n = 0;
  Field(f, n, "id", t.spec.task_id);
  Field(f, n, "spec", PackedSpec(t.spec, t.created_at));
  Field(f, n, "type", t.spec.task_type);
  Field(f, n, "queue", t.spec.queue);
  Field(f, n, "pv", Num(t.spec.payload_version));
  Field(f, n, "timeout", Num(t.spec.timeout_ms));
  Field(f, n, "prio", Num(t.spec.priority));
  if (t.spec.idempotency_key) Field(f, n, "ikey", *t.spec.idempotency_key);
  Field(f, n, "chash", t.spec.content_hash);
  Field(f, n, "status", std::string(core::TaskStatusName(t.status)));
  Field(f, n, "retry", Num(t.retry_count));
  Field(f, n, "attempts", Num(t.attempts));
  Field(f, n, "updated", Num(was_running ? now : t.updated_at));
  if (t.next_attempt_at) Field(f, n, "next", Num(*t.next_attempt_at));
  Field(f, n, "ready", Num(ready));
  if (t.last_error) Field(f, n, "lerr", *t.last_error);
  if (t.result) Field(f, n, "result", *t.result);
  Field(f, n, "dedup", t.deduplicated ? "1" : "0");
  Field(f, n, "fastused", Num(t.fast_retries_used));
  Field(f, n, "infast", t.in_fast_retry ? "1" : "0");
  Field(f, n, "seq", Num(t.seq));
  // Each lease adds one to both, so the next lease's token is still larger than any before.
  Field(f, n, "token", Num(t.attempts));
  Field(f, n, "ver", Num(ver));
  if (was_running) {
    Field(f, n, "_snap", "1");
    Field(f, n, "_astart", Num(recorded.updated_at));
  }
  args.push_back(Num(n));
  args.insert(args.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
}

}  // namespace

std::vector<std::string> Backend::OtherConnectionsOfThisNamespace() {
  const int64_t own = redis_.Command({"CLIENT", "ID"}).integer;
  // One line a client: "id=7 addr=127.0.0.1:5000 laddr=... fd=8 name=madeira ...".
  const std::string list = redis_.Command({"CLIENT", "LIST"}).str;
  auto field = [](std::string_view line, std::string_view key) -> std::string_view {
    for (size_t at = 0; at < line.size();) {
      size_t end = line.find(' ', at);
      if (end == std::string_view::npos) end = line.size();
      std::string_view item = line.substr(at, end - at);
      if (item.size() > key.size() && item.substr(0, key.size()) == key &&
          item[key.size()] == '=') {
        return item.substr(key.size() + 1);
      }
      at = end + 1;
    }
    return {};
  };
  std::vector<std::string> others;
  for (size_t at = 0; at < list.size();) {
    size_t end = list.find('\n', at);
    if (end == std::string::npos) end = list.size();
    std::string_view line(list.data() + at, end - at);
    at = end + 1;
    const std::string_view name = field(line, "name");
    if (name != client_name_ && name != client_name_ + ":wake") continue;
    if (field(line, "id") == std::to_string(own)) continue;
    others.emplace_back(field(line, "addr"));
  }
  return others;
}

Result<RecoverReport> Backend::Recover(Millis now, Millis idempotency_ttl,
                                       Millis ended_claims_retention) {
  // A serve still running would lease, ack and promote beside the restore, from what the loss
  // left: recover only once every `madeira serve` of the namespace is stopped (as documented).
  if (auto others = OtherConnectionsOfThisNamespace(); !others.empty()) {
    std::string from;
    for (const std::string& addr : others) from += (from.empty() ? "" : ", ") + addr;
    return core::MakeError(core::ErrorCode::kUnavailable,  // not now: once the serves stop
                           "a madeira serve of this namespace is still connected to redis (" +
                               std::to_string(others.size()) + " connection(s), from " + from +
                               "): stop every madeira serve of the installation, then run recover");
  }
  RecoverReport report;
  int64_t snapped = 0;
  auto restore = [&](std::vector<std::string> args) -> Result<int64_t> {
    RedisReply r = Call({Script::kRestore, std::move(args)});
    if (r.IsError()) return ScriptError(r);
    snapped += r.elements.at(1).integer;
    return r.elements.at(0).integer;
  };
  // Whatever Redis still has is copied first, so the record is as new as it can be.
  FlushOutbox();

  // The counters first: from here on new ids and seqs never collide with recorded ones.
  const int64_t task_seq = pg_.Exec("SELECT COALESCE(MAX(seq), 0) FROM tasks").Int(0, 0);
  const int64_t event_seq = pg_.Exec("SELECT COALESCE(MAX(seq), 0) FROM events").Int(0, 0);
  for (auto [name, value] : {std::pair{"seq", task_seq}, std::pair{"eventseq", event_seq}}) {
    auto done = restore({"counter", name, Num(value)});
    if (!done) return done.error();
  }

  // Non-terminal tasks, in submit order.
  for (int64_t after = 0;;) {
    PgResult r = pg_.Exec(TaskSelect() +
                              " WHERE status NOT IN ('succeeded', 'cancelled') AND seq > $1 "
                              "ORDER BY seq LIMIT " +
                              std::to_string(kTasksPerCall),
                          {Num(after)});
    if (r.Rows() == 0) break;
    std::vector<std::string> args{"tasks"};
    for (int i = 0; i < r.Rows(); ++i) {
      core::Task t = TaskFromRow(r, i);
      AppendRestoreArgs(args, t, r.Int(i, 2), now);
      after = t.seq;
    }
    auto done = restore(std::move(args));
    if (!done) return done.error();
    report.tasks += *done;
  }

  // Only what ended within the retention comes back: claims of tasks ended in it, events
  // received within two. When PostgreSQL holds older ones, submits and new events must ask it
  // (mode checked).
  const std::string recent = Num(now - ended_claims_retention);
  const Millis event_ttl = 2 * ended_claims_retention;
  const std::string recent_events = Num(now - event_ttl);
  if (pg_.Exec("SELECT EXISTS (SELECT 1 FROM task_states WHERE status IN ('succeeded', "
               "'cancelled') AND updated_at <= $1) OR EXISTS (SELECT 1 FROM events WHERE "
               "received_at <= $2)",
               {recent, recent_events})
          .Text(0, 0) == "t") {
    auto done = restore({"checked"});
    if (!done) return done.error();
  }

  // The id claims of ended tasks: a resubmit of one stays a duplicate (or a conflict).
  for (int64_t after = 0;;) {
    PgResult r = pg_.Exec(
        "SELECT task_id, status, content_hash, seq FROM task_rows WHERE status IN ('succeeded', "
        "'cancelled') AND updated_at > $2 AND seq > $1 ORDER BY seq LIMIT " +
            std::to_string(kRowsPerCall),
        {Num(after), recent});
    if (r.Rows() == 0) break;
    std::vector<std::string> args{"ended"};
    for (int i = 0; i < r.Rows(); ++i) {
      args.push_back(r.Text(i, 0));
      args.push_back(r.Text(i, 1) + "\t" + r.Text(i, 2));
      after = r.Int(i, 3);
    }
    auto done = restore(std::move(args));
    if (!done) return done.error();
    report.ended += *done;
  }

  // Succeeded idempotency keys still within their ttl (the latest success of each key).
  {
    PgResult r = pg_.Exec(
        "SELECT DISTINCT ON (idempotency_key) idempotency_key, task_id, updated_at FROM task_rows "
        "WHERE status = 'succeeded' AND NOT deduplicated AND idempotency_key IS NOT NULL AND "
        "updated_at > $1 ORDER BY idempotency_key, updated_at DESC",
        {Num(now - idempotency_ttl)});
    for (int start = 0; start < r.Rows(); start += kRowsPerCall) {
      std::vector<std::string> args{"idem"};
      for (int i = start; i < std::min(r.Rows(), start + kRowsPerCall); ++i) {
        args.push_back(r.Text(i, 0));
        args.push_back(r.Text(i, 1));
        args.push_back(Num(r.Int(i, 2) + idempotency_ttl));
        args.push_back(Num(r.Int(i, 2) + idempotency_ttl - now));
      }
      auto done = restore(std::move(args));
      if (!done) return done.error();
      report.idempotency_keys += *done;
    }
  }

  // The events (older ones come back from PostgreSQL when read, resent or redelivered).
  for (int64_t after = 0;;) {
    PgResult r =
        pg_.Exec(std::string("SELECT ") + kEventColumns +
                     " FROM events WHERE received_at > $2 AND seq > $1 ORDER BY seq LIMIT " +
                     std::to_string(kRowsPerCall),
                 {Num(after), recent_events});
    if (r.Rows() == 0) break;
    std::vector<std::string> args{"events", Num(event_ttl)};
    for (int i = 0; i < r.Rows(); ++i) {
      AppendEventRestoreArgs(args, r, i);
      after = r.Int(i, 7);
    }
    auto done = restore(std::move(args));
    if (!done) return done.error();
    report.events += *done;
  }

  // The tasks made pending again, and their lost attempts, go to the record.
  report.running_to_pending = snapped;
  FlushOutbox();
  return report;
}

bool Backend::RestoreEventFromRecord(const std::string& event_id,
                                     const std::optional<std::string>& source, Millis ttl) {
  if (source) return RestoreEventsFromRecord({{*source, event_id}}, ttl) > 0;
  // No flush of the outbox first: an event leaves Redis `ttl` after its last change, whose
  // record was copied long before (a new event is answered only once it is).
  return RestoreEventRows(
             pg_.Exec(std::string("SELECT ") + kEventColumns +
                          " FROM events WHERE event_id = $1 ORDER BY received_at DESC, seq DESC "
                          "LIMIT 1",
                      {event_id}),
             ttl) > 0;
}

int Backend::RestoreEventsFromRecord(const std::vector<std::pair<std::string, std::string>>& events,
                                     Millis ttl) {
  if (events.empty()) return 0;
  std::vector<std::string> sources;
  std::vector<std::string> ids;
  for (const auto& [source, event_id] : events) {
    sources.push_back(source);
    ids.push_back(event_id);
  }
  return RestoreEventRows(
      pg_.Exec(std::string("SELECT ") + kEventColumns +
                   " FROM events JOIN unnest($1::text[], $2::text[]) AS k(source, event_id) "
                   "USING (source, event_id)",
               {TextArray(sources), TextArray(ids)}),
      ttl);
}

int Backend::RestoreEventRows(const PgResult& rows, Millis ttl) {
  if (rows.Rows() == 0) return 0;
  std::vector<std::string> args{"events", Num(ttl)};
  for (int i = 0; i < rows.Rows(); ++i) AppendEventRestoreArgs(args, rows, i);
  RedisReply done = Call({Script::kRestore, std::move(args)});
  if (done.IsError()) throw RedisIoError("redis: restoring events: " + done.str);
  return rows.Rows();
}

}  // namespace madeira::store::redis_pg
