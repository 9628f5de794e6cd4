// Errors a user can cause, as values. One table (api/error_table) maps them to HTTP status.
#pragma once

#include <boost/system/result.hpp>
#include <string>
#include <string_view>

namespace madeira::core {

enum class ErrorCode {
  kInvalidJson,          // body is not JSON, or not the JSON shape the route takes
  kUnknownField,         // a field the route does not know
  kMissingField,         // a required field is absent
  kInvalidField,         // wrong type, pattern or range
  kInvalidScheduleTime,  // schedule_time is not RFC 3339 with an offset
  kScheduleTooFar,       // schedule_time beyond limits.max_delay
  kPayloadTooLarge,      // payload over limits.max_payload_bytes
  kPayloadTooDeep,       // payload nesting over limits.max_depth
  kSchemaViolation,      // payload fails the registered JSON Schema
  kInvalidSchema,        // a schema that is not a valid draft-7 schema
  kBatchTooLarge,        // more items than a batch route takes
  kTaskIdConflict,       // same task_id, different content
  kTaskRunning,          // cancel of a running task
  kTaskTerminal,         // cancel of a succeeded/cancelled task
  kTaskNotDead,          // replay of a task that is not dead
  kLeaseLost,            // lease expired or superseded (fencing)
  kNotFound,             // no such task, schema, lease or route
  kMethodNotAllowed,
  kUnauthorized,     // missing or unknown bearer token
  kForbidden,        // token lacks the scope
  kBadSignature,     // event signature or timestamp rejected
  kRequestTooLarge,  // body over the server limit (413, before parsing)
  kHeadersTooLarge,  // header block over 16 KiB (431)
  kUnavailable,      // store not reachable (503)
  kInternal,         // a bug; logged, never detailed to the client
};

// The wire name of a code, e.g. "task_id_conflict".
std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string message;
  std::string field;  // empty unless one field is to blame
};

inline Error MakeError(ErrorCode code, std::string message, std::string field = {}) {
  return Error{code, std::move(message), std::move(field)};
}

template <typename T>
using Result = boost::system::result<T, Error>;

// boost::system::result calls this when value() is taken from an error: a broken invariant.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

}  // namespace madeira::core
