#include "api/dispatch.h"

#include <exception>
#include <string>

#include "api/error_table.h"
#include "core/log.h"

namespace madeira::api {

using core::ErrorCode;
using core::MakeError;

namespace {

constexpr std::string_view kUnmatchedRoute = "unmatched";

Handler HandlerFor(RouteId id) {
  switch (id) {
    case RouteId::kSubmit:
      return &HandleSubmit;
    case RouteId::kSubmitBatch:
      return &HandleSubmitBatch;
    case RouteId::kGetTask:
      return &HandleGetTask;
    case RouteId::kTaskAttempts:
      return &HandleTaskAttempts;
    case RouteId::kSearchTasks:
      return &HandleSearchTasks;
    case RouteId::kCancelTask:
      return &HandleCancelTask;
    case RouteId::kReplayTask:
      return &HandleReplayTask;
    case RouteId::kLease:
      return &HandleLease;
    case RouteId::kAckBatch:
      return &HandleAckBatch;
    case RouteId::kAck:
      return &HandleAck;
    case RouteId::kFail:
      return &HandleFail;
    case RouteId::kExtend:
      return &HandleExtend;
    case RouteId::kHeartbeat:
      return &HandleHeartbeat;
    case RouteId::kListDead:
      return &HandleListDead;
    case RouteId::kReplayDead:
      return &HandleReplayDead;
    case RouteId::kCancelDead:
      return &HandleCancelDead;
    case RouteId::kListSchemas:
      return &HandleListSchemas;
    case RouteId::kPutSchema:
      return &HandlePutSchema;
    case RouteId::kGetSchema:
      return &HandleGetSchema;
    case RouteId::kAcceptEvent:
      return &HandleAcceptEvent;
    case RouteId::kGetEvent:
      return &HandleGetEvent;
    case RouteId::kRedeliverEvent:
      return &HandleRedeliverEvent;
    case RouteId::kCreateEndpoint:
      return &HandleCreateEndpoint;
    case RouteId::kListEndpoints:
      return &HandleListEndpoints;
    case RouteId::kGetEndpoint:
      return &HandleGetEndpoint;
    case RouteId::kPatchEndpoint:
      return &HandlePatchEndpoint;
    case RouteId::kDeleteEndpoint:
      return &HandleDeleteEndpoint;
    case RouteId::kRotateEndpointSecret:
      return &HandleRotateEndpointSecret;
    case RouteId::kMetrics:
      return &HandleMetrics;
    case RouteId::kHealthz:
      return &HandleHealthz;
    case RouteId::kReadyz:
      return &HandleReadyz;
    case RouteId::kConsoleRedirect:
      return &HandleConsoleRedirect;
    case RouteId::kConsoleIndex:
      return &HandleConsoleIndex;
    case RouteId::kConsoleFile:
      return &HandleConsoleFile;
  }
  return nullptr;
}

}  // namespace

void DescribeHttpMetrics(core::Metrics& m) {
  m.Describe("madeira_http_requests_total", "counter", "HTTP requests by route and status.");
}

Dispatcher::Dispatcher(engine::Engine& engine, core::Metrics& metrics, const ApiConfig& config,
                       delivery::WebhookService* webhooks)
    : ctx_{engine, metrics, webhooks}, router_(AllRoutes()), auth_(config.tokens) {
  DescribeHttpMetrics(metrics);
}

void Dispatcher::Record(std::string_view route, unsigned status) {
  ctx_.metrics.Inc("madeira_http_requests_total",
                   {{"route", std::string(route)}, {"code", std::to_string(status)}});
}

boost::asio::awaitable<Response> Dispatcher::Handle(Request request) {
  std::string_view route_label = kUnmatchedRoute;
  Response response;
  auto segments = ParseTarget(request.target, request.query);
  if (!segments) {
    response = ErrorResponse(segments.error());
  } else {
    RouteMatch match = router_.Match(request.method, *segments);
    if (match.kind == RouteMatch::Kind::kNotFound) {
      response = ErrorResponse(MakeError(ErrorCode::kNotFound, "no such route"));
    } else if (match.kind == RouteMatch::Kind::kMethodNotAllowed) {
      response = ErrorResponse(
          MakeError(ErrorCode::kMethodNotAllowed, request.method + " is not allowed here"));
      response.headers.emplace_back("Allow", match.allow);
    } else {
      route_label = match.route->pattern;
      request.params = std::move(match.params);
      if (auto caller = auth_.Check(request.authorization, match.route->scopes); !caller) {
        response = ErrorResponse(caller.error());
      } else {
        request.caller = std::move(*caller);
        try {
          response = co_await HandlerFor(match.route->id)(ctx_, request);
        } catch (const std::exception& e) {
          response = ErrorResponse(MakeError(ErrorCode::kInternal, e.what()));
        }
      }
    }
  }
  Record(route_label, response.status);
  if (response.status >= 500) {
    core::Log(core::LogLevel::kError, "request failed",
              {{"method", request.method},
               {"route", route_label},
               {"status", std::to_string(response.status)},
               {"detail", response.log_detail}});
  }
  co_return response;
}

}  // namespace madeira::api
