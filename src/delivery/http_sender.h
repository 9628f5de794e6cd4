// Outbound HTTP for webhook deliveries: libcurl's multi interface driven by Boost.Asio on one
// io_context thread, so thousands of attempts share one thread and reuse connections.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "delivery/address_guard.h"
#include "delivery/http_response.h"

namespace madeira::delivery {

struct SenderOptions {
  AddressGuard guard;          // checked on every address a connection is opened to
  long max_connections = 256;  // connection cache of the multi handle (CURLMOPT_MAXCONNECTS)
  core::Millis connect_timeout_ms = 10'000;  // capped by each request's timeout
  size_t max_body_bytes = 64 * 1024;  // response body kept for the success check; rest dropped
};

struct HttpRequest {
  std::string url;
  std::string method = "POST";
  std::vector<std::pair<std::string, std::string>> headers;  // sent as given
  std::string body;
  core::Millis timeout_ms = 30'000;  // the whole attempt: connect, send, wait, read
};

class HttpSender {
 public:
  using Callback = std::function<void(HttpResponse)>;

  // Starts the I/O thread. Throws at start-up if libcurl cannot be initialised.
  explicit HttpSender(SenderOptions options);
  ~HttpSender();  // Stop()
  HttpSender(const HttpSender&) = delete;
  HttpSender& operator=(const HttpSender&) = delete;

  // Thread-safe. `done` runs exactly once, on the sender's I/O thread (keep it short; it must
  // not call Stop()). After Stop() it runs at once, on the caller's thread, with kAborted.
  void Send(HttpRequest request, Callback done);

  // Completes attempts still in flight with kAborted, closes connections, joins the thread.
  // Idempotent; call from any thread but the sender's own.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace madeira::delivery
