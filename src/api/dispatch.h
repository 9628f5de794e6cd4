// From a parsed request to a response: route match (404/405), auth (401/403), the handler,
// the request metric, and a log line for every 5xx. Knows nothing of sockets.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string_view>

#include "api/auth.h"
#include "api/config.h"
#include "api/handlers.h"
#include "api/http_types.h"
#include "api/router.h"

namespace madeira::api {

class Dispatcher {
 public:
  // Without `webhooks` the event and endpoint routes answer 503 (a process not running them).
  Dispatcher(engine::Engine& engine, core::Metrics& metrics, const ApiConfig& config,
             delivery::WebhookService* webhooks = nullptr);

  boost::asio::awaitable<Response> Handle(Request request);

  // Counts a request answered before routing (413, 431, malformed HTTP).
  void Record(std::string_view route, unsigned status);

 private:
  RouteContext ctx_;
  Router router_;
  Authenticator auth_;
};

// Declares the API's own metric family so /metrics shows it from the start; the task families
// are the engine's (engine/engine_metrics.h).
void DescribeHttpMetrics(core::Metrics& metrics);

}  // namespace madeira::api
