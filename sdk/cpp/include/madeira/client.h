// The producer client: submit, get, cancel. One Client is shared by the producers and workers
// of a process; it is safe for concurrent use and reuses keep-alive connections.
#ifndef MADEIRA_SDK_CLIENT_H_
#define MADEIRA_SDK_CLIENT_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "madeira/errors.h"
#include "madeira/task.h"

namespace madeira::sdk {

inline constexpr std::string_view kSdkVersion = "0.1.0";

namespace internal {
class Transport;
}

struct ClientOptions {
  std::string token;  // sent as "Authorization: Bearer TOKEN" when not empty
  Limits limits;      // set when the server's [limits] differ from the defaults
  std::chrono::milliseconds request_timeout{30000};
};

// One item of SubmitBatch: the server's answer, or why it was refused — a ValidationError
// (refused locally, not sent) or an ApiError (the server's per-item error).
struct BatchResult {
  std::optional<SubmitResult> result;
  std::variant<std::monostate, ValidationError, ApiError> error;
  bool ok() const { return result.has_value(); }
};

class Client {
 public:
  // base_url like "http://127.0.0.1:8080"; throws Error when it is not http(s)://host[:port].
  explicit Client(std::string base_url, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Validates locally (ValidationError) and submits (POST /v1/tasks); a duplicate (same
  // task_id, same content) is answered with duplicate set. Server refusals throw ApiError.
  SubmitResult Submit(const Task& task);
  // POST /v1/tasks/batch in requests of up to 1000; results[i] belongs to tasks[i], each judged
  // alone. Throws only when a whole request failed.
  std::vector<BatchResult> SubmitBatch(const std::vector<Task>& tasks);
  TaskInfo Get(const std::string& task_id);
  std::vector<Attempt> Attempts(const std::string& task_id);
  // A running task is refused with 409 task_running, a finished one with 409 task_terminal.
  TaskInfo Cancel(const std::string& task_id);

  const Limits& limits() const { return options_.limits; }
  internal::Transport& transport() { return *transport_; }

 private:
  ClientOptions options_;
  std::unique_ptr<internal::Transport> transport_;
};

}  // namespace madeira::sdk

#endif  // MADEIRA_SDK_CLIENT_H_
