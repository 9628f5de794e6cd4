#include "decode.h"

#include "rfc3339.h"

namespace madeira::sdk::internal {

std::string Str(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

int64_t Int(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  return 0;
}

std::optional<Time> TimeAt(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return ParseTime(v->get_string());
}

std::optional<TaskError> DecodeError(const boost::json::value* v) {
  if (v == nullptr || !v->is_object()) return std::nullopt;
  const auto& e = v->get_object();
  return TaskError{Str(e, "type"), Str(e, "message"), Str(e, "stack")};
}

TaskInfo DecodeTask(const boost::json::object& o) {
  TaskInfo t;
  t.task_id = Str(o, "task_id");
  t.task_type = Str(o, "task_type");
  t.queue = Str(o, "queue");
  t.payload_version = static_cast<int>(Int(o, "payload_version"));
  if (const auto* p = o.if_contains("payload")) t.payload = *p;
  t.schedule_time = TimeAt(o, "schedule_time").value_or(Time{});
  t.timeout = std::chrono::milliseconds(Int(o, "timeout_ms"));
  t.max_retries = static_cast<int>(Int(o, "max_retries"));
  t.retry_count = static_cast<int>(Int(o, "retry_count"));
  t.priority = static_cast<int>(Int(o, "priority"));
  t.trace_id = Str(o, "trace_id");
  t.idempotency_key = Str(o, "idempotency_key");
  t.status = Str(o, "status");
  t.attempts = static_cast<int>(Int(o, "attempts"));
  t.last_error = DecodeError(o.if_contains("last_error"));
  if (const auto* r = o.if_contains("result")) t.result = *r;
  if (const auto* d = o.if_contains("deduplicated"); d && d->is_bool())
    t.deduplicated = d->get_bool();
  t.attempt = static_cast<int>(Int(o, "attempt"));
  return t;
}

}  // namespace madeira::sdk::internal
