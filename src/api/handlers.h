// The route handlers, grouped by resource in *_routes.cc. Each decodes its request, calls the
// engine, and answers; every error answer goes through error_table.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/http_types.h"
#include "core/metrics.h"
#include "delivery/webhook_service.h"
#include "engine/engine.h"

namespace madeira::api {

struct RouteContext {
  engine::Engine& engine;
  core::Metrics& metrics;
  delivery::WebhookService* webhooks;  // null when this process runs no webhooks
};

using Awaitable = boost::asio::awaitable<Response>;
using Handler = Awaitable (*)(RouteContext& ctx, const Request& req);

// tasks_routes.cc
Awaitable HandleSubmit(RouteContext& ctx, const Request& req);
Awaitable HandleSubmitBatch(RouteContext& ctx, const Request& req);
Awaitable HandleGetTask(RouteContext& ctx, const Request& req);
Awaitable HandleTaskAttempts(RouteContext& ctx, const Request& req);
Awaitable HandleSearchTasks(RouteContext& ctx, const Request& req);
Awaitable HandleCancelTask(RouteContext& ctx, const Request& req);

// lease_routes.cc
Awaitable HandleLease(RouteContext& ctx, const Request& req);
Awaitable HandleAck(RouteContext& ctx, const Request& req);
Awaitable HandleAckBatch(RouteContext& ctx, const Request& req);
Awaitable HandleFail(RouteContext& ctx, const Request& req);
Awaitable HandleExtend(RouteContext& ctx, const Request& req);
Awaitable HandleHeartbeat(RouteContext& ctx, const Request& req);

// dead_routes.cc
Awaitable HandleListDead(RouteContext& ctx, const Request& req);
Awaitable HandleReplayTask(RouteContext& ctx, const Request& req);
Awaitable HandleReplayDead(RouteContext& ctx, const Request& req);
Awaitable HandleCancelDead(RouteContext& ctx, const Request& req);

// schema_routes.cc
Awaitable HandleListSchemas(RouteContext& ctx, const Request& req);
Awaitable HandlePutSchema(RouteContext& ctx, const Request& req);
Awaitable HandleGetSchema(RouteContext& ctx, const Request& req);

// event_routes.cc
Awaitable HandleAcceptEvent(RouteContext& ctx, const Request& req);
Awaitable HandleGetEvent(RouteContext& ctx, const Request& req);
Awaitable HandleRedeliverEvent(RouteContext& ctx, const Request& req);

// endpoint_routes.cc
Awaitable HandleCreateEndpoint(RouteContext& ctx, const Request& req);
Awaitable HandleListEndpoints(RouteContext& ctx, const Request& req);
Awaitable HandleGetEndpoint(RouteContext& ctx, const Request& req);
Awaitable HandlePatchEndpoint(RouteContext& ctx, const Request& req);
Awaitable HandleDeleteEndpoint(RouteContext& ctx, const Request& req);
Awaitable HandleRotateEndpointSecret(RouteContext& ctx, const Request& req);

// ops_routes.cc
Awaitable HandleMetrics(RouteContext& ctx, const Request& req);
Awaitable HandleHealthz(RouteContext& ctx, const Request& req);
Awaitable HandleReadyz(RouteContext& ctx, const Request& req);

// console_routes.cc
Awaitable HandleConsoleRedirect(RouteContext& ctx, const Request& req);
Awaitable HandleConsoleIndex(RouteContext& ctx, const Request& req);
Awaitable HandleConsoleFile(RouteContext& ctx, const Request& req);

}  // namespace madeira::api
