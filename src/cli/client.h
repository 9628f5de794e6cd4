// `madeira task ...` and `madeira dead ...`: thin HTTP clients of the API (SPEC §3), so the
// command line behaves exactly as any SDK would and never touches the store directly.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace madeira::cli {

// Exit codes shared by every client command.
inline constexpr int kExitOk = 0;        // the server answered 2xx
inline constexpr int kExitRejected = 1;  // the server answered 4xx/5xx
inline constexpr int kExitUsage = 2;     // bad arguments, or the server could not be reached

struct ClientOptions {
  std::string url = "http://127.0.0.1:8080";  // flag --url, env MADEIRA_URL
  std::string token;                          // flag --token, env MADEIRA_TOKEN; empty = none
};

struct SubmitArgs {
  std::optional<std::string> file;  // a whole envelope as JSON; excludes the fields below
  std::optional<std::string> task_type;
  std::optional<std::string> payload;  // JSON object text
  std::optional<std::string> queue;
  std::optional<std::string> delay;  // "30s": schedule_time = now + delay
  std::optional<std::string> at;     // RFC 3339, passed through for the server to judge
  std::optional<int> priority;
  std::optional<std::string> idempotency_key;
  std::optional<std::string> task_id;
  std::optional<int> payload_version;
};

// The envelope JSON a submit sends. Usage mistakes (bad JSON, --delay with --at) are errors.
core::Result<std::string> BuildSubmitBody(const SubmitArgs& args, core::Millis now);

struct DeadListArgs {
  std::optional<std::string> queue;
  std::optional<std::string> task_type;
  std::optional<int> limit;
};

// Which dead tasks a bulk replay/cancel touches: ids, or --all narrowed by queue/type.
struct DeadBulkArgs {
  std::vector<std::string> task_ids;
  bool all = false;
  std::optional<std::string> queue;
  std::optional<std::string> task_type;
};

// {"task_ids":[...]} or {"filter":{...}}; neither ids nor --all is a usage error.
core::Result<std::string> BuildDeadBulkBody(const DeadBulkArgs& args);

// Each runs one request, prints the server's JSON to stdout (errors to stderr) and returns
// the exit code.
int RunTaskSubmit(const ClientOptions& opts, const SubmitArgs& args);
int RunTaskGet(const ClientOptions& opts, const std::string& task_id);
int RunTaskCancel(const ClientOptions& opts, const std::string& task_id);
int RunDeadList(const ClientOptions& opts, const DeadListArgs& args);
int RunDeadReplay(const ClientOptions& opts, const DeadBulkArgs& args);
int RunDeadCancel(const ClientOptions& opts, const DeadBulkArgs& args);

}  // namespace madeira::cli
