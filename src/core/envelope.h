// The task envelope of SPEC §2: strict parsing and validation of what a producer sends.
#pragma once

#include <boost/json/value.hpp>
#include <string_view>

#include "core/clock.h"
#include "core/error.h"
#include "core/random.h"
#include "core/task.h"

namespace madeira::core {

struct EnvelopeLimits {
  size_t max_payload_bytes = 65536;
  int max_depth = 5;  // the payload object itself counts as 1
  Millis max_delay = 90LL * 24 * 3600 * 1000;
};

// Request bodies are parsed with this nesting bound so a hostile body cannot blow the stack.
inline constexpr int kMaxJsonDepth = 64;

// Parses JSON text with kMaxJsonDepth; malformed text is kInvalidJson. `storage` (e.g. an arena
// for a request body's short-lived DOM) is where the value allocates; default: the heap.
Result<boost::json::value> ParseJson(std::string_view text, boost::json::storage_ptr storage = {});

// Validates one envelope (SPEC §2) and fills defaults: task_id (UUIDv7) and trace_id when
// absent, schedule_time = now when absent or past. Does not check schemas (the engine does).
Result<TaskSpec> ParseEnvelope(const boost::json::value& envelope, const EnvelopeLimits& limits,
                               Millis now, Random& random);

// Serialises a JSON value with object keys sorted, at every depth: equal content, equal text.
std::string CanonicalJson(const boost::json::value& v);

// Nesting depth of a value: a scalar is 0, {} is 1, {"a":{}} is 2.
int JsonDepth(const boost::json::value& v);

// The rules shared by task_type and queue: ^[a-z0-9][a-z0-9_.-]{0,127}$
bool IsValidName(std::string_view s);
// A queue a search or dead-letter filter may name: a valid name, or a built-in webhook queue
// "webhook:{endpoint_id}" (not submittable, but its tasks are listed and replayed like any).
bool IsFilterQueueName(std::string_view s);
// task_id: 1-128 chars of [A-Za-z0-9._:-]
bool IsValidTaskId(std::string_view s);
// trace_id: 1-128 visible ASCII characters (it travels in log lines and the X-Trace-Id header).
bool IsValidTraceId(std::string_view s);
// True when `s` holds a control character (U+0000-U+001F, U+007F). Free-text keys and ids
// (idempotency_key, worker_id, event ids) refuse them: NUL fits no PostgreSQL text column, so
// such a record could never reach redis-pg's PostgreSQL, and the others break log lines.
bool HasControlCharacter(std::string_view s);

}  // namespace madeira::core
