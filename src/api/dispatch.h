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
  Dispatcher(engine::Engine& engine, core::Metrics& metrics, const ApiConfig& config);

  boost::asio::awaitable<Response> Handle(Request request);

  // Counts a request answered before routing (413, 431, malformed HTTP).
  void Record(std::string_view route, unsigned status);

 private:
  RouteContext ctx_;
  Router router_;
  Authenticator auth_;
};

// Declares the SPEC §3 Operations metric families so /metrics shows them from the start.
void DescribeMetrics(core::Metrics& metrics);

}  // namespace madeira::api
