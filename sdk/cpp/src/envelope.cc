// Local validation of the envelope (SPEC §2, docs/protocol.md), so a bad task is refused with a
// field name before a round-trip; what only the server can judge is left to it.
#include <algorithm>
#include <set>

#include "madeira/errors.h"
#include "madeira/task.h"
#include "rfc3339.h"

namespace madeira::sdk {
namespace {

[[noreturn]] void Invalid(const std::string& field, const std::string& code,
                          const std::string& message) {
  throw ValidationError(field, code, message);
}

// ^[a-z0-9][a-z0-9_.-]{0,127}$
bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool lower_or_digit = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!lower_or_digit && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
  }
  return true;
}

bool ValidTaskId(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
}

bool ValidTraceId(std::string_view s) {
  return !s.empty() && s.size() <= 128 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// Characters, not bytes: the server counts idempotency_key in code points.
size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Nesting of objects and arrays; the payload object itself is level 1.
int Depth(const boost::json::value& v) {
  int deepest = 0;
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) deepest = std::max(deepest, Depth(kv.value()));
    return deepest + 1;
  }
  if (v.is_array()) {
    for (const auto& item : v.get_array()) deepest = std::max(deepest, Depth(item));
    return deepest + 1;
  }
  return 0;
}

void CheckPayload(const boost::json::object& payload, const Limits& limits) {
  if (limits.max_payload_depth > 0 && Depth(payload) > limits.max_payload_depth) {
    Invalid("payload", "payload_too_deep",
            "payload nests deeper than " + std::to_string(limits.max_payload_depth) +
                " levels (the payload object itself is level 1)");
  }
  if (limits.max_payload_bytes > 0) {
    size_t bytes = boost::json::serialize(payload).size();
    if (bytes > static_cast<size_t>(limits.max_payload_bytes)) {
      Invalid("payload", "payload_too_large",
              "payload is " + std::to_string(bytes) + " bytes encoded, over " +
                  std::to_string(limits.max_payload_bytes));
    }
  }
}

}  // namespace

ValidationError::ValidationError(std::string field, std::string code, const std::string& message)
    : Error("madeira: invalid " + field + " (" + code + "): " + message),
      field_(std::move(field)),
      code_(std::move(code)) {}

ApiError::ApiError(int status, std::string code, std::string message, std::string field,
                   std::chrono::seconds retry_after)
    : Error("madeira: " + std::to_string(status) + " " + code +
            (field.empty() ? "" : " (field " + field + ")") + ": " + message),
      status_(status),
      code_(std::move(code)),
      message_(std::move(message)),
      field_(std::move(field)),
      retry_after_(retry_after) {}

std::string ScheduleTime::ToWire() const {
  if (const Time* at = std::get_if<Time>(&value_)) {
    auto s = internal::FormatTime(*at);
    if (!s) Invalid("schedule_time", "invalid_schedule_time", "year out of RFC 3339 range");
    return *s;
  }
  const auto& text = std::get<std::string>(value_);
  if (!internal::ParseTime(text)) {
    Invalid("schedule_time", "invalid_schedule_time",
            "schedule_time must be RFC 3339 with Z or an offset, got \"" + text + "\"");
  }
  return text;
}

void Task::Validate(const Limits& limits) const { (void)ToWire(limits); }

boost::json::object Task::ToWire(const Limits& limits) const {
  boost::json::object w;
  if (!task_id.empty()) {
    if (!ValidTaskId(task_id)) {
      Invalid("task_id", "invalid_field", "task_id must be 1-128 characters of [A-Za-z0-9._:-]");
    }
    w["task_id"] = task_id;
  }
  if (task_type.empty()) Invalid("task_type", "missing_field", "task_type is required");
  if (!ValidName(task_type)) {
    Invalid("task_type", "invalid_field", "task_type must match ^[a-z0-9][a-z0-9_.-]{0,127}$");
  }
  w["task_type"] = task_type;
  if (!queue.empty()) {
    if (!ValidName(queue)) {
      Invalid("queue", "invalid_field", "queue must match ^[a-z0-9][a-z0-9_.-]{0,127}$");
    }
    w["queue"] = queue;
  }
  if (payload_version == 0) {
    Invalid("payload_version", "missing_field", "payload_version is required (an integer >= 1)");
  }
  if (payload_version < 0) {
    Invalid("payload_version", "invalid_field", "payload_version must be an integer >= 1");
  }
  w["payload_version"] = payload_version;
  CheckPayload(payload, limits);
  w["payload"] = payload;
  if (schedule_time) w["schedule_time"] = schedule_time->ToWire();
  if (timeout) {
    if (timeout->count() < 100 || timeout->count() > 86'400'000) {
      Invalid("timeout_ms", "invalid_field", "timeout_ms must be an integer from 100 to 86400000");
    }
    w["timeout_ms"] = timeout->count();
  }
  if (max_retries) {
    if (*max_retries < 0 || *max_retries > 100) {
      Invalid("max_retries", "invalid_field", "max_retries must be an integer from 0 to 100");
    }
    w["max_retries"] = *max_retries;
  }
  if (priority) {
    if (*priority < 0 || *priority > 1000) {
      Invalid("priority", "invalid_field", "priority must be an integer from 0 to 1000");
    }
    w["priority"] = *priority;
  }
  if (!trace_id.empty()) {
    if (!ValidTraceId(trace_id)) {
      Invalid("trace_id", "invalid_field", "trace_id must be 1-128 visible ASCII characters");
    }
    w["trace_id"] = trace_id;
  }
  if (!idempotency_key.empty()) {
    const bool control = std::any_of(idempotency_key.begin(), idempotency_key.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (CodePoints(idempotency_key) > 200 || control) {
      Invalid("idempotency_key", "invalid_field",
              "idempotency_key must be 1-200 characters, none of them a control character");
    }
    w["idempotency_key"] = idempotency_key;
  }
  return w;
}

bool TaskInfo::Terminal() const {
  return status == "succeeded" || status == "dead" || status == "cancelled";
}

}  // namespace madeira::sdk
