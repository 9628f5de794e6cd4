#include "core/error.h"

#include <stdexcept>

namespace madeira::core {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidJson:
      return "invalid_json";
    case ErrorCode::kUnknownField:
      return "unknown_field";
    case ErrorCode::kMissingField:
      return "missing_field";
    case ErrorCode::kInvalidField:
      return "invalid_field";
    case ErrorCode::kInvalidScheduleTime:
      return "invalid_schedule_time";
    case ErrorCode::kScheduleTooFar:
      return "schedule_too_far";
    case ErrorCode::kPayloadTooLarge:
      return "payload_too_large";
    case ErrorCode::kPayloadTooDeep:
      return "payload_too_deep";
    case ErrorCode::kSchemaViolation:
      return "schema_violation";
    case ErrorCode::kInvalidSchema:
      return "invalid_schema";
    case ErrorCode::kBatchTooLarge:
      return "batch_too_large";
    case ErrorCode::kTaskIdConflict:
      return "task_id_conflict";
    case ErrorCode::kTaskRunning:
      return "task_running";
    case ErrorCode::kTaskTerminal:
      return "task_terminal";
    case ErrorCode::kTaskNotDead:
      return "task_not_dead";
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kMethodNotAllowed:
      return "method_not_allowed";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kForbidden:
      return "forbidden";
    case ErrorCode::kBadSignature:
      return "bad_signature";
    case ErrorCode::kRequestTooLarge:
      return "request_too_large";
    case ErrorCode::kHeadersTooLarge:
      return "headers_too_large";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

void throw_exception_from_error(const Error& e, const boost::source_location&) {
  throw std::logic_error("result holds an error: " + std::string(ErrorCodeName(e.code)) + ": " +
                         e.message);
}

}  // namespace madeira::core
