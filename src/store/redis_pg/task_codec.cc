#include "store/redis_pg/task_codec.h"

#include <msgpuck.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <charconv>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <utility>

#include "core/json_text.h"
#include "store/redis_pg/scripts.h"

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

// A row for the record as text values in COPY column order; std::nullopt = NULL. Built
// straight from the records' strings: a flush holds hundreds of rows, and JSON objects in
// between cost more than the rows' own bytes.
using Row = std::vector<std::optional<std::string>>;

// The PostgreSQL `tasks` columns, by index: the one place their order is written (the column
// lists below, COPY rows and TaskFromRow all follow it).
enum TaskColumn : size_t {
  kTaskId,
  kSeq,
  kVer,
  kQueue,
  kTaskType,
  kPayloadVersion,
  kPayload,
  kScheduleTime,
  kTimeoutMs,
  kMaxRetries,
  kPriority,
  kTraceId,
  kIdempotencyKey,
  kContentHash,
  kStatusColumn,
  kRetryCount,
  kAttempts,
  kCreatedAt,
  kUpdatedAt,
  kNextAttemptAt,
  kLastError,
  kResult,
  kDeduplicated,
  kFastRetriesUsed,
  kInFastRetry,
  kOwner,
  kTaskColumnCount
};
constexpr std::array<const char*, kTaskColumnCount> kTaskColumnNames = {
    // In TaskColumn's order.
    "task_id",
    "seq",
    "ver",
    "queue",
    "task_type",
    "payload_version",
    "payload",
    "schedule_time",
    "timeout_ms",
    "max_retries",
    "priority",
    "trace_id",
    "idempotency_key",
    "content_hash",
    "status",
    "retry_count",
    "attempts",
    "created_at",
    "updated_at",
    "next_attempt_at",
    "last_error",
    "result",
    "deduplicated",
    "fast_retries_used",
    "in_fast_retry",
    "owner"};
// The task columns that change after creation (state rows), in their COPY order.
constexpr std::array<TaskColumn, 12> kStateColumns = {
    kTaskId,        kVer,       kStatusColumn, kRetryCount,   kAttempts,        kUpdatedAt,
    kNextAttemptAt, kLastError, kResult,       kDeduplicated, kFastRetriesUsed, kInFastRetry};

// The columns of `tasks` (migration 6): the ones a task is made with, written again only by a
// full row (a replay's edit), and ver, the version of the full row they were last written from.
constexpr std::array<TaskColumn, 16> kSpecColumns = {
    kTaskId,         kSeq,          kVer,       kQueue,      kTaskType, kPayloadVersion,
    kPayload,        kScheduleTime, kTimeoutMs, kMaxRetries, kPriority, kTraceId,
    kIdempotencyKey, kContentHash,  kCreatedAt, kOwner};
// Every column is in exactly one of the two tables, but task_id and ver, which are in both.
constexpr bool SplitsEveryColumnOnce() {
  for (size_t c = 0; c < kTaskColumnCount; ++c) {
    int in = 0;
    for (TaskColumn s : kSpecColumns) in += s == c ? 1 : 0;
    for (TaskColumn s : kStateColumns) in += s == c ? 1 : 0;
    if (in != (c == kTaskId || c == kVer ? 2 : 1)) return false;
  }
  return true;
}
static_assert(SplitsEveryColumnOnce(),
              "every column is a spec column or a state column; task_id and ver are both");

// "a, b, c" of the columns given by index.
template <typename Columns>
std::string ColumnList(const Columns& columns) {
  std::string out;
  for (size_t c : columns) {
    if (!out.empty()) out += ", ";
    out += kTaskColumnNames[c];
  }
  return out;
}

// A record's number as text, checked: PostgreSQL would refuse the whole batch over one bad value.
const std::string& IntText(const std::string& text, const char* name) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty()) {
    throw std::runtime_error(std::string("record field ") + name + " is not a number");
  }
  return text;
}
std::string NeedInt(const Fields& f, const char* name) { return IntText(Need(f, name), name); }

// The values of state and attempt records, by position (StateAt, AttemptAt below).
std::span<const char* const> NamesOf(const StateRecord&) { return kStateRecordFields; }
std::span<const char* const> NamesOf(const AttemptRecord&) { return kAttemptRecordFields; }
template <typename R>
const std::string& ValueAt(const R& r, size_t at) {
  if (!r.values[at]) throw std::runtime_error(std::string("record lacks field ") + NamesOf(r)[at]);
  return *r.values[at];
}
template <typename R>
const std::string& IntAt(const R& r, size_t at) {
  return IntText(ValueAt(r, at), NamesOf(r)[at]);
}
template <typename R>
std::string IntOrZeroAt(const R& r, size_t at) {
  return r.values[at] ? IntText(*r.values[at], NamesOf(r)[at]) : std::string("0");
}

// The position of field `name` in a record of `names` (names.size() for none).
constexpr size_t PositionIn(std::span<const char* const> names, std::string_view name) {
  size_t i = 0;
  while (i < names.size() && name != names[i]) ++i;
  return i;
}
consteval size_t StateAt(std::string_view name) { return PositionIn(kStateRecordFields, name); }
consteval size_t AttemptAt(std::string_view name) { return PositionIn(kAttemptRecordFields, name); }

// A state or attempt record from one read by name (names of neither left out).
template <typename R>
R ByPosition(const Fields& f) {
  R record;
  const std::span<const char* const> names = NamesOf(record);
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto it = f.find(names[i]); it != f.end()) record.values[i] = it->second;
  }
  return record;
}

// A task's change as the state columns of its row, at version `ver` (see record_state in
// scripts.cc); absent = NULL.
void ApplyState(Row& row, const StateRecord& s, int64_t ver) {
  row[kTaskId] = ValueAt(s, StateAt("id"));
  row[kVer] = std::to_string(ver);
  row[kStatusColumn] = std::string(core::TaskStatusName(Status(ValueAt(s, StateAt("status")))));
  row[kRetryCount] = IntOrZeroAt(s, StateAt("retry"));
  row[kAttempts] = IntOrZeroAt(s, StateAt("attempts"));
  row[kUpdatedAt] = IntAt(s, StateAt("updated"));
  // "" = none: a lease blanks it (one HSET instead of an HSET and an HDEL).
  const std::optional<std::string>& next = s.values[StateAt("next")];
  row[kNextAttemptAt] =
      next && !next->empty() ? std::optional<std::string>(IntText(*next, "next")) : std::nullopt;
  row[kLastError] = s.values[StateAt("lerr")];
  row[kResult] = s.values[StateAt("result")];
  row[kDeduplicated] = s.values[StateAt("dedup")] == "1" ? "t" : "f";
  row[kFastRetriesUsed] = IntOrZeroAt(s, StateAt("fastused"));
  row[kInFastRetry] = s.values[StateAt("infast")] == "1" ? "t" : "f";
}

// A task's full row from its full record (a hash as TaskFromFields reads it), every column of
// `row` written.
void FullRow(Row& row, const Fields& f, int64_t ver) {
  row[kSeq] = NeedInt(f, "seq");
  row[kQueue] = Need(f, "queue");
  row[kTaskType] = Need(f, "type");
  row[kPayloadVersion] = NeedInt(f, "pv");
  row[kPayload] = Need(f, "payload");
  row[kScheduleTime] = NeedInt(f, "sched");
  row[kTimeoutMs] = NeedInt(f, "timeout");
  row[kMaxRetries] = NeedInt(f, "maxr");
  row[kPriority] = NeedInt(f, "prio");
  row[kTraceId] = Need(f, "trace");
  row[kIdempotencyKey] = Maybe(f, "ikey");
  row[kContentHash] = Need(f, "chash");
  row[kCreatedAt] = NeedInt(f, "created");
  row[kOwner] = Maybe(f, "owner").value_or("");
  ApplyState(row, ByPosition<StateRecord>(f), ver);
}

// One value in COPY's text format: \N for none; backslash, tab, newline and carriage return
// escaped (the only bytes the format gives a meaning). find_first_of with a set of four looked
// each byte up in the set, a twentieth of a drained task's instructions; a loop over the bytes
// still a tenth of an ack's (docs/benchmarks.md, twenty-eighth round).
void AppendCopyValue(std::string& out, const std::optional<std::string>& v) {
  if (!v) {
    out += "\\N";
    return;
  }
  const std::string& text = *v;
  // Most values need no escape: glibc's strcspn finds the first byte that does 16 bytes a step
  // (it stops at a NUL too; the loop below goes on from there).
  const size_t clean = std::strcspn(text.c_str(), "\\\t\n\r");
  if (clean == text.size()) {
    out += text;
    return;
  }
  size_t from = 0;
  for (size_t i = clean; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\\' && c != '\t' && c != '\n' && c != '\r') continue;
    out.append(text, from, i - from);
    out += '\\';
    out += c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
    from = i + 1;
  }
  out.append(text, from);
}

// One line of COPY text: value_of(item) for each item, in order.
template <typename Items, typename ValueOf>
void AppendCopyLine(std::string& out, const Items& items, ValueOf value_of) {
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += '\t';
    first = false;
    AppendCopyValue(out, value_of(item));
  }
  out += '\n';
}
// A whole row: the values, in order.
template <typename Values>
void AppendCopyRow(std::string& out, const Values& values) {
  AppendCopyLine(out, values, std::identity{});
}
// The row's columns given by index. (A plain loop, not std::views::transform: clang 14, which
// builds the fuzzers, cannot compile libstdc++ 12's ranges.)
template <typename Columns>
void AppendCopyColumns(std::string& out, const Row& row, const Columns& columns) {
  AppendCopyLine(
      out, columns, [&row](size_t c) -> const auto& { return row[c]; });
}

// One text value of a packed spec: a msgpack string (msgpuck writes the header).
void AppendPacked(std::string& out, std::string_view text) {
  const size_t at = out.size();
  out.resize(at + mp_sizeof_str(static_cast<uint32_t>(text.size())));
  mp_encode_str(out.data() + at, text.data(), static_cast<uint32_t>(text.size()));
}
void AppendPair(std::string& out, std::string_view name, std::string_view value) {
  AppendPacked(out, name);
  AppendPacked(out, value);
}

// A spec written before specs were packed as msgpack (PackedSpec): the inside of a flat JSON
// array, which always starts with a name's quote (no msgpack string does: their first byte is
// >= 0xa0).
bool IsJsonSpec(std::string_view spec) { return !spec.empty() && spec.front() == '"'; }

// The next value of a msgpack spec, which must be text; p moves past it.
std::string_view SpecText(const char*& p, const char* end) {
  const char* past = p;
  if (p >= end || mp_check(&past, end) != 0) throw std::runtime_error("packed task spec truncated");
  if (mp_typeof(*p) != MP_STR) throw std::runtime_error("packed task spec holds a value not text");
  uint32_t len = 0;
  const char* text = mp_decode_str(&p, &len);
  return {text, len};
}

// Calls each(name, value) for every field of a msgpack spec, in order; views of `spec`.
template <typename Each>
void ForEachPackedSpecField(std::string_view spec, Each each) {
  const char* p = spec.data();
  const char* end = p + spec.size();
  while (p < end) {
    const std::string_view name = SpecText(p, end);
    each(name, SpecText(p, end));
  }
}

}  // namespace

std::string PackedSpec(const core::TaskSpec& t, core::Millis now) {
  // Written in kSpecOrder's order: a lease reads the names expecting it.
  std::string out;
  out.reserve(t.payload.size() + 256);
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
  if (!t.owner.empty()) AppendPair(out, "owner", t.owner);
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

// One packed value (cmsgpack's encoding of a Lua value: a record's or a task's "st") at p,
// which moves past it: a string (a view of the packed bytes) or an integer as text (made in
// `made`), nil or false as none. Checked whole before it is read (mp_check), so that a damaged
// value throws rather than reads past its end; `what` names it in the error.
std::optional<std::string_view> PackedText(const char*& p, const char* end, std::string& made,
                                           const char* what) {
  const char* past = p;
  if (p >= end || mp_check(&past, end) != 0) {
    throw std::runtime_error(std::string(what) + " truncated");
  }
  switch (mp_typeof(*p)) {
    case MP_STR: {
      uint32_t len = 0;
      const char* text = mp_decode_str(&p, &len);
      return std::string_view(text, len);
    }
    case MP_UINT:
      return made = std::to_string(mp_decode_uint(&p));
    case MP_INT:
      return made = std::to_string(mp_decode_int(&p));
    case MP_NIL:
      mp_decode_nil(&p);
      return std::nullopt;
    case MP_BOOL:
      if (!mp_decode_bool(&p)) return std::nullopt;
      break;
    default:
      break;
  }
  throw std::runtime_error(std::string(what) + " holds a value of an unexpected type");
}
// The same, copied.
std::optional<std::string> PackedValue(const char*& p, const char* end, const char* what) {
  std::string made;
  std::optional<std::string_view> text = PackedText(p, end, made, what);
  if (!text) return std::nullopt;
  return std::string(*text);
}

// The fields of a packed spec that `f` does not hold itself. A spec holds a task's fields,
// never a packed value ("spec", "st"): a damaged one naming them puts nothing back.
void AddSpecFields(Fields& f, const std::string& spec) {
  auto add = [&f](std::string name, std::string_view value) {
    if (name != "spec" && name != "st") f.try_emplace(std::move(name), value);
  };
  if (IsJsonSpec(spec)) {
    const boost::json::value all = ParseRecordJson("[" + spec + "]", "packed task spec");
    const boost::json::array& flat = all.get_array();
    for (size_t i = 0; i + 1 < flat.size(); i += 2) {
      add(RecordValue(flat[i]), RecordValue(flat[i + 1]));
    }
    return;
  }
  ForEachPackedSpecField(spec, [&add](std::string_view name, std::string_view value) {
    add(std::string(name), value);
  });
}

}  // namespace

// A task's next attempt as its state holds it is the only one: none there (nil in st, no field
// in a hash written a field each) must not be read as its spec's, the schedule time it was made
// with (a dead or ended task has none). "" is none wherever a task's next is read (a lease
// blanks it so).
constexpr std::string_view kNoNext = "";

void UnpackLive(Fields& f) {
  auto it = f.find("st");
  if (it == f.end()) return;
  const std::string st = std::move(it->second);
  f.erase(it);
  const char* p = st.data();
  const char* end = p + st.size();
  for (const char* name : kLiveFields) {
    if (std::optional<std::string> value = PackedValue(p, end, "task state")) {
      f[name] = std::move(*value);
    }
  }
  if (p != end) throw std::runtime_error("task state holds more values than it has fields");
}

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
  UnpackLive(f);
  // Its state (packed, or a field each as an older Madeira wrote it) has no next: none.
  if (f.contains("status")) f.try_emplace("next", kNoNext);
  UnpackSpec(f);
  return f;
}

namespace {

consteval size_t AckedAt(std::string_view name) { return PositionIn(kAckedRecordFields, name); }

// A record read by name (a JSON one, or an older Madeira's) as the record it is: a state change
// or an attempt by position, anything else as it is.
Record TypedRecord(Fields f) {
  auto kind = f.find("kind");
  if (kind != f.end() && kind->second == "state") return ByPosition<StateRecord>(f);
  if (kind != f.end() && kind->second == "attempt") return ByPosition<AttemptRecord>(f);
  return f;
}

// Field 'j' of an entry: a JSON array of records, each a flat [name, value, ...] array.
void AppendRecordsFromJson(const std::string& text, std::vector<Record>& records) {
  const boost::json::value all = ParseRecordJson(text, "outbox entry");
  for (const boost::json::value& r : all.get_array()) {
    if (!r.is_array()) throw std::runtime_error("outbox record is not a JSON array");
    const boost::json::array& flat = r.get_array();
    Fields f;
    for (size_t i = 0; i + 1 < flat.size(); i += 2) {
      f[RecordValue(flat[i])] = RecordValue(flat[i + 1]);
    }
    UnpackSpec(f);  // a snapshot of a hash that holds one
    records.push_back(TypedRecord(std::move(f)));
  }
}

// An "acked" record's values (kAckedRecordFields, after its kind) as the two records it stands
// for: the attempt that succeeded, then the task's state after it. Each pair: the position of a
// field of the record made, the position of the acked field it takes.
using Take = std::pair<size_t, size_t>;
constexpr std::array<Take, 7> kAttemptOfAcked = {{{AttemptAt("task_id"), AckedAt("id")},
                                                  {AttemptAt("attempt"), AckedAt("attempts")},
                                                  {AttemptAt("worker"), AckedAt("worker")},
                                                  {AttemptAt("started"), AckedAt("started")},
                                                  {AttemptAt("finished"), AckedAt("finished")},
                                                  {AttemptAt("http"), AckedAt("http")},
                                                  {AttemptAt("excerpt"), AckedAt("excerpt")}}};
constexpr std::array<Take, 9> kStateOfAcked = {{{StateAt("id"), AckedAt("id")},
                                                {StateAt("ver"), AckedAt("ver")},
                                                {StateAt("retry"), AckedAt("retry")},
                                                {StateAt("attempts"), AckedAt("attempts")},
                                                {StateAt("updated"), AckedAt("finished")},
                                                {StateAt("lerr"), AckedAt("lerr")},
                                                {StateAt("result"), AckedAt("result")},
                                                {StateAt("dedup"), AckedAt("dedup")},
                                                {StateAt("fastused"), AckedAt("fastused")}}};
static_assert(std::ranges::all_of(kAttemptOfAcked,
                                  [](const Take& t) {
                                    return t.first < kAttemptRecordFields.size() &&
                                           t.second < kAckedRecordFields.size();
                                  }) &&
                  std::ranges::all_of(kStateOfAcked,
                                      [](const Take& t) {
                                        return t.first < kStateRecordFields.size() &&
                                               t.second < kAckedRecordFields.size();
                                      }),
              "an acked record holds every field its attempt and state take");
void AppendAckedRecords(const char*& p, const char* end, std::vector<Record>& records) {
  std::array<std::optional<std::string_view>, kAckedRecordFields.size()> acked;
  std::array<std::string, kAckedRecordFields.size()> made;
  for (size_t i = 0; i < acked.size(); ++i) acked[i] = PackedText(p, end, made[i], "outbox record");
  // An attempt keeps a '' (its worker); a state's '' is none, as in their own packed records.
  auto take = [&acked](auto& to, std::span<const Take> takes, bool empty_is_none) {
    for (const auto& [at, from] : takes) {
      const std::optional<std::string_view>& value = acked[from];
      if (value && !(empty_is_none && value->empty())) to.values[at].emplace(*value);
    }
  };
  AttemptRecord& attempt = std::get<AttemptRecord>(records.emplace_back(AttemptRecord{}));
  attempt.values[AttemptAt("outcome")] = "succeeded";
  take(attempt, kAttemptOfAcked, false);
  StateRecord& state = std::get<StateRecord>(records.emplace_back(StateRecord{}));
  state.values[StateAt("status")] = "succeeded";
  take(state, kStateOfAcked, true);
}

// Field 'm' of an entry: packed records one after another, each its kind and then the values
// of kStateRecordFields, kAttemptRecordFields or kAckedRecordFields (scripts.h). A state
// record's '' is none too. (msgpuck reads the values; the framing by kind is the scripts' own.)
void AppendPackedRecords(const std::string& packed, std::vector<Record>& records) {
  const char* p = packed.data();
  const char* end = p + packed.size();
  std::string made;
  auto read = [&](auto& record, bool empty_is_none) {
    for (std::optional<std::string>& value : record.values) {
      std::optional<std::string_view> text = PackedText(p, end, made, "outbox record");
      if (text && !(empty_is_none && text->empty())) value.emplace(*text);
    }
  };
  while (p < end) {
    const std::optional<std::string_view> kind = PackedText(p, end, made, "outbox record");
    if (kind == "acked") {
      AppendAckedRecords(p, end, records);
    } else if (kind == "state") {
      read(std::get<StateRecord>(records.emplace_back(StateRecord{})), true);
    } else if (kind == "attempt") {
      read(std::get<AttemptRecord>(records.emplace_back(AttemptRecord{})), false);
    } else {
      throw std::runtime_error("outbox packed record of no kind");
    }
  }
}

}  // namespace

std::vector<Record> RecordsFromFlat(const RedisReply& flat) {
  std::vector<Record> records;
  // Entries written before the records went packed or as JSON: a field each, a record from
  // its "kind" (`open`, read whole before it is typed).
  std::optional<Fields> open;
  auto close = [&] {
    if (open) records.push_back(TypedRecord(std::move(*open)));
    open.reset();
  };
  for (size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    const std::string& name = flat.elements[i].str;
    if (name == "j") {
      close();
      AppendRecordsFromJson(flat.elements[i + 1].str, records);
      continue;
    }
    if (name == "m") {
      close();
      AppendPackedRecords(flat.elements[i + 1].str, records);
      continue;
    }
    // A new task: "seq\tstatus", then its packed spec.
    if (name == "t") {
      if (i + 3 >= flat.elements.size() || flat.elements[i + 2].str != "s") {
        throw std::runtime_error("outbox task record without its spec");
      }
      close();
      records.push_back(NewTaskRecord(flat.elements[i + 1].str, flat.elements[i + 3].str));
      i += 2;
      continue;
    }
    if (name == "s") throw std::runtime_error("outbox spec without its task");
    if (name == "o") continue;  // the process whose submit wrote the entry
    if (name == "kind") close();
    if (!open) open.emplace();
    (*open)[name] = flat.elements[i + 1].str;
  }
  close();
  return records;
}

Fields NewTaskRecord(const std::string& meta, const std::string& spec) {
  const size_t tab = meta.find('\t');
  if (tab == std::string::npos) throw std::runtime_error("outbox task record lacks a status");
  Fields f{{"kind", "task"}, {"seq", meta.substr(0, tab)}, {"status", meta.substr(tab + 1)}};
  AddSpecFields(f, spec);
  return f;
}

namespace {

// Every field a task's hash can hold, by position: its packed st's (kLiveFields, in order), then
// the ones only its spec holds (PackedSpec).
constexpr size_t kTaskFieldCount = kLiveFields.size() + 5;
constexpr std::array<const char*, kTaskFieldCount> TaskFieldNames() {
  std::array<const char*, kTaskFieldCount> names{};
  size_t i = 0;
  for (const char* name : kLiveFields) names[i++] = name;
  for (const char* name : {"id", "sched", "trace", "owner", "created"}) names[i++] = name;
  return names;
}
constexpr std::array<const char*, kTaskFieldCount> kTaskFieldNames = TaskFieldNames();

// The position of field `name`; kTaskFieldCount for a name of no task field.
constexpr size_t FieldIndex(std::string_view name) { return PositionIn(kTaskFieldNames, name); }
// The position of a field named in the code (a name of no task field does not compile).
consteval size_t At(std::string_view name) {
  const size_t i = FieldIndex(name);
  if (i == kTaskFieldCount) throw "not a task field";
  return i;
}
// The same, for a name read (a hash's, a spec's), hashed rather than compared with each.
std::optional<size_t> FieldAt(std::string_view name) {
  static const std::unordered_map<std::string_view, size_t> by_name = [] {
    std::unordered_map<std::string_view, size_t> m;
    for (size_t i = 0; i < kTaskFieldNames.size(); ++i) m.emplace(kTaskFieldNames[i], i);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}
// The fields PackedSpec writes, in its order.
constexpr std::array<size_t, 18> kSpecOrder = {
    At("id"),      At("type"),    At("queue"),   At("pv"),    At("payload"), At("sched"),
    At("timeout"), At("maxr"),    At("prio"),    At("trace"), At("ikey"),    At("chash"),
    At("owner"),   At("created"), At("updated"), At("next"),  At("ready"),   At("ver")};
// Where each field of a state record (kStateRecordFields) is.
constexpr std::array<size_t, kStateRecordFields.size()> kStateRecordAt = [] {
  std::array<size_t, kStateRecordFields.size()> at{};
  for (size_t i = 0; i < at.size(); ++i) at[i] = FieldIndex(kStateRecordFields[i]);
  return at;
}();
static_assert(std::ranges::all_of(kStateRecordAt, [](size_t at) { return at < kTaskFieldCount; }),
              "a state record holds task fields only");

// A task's fields by position (kTaskFieldNames), as views of the text they were read from: what
// TaskFromFields and StateRecordOf read. A lease's 100 tasks are read into these straight from
// the reply; a map of them cost the store thread most of its time a lease (docs/benchmarks.md,
// twenty-seventh round). The first value offered for a field wins.
class TaskValues {
 public:
  TaskValues() = default;
  TaskValues(const TaskValues&) = delete;
  TaskValues& operator=(const TaskValues&) = delete;

  // A map's fields (a hash read whole, its st and spec unpacked); names of no task field are
  // left out.
  explicit TaskValues(const Fields& f) { OfferFields(f); }

  // A packed st's values (see UnpackLive), nil ones left out.
  void OfferPackedState(std::string_view st) {
    const char* p = st.data();
    const char* end = p + st.size();
    for (size_t i = 0; i < kLiveFields.size(); ++i) {
      if (auto value = PackedText(p, end, made_[i], "task state")) Offer(i, *value);
    }
    if (p != end) throw std::runtime_error("task state holds more values than it has fields");
    Offer(At("next"), kNoNext);
  }

  // A packed spec's fields (see AddSpecFields): views of `spec`, or of the map a JSON spec (an
  // older Madeira's) is read into, kept here.
  void OfferSpec(std::string_view spec) {
    if (IsJsonSpec(spec)) {
      AddSpecFields(json_spec_.emplace(), std::string(spec));
      return OfferFields(*json_spec_);
    }
    size_t next = 0;  // in kSpecOrder: where the name read next is expected
    ForEachPackedSpecField(spec, [&](std::string_view name, std::string_view value) {
      std::optional<size_t> at;
      // PackedSpec's order first, past at most two optional fields; any other name by hash.
      for (size_t i = next; i < kSpecOrder.size() && i <= next + 2; ++i) {
        if (name != kTaskFieldNames[kSpecOrder[i]]) continue;
        at = kSpecOrder[i];
        next = i + 1;
        break;
      }
      if (!at) at = FieldAt(name);
      if (at) Offer(*at, value);
    });
  }

  std::optional<std::string_view> Maybe(size_t at) const { return values_[at]; }
  std::string_view Need(size_t at) const {
    if (!values_[at]) {
      throw std::runtime_error(std::string("task hash lacks field ") + kTaskFieldNames[at]);
    }
    return *values_[at];
  }
  int64_t Num(size_t at) const { return Number(at, Need(at)); }
  int64_t NumOr(size_t at, int64_t fallback) const {
    return values_[at] ? Number(at, *values_[at]) : fallback;
  }
  bool Flag(size_t at) const { return values_[at] == "1"; }

 private:
  // Names of no task field are left out.
  void OfferFields(const Fields& f) {
    for (const auto& [name, value] : f) {
      if (std::optional<size_t> at = FieldAt(name)) Offer(*at, value);
    }
  }
  void Offer(size_t at, std::string_view value) {
    if (!values_[at]) values_[at] = value;
  }
  static int64_t Number(size_t at, std::string_view text) {
    int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end || text.empty()) {
      throw std::runtime_error(std::string("task field ") + kTaskFieldNames[at] +
                               " is not a number");
    }
    return v;
  }

  std::array<std::optional<std::string_view>, kTaskFieldCount> values_;
  std::array<std::string, kTaskFieldCount> made_;  // values made here (numbers as text)
  std::optional<Fields> json_spec_;                // a JSON spec's fields (OfferSpec)
};

StateRecord StateRecordOf(const TaskValues& task) {
  StateRecord record;
  record.values[0] = task.Need(At("id"));
  for (size_t i = 1; i < kStateRecordFields.size(); ++i) {
    auto value = task.Maybe(kStateRecordAt[i]);
    if (value && !value->empty()) record.values[i] = *value;
  }
  return record;
}

LiveTask TaskFromValues(const TaskValues& v) {
  LiveTask live;
  core::Task& t = live.task;
  t.spec.task_id = v.Need(At("id"));
  t.spec.task_type = v.Need(At("type"));
  t.spec.queue = v.Need(At("queue"));
  t.spec.payload_version = static_cast<int>(v.Num(At("pv")));
  t.spec.payload = v.Need(At("payload"));
  t.spec.schedule_time = v.Num(At("sched"));
  t.spec.timeout_ms = v.Num(At("timeout"));
  t.spec.max_retries = static_cast<int>(v.Num(At("maxr")));
  t.spec.priority = static_cast<int>(v.Num(At("prio")));
  t.spec.trace_id = v.Need(At("trace"));
  if (auto key = v.Maybe(At("ikey"))) t.spec.idempotency_key = std::string(*key);
  t.spec.content_hash = v.Need(At("chash"));
  t.spec.owner = v.Maybe(At("owner")).value_or("");
  t.status = Status(std::string(v.Need(At("status"))));
  t.retry_count = static_cast<int>(v.NumOr(At("retry"), 0));
  t.attempts = static_cast<int>(v.NumOr(At("attempts"), 0));
  t.created_at = v.Num(At("created"));
  t.updated_at = v.Num(At("updated"));
  // "" = none: a lease blanks it (one HSET instead of an HSET and an HDEL).
  if (auto next = v.Maybe(At("next")); next && !next->empty())
    t.next_attempt_at = v.Num(At("next"));
  if (auto error = v.Maybe(At("lerr"))) t.last_error = std::string(*error);
  if (auto result = v.Maybe(At("result"))) t.result = std::string(*result);
  t.deduplicated = v.Flag(At("dedup"));
  t.fast_retries_used = static_cast<int>(v.NumOr(At("fastused"), 0));
  t.in_fast_retry = v.Flag(At("infast"));
  t.seq = v.Num(At("seq"));
  live.lease_id = v.Maybe(At("lease")).value_or("");
  live.fencing_token = v.NumOr(At("token"), 0);
  live.deadline = v.NumOr(At("deadline"), 0);
  live.attempt_started_at = v.NumOr(At("astart"), 0);
  live.worker = v.Maybe(At("worker")).value_or("");
  live.ready_at = v.NumOr(At("ready"), 0);
  live.ver = v.NumOr(At("ver"), 0);
  return live;
}

}  // namespace

StateRecord StateRecordOf(const Fields& task) { return StateRecordOf(TaskValues(task)); }

LiveTask TaskFromFields(const Fields& f) { return TaskFromValues(TaskValues(f)); }

LiveTask LeasedTask(std::optional<std::string_view> st, std::string_view spec, StateRecord* state) {
  TaskValues values;
  if (st) values.OfferPackedState(*st);
  values.OfferSpec(spec);
  if (state != nullptr) *state = StateRecordOf(values);
  return TaskFromValues(values);
}

namespace {
// Every task column, in order.
std::array<size_t, kTaskColumnCount> AllTaskColumns() {
  std::array<size_t, kTaskColumnCount> every{};
  for (size_t c = 0; c < every.size(); ++c) every[c] = c;
  return every;
}
// "c = FROM.c, ..." of the columns given by index, but the key.
template <typename Columns>
std::string Assignments(const Columns& columns, std::string_view from) {
  std::string out;
  for (size_t c : columns) {
    if (c == kTaskId) continue;
    if (!out.empty()) out += ", ";
    out += std::string(kTaskColumnNames[c]) + " = " + std::string(from) + "." + kTaskColumnNames[c];
  }
  return out;
}
}  // namespace

const std::string& PgTaskColumns() {
  static const std::string all = ColumnList(AllTaskColumns());
  return all;
}
const std::string& PgStateColumns() {
  static const std::string state = ColumnList(kStateColumns);
  return state;
}

const std::string& PgSpecColumns() {
  static const std::string spec = ColumnList(kSpecColumns);
  return spec;
}

std::string PgSpecAssignments(std::string_view from) { return Assignments(kSpecColumns, from); }
std::string PgStateAssignments(std::string_view from) { return Assignments(kStateColumns, from); }

core::Task TaskFromRow(const PgResult& r, int row) {
  core::Task t;
  t.spec.task_id = r.Text(row, kTaskId);
  t.seq = r.Int(row, kSeq);
  t.spec.queue = r.Text(row, kQueue);
  t.spec.task_type = r.Text(row, kTaskType);
  t.spec.payload_version = static_cast<int>(r.Int(row, kPayloadVersion));
  t.spec.payload = r.Text(row, kPayload);
  t.spec.schedule_time = r.Int(row, kScheduleTime);
  t.spec.timeout_ms = r.Int(row, kTimeoutMs);
  t.spec.max_retries = static_cast<int>(r.Int(row, kMaxRetries));
  t.spec.priority = static_cast<int>(r.Int(row, kPriority));
  t.spec.trace_id = r.Text(row, kTraceId);
  t.spec.idempotency_key = r.OptText(row, kIdempotencyKey);
  t.spec.content_hash = r.Text(row, kContentHash);
  t.status = Status(r.Text(row, kStatusColumn));
  t.retry_count = static_cast<int>(r.Int(row, kRetryCount));
  t.attempts = static_cast<int>(r.Int(row, kAttempts));
  t.created_at = r.Int(row, kCreatedAt);
  t.updated_at = r.Int(row, kUpdatedAt);
  t.next_attempt_at = r.OptInt(row, kNextAttemptAt);
  t.last_error = r.OptText(row, kLastError);
  t.result = r.OptText(row, kResult);
  t.deduplicated = r.Text(row, kDeduplicated) == "t";
  t.fast_retries_used = static_cast<int>(r.Int(row, kFastRetriesUsed));
  t.in_fast_retry = r.Text(row, kInFastRetry) == "t";
  t.spec.owner = r.Text(row, kOwner);
  return t;
}

const char* const kPgAttemptColumns =
    "attempt, worker_id, started_at, finished_at, outcome, error, http_status, response_excerpt";
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

RecordBatch NewTasksRecordBatch(std::vector<MadeTask> tasks) {
  std::sort(tasks.begin(), tasks.end(),
            [](const MadeTask& a, const MadeTask& b) { return a.spec->task_id < b.spec->task_id; });
  RecordBatch batch;
  Row row(kTaskColumnCount);
  for (const MadeTask& m : tasks) {
    const core::TaskSpec& t = *m.spec;
    const size_t tab = m.meta.find('\t');
    if (tab == std::string_view::npos) throw std::runtime_error("a made task lacks a status");
    // As FullRow reads NewTaskRecord(meta, PackedSpec(t, now)).
    const std::string sched = Num(t.schedule_time);
    const std::string at = Num(m.now);
    row[kTaskId] = t.task_id;
    row[kSeq] = IntText(std::string(m.meta.substr(0, tab)), "seq");
    row[kQueue] = t.queue;
    row[kTaskType] = t.task_type;
    row[kPayloadVersion] = Num(t.payload_version);
    row[kPayload] = t.payload;
    row[kScheduleTime] = sched;
    row[kTimeoutMs] = Num(t.timeout_ms);
    row[kMaxRetries] = Num(t.max_retries);
    row[kPriority] = Num(t.priority);
    row[kTraceId] = t.trace_id;
    row[kIdempotencyKey] = t.idempotency_key;
    row[kContentHash] = t.content_hash;
    row[kCreatedAt] = at;
    row[kOwner] = t.owner;
    // As ApplyState reads a new task's: version 1, nothing tried yet.
    row[kVer] = "1";
    row[kStatusColumn] =
        std::string(core::TaskStatusName(Status(std::string(m.meta.substr(tab + 1)))));
    row[kRetryCount] = "0";
    row[kAttempts] = "0";
    row[kUpdatedAt] = at;
    row[kNextAttemptAt] = sched;
    row[kLastError] = std::nullopt;
    row[kResult] = std::nullopt;
    row[kDeduplicated] = "f";
    row[kFastRetriesUsed] = "0";
    row[kInFastRetry] = "f";
    AppendCopyRow(batch.tasks_copy, row);
    ++batch.tasks;
  }
  return batch;
}

RecordBatch BuildRecordBatch(const std::vector<const Record*>& records) {
  // The newest version of each task: its full record, with its newest change over it when that
  // change is newer, or (changes only) its newest change. Views of the records, turned into rows
  // once all are read.
  struct TaskSlot {
    int64_t ver = 0;  // the newest version read
    const Fields* full = nullptr;
    int64_t full_ver = 0;
    const StateRecord* change = nullptr;  // newer than `full`
  };
  std::map<std::string_view, TaskSlot> tasks;
  std::map<std::pair<std::string_view, int64_t>, const AttemptRecord*> attempts;
  std::map<std::pair<std::string, std::string>, boost::json::object> events;
  for (const Record* record : records) {
    if (const auto* change = std::get_if<StateRecord>(record)) {
      const int64_t ver = std::stoll(ValueAt(*change, StateAt("ver")));
      auto [it, made] = tasks.try_emplace(ValueAt(*change, StateAt("id")));
      TaskSlot& slot = it->second;
      if (!made && slot.ver >= ver) continue;
      slot.change = change;  // over the full record, when the batch holds it
      slot.ver = ver;
      continue;
    }
    if (const auto* attempt = std::get_if<AttemptRecord>(record)) {
      const std::string& task_id = ValueAt(*attempt, AttemptAt("task_id"));
      attempts[{task_id, std::stoll(IntAt(*attempt, AttemptAt("attempt")))}] = attempt;
      continue;
    }
    const Fields& f = std::get<Fields>(*record);
    auto kind = f.find("kind");
    if (kind == f.end()) continue;
    if (kind->second == "task") {
      const int64_t ver = NumOr(f, "ver", 0);
      auto [it, made] = tasks.try_emplace(Need(f, "id"));
      TaskSlot& slot = it->second;
      if (!made && slot.ver >= ver) {
        // A newer change of the task came first (stream order makes its full record come
        // first; only a reordered outbox does this): the full row, with that change over it,
        // rather than a change with no row to change and a task never written.
        if (slot.full == nullptr) {
          slot.full = &f;
          slot.full_ver = ver;
        }
        continue;
      }
      slot = TaskSlot{ver, &f, ver, nullptr};
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
  RecordBatch batch;
  Row row(kTaskColumnCount);
  for (const auto& [id, slot] : tasks) {
    if (slot.full != nullptr) {
      FullRow(row, *slot.full, slot.full_ver);
      if (slot.change != nullptr) ApplyState(row, *slot.change, slot.ver);
      AppendCopyRow(batch.tasks_copy, row);
      ++batch.tasks;
    } else {
      ApplyState(row, *slot.change, slot.ver);
      AppendCopyColumns(batch.states_copy, row, kStateColumns);
      ++batch.states;
    }
  }
  // An attempt's row is its record's values as they are (kPgAttemptRowColumns follows
  // kAttemptRecordFields), checked.
  for (const auto& [key, a] : attempts) {
    ValueAt(*a, AttemptAt("worker"));
    IntAt(*a, AttemptAt("started"));
    IntAt(*a, AttemptAt("finished"));
    ValueAt(*a, AttemptAt("outcome"));
    if (const auto& http = a->values[AttemptAt("http")]) IntText(*http, "http");
    AppendCopyRow(batch.attempts_copy, a->values);
  }
  batch.attempts = attempts.size();
  boost::json::array ea;
  for (auto& [key, o] : events) ea.push_back(std::move(o));
  batch.events = ea.size();
  batch.events_json = boost::json::serialize(ea);
  return batch;
}

}  // namespace madeira::store::redis_pg
