#include "store/redis_pg/task_codec.h"

#include <boost/json.hpp>
#include <map>
#include <stdexcept>

#include "core/json_text.h"

namespace madeira::store::redis_pg {

namespace {

const std::string& Need(const Fields& f, const char* name) {
  auto it = f.find(name);
  if (it == f.end()) throw std::runtime_error(std::string("task hash lacks field ") + name);
  return it->second;
}
std::optional<std::string> Maybe(const Fields& f, const char* name) {
  auto it = f.find(name);
  if (it == f.end()) return std::nullopt;
  return it->second;
}
int64_t Num(const Fields& f, const char* name) { return std::stoll(Need(f, name)); }
int64_t NumOr(const Fields& f, const char* name, int64_t fallback) {
  auto v = Maybe(f, name);
  return v ? std::stoll(*v) : fallback;
}
bool Flag(const Fields& f, const char* name) { return Maybe(f, name) == "1"; }

core::TaskStatus Status(const std::string& text) {
  auto s = core::ParseTaskStatus(text);
  if (!s) throw std::runtime_error("unknown task status " + text);
  return *s;
}

std::optional<core::AttemptOutcome> Outcome(const std::string& text) {
  for (auto o : {core::AttemptOutcome::kSucceeded, core::AttemptOutcome::kFailed,
                 core::AttemptOutcome::kLeaseExpired, core::AttemptOutcome::kCancelled}) {
    if (core::AttemptOutcomeName(o) == text) return o;
  }
  return std::nullopt;
}

// The columns a kind=state entry carries (see record_state in scripts.cc); absent = NULL.
void ApplyState(boost::json::object& o, const Fields& f, int64_t ver) {
  o["ver"] = ver;
  o["status"] = core::TaskStatusName(Status(Need(f, "status")));
  o["retry_count"] = NumOr(f, "retry", 0);
  o["attempts"] = NumOr(f, "attempts", 0);
  o["updated_at"] = Num(f, "updated");
  auto set_or_erase = [&](const char* column, std::optional<boost::json::value> v) {
    if (v) {
      o[column] = std::move(*v);
    } else {
      o.erase(column);
    }
  };
  auto next = Maybe(f, "next");
  set_or_erase("next_attempt_at", next && !next->empty()
                                      ? std::optional<boost::json::value>(std::stoll(*next))
                                      : std::nullopt);
  auto text = [&](const char* name) -> std::optional<boost::json::value> {
    auto v = Maybe(f, name);
    if (!v) return std::nullopt;
    return boost::json::value(*v);
  };
  set_or_erase("last_error", text("lerr"));
  set_or_erase("result", text("result"));
  o["deduplicated"] = Flag(f, "dedup");
  o["fast_retries_used"] = NumOr(f, "fastused", 0);
  o["in_fast_retry"] = Flag(f, "infast");
}

// One value in COPY's text format: \N for none; backslash, tab, newline and carriage return
// escaped (the only bytes the format gives a meaning).
void AppendCopyValue(std::string& out, const boost::json::value* v) {
  if (v == nullptr || v->is_null()) {
    out += "\\N";
  } else if (v->is_string()) {
    for (char c : v->get_string()) {
      switch (c) {
        case '\\':
          out += "\\\\";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          out += c;
      }
    }
  } else if (v->is_bool()) {
    out += v->get_bool() ? 't' : 'f';
  } else if (v->is_int64()) {
    out += std::to_string(v->get_int64());
  } else {
    throw std::runtime_error("a record column holds neither text, a number nor a flag");
  }
}

// The names of a column list ("a, b, c"), in order.
std::vector<std::string> ColumnNames(std::string_view all) {
  std::vector<std::string> out;
  while (!all.empty()) {
    const size_t comma = all.find(',');
    std::string_view name = all.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    out.emplace_back(name);
    all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 1);
  }
  return out;
}

// One line of COPY text: the row's values for `columns`, absent ones \N.
void AppendCopyRow(std::string& out, const boost::json::object& row,
                   const std::vector<std::string>& columns) {
  bool first = true;
  for (const std::string& column : columns) {
    if (!first) out += '\t';
    first = false;
    AppendCopyValue(out, row.if_contains(column));
  }
  out += '\n';
}

void AppendPair(std::string& out, std::string_view name, std::string_view value) {
  if (!out.empty()) out += ',';
  out += '"';
  out.append(name);  // names are the literals below: nothing to escape
  out += "\",";
  core::AppendJsonString(out, value);
}

}  // namespace

std::string PackedSpec(const core::TaskSpec& t, core::Millis now) {
  std::string out;
  out.reserve(t.payload.size() + 320);
  const std::string at = Num(now);
  const std::string sched = Num(t.schedule_time);
  AppendPair(out, "id", t.task_id);
  AppendPair(out, "type", t.task_type);
  AppendPair(out, "queue", t.queue);
  AppendPair(out, "pv", Num(t.payload_version));
  AppendPair(out, "payload", t.payload);
  AppendPair(out, "sched", sched);
  AppendPair(out, "timeout", Num(t.timeout_ms));
  AppendPair(out, "maxr", Num(t.max_retries));
  AppendPair(out, "prio", Num(t.priority));
  AppendPair(out, "trace", t.trace_id);
  if (t.idempotency_key) AppendPair(out, "ikey", *t.idempotency_key);
  AppendPair(out, "chash", t.content_hash);
  AppendPair(out, "created", at);
  AppendPair(out, "updated", at);
  AppendPair(out, "next", sched);
  AppendPair(out, "ready", sched);
  AppendPair(out, "ver", "1");
  return out;
}

namespace {

// A record value as the scripts write it: a string (cjson leaves a number a number).
std::string RecordValue(const boost::json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  // The value itself stays out of the message: it may end up in a log.
  const boost::json::string_view kind = boost::json::to_string(v.kind());
  throw std::runtime_error("outbox record holds a value that is not text but " +
                           std::string(kind.data(), kind.size()));
}

boost::json::value ParseRecordJson(std::string_view text, const char* what) {
  boost::json::parse_options options;
  options.allow_invalid_utf8 = true;  // cjson copies bytes >= 0x80 as they are
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(text, ec, {}, options);
  if (ec || !v.is_array()) throw std::runtime_error(std::string(what) + " is not a JSON array");
  return v;
}

// The fields of a packed spec that `f` does not hold itself.
void AddSpecFields(Fields& f, const std::string& spec) {
  const boost::json::value all = ParseRecordJson("[" + spec + "]", "packed task spec");
  const boost::json::array& flat = all.get_array();
  for (size_t i = 0; i + 1 < flat.size(); i += 2) {
    f.try_emplace(RecordValue(flat[i]), RecordValue(flat[i + 1]));
  }
}

}  // namespace

void UnpackSpec(Fields& f) {
  auto it = f.find("spec");
  if (it == f.end()) return;
  const std::string spec = std::move(it->second);
  f.erase(it);
  AddSpecFields(f, spec);
}

Fields FieldsFromFlat(const RedisReply& flat) {
  Fields f;
  for (size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    f[flat.elements[i].str] = flat.elements[i + 1].str;
  }
  UnpackSpec(f);
  return f;
}

namespace {

// Field 'j' of an entry: a JSON array of records, each a flat [name, value, ...] array.
void AppendRecordsFromJson(const std::string& text, std::vector<Fields>& records) {
  const boost::json::value all = ParseRecordJson(text, "outbox entry");
  for (const boost::json::value& r : all.get_array()) {
    if (!r.is_array()) throw std::runtime_error("outbox record is not a JSON array");
    const boost::json::array& flat = r.get_array();
    Fields& f = records.emplace_back();
    for (size_t i = 0; i + 1 < flat.size(); i += 2) {
      f[RecordValue(flat[i])] = RecordValue(flat[i + 1]);
    }
    UnpackSpec(f);  // a snapshot of a hash that holds one
  }
}

}  // namespace

std::vector<Fields> RecordsFromFlat(const RedisReply& flat) {
  std::vector<Fields> records;
  for (size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    const std::string& name = flat.elements[i].str;
    if (name == "j") {
      AppendRecordsFromJson(flat.elements[i + 1].str, records);
      continue;
    }
    // A new task: "seq\tstatus", then its packed spec.
    if (name == "t") {
      const std::string& meta = flat.elements[i + 1].str;
      const size_t tab = meta.find('\t');
      if (tab == std::string::npos) throw std::runtime_error("outbox task record lacks a status");
      records.push_back(
          {{"kind", "task"}, {"seq", meta.substr(0, tab)}, {"status", meta.substr(tab + 1)}});
      continue;
    }
    if (name == "s") {
      if (records.empty()) throw std::runtime_error("outbox spec without its task");
      AddSpecFields(records.back(), flat.elements[i + 1].str);
      continue;
    }
    // Entries written before the records went as JSON: a field each, a record from its "kind".
    if (name == "kind" || records.empty()) records.emplace_back();
    records.back()[name] = flat.elements[i + 1].str;
  }
  return records;
}

LiveTask TaskFromFields(const Fields& f) {
  LiveTask live;
  core::Task& t = live.task;
  t.spec.task_id = Need(f, "id");
  t.spec.task_type = Need(f, "type");
  t.spec.queue = Need(f, "queue");
  t.spec.payload_version = static_cast<int>(Num(f, "pv"));
  t.spec.payload = Need(f, "payload");
  t.spec.schedule_time = Num(f, "sched");
  t.spec.timeout_ms = Num(f, "timeout");
  t.spec.max_retries = static_cast<int>(Num(f, "maxr"));
  t.spec.priority = static_cast<int>(Num(f, "prio"));
  t.spec.trace_id = Need(f, "trace");
  t.spec.idempotency_key = Maybe(f, "ikey");
  t.spec.content_hash = Need(f, "chash");
  t.status = Status(Need(f, "status"));
  t.retry_count = static_cast<int>(NumOr(f, "retry", 0));
  t.attempts = static_cast<int>(NumOr(f, "attempts", 0));
  t.created_at = Num(f, "created");
  t.updated_at = Num(f, "updated");
  // "" = none: a lease blanks it (one HSET instead of an HSET and an HDEL).
  if (auto next = Maybe(f, "next"); next && !next->empty()) t.next_attempt_at = std::stoll(*next);
  t.last_error = Maybe(f, "lerr");
  t.result = Maybe(f, "result");
  t.deduplicated = Flag(f, "dedup");
  t.fast_retries_used = static_cast<int>(NumOr(f, "fastused", 0));
  t.in_fast_retry = Flag(f, "infast");
  t.seq = Num(f, "seq");
  live.lease_id = Maybe(f, "lease").value_or("");
  live.fencing_token = NumOr(f, "token", 0);
  live.deadline = NumOr(f, "deadline", 0);
  live.attempt_started_at = NumOr(f, "astart", 0);
  live.worker = Maybe(f, "worker").value_or("");
  live.ready_at = NumOr(f, "ready", 0);
  live.ver = NumOr(f, "ver", 0);
  return live;
}

const char* const kPgTaskColumns =
    "task_id, seq, ver, queue, task_type, payload_version, payload, schedule_time, timeout_ms, "
    "max_retries, priority, trace_id, idempotency_key, content_hash, status, retry_count, "
    "attempts, created_at, updated_at, next_attempt_at, last_error, result, deduplicated, "
    "fast_retries_used, in_fast_retry";

core::Task TaskFromRow(const PgResult& r, int row) {
  core::Task t;
  t.spec.task_id = r.Text(row, 0);
  t.seq = r.Int(row, 1);
  t.spec.queue = r.Text(row, 3);
  t.spec.task_type = r.Text(row, 4);
  t.spec.payload_version = static_cast<int>(r.Int(row, 5));
  t.spec.payload = r.Text(row, 6);
  t.spec.schedule_time = r.Int(row, 7);
  t.spec.timeout_ms = r.Int(row, 8);
  t.spec.max_retries = static_cast<int>(r.Int(row, 9));
  t.spec.priority = static_cast<int>(r.Int(row, 10));
  t.spec.trace_id = r.Text(row, 11);
  t.spec.idempotency_key = r.OptText(row, 12);
  t.spec.content_hash = r.Text(row, 13);
  t.status = Status(r.Text(row, 14));
  t.retry_count = static_cast<int>(r.Int(row, 15));
  t.attempts = static_cast<int>(r.Int(row, 16));
  t.created_at = r.Int(row, 17);
  t.updated_at = r.Int(row, 18);
  t.next_attempt_at = r.OptInt(row, 19);
  t.last_error = r.OptText(row, 20);
  t.result = r.OptText(row, 21);
  t.deduplicated = r.Text(row, 22) == "t";
  t.fast_retries_used = static_cast<int>(r.Int(row, 23));
  t.in_fast_retry = r.Text(row, 24) == "t";
  return t;
}

const char* const kPgAttemptColumns =
    "attempt, worker_id, started_at, finished_at, outcome, error, http_status, response_excerpt";
const char* const kPgStateColumns =
    "task_id, ver, status, retry_count, attempts, updated_at, next_attempt_at, last_error, "
    "result, deduplicated, fast_retries_used, in_fast_retry";
const char* const kPgAttemptRowColumns =
    "task_id, attempt, worker_id, started_at, finished_at, outcome, error, http_status, "
    "response_excerpt";

core::Attempt AttemptFromRow(const PgResult& r, int row) {
  core::Attempt a;
  a.attempt = static_cast<int>(r.Int(row, 0));
  a.worker_id = r.Text(row, 1);
  a.started_at = r.Int(row, 2);
  a.finished_at = r.Int(row, 3);
  a.outcome = Outcome(r.Text(row, 4));
  a.error = r.OptText(row, 5);
  if (auto h = r.OptInt(row, 6)) a.http_status = static_cast<int>(*h);
  a.response_excerpt = r.OptText(row, 7);
  return a;
}

RecordBatch BuildRecordBatch(const std::vector<const Fields*>& entries) {
  // The newest version of each task: a full row, or (kind=state only) the changed columns.
  std::map<std::string, std::pair<int64_t, boost::json::object>> tasks;
  std::map<std::pair<std::string, int64_t>, boost::json::object> attempts;
  std::map<std::pair<std::string, std::string>, boost::json::object> events;
  for (const Fields* record : entries) {
    const Fields& f = *record;
    auto kind = f.find("kind");
    if (kind == f.end()) continue;
    if (kind->second == "task") {
      LiveTask live = TaskFromFields(f);
      const core::Task& t = live.task;
      auto& slot = tasks[t.spec.task_id];
      const bool newer_in_batch = !slot.second.empty() && slot.first >= live.ver;
      if (newer_in_batch && slot.second.contains("payload")) continue;  // a newer full row
      boost::json::object o;
      o["task_id"] = t.spec.task_id;
      o["seq"] = t.seq;
      o["ver"] = live.ver;
      o["queue"] = t.spec.queue;
      o["task_type"] = t.spec.task_type;
      o["payload_version"] = t.spec.payload_version;
      o["payload"] = t.spec.payload;
      o["schedule_time"] = t.spec.schedule_time;
      o["timeout_ms"] = t.spec.timeout_ms;
      o["max_retries"] = t.spec.max_retries;
      o["priority"] = t.spec.priority;
      o["trace_id"] = t.spec.trace_id;
      if (t.spec.idempotency_key) o["idempotency_key"] = *t.spec.idempotency_key;
      o["content_hash"] = t.spec.content_hash;
      o["status"] = core::TaskStatusName(t.status);
      o["retry_count"] = t.retry_count;
      o["attempts"] = t.attempts;
      o["created_at"] = t.created_at;
      o["updated_at"] = t.updated_at;
      if (t.next_attempt_at) o["next_attempt_at"] = *t.next_attempt_at;
      if (t.last_error) o["last_error"] = *t.last_error;
      if (t.result) o["result"] = *t.result;
      o["deduplicated"] = t.deduplicated;
      o["fast_retries_used"] = t.fast_retries_used;
      o["in_fast_retry"] = t.in_fast_retry;
      if (newer_in_batch) {
        // A newer change of the task came first (stream order makes its full record come
        // first; only a reordered outbox does this): the full row, with that change over it,
        // rather than a change with no row to change and a task never written.
        for (const auto& [column, value] : slot.second) o[column] = value;
        slot.second = std::move(o);
        continue;
      }
      slot = {live.ver, std::move(o)};
    } else if (kind->second == "state") {
      const std::string& id = Need(f, "id");
      const int64_t ver = Num(f, "ver");
      auto& slot = tasks[id];
      if (!slot.second.empty() && slot.first >= ver) continue;
      if (slot.second.empty()) slot.second["task_id"] = id;
      ApplyState(slot.second, f, ver);  // over the full row, when the batch holds it
      slot.first = ver;
    } else if (kind->second == "attempt") {
      boost::json::object o;
      o["task_id"] = Need(f, "task_id");
      int64_t n = Num(f, "attempt");
      o["attempt"] = n;
      o["worker_id"] = Need(f, "worker");
      o["started_at"] = Num(f, "started");
      o["finished_at"] = Num(f, "finished");
      o["outcome"] = Need(f, "outcome");
      if (auto e = Maybe(f, "error")) o["error"] = *e;
      if (auto h = Maybe(f, "http")) o["http_status"] = std::stoll(*h);
      if (auto x = Maybe(f, "excerpt")) o["response_excerpt"] = *x;
      attempts[{Need(f, "task_id"), n}] = std::move(o);
    } else if (kind->second == "event") {
      boost::json::object o;
      o["source"] = Need(f, "source");
      o["event_id"] = Need(f, "event_id");
      o["seq"] = Num(f, "seq");
      o["event_type"] = Need(f, "type");
      o["payload"] = Need(f, "payload");
      o["trace_id"] = Need(f, "trace");
      if (auto t = Maybe(f, "target")) o["target_uri"] = *t;
      o["received_at"] = Num(f, "received");
      o["deliveries"] = Need(f, "deliveries");
      const int64_t n = Num(f, "ndeliveries");
      o["n_deliveries"] = n;
      auto& slot = events[{Need(f, "source"), Need(f, "event_id")}];
      if (slot.empty() || slot.at("n_deliveries").as_int64() <= n) slot = std::move(o);
    }
  }
  static const std::vector<std::string> task_columns = ColumnNames(kPgTaskColumns);
  static const std::vector<std::string> state_columns = ColumnNames(kPgStateColumns);
  static const std::vector<std::string> attempt_columns = ColumnNames(kPgAttemptRowColumns);
  RecordBatch batch;
  for (auto& [id, slot] : tasks) {
    if (slot.second.contains("payload")) {
      AppendCopyRow(batch.tasks_copy, slot.second, task_columns);
      ++batch.tasks;
    } else {
      AppendCopyRow(batch.states_copy, slot.second, state_columns);
      ++batch.states;
    }
  }
  for (auto& [key, o] : attempts) AppendCopyRow(batch.attempts_copy, o, attempt_columns);
  batch.attempts = attempts.size();
  boost::json::array ea;
  for (auto& [key, o] : events) ea.push_back(std::move(o));
  batch.events = ea.size();
  batch.events_json = boost::json::serialize(ea);
  return batch;
}

}  // namespace madeira::store::redis_pg
