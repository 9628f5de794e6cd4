// The HTTP/1.1 server of SPEC §3 on Boost.Beast: one coroutine per connection, keep-alive,
// strict limits, speaking to engine::Engine only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "api/config.h"
#include "core/error.h"
#include "core/metrics.h"
#include "delivery/webhook_service.h"
#include "engine/engine.h"

namespace madeira::api {

class HttpServer {
 public:
  // `webhooks` may be null: the event and endpoint routes then answer 503.
  HttpServer(boost::asio::io_context& io, engine::Engine& engine, core::Metrics& metrics,
             ApiConfig config, delivery::WebhookService* webhooks = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting; port 0 picks any free port (the answer tells which).
  core::Result<boost::asio::ip::tcp::endpoint> Listen(const std::string& host, uint16_t port);
  // Stops accepting and closes idle keep-alive connections; in-flight requests finish.
  void Stop();

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace madeira::api
