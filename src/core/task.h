// The task as Madeira keeps it: the envelope a producer sent plus the server-owned state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"

namespace madeira::core {

enum class TaskStatus { kScheduled, kPending, kRunning, kRetrying, kSucceeded, kDead, kCancelled };

std::string_view TaskStatusName(TaskStatus s);
std::optional<TaskStatus> ParseTaskStatus(std::string_view name);
inline bool IsTerminal(TaskStatus s) {
  return s == TaskStatus::kSucceeded || s == TaskStatus::kCancelled;
}

inline constexpr int kDefaultPriority = 100;
inline constexpr int kDefaultMaxRetries = 3;
inline constexpr Millis kDefaultTimeoutMs = 30'000;

// A validated envelope, ready to store. Every field is filled (defaults applied, ids made).
struct TaskSpec {
  std::string task_id;
  std::string task_type;
  std::string queue = "default";
  int payload_version = 1;
  std::string payload;       // the payload object, serialised compactly
  Millis schedule_time = 0;  // when it becomes due (submit time when absent or past)
  Millis timeout_ms = kDefaultTimeoutMs;
  int max_retries = kDefaultMaxRetries;
  int priority = kDefaultPriority;
  std::string trace_id;
  std::optional<std::string> idempotency_key;
  // Hash of what the producer sent (server-made fields excluded), for duplicate-vs-conflict.
  std::string content_hash;
  // task_id was made by this server (a fresh UUIDv7), not sent: no earlier task holds it.
  bool id_made_here = false;
  // The name of the API token that submitted it ("" with auth off, or made by Madeira itself):
  // a producer-only token reads and cancels only the tasks of its name. Not part of the content.
  std::string owner;

  bool operator==(const TaskSpec&) const = default;
};

// A task as read back: the spec plus its state.
struct Task {
  TaskSpec spec;
  TaskStatus status = TaskStatus::kPending;
  int retry_count = 0;
  int attempts = 0;  // attempts started so far
  Millis created_at = 0;
  Millis updated_at = 0;
  std::optional<Millis> next_attempt_at;  // due time while scheduled/pending/retrying
  std::optional<std::string> last_error;  // JSON object {"type","message","stack"?}
  std::optional<std::string> result;      // JSON value given with the ack
  bool deduplicated = false;              // completed by idempotency_key, never ran
  int fast_retries_used = 0;              // tier-1 retries taken so far
  bool in_fast_retry = false;             // re-queued by a fast retry and not yet finished
  int64_t seq = 0;                        // store-assigned submit order (cursor paging)

  bool operator==(const Task&) const = default;
};

enum class AttemptOutcome { kSucceeded, kFailed, kLeaseExpired, kCancelled };
std::string_view AttemptOutcomeName(AttemptOutcome o);

struct Attempt {
  int attempt = 0;  // 1-based
  std::string worker_id;
  Millis started_at = 0;
  std::optional<Millis> finished_at;
  std::optional<AttemptOutcome> outcome;  // empty while running
  std::optional<std::string> error;       // JSON object
  std::optional<int> http_status;         // webhook deliveries
  std::optional<std::string> response_excerpt;
};

}  // namespace madeira::core
