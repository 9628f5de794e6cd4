// ParseTask: the wire form of an envelope read with the server's strictness, so that envelopes
// arriving as JSON (and the shared vectors) are judged exactly as the server would judge them.
#include <limits>
#include <set>

#include "madeira/errors.h"
#include "madeira/task.h"

namespace madeira::sdk {
namespace {

const std::set<std::string, std::less<>> kFields = {
    "task_id",    "task_type",   "queue",       "payload_version", "payload",  "schedule_time",
    "timeout_ms", "max_retries", "retry_count", "priority",        "trace_id", "idempotency_key"};

[[noreturn]] void Invalid(const std::string& field, const std::string& code,
                          const std::string& message) {
  throw ValidationError(field, code, message);
}

// Present strings must be non-empty strings (null is not "absent" on the wire).
std::string OptString(const boost::json::object& obj, const char* field) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return {};
  if (!v->is_string()) Invalid(field, "invalid_field", std::string(field) + " must be a string");
  if (v->get_string().empty()) {
    Invalid(field, "invalid_field", std::string(field) + " must not be empty");
  }
  return std::string(v->get_string());
}

// Only JSON integer literals count: 3.0, 3e0 and "3" arrive as doubles or strings.
std::optional<int64_t> OptInt(const boost::json::object& obj, const char* field, int64_t lo,
                              int64_t hi) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::nullopt;
  bool in_range = v->is_int64() && v->get_int64() >= lo && v->get_int64() <= hi;
  if (!in_range) {
    Invalid(field, "invalid_field",
            std::string(field) + " must be an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi));
  }
  return v->get_int64();
}

}  // namespace

Task ParseTask(std::string_view json, const Limits& limits) {
  boost::system::error_code ec;
  auto parsed = boost::json::parse(json, ec);
  if (ec || !parsed.is_object()) Invalid("", "invalid_json", "the envelope must be a JSON object");
  const auto& obj = parsed.get_object();
  // Sorted, so the field blamed does not depend on the order of the keys in the text.
  std::set<std::string> keys;
  for (const auto& kv : obj) keys.emplace(kv.key());
  for (const auto& k : keys) {
    if (!kFields.contains(k)) Invalid(k, "unknown_field", "unknown field \"" + k + "\"");
  }
  Task t;
  t.task_id = OptString(obj, "task_id");
  if (!obj.contains("task_type")) Invalid("task_type", "missing_field", "task_type is required");
  t.task_type = OptString(obj, "task_type");
  t.queue = OptString(obj, "queue");
  if (!obj.contains("payload_version")) {
    Invalid("payload_version", "missing_field", "payload_version is required");
  }
  t.payload_version =
      static_cast<int>(*OptInt(obj, "payload_version", 1, std::numeric_limits<int32_t>::max()));
  const auto* payload = obj.if_contains("payload");
  if (payload == nullptr) Invalid("payload", "missing_field", "payload is required");
  if (!payload->is_object()) Invalid("payload", "invalid_field", "payload must be a JSON object");
  t.payload = payload->get_object();
  if (const auto* st = obj.if_contains("schedule_time")) {
    if (!st->is_string()) {
      Invalid("schedule_time", "invalid_schedule_time",
              "schedule_time must be an RFC 3339 string with a zone offset, not " +
                  boost::json::serialize(*st));
    }
    t.schedule_time = ScheduleTime(std::string(st->get_string()));
  }
  if (auto n = OptInt(obj, "timeout_ms", 100, 86'400'000))
    t.timeout = std::chrono::milliseconds(*n);
  if (auto n = OptInt(obj, "max_retries", 0, 100)) t.max_retries = static_cast<int>(*n);
  (void)OptInt(obj, "retry_count", 0, 0);  // server-owned: a client may send only 0
  if (auto n = OptInt(obj, "priority", 0, 1000)) t.priority = static_cast<int>(*n);
  t.trace_id = OptString(obj, "trace_id");
  t.idempotency_key = OptString(obj, "idempotency_key");
  // task_id "" is refused above (OptString), so an empty one here really is absent.
  t.Validate(limits);
  return t;
}

}  // namespace madeira::sdk
