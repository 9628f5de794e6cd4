#include "api/router.h"

#include <algorithm>
#include <boost/url/parse.hpp>

namespace madeira::api {

namespace {

constexpr ScopeMask kProducerOrWorker = kProducerOnly | kWorkerOnly;

bool IsParam(const std::string& segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

std::vector<std::string> SplitPattern(std::string_view pattern) {
  std::vector<std::string> out;
  size_t pos = 1;  // skip the leading '/'
  while (pos <= pattern.size()) {
    size_t next = pattern.find('/', pos);
    if (next == std::string_view::npos) next = pattern.size();
    out.emplace_back(pattern.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

}  // namespace

const std::vector<RouteSpec>& AllRoutes() {
  static const std::vector<RouteSpec> routes = {
      {RouteId::kSubmit, "POST", "/v1/tasks", kProducerOnly},
      {RouteId::kSearchTasks, "GET", "/v1/tasks", kProducerOnly},
      {RouteId::kSubmitBatch, "POST", "/v1/tasks/batch", kProducerOnly},
      {RouteId::kGetTask, "GET", "/v1/tasks/{id}", kProducerOnly},
      {RouteId::kTaskAttempts, "GET", "/v1/tasks/{id}/attempts", kProducerOnly},
      {RouteId::kCancelTask, "POST", "/v1/tasks/{id}/cancel", kProducerOnly},
      {RouteId::kReplayTask, "POST", "/v1/tasks/{id}/replay", kAdminOnly},
      {RouteId::kLease, "POST", "/v1/leases", kWorkerOnly},
      {RouteId::kAckBatch, "POST", "/v1/leases/ack", kWorkerOnly},
      {RouteId::kAck, "POST", "/v1/leases/{lease_id}/ack", kWorkerOnly},
      {RouteId::kFail, "POST", "/v1/leases/{lease_id}/fail", kWorkerOnly},
      {RouteId::kExtend, "POST", "/v1/leases/{lease_id}/extend", kWorkerOnly},
      {RouteId::kHeartbeat, "POST", "/v1/workers/heartbeat", kWorkerOnly},
      {RouteId::kListDead, "GET", "/v1/dead", kAdminOnly},
      {RouteId::kReplayDead, "POST", "/v1/dead/replay", kAdminOnly},
      {RouteId::kCancelDead, "POST", "/v1/dead/cancel", kAdminOnly},
      {RouteId::kListSchemas, "GET", "/v1/schemas", kProducerOrWorker},
      {RouteId::kPutSchema, "PUT", "/v1/schemas/{task_type}/{version}", kAdminOnly},
      {RouteId::kGetSchema, "GET", "/v1/schemas/{task_type}/{version}", kProducerOrWorker},
      // A source's HMAC over the raw body is the credential here, not a bearer token.
      {RouteId::kAcceptEvent, "POST", "/v1/events", kPublic},
      {RouteId::kGetEvent, "GET", "/v1/events/{event_id}", kProducerOnly},
      {RouteId::kRedeliverEvent, "POST", "/v1/events/{event_id}/redeliver", kAdminOnly},
      {RouteId::kCreateEndpoint, "POST", "/v1/endpoints", kAdminOnly},
      {RouteId::kListEndpoints, "GET", "/v1/endpoints", kAdminOnly},
      {RouteId::kGetEndpoint, "GET", "/v1/endpoints/{id}", kAdminOnly},
      {RouteId::kPatchEndpoint, "PATCH", "/v1/endpoints/{id}", kAdminOnly},
      {RouteId::kDeleteEndpoint, "DELETE", "/v1/endpoints/{id}", kAdminOnly},
      {RouteId::kRotateEndpointSecret, "POST", "/v1/endpoints/{id}/rotate", kAdminOnly},
      {RouteId::kMetrics, "GET", "/metrics", kPublic},
      {RouteId::kHealthz, "GET", "/healthz", kPublic},
      {RouteId::kReadyz, "GET", "/readyz", kPublic},
      // The console's files hold no data; the page's API calls carry its token.
      {RouteId::kConsoleRedirect, "GET", "/ui", kPublic},
      {RouteId::kConsoleIndex, "GET", "/ui/", kPublic},
      {RouteId::kConsoleFile, "GET", "/ui/{file}", kPublic},
  };
  return routes;
}

// Boost.URL, so percent-decoding and malformed targets are handled by a well-kept parser.
core::Result<std::vector<std::string>> ParseTarget(std::string_view target, QueryParams& query) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) {
    return core::MakeError(core::ErrorCode::kInvalidField, "malformed request target", "target");
  }
  std::vector<std::string> segments;
  for (auto segment : url->segments()) segments.emplace_back(segment);
  for (auto param : url->params()) query.emplace_back(param.key, param.value);
  return segments;
}

Router::Router(const std::vector<RouteSpec>& routes) {
  for (const RouteSpec& r : routes) entries_.push_back({&r, SplitPattern(r.pattern)});
}

RouteMatch Router::Match(std::string_view method, const std::vector<std::string>& segments) const {
  RouteMatch m;
  std::vector<std::string_view> allowed;
  for (const Entry& e : entries_) {
    if (e.segments.size() != segments.size()) continue;
    std::vector<std::string> params;
    bool ok = true;
    for (size_t i = 0; i < segments.size() && ok; ++i) {
      if (IsParam(e.segments[i])) {
        ok = !segments[i].empty();
        params.push_back(segments[i]);
      } else {
        ok = e.segments[i] == segments[i];
      }
    }
    if (!ok) continue;
    if (e.spec->method == method) {
      m.kind = RouteMatch::Kind::kFound;
      m.route = e.spec;
      m.params = std::move(params);
      return m;
    }
    if (std::find(allowed.begin(), allowed.end(), e.spec->method) == allowed.end()) {
      allowed.push_back(e.spec->method);
    }
  }
  if (allowed.empty()) return m;
  m.kind = RouteMatch::Kind::kMethodNotAllowed;
  for (std::string_view a : allowed) {
    if (!m.allow.empty()) m.allow += ", ";
    m.allow += a;
  }
  return m;
}

}  // namespace madeira::api
