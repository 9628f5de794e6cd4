#include "api/error_table.h"

namespace madeira::api {

using core::ErrorCode;

unsigned HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidJson:
    case ErrorCode::kUnknownField:
    case ErrorCode::kMissingField:
    case ErrorCode::kInvalidField:
    case ErrorCode::kInvalidScheduleTime:
    case ErrorCode::kScheduleTooFar:
    // SPEC §2 makes an oversized payload a validation error of the envelope, not of the
    // transport; 413 is kept for bodies over the server limit.
    case ErrorCode::kPayloadTooLarge:
    case ErrorCode::kPayloadTooDeep:
    case ErrorCode::kSchemaViolation:
    case ErrorCode::kInvalidSchema:
    case ErrorCode::kBatchTooLarge:
      return 400;
    case ErrorCode::kUnauthorized:
    case ErrorCode::kBadSignature:
      return 401;
    case ErrorCode::kForbidden:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kMethodNotAllowed:
      return 405;
    case ErrorCode::kTaskIdConflict:
    case ErrorCode::kTaskRunning:
    case ErrorCode::kTaskTerminal:
    case ErrorCode::kTaskNotDead:
    case ErrorCode::kLeaseLost:
      return 409;
    case ErrorCode::kRequestTooLarge:
      return 413;
    case ErrorCode::kHeadersTooLarge:
      return 431;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

boost::json::object ErrorObject(const core::Error& error) {
  boost::json::object o;
  o["code"] = core::ErrorCodeName(error.code);
  if (error.code == ErrorCode::kInternal) {
    o["message"] = "internal error";
    return o;
  }
  o["message"] = error.message.empty() ? core::ErrorCodeName(error.code) : error.message;
  if (!error.field.empty()) o["field"] = error.field;
  return o;
}

Response ErrorResponse(const core::Error& error) {
  Response r = JsonResponse(HttpStatusFor(error.code), {{"error", ErrorObject(error)}});
  // Tells clients and load balancers the store outage is worth retrying shortly.
  if (r.status == 503) r.headers.emplace_back("Retry-After", "1");
  if (error.code == ErrorCode::kUnauthorized) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  if (r.status >= 500) r.log_detail = error.message;
  return r;
}

}  // namespace madeira::api
