// The operations of more than one round trip: the end of an attempt by a decision of the engine,
// and the reads and bulk changes served partly from PostgreSQL.
#include <algorithm>

#include "core/log.h"
#include "store/redis_pg/backend.h"

namespace madeira::store::redis_pg {

namespace {

using core::ErrorCode;
using core::MakeError;
using core::TaskStatus;

constexpr int kMaxSearchLimit = 1000;
constexpr int kDecisionTries = 8;  // optimistic retries when the task changed under a decision
constexpr const char* kLeaseExpiredError =
    R"({"type":"lease_expired","message":"the lease deadline passed without an ack or fail"})";

}  // namespace

Result<AttemptReport> Backend::Fail(const FailRequest& request, const RetryDecider& decide,
                                    bool expire_only) {
  for (int attempt = 0; attempt < kDecisionTries; ++attempt) {
    RedisReply view = Call({Script::kLeaseView, {request.lease_id}});
    if (view.IsError()) return ScriptError(view);
    if (view.elements.empty() || view.elements[0].str != "ok") {
      return MakeError(ErrorCode::kLeaseLost, "lease expired or superseded");
    }
    LiveTask live = TaskFromFields(FieldsFromFlat(view.elements[1]));
    core::Task task = live.task;
    int fast_in_flight = static_cast<int>(view.elements[2].integer) - (task.in_fast_retry ? 1 : 0);
    core::RetryDecision decision = decide(task, request.failure, fast_in_flight);
    std::optional<Millis> next;
    switch (decision.next) {
      case TaskStatus::kPending:
        task.retry_count += 1;
        task.fast_retries_used += 1;
        task.in_fast_retry = true;
        next = decision.due;
        break;
      case TaskStatus::kRetrying:
        task.retry_count += 1;
        task.in_fast_retry = false;
        next = decision.due;
        break;
      case TaskStatus::kDead:
        task.in_fast_retry = false;
        break;
      default:
        return MakeError(ErrorCode::kInternal, "retry decision must be pending, retrying or dead");
    }
    const AttemptDetail& d = request.detail;
    RedisReply r = Call({Script::kFinishAttempt,
                         {request.lease_id, Num(live.ver), Num(request.now),
                          std::string(core::TaskStatusName(decision.next)), Num(task.retry_count),
                          Num(task.fast_retries_used), task.in_fast_retry ? "1" : "0",
                          next ? "+" + Num(*next) : "-", OptArg(request.failure.error),
                          std::string(core::AttemptOutcomeName(request.failure.outcome)),
                          d.http_status ? "+" + Num(*d.http_status) : "-",
                          OptArg(d.response_excerpt), expire_only ? "1" : "0"}});
    if (r.IsError()) return ScriptError(r);
    const std::string& verdict = r.elements.at(0).str;
    if (verdict == "changed") continue;  // extended or otherwise touched: decide again
    if (verdict != "ok") return MakeError(ErrorCode::kLeaseLost, "lease expired or superseded");
    LiveTask after = TaskFromFields(FieldsFromFlat(r.elements.at(1)));
    return AttemptReport{std::move(after.task), live.attempt_started_at, decision};
  }
  return MakeError(ErrorCode::kUnavailable, "the task kept changing; try again");
}

Result<std::vector<AttemptReport>> Backend::ExpireLeases(Millis now, const RetryDecider& decide) {
  RedisReply expired = Call({Script::kExpired, {Num(now)}});
  if (expired.IsError()) return ScriptError(expired);
  core::Failure failure;
  failure.outcome = core::AttemptOutcome::kLeaseExpired;
  failure.error = kLeaseExpiredError;
  std::vector<AttemptReport> reports;
  for (const RedisReply& lease : expired.elements) {
    FailRequest request;
    request.lease_id = lease.str;
    request.failure = failure;
    request.now = now;
    auto report = Fail(request, decide, /*expire_only=*/true);
    if (report) {
      reports.push_back(std::move(*report));
    } else if (report.error().code != ErrorCode::kLeaseLost) {
      return report.error();  // lost = acked or reclaimed by another process meanwhile
    }
  }
  return reports;
}

Result<std::vector<core::Attempt>> Backend::Attempts(const std::string& task_id) {
  std::optional<LiveTask> live = GetLive(task_id);
  if (!live && !GetRecorded(task_id)) return MakeError(ErrorCode::kNotFound, "no task " + task_id);
  if (live) CatchUpRecord();  // GetRecorded has waited for the recorder already
  PgResult r = pg_.Exec("SELECT " + std::string(kPgAttemptColumns) +
                            " FROM attempts WHERE task_id = $1 ORDER BY attempt",
                        {task_id});
  std::vector<core::Attempt> attempts;
  for (int i = 0; i < r.Rows(); ++i) attempts.push_back(AttemptFromRow(r, i));
  // The running attempt has no row until it ends; it is read from the live task.
  if (live && live->task.status == TaskStatus::kRunning &&
      (attempts.empty() || attempts.back().attempt < live->task.attempts)) {
    core::Attempt open;
    open.attempt = live->task.attempts;
    open.worker_id = live->worker;
    open.started_at = live->attempt_started_at;
    attempts.push_back(std::move(open));
  }
  return attempts;
}

Result<SearchPage> Backend::Search(const SearchQuery& query) {
  CatchUpRecord();
  const int limit = std::clamp(query.limit, 1, kMaxSearchLimit);
  std::optional<TaskStatus> status = query.status;
  if (query.dead_since) status = TaskStatus::kDead;
  std::string sql = TaskSelect() + " WHERE true";
  std::vector<std::optional<std::string>> params;
  auto add = [&](const std::string& clause, std::string value) {
    params.push_back(std::move(value));
    sql += " AND " + clause + " $" + std::to_string(params.size());
  };
  if (status) add("status =", std::string(core::TaskStatusName(*status)));
  if (query.queue) add("queue =", *query.queue);
  if (query.task_type) add("task_type =", *query.task_type);
  if (query.trace_id) add("trace_id =", *query.trace_id);
  if (query.owner) add("owner =", *query.owner);
  if (query.dead_since) add("updated_at >=", Num(*query.dead_since));
  // By status, in the order of task_states' (status, seq) index: the same seq (task_rows).
  const std::string seq = status ? "state_seq" : "seq";
  if (query.cursor) add(seq + " <", Num(*query.cursor));
  sql += " ORDER BY " + seq + " DESC LIMIT " + std::to_string(limit + 1);
  PgResult r = pg_.Exec(sql, params);
  SearchPage page;
  for (int i = 0; i < r.Rows(); ++i) {
    if (static_cast<int>(page.tasks.size()) == limit) {
      page.next_cursor = page.tasks.back().seq;
      break;
    }
    page.tasks.push_back(TaskFromRow(r, i));
  }
  return page;
}

Result<std::vector<LiveTask>> Backend::SelectDead(const DeadSelector& selector) {
  std::vector<LiveTask> out;
  auto dead_live = [&](const std::string& id) -> Result<std::optional<LiveTask>> {
    std::optional<LiveTask> live = GetLive(id);
    if (live && live->task.status == TaskStatus::kDead) return live;
    if (selector.task_ids.size() == 1) {
      if (!live && !GetRecorded(id)) return MakeError(ErrorCode::kNotFound, "no task " + id);
      return MakeError(ErrorCode::kTaskNotDead, "task " + id + " is not dead");
    }
    return std::optional<LiveTask>();
  };
  std::vector<std::string> ids = selector.task_ids;
  const bool by_filter = ids.empty();
  if (by_filter) {
    // The record finds candidates; Redis (the truth for live tasks) confirms each.
    CatchUpRecord();
    const DeadFilter& f = selector.filter;
    std::string sql = "SELECT task_id FROM task_rows WHERE status = 'dead'";
    std::vector<std::optional<std::string>> params;
    auto add = [&](const std::string& clause, std::string value) {
      params.push_back(std::move(value));
      sql += " AND " + clause + " $" + std::to_string(params.size());
    };
    if (f.queue) add("queue =", *f.queue);
    if (f.task_type) add("task_type =", *f.task_type);
    if (f.since) add("updated_at >=", Num(*f.since));
    PgResult r = pg_.Exec(sql + " ORDER BY state_seq", params);
    for (int i = 0; i < r.Rows(); ++i) ids.push_back(r.Text(i, 0));
  }
  for (const std::string& id : ids) {
    auto found = dead_live(id);
    if (!found) return found.error();
    if (!*found) continue;
    const core::Task& t = (*found)->task;
    if (by_filter) {
      const DeadFilter& f = selector.filter;
      if ((f.queue && t.spec.queue != *f.queue) ||
          (f.task_type && t.spec.task_type != *f.task_type) ||
          (f.since && t.updated_at < *f.since)) {
        continue;
      }
    }
    out.push_back(std::move(**found));
  }
  return out;
}

Result<std::vector<core::Task>> Backend::Replay(const DeadSelector& selector,
                                                const ReplayEdits& edits, const ReplayCheck& check,
                                                Millis now) {
  auto dead = SelectDead(selector);
  if (!dead) return dead.error();
  const bool single = selector.task_ids.size() == 1;
  // Every check runs before anything is written: a check that throws changes nothing.
  std::vector<std::string> args{Num(now)};
  for (const LiveTask& live : *dead) {
    if (check) {
      auto verdict = check(live.task, edits);
      if (!verdict) {
        if (single) return verdict.error();
        continue;  // a refused task stays dead
      }
    }
    args.push_back(live.task.spec.task_id);
    args.push_back(Num(live.ver));
    args.push_back(OptArg(edits.payload));
    args.push_back(edits.payload_version ? "+" + Num(*edits.payload_version) : "-");
    args.push_back(edits.max_retries ? "+" + Num(*edits.max_retries) : "-");
  }
  std::vector<core::Task> replayed;
  if (args.size() == 1) return replayed;
  RedisReply r = Call({Script::kReplay, args});
  if (r.IsError()) return ScriptError(r);
  for (const RedisReply& flat : r.elements) {
    replayed.push_back(TaskFromFields(FieldsFromFlat(flat)).task);
  }
  return replayed;
}

Result<int64_t> Backend::CancelDead(const DeadSelector& selector, Millis now) {
  auto dead = SelectDead(selector);
  if (!dead) return dead.error();
  if (dead->empty()) return int64_t{0};
  std::vector<std::string> args{Num(now)};
  for (const LiveTask& live : *dead) args.push_back(live.task.spec.task_id);
  RedisReply r = Call({Script::kCancelDead, args});
  if (r.IsError()) return ScriptError(r);
  return r.integer;
}

// PostgreSQL first, then the set's new version in Redis: a process that reads the version (in
// ListSchemaSet, before the schemas) finds every schema of it in PostgreSQL. Should Redis fail
// after PostgreSQL took the schema, the put fails (and is safe to repeat); until then the other
// processes learn of the schema only from their next reading of the set.
Result<Unit> Backend::PutSchema(const SchemaRecord& schema) {
  PgResult r = pg_.Exec(
      "INSERT INTO schemas(task_type, version, schema, created_at) VALUES($1, $2, $3, $4) "
      "ON CONFLICT (task_type, version) DO UPDATE SET schema = EXCLUDED.schema, "
      "created_at = EXCLUDED.created_at RETURNING gen_random_uuid()::text",
      {schema.task_type, Num(schema.version), schema.schema, Num(schema.created_at)});
  RedisReply set = Call({std::nullopt, {"SET", prefix_ + "schemas", r.Text(0, 0)}});
  if (set.IsError()) return ScriptError(set);
  return Unit{};
}

Result<SchemaSet> Backend::ListSchemaSet() {
  RedisReply version = Call({std::nullopt, {"GET", prefix_ + "schemas"}});
  if (version.IsError()) return ScriptError(version);
  auto schemas = ListSchemas();
  if (!schemas) return schemas.error();
  return SchemaSet{std::move(*schemas), version.IsNil() ? "0" : version.str};
}

Result<SchemaRecord> Backend::GetSchema(const std::string& task_type, int version) {
  PgResult r =
      pg_.Exec("SELECT schema, created_at FROM schemas WHERE task_type = $1 AND version = $2",
               {task_type, Num(version)});
  if (r.Rows() == 0) {
    return MakeError(ErrorCode::kNotFound,
                     "no schema for " + task_type + " version " + std::to_string(version));
  }
  return SchemaRecord{task_type, version, r.Text(0, 0), r.Int(0, 1)};
}

Result<std::vector<SchemaRecord>> Backend::ListSchemas() {
  PgResult r = pg_.Exec(
      "SELECT task_type, version, schema, created_at FROM schemas ORDER BY task_type, version");
  std::vector<SchemaRecord> out;
  for (int i = 0; i < r.Rows(); ++i) {
    out.push_back({r.Text(i, 0), static_cast<int>(r.Int(i, 1)), r.Text(i, 2), r.Int(i, 3)});
  }
  return out;
}

Result<Unit> Backend::PutEndpoint(const EndpointRecord& e) {
  pg_.Exec(
      "INSERT INTO endpoints(endpoint_id, config, created_at, updated_at) VALUES($1, $2, $3, $4) "
      "ON CONFLICT (endpoint_id) DO UPDATE SET config = EXCLUDED.config, "
      "created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at",
      {e.endpoint_id, e.config, Num(e.created_at), Num(e.updated_at)});
  return Unit{};
}

Result<Unit> Backend::DeleteEndpoint(const std::string& endpoint_id) {
  PgResult r =
      pg_.Exec("DELETE FROM endpoints WHERE endpoint_id = $1 RETURNING seq", {endpoint_id});
  if (r.Rows() == 0) return MakeError(ErrorCode::kNotFound, "no endpoint " + endpoint_id);
  return Unit{};
}

Result<EndpointRecord> Backend::GetEndpoint(const std::string& endpoint_id) {
  PgResult r = pg_.Exec(
      "SELECT config, created_at, updated_at FROM endpoints WHERE endpoint_id = $1", {endpoint_id});
  if (r.Rows() == 0) return MakeError(ErrorCode::kNotFound, "no endpoint " + endpoint_id);
  return EndpointRecord{endpoint_id, r.Text(0, 0), r.Int(0, 1), r.Int(0, 2)};
}

void Backend::PublishChange(std::string_view what) {
  try {
    Call({std::nullopt, {"PUBLISH", prefix_ + "changed", consumer_ + "\n" + std::string(what)}});
  } catch (const RedisIoError& e) {
    core::Log(core::LogLevel::kWarn, "redis-pg: the other processes were not told of a change",
              {{"what", std::string(what)}, {"error", e.what()}});
  }
}

Result<std::vector<EndpointRecord>> Backend::ListEndpoints() {
  PgResult r =
      pg_.Exec("SELECT endpoint_id, config, created_at, updated_at FROM endpoints ORDER BY seq");
  std::vector<EndpointRecord> out;
  for (int i = 0; i < r.Rows(); ++i) {
    out.push_back({r.Text(i, 0), r.Text(i, 1), r.Int(i, 2), r.Int(i, 3)});
  }
  return out;
}

}  // namespace madeira::store::redis_pg
