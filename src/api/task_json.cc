#include "api/task_json.h"

#include <boost/json/parse.hpp>

#include "api/query_decoders.h"
#include "core/time.h"

namespace madeira::api {

boost::json::value EmbeddedJson(const std::string& text, boost::json::storage_ptr sp) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec, sp);
  if (ec) return boost::json::value(text, sp);
  return v;
}

boost::json::value OptionalJson(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  return EmbeddedJson(*text);
}

boost::json::value OptionalTime(const std::optional<core::Millis>& t) {
  if (!t) return nullptr;
  return boost::json::value(core::FormatRfc3339(*t));
}

boost::json::object EnvelopeJson(const core::Task& task, boost::json::storage_ptr sp) {
  const core::TaskSpec& s = task.spec;
  boost::json::object o(13, sp);
  o["task_id"] = s.task_id;
  o["task_type"] = s.task_type;
  o["queue"] = s.queue;
  o["payload_version"] = s.payload_version;
  o["payload"] = EmbeddedJson(s.payload, sp);
  o["schedule_time"] = core::FormatRfc3339(s.schedule_time);
  o["timeout_ms"] = s.timeout_ms;
  o["max_retries"] = s.max_retries;
  o["retry_count"] = task.retry_count;
  o["priority"] = s.priority;
  o["trace_id"] = s.trace_id;
  if (s.idempotency_key) o["idempotency_key"] = *s.idempotency_key;
  return o;
}

boost::json::object TaskJson(const core::Task& task) {
  boost::json::object o = EnvelopeJson(task);
  o["status"] = core::TaskStatusName(task.status);
  o["created_at"] = core::FormatRfc3339(task.created_at);
  o["updated_at"] = core::FormatRfc3339(task.updated_at);
  o["next_attempt_at"] = OptionalTime(task.next_attempt_at);
  o["attempts"] = task.attempts;
  o["last_error"] = OptionalJson(task.last_error);
  o["result"] = OptionalJson(task.result);
  o["deduplicated"] = task.deduplicated;
  return o;
}

boost::json::object AttemptJson(const core::Attempt& a) {
  boost::json::object o;
  o["attempt"] = a.attempt;
  o["worker_id"] = a.worker_id;
  o["started_at"] = core::FormatRfc3339(a.started_at);
  o["finished_at"] = OptionalTime(a.finished_at);
  if (a.outcome) {
    o["outcome"] = core::AttemptOutcomeName(*a.outcome);
  } else {
    o["outcome"] = nullptr;
  }
  o["error"] = OptionalJson(a.error);
  if (a.finished_at) {
    o["duration_ms"] = *a.finished_at - a.started_at;
  } else {
    o["duration_ms"] = nullptr;
  }
  if (a.http_status) o["http_status"] = *a.http_status;
  if (a.response_excerpt) o["response_excerpt"] = *a.response_excerpt;
  return o;
}

boost::json::object LeaseJson(const store::Lease& lease, boost::json::storage_ptr sp) {
  boost::json::object task = EnvelopeJson(lease.task, sp);
  task["attempt"] = lease.task.attempts;
  boost::json::object o(4, sp);
  o["lease_id"] = lease.lease_id;
  o["deadline"] = core::FormatRfc3339(lease.deadline);
  o["fencing_token"] = lease.fencing_token;
  o["task"] = std::move(task);
  return o;
}

boost::json::object SearchPageJson(const store::SearchPage& page) {
  boost::json::array tasks;
  tasks.reserve(page.tasks.size());
  for (const core::Task& t : page.tasks) tasks.push_back(TaskJson(t));
  boost::json::object o;
  o["tasks"] = std::move(tasks);
  if (page.next_cursor) {
    o["next_cursor"] = EncodeCursor(*page.next_cursor);
  } else {
    o["next_cursor"] = nullptr;
  }
  return o;
}

boost::json::object SchemaJson(const store::SchemaRecord& record) {
  boost::json::object o;
  o["task_type"] = record.task_type;
  o["version"] = record.version;
  o["schema"] = EmbeddedJson(record.schema);
  if (record.created_at > 0) o["created_at"] = core::FormatRfc3339(record.created_at);
  return o;
}

}  // namespace madeira::api
