// The task envelope (SPEC §2) as a producer builds it, and tasks as the server reports them.
#ifndef MADEIRA_SDK_TASK_H_
#define MADEIRA_SDK_TASK_H_

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace madeira::sdk {

// A UTC instant with millisecond precision. std::chrono::sys_time is always zone-aware: it
// counts from the Unix epoch in UTC, so there is no "naive" value of this type.
using Time = std::chrono::sys_time<std::chrono::milliseconds>;

// When a task may first run. Either an instant (sent as "2025-09-11T04:45:00.000Z") or an
// RFC 3339 string that carries "Z" or a numeric offset; a string without one (a naive local
// time) is refused by Validate with ValidationError{field = "schedule_time"}, because the
// server could only guess its zone.
class ScheduleTime {
 public:
  ScheduleTime(Time at) : value_(at) {}  // NOLINT(google-explicit-constructor): reads naturally
  explicit ScheduleTime(std::string rfc3339) : value_(std::move(rfc3339)) {}

  // The wire form; throws ValidationError for a naive or malformed string.
  std::string ToWire() const;

 private:
  std::variant<Time, std::string> value_;
};

// Payload limits checked locally; they mirror the server's [limits] (defaults 5 and 64 KiB).
struct Limits {
  int max_payload_depth = 5;
  int max_payload_bytes = 64 * 1024;
};

// The envelope a producer submits. Empty strings and empty optionals mean "absent": the field
// is omitted on the wire (never sent as null) and the server applies its default.
struct Task {
  std::string task_id;                        // optional; the server makes a UUIDv7 when empty
  std::string task_type;                      // required: ^[a-z0-9][a-z0-9_.-]{0,127}$
  std::string queue;                          // optional ("default")
  int payload_version = 0;                    // required, >= 1
  boost::json::object payload;                // required (a JSON object; {} is fine)
  std::optional<ScheduleTime> schedule_time;  // absent = now
  std::optional<std::chrono::milliseconds> timeout;  // 100 ms … 24 h (default 30 s)
  std::optional<int> max_retries;                    // 0 … 100 (default 3)
  std::optional<int> priority;                       // 0 … 1000 (default 100), larger runs first
  std::string trace_id;                              // optional, 1–128 visible ASCII characters
  std::string idempotency_key;                       // optional, ≤ 200 characters

  // Checks the envelope against SPEC §2; throws ValidationError naming the field.
  void Validate(const Limits& limits = {}) const;
  // Validates and returns the JSON body of POST /v1/tasks.
  boost::json::object ToWire(const Limits& limits = {}) const;
};

// Reads an envelope in its wire form (the JSON body of POST /v1/tasks) with the server's
// strictness: unknown fields, null for an optional field, non-integer numbers and a
// schedule_time that is a number or lacks an offset are refused with ValidationError.
Task ParseTask(std::string_view json, const Limits& limits = {});

// The server's answer to one submitted task.
struct SubmitResult {
  std::string task_id;
  std::string status;
  bool duplicate = false;
};

// The error recorded for a failed attempt.
struct TaskError {
  std::string type;
  std::string message;
  std::string stack;
};

// A task as the server reports it (GET /v1/tasks/{id}, and the task inside a lease).
struct TaskInfo {
  std::string task_id;
  std::string task_type;
  std::string queue;
  int payload_version = 0;
  boost::json::value payload;
  Time schedule_time{};
  std::chrono::milliseconds timeout{0};
  int max_retries = 0;
  int retry_count = 0;
  int priority = 0;
  std::string trace_id;
  std::string idempotency_key;
  // Set by GET /v1/tasks/{id}.
  std::string status;
  int attempts = 0;
  std::optional<TaskError> last_error;
  boost::json::value result;  // null when none
  bool deduplicated = false;
  // Set in a lease: 1 for the first attempt.
  int attempt = 0;

  bool Terminal() const;
};

// One entry of a task's attempt log; outcome is empty while the attempt runs.
struct Attempt {
  int attempt = 0;
  std::string worker_id;
  Time started_at{};
  std::optional<Time> finished_at;
  std::string outcome;
  std::optional<TaskError> error;
};

}  // namespace madeira::sdk

#endif  // MADEIRA_SDK_TASK_H_
