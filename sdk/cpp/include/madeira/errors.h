// Error classes of the Madeira C++ client. Every error the library throws derives from
// madeira::sdk::Error; handlers throw PermanentError / TransientError to pick a retry tier.
#ifndef MADEIRA_SDK_ERRORS_H_
#define MADEIRA_SDK_ERRORS_H_

#include <chrono>
#include <stdexcept>
#include <string>

namespace madeira::sdk {

// Base of every error thrown by the client library itself.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An envelope refused locally, before anything was sent. code() is the code the server would
// answer with (missing_field, invalid_field, unknown_field, invalid_schedule_time,
// payload_too_deep, payload_too_large); field() names the field to blame.
class ValidationError : public Error {
 public:
  ValidationError(std::string field, std::string code, const std::string& message);
  const std::string& field() const { return field_; }
  const std::string& code() const { return code_; }

 private:
  std::string field_;
  std::string code_;
};

// A non-2xx answer of the server, surfaced unchanged: HTTP status, and the body's error code,
// message and field. Codes the body lacks become "http_<status>".
class ApiError : public Error {
 public:
  ApiError(int status, std::string code, std::string message, std::string field,
           std::chrono::seconds retry_after = std::chrono::seconds(0));
  int status() const { return status_; }
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }
  // The server's Retry-After (503 unavailable); zero if none.
  std::chrono::seconds retry_after() const { return retry_after_; }

 private:
  int status_;
  std::string code_;
  std::string message_;
  std::string field_;
  std::chrono::seconds retry_after_;
};

// The request never got an HTTP answer (connection refused, timeout, aborted by Close).
class TransportError : public Error {
 public:
  using Error::Error;
};

// Thrown by a handler: the task is failed with retry "never" and goes dead at once.
class PermanentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a handler: the task is failed with retry "fast" (re-queued at once).
class TransientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace madeira::sdk

#endif  // MADEIRA_SDK_ERRORS_H_
