#include "store/redis_pg/ops.h"

#include <array>
#include <stdexcept>
#include <string_view>

#include "core/ids.h"

namespace madeira::store::redis_pg {

namespace {

using core::ErrorCode;
using core::MakeError;

core::Error LeaseLost() { return MakeError(ErrorCode::kLeaseLost, "lease expired or superseded"); }

core::TaskStatus StatusOf(const std::string& text) {
  auto s = core::ParseTaskStatus(text);
  if (!s) throw std::runtime_error("unknown task status " + text);
  return *s;
}

void AppendTaskArgs(std::vector<std::string>& args, const core::TaskSpec& t, Millis now);

}  // namespace

RedisCall SubmitCall(const std::vector<core::TaskSpec>& tasks, Millis now,
                     const std::string& schemas) {
  RedisCall call{Script::kSubmit, {}};
  call.args.reserve(tasks.size() * kSubmitArgsPerTask);
  const std::string at = Num(now);
  for (const core::TaskSpec& t : tasks) {
    call.args.push_back(at);
    // A fresh UUIDv7 ("n"): no claim of it can exist, here or in PostgreSQL; nothing to look up.
    call.args.push_back(t.id_made_here ? "n" : "-");
    call.args.push_back(schemas);
    AppendTaskArgs(call.args, t, now);
  }
  return call;
}

std::vector<std::string> SubmitIds(const RedisCall& submit) {
  std::vector<std::string> ids;
  for (size_t i = 0; i + kSubmitArgsPerTask <= submit.args.size(); i += kSubmitArgsPerTask) {
    if (submit.args[i + 1] == "-") ids.push_back(submit.args[i + 3]);
  }
  return ids;
}

void RecordedIdsInto(RedisCall& submit, const std::map<std::string, std::string>& recorded) {
  for (size_t i = 0; i + kSubmitArgsPerTask <= submit.args.size(); i += kSubmitArgsPerTask) {
    if (submit.args[i + 1] != "-") continue;
    auto it = recorded.find(submit.args[i + 3]);
    submit.args[i + 1] = it == recorded.end() ? "0" : "+" + it->second;
  }
}

Result<std::vector<SubmitOutcome>> SubmitReply(const std::vector<core::TaskSpec>& tasks,
                                               const RedisReply& r, bool* recheck,
                                               std::vector<std::string>* made) {
  if (r.IsError()) return ScriptError(r);
  std::vector<SubmitOutcome> out;
  made->clear();
  for (size_t i = 0; i < tasks.size() && (i + 1) * kSubmitReplyValues <= r.elements.size(); ++i) {
    // kind, status, seq ("" but for a task made)
    const RedisReply* e = &r.elements[i * kSubmitReplyValues];
    const std::string& kind = e[0].str;
    if (kind == "recheck") {
      *recheck = true;
      made->clear();
      return MakeError(ErrorCode::kUnavailable,
                       "redis-pg: task ids must be looked up in postgresql too; submit again");
    }
    SubmitKind k = kind == "created"     ? SubmitKind::kCreated
                   : kind == "duplicate" ? SubmitKind::kDuplicate
                   : kind == "schemas"   ? SubmitKind::kStaleSchemas
                                         : SubmitKind::kConflict;
    const std::string& status = e[1].str;
    out.push_back({k, tasks[i].task_id, StatusOf(status)});
    made->push_back(k == SubmitKind::kCreated ? e[2].str + "\t" + status : "");
  }
  return out;
}

std::vector<std::string> TakeSubmitEntries(RedisReply& reply, size_t tasks) {
  std::vector<std::string> entries;
  if (reply.IsError() || reply.elements.size() != tasks * kSubmitReplyValues + 1) return entries;
  for (RedisReply& id : reply.elements.back().elements) entries.push_back(std::move(id.str));
  reply.elements.pop_back();
  return entries;
}

RedisCall LeaseCall(const LeaseRequest& request, core::Random& random) {
  const int want = std::max(request.max_tasks, 0);
  RedisCall call{
      Script::kLease,
      {Num(request.now), Num(want), request.lease_ms ? "+" + Num(*request.lease_ms) : "-",
       request.worker_id, Num(static_cast<int64_t>(request.queues.size()))}};
  call.args.insert(call.args.end(), request.queues.begin(), request.queues.end());
  std::vector<std::string> allowed;
  for (const auto& [type, versions] : request.task_types) {
    for (int v : versions) allowed.push_back(type + "\t" + Num(v));
  }
  // A type listed with no versions allows nothing; an empty map allows everything.
  if (!request.task_types.empty() && allowed.empty()) allowed.push_back("\t");
  call.args.push_back(Num(static_cast<int64_t>(allowed.size())));
  call.args.insert(call.args.end(), allowed.begin(), allowed.end());
  for (int i = 0; i < want; ++i) call.args.push_back(core::MakeToken(random));
  return call;
}

Result<LeaseBatch> LeaseReply(const RedisReply& r, std::vector<StateRecord>* states) {
  if (r.IsError()) return ScriptError(r);
  LeaseBatch batch;
  // kLeaseReplyValues a lease: its id, the task's "st" as leased and its spec, or its id, the
  // whole hash as leased (an array) and "flat" for a hash without a packed spec.
  const std::vector<RedisReply>& leased = r.elements.at(0).elements;
  if (leased.size() % kLeaseReplyValues != 0) {
    throw std::runtime_error("lease reply: not three values a lease");
  }
  if (states != nullptr) states->reserve(states->size() + leased.size() / kLeaseReplyValues);
  for (size_t i = 0; i < leased.size(); i += kLeaseReplyValues) {
    const RedisReply& st = leased[i + 1];
    LiveTask live;
    if (st.type == RedisReply::Type::kArray) {
      const Fields f = FieldsFromFlat(st);
      live = TaskFromFields(f);
      if (states != nullptr) states->push_back(StateRecordOf(f));
    } else {
      live = LeasedTask(st.IsNil() ? std::nullopt : std::optional<std::string_view>(st.str),
                        leased[i + 2].str, states != nullptr ? &states->emplace_back() : nullptr);
    }
    batch.leases.push_back(store::Lease{leased[i].str, live.fencing_token, live.deadline,
                                        std::move(live.task), live.ready_at});
  }
  for (const RedisReply& id : r.elements.at(1).elements) batch.deduplicated.push_back(id.str);
  return batch;
}

RedisCall AckCall(const AckRequest& request) {
  const AttemptDetail& d = request.detail;
  return {Script::kAck,
          {request.lease_id, Num(request.now), Num(request.idempotency_ttl), OptArg(request.result),
           d.http_status ? "+" + Num(*d.http_status) : "-", OptArg(d.response_excerpt)}};
}

Result<AttemptReport> AckReply(const AckRequest& request, const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  // "ok\tid\tqueue\ttype\tattempt started\tattempts\tidempotency key or nothing" (the key last:
  // it may hold tabs, the others cannot), or "lost".
  if (r.elements.empty() || !r.elements[0].str.starts_with("ok\t")) return LeaseLost();
  std::string_view rest = r.elements[0].str;
  rest.remove_prefix(3);
  const auto next = [&rest]() {
    const size_t tab = rest.find('\t');
    if (tab == std::string_view::npos) throw std::runtime_error("ack reply: too few values");
    const std::string_view value = rest.substr(0, tab);
    rest.remove_prefix(tab + 1);
    return std::string(value);
  };
  AttemptReport report;
  core::Task& t = report.task;
  t.spec.task_id = next();
  t.spec.queue = next();
  t.spec.task_type = next();
  report.attempt_started_at = std::stoll(next());
  t.attempts = std::stoi(next());
  if (!rest.empty()) t.spec.idempotency_key = std::string(rest);
  t.status = core::TaskStatus::kSucceeded;
  t.result = request.result;
  t.updated_at = request.now;
  return report;
}

RedisCall ExtendCall(const ExtendRequest& request) {
  return {Script::kExtend, {request.lease_id, Num(request.extend_ms), Num(request.now)}};
}

Result<Millis> ExtendReply(const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  if (r.elements.empty() || r.elements[0].str != "ok") return LeaseLost();
  return std::stoll(r.elements.at(1).str);
}

RedisCall CancelCall(const std::string& task_id, Millis now) {
  return {Script::kCancel, {task_id, Num(now)}};
}

Result<core::Task> CancelReply(const std::string& task_id, const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  const std::string& verdict = r.elements.at(0).str;
  if (verdict == "ok") return TaskFromFields(FieldsFromFlat(r.elements.at(1))).task;
  if (verdict == "running") {
    return MakeError(ErrorCode::kTaskRunning, "task is running; it can be cancelled once it ends");
  }
  if (verdict == "terminal") {
    return MakeError(ErrorCode::kTaskTerminal, "task already " + r.elements.at(1).str);
  }
  return MakeError(ErrorCode::kNotFound, "no task " + task_id);
}

RedisCall PromoteCall(Millis now) { return {Script::kPromote, {Num(now)}}; }

Result<std::vector<std::string>> PromoteReply(const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  std::vector<std::string> queues;
  for (const RedisReply& q : r.elements) queues.push_back(q.str);
  return queues;
}

RedisCall NextWakeupCall() { return {Script::kNextWakeup, {}}; }

Result<std::optional<Millis>> NextWakeupReply(const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  if (r.IsNil()) return std::optional<Millis>();
  return std::optional<Millis>(std::stoll(r.str));
}

namespace {

// What create_task in scripts.cc reads (TASK_ARGS there), the packed spec last.
void AppendTaskArgs(std::vector<std::string>& args, const core::TaskSpec& t, Millis now) {
  args.insert(args.end(), {t.task_id, t.task_type, t.queue, Num(t.payload_version),
                           Num(t.schedule_time), Num(t.timeout_ms), Num(t.priority),
                           OptArg(t.idempotency_key), t.content_hash, PackedSpec(t, now)});
}

// [event fields, [[endpoint, task_id, status], ...]]
// A delivery whose task Redis no longer knows (it ended and its claim left Redis) says
// 'unknown': its index goes to *unknown, for the caller to read from PostgreSQL.
StoredEvent StoredEventFrom(const RedisReply& r, std::vector<size_t>* unknown) {
  Fields f = FieldsFromFlat(r.elements.at(0));
  StoredEvent stored;
  EventRecord& e = stored.event;
  e.source = f.at("source");
  e.event_id = f.at("event_id");
  e.event_type = f.at("type");
  e.payload = f.at("payload");
  e.trace_id = f.at("trace");
  if (auto it = f.find("target"); it != f.end()) e.target_uri = it->second;
  e.received_at = std::stoll(f.at("received"));
  for (const RedisReply& d : r.elements.at(1).elements) {
    const std::string& status = d.elements.at(2).str;
    if (status == "unknown") {
      unknown->push_back(stored.deliveries.size());
      stored.deliveries.push_back({d.elements.at(0).str, d.elements.at(1).str});
      continue;
    }
    stored.deliveries.push_back({d.elements.at(0).str, d.elements.at(1).str, StatusOf(status)});
  }
  return stored;
}

}  // namespace

RedisCall EventCall(const std::string& mode, const EventRecord& event,
                    const std::vector<NewDelivery>& deliveries, Millis now, Millis ttl) {
  RedisCall call{Script::kEvent,
                 {Num(now), mode, event.source, event.event_id, event.event_type, event.payload,
                  event.trace_id, OptArg(event.target_uri), Num(event.received_at),
                  Num(static_cast<int64_t>(deliveries.size()))}};
  for (const NewDelivery& d : deliveries) {
    call.args.push_back(d.endpoint_id);
    AppendTaskArgs(call.args, d.task, now);
  }
  call.args.push_back("-");  // known: see EventFromRecordChecked
  call.args.push_back(Num(ttl));
  return call;
}

void EventFromRecordChecked(RedisCall& event) { event.args[event.args.size() - 2] = "0"; }

Result<EventSubmitOutcome> EventReply(const RedisReply& r, std::vector<size_t>* unknown,
                                      bool* recheck) {
  if (r.IsError()) return ScriptError(r);
  const std::string& verdict = r.elements.at(0).str;
  if (verdict == "recheck" && recheck != nullptr) {
    *recheck = true;
    return MakeError(ErrorCode::kUnavailable,
                     "redis-pg: the event must be looked up in postgresql too; submit again");
  }
  if (verdict == "conflict") {
    return MakeError(ErrorCode::kTaskIdConflict, "task " + r.elements.at(1).str + " already exists",
                     "task_id");
  }
  if (verdict == "notfound") return MakeError(ErrorCode::kNotFound, "no such event");
  return EventSubmitOutcome{verdict == "duplicate", StoredEventFrom(r.elements.at(1), unknown)};
}

RedisCall GetEventCall(const std::string& event_id, const std::optional<std::string>& source) {
  return {Script::kGetEvent, {event_id, OptArg(source)}};
}

Result<StoredEvent> GetEventReply(const std::string& event_id, const RedisReply& r,
                                  std::vector<size_t>* unknown) {
  if (r.IsError()) return ScriptError(r);
  if (r.IsNil()) return MakeError(ErrorCode::kNotFound, "no event " + event_id);
  return StoredEventFrom(r, unknown);
}

RedisCall DepthsCall(const std::string& key_prefix) {
  return {std::nullopt, {"HGETALL", key_prefix + "depth"}};
}

Result<std::vector<DepthRow>> DepthsReply(const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  std::vector<DepthRow> rows;
  for (size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    const std::string& key = r.elements[i].str;
    size_t tab = key.find('\t');
    if (tab == std::string::npos) continue;
    // A state the queue has left stays as a zero row, as in the embedded store: its gauge
    // then reads 0 rather than vanishing.
    int64_t count = std::stoll(r.elements[i + 1].str);
    rows.push_back({key.substr(0, tab), StatusOf(key.substr(tab + 1)), count});
  }
  return rows;
}

}  // namespace madeira::store::redis_pg
