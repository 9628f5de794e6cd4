// The routing table of SPEC §3: method + path pattern with {param} segments. Matching is
// separate from the handlers so it can be tested without an engine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/config.h"
#include "api/http_types.h"
#include "core/error.h"

namespace madeira::api {

enum class RouteId {
  kSubmit,
  kSubmitBatch,
  kGetTask,
  kTaskAttempts,
  kSearchTasks,
  kCancelTask,
  kReplayTask,
  kLease,
  kAckBatch,
  kAck,
  kFail,
  kExtend,
  kHeartbeat,
  kListDead,
  kReplayDead,
  kCancelDead,
  kListSchemas,
  kPutSchema,
  kGetSchema,
  kAcceptEvent,
  kGetEvent,
  kRedeliverEvent,
  kCreateEndpoint,
  kListEndpoints,
  kGetEndpoint,
  kPatchEndpoint,
  kDeleteEndpoint,
  kRotateEndpointSecret,
  kMetrics,
  kHealthz,
  kReadyz,
  kConsoleRedirect,
  kConsoleIndex,
  kConsoleFile,
};

// Who may call a route, as a bit set of scopes; admin may call everything.
using ScopeMask = uint8_t;
constexpr ScopeMask ScopeBit(Scope s) { return static_cast<ScopeMask>(1u << static_cast<int>(s)); }
inline constexpr ScopeMask kPublic = 0;  // no token needed (probes, metrics, console files)
inline constexpr ScopeMask kProducerOnly = ScopeBit(Scope::kProducer);
inline constexpr ScopeMask kWorkerOnly = ScopeBit(Scope::kWorker);
inline constexpr ScopeMask kAdminOnly = ScopeBit(Scope::kAdmin);

struct RouteSpec {
  RouteId id;
  std::string_view method;
  std::string_view pattern;  // also the `route` label of madeira_http_requests_total
  ScopeMask scopes;
};

// Every route the server answers, literal segments before {params} where both could match.
const std::vector<RouteSpec>& AllRoutes();

struct RouteMatch {
  enum class Kind { kFound, kNotFound, kMethodNotAllowed };
  Kind kind = Kind::kNotFound;
  const RouteSpec* route = nullptr;  // when found
  std::vector<std::string> params;   // {param} values in order, when found
  std::string allow;                 // "GET, POST" when the method is not allowed
};

// Splits a request target ("/v1/tasks/x?limit=5") into its percent-decoded path segments and
// appends its decoded query parameters to `query`. A malformed target is kInvalidField.
core::Result<std::vector<std::string>> ParseTarget(std::string_view target, QueryParams& query);

class Router {
 public:
  explicit Router(const std::vector<RouteSpec>& routes);
  // `segments` are the percent-decoded path segments ("/v1/tasks/x" -> v1, tasks, x).
  RouteMatch Match(std::string_view method, const std::vector<std::string>& segments) const;

 private:
  struct Entry {
    const RouteSpec* spec;
    std::vector<std::string> segments;  // "{...}" marks a parameter
  };
  std::vector<Entry> entries_;
};

}  // namespace madeira::api
