// A minimal keep-alive HTTP/1.1 client for load generation against a loopback server.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace madeira::bench {

namespace asio = boost::asio;

struct HttpResponse {
  int status = 0;  // 0 when the exchange failed at the transport level
  std::string body;
  std::string error;  // transport error text; empty on success

  bool Ok() const { return error.empty() && status >= 200 && status < 300; }
  // One line for error reports: the status and the start of the body, or the transport error.
  std::string Describe() const;
};

// One keep-alive connection. One coroutine uses it at a time; it reconnects after a failure.
class HttpConnection {
 public:
  HttpConnection(asio::any_io_executor ex, asio::ip::tcp::endpoint endpoint);

  asio::awaitable<HttpResponse> Post(std::string_view target, std::string body);
  asio::awaitable<HttpResponse> Get(std::string_view target);

 private:
  asio::awaitable<HttpResponse> Exchange(bool post, std::string_view target, std::string body);

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  asio::ip::tcp::endpoint endpoint_;
  bool connected_ = false;
};

// One request on a fresh connection, blocking; for probes such as /readyz, not for load.
HttpResponse FetchOnce(const asio::ip::tcp::endpoint& endpoint, std::string_view target,
                       std::chrono::milliseconds timeout);

struct RunOutcome {
  bool finished = true;  // false when the time limit stopped coroutines still running
  std::string error;     // the first exception a coroutine threw, if any
};

// Runs the coroutines on one fresh io_context on this thread until all returned or `limit`
// passed. One client thread leaves the other core to the server, and keeps counters plain.
// The io_context is destroyed before returning, so coroutines may capture the caller's locals.
RunOutcome RunCoroutines(std::vector<std::function<asio::awaitable<void>()>> coroutines,
                         std::chrono::steady_clock::duration limit);

}  // namespace madeira::bench
