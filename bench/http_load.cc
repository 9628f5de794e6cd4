#include "http_load.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>
#include <stdexcept>

namespace madeira::bench {

namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// Long-polls answer within wait_ms (≤ 1 s here); anything slower than this is a hung server.
constexpr auto kRequestTimeout = std::chrono::seconds(30);

std::string HttpResponse::Describe() const {
  if (!error.empty()) return "transport error: " + error;
  return "HTTP " + std::to_string(status) + " " + body.substr(0, 300);
}

HttpConnection::HttpConnection(asio::any_io_executor ex, tcp::endpoint endpoint)
    : stream_(std::move(ex)), endpoint_(endpoint) {}

asio::awaitable<HttpResponse> HttpConnection::Post(std::string_view target, std::string body) {
  return Exchange(true, target, std::move(body));
}

asio::awaitable<HttpResponse> HttpConnection::Get(std::string_view target) {
  return Exchange(false, target, {});
}

asio::awaitable<HttpResponse> HttpConnection::Exchange(bool post, std::string_view target,
                                                       std::string body) {
  constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
  HttpResponse out;
  if (!connected_) {
    stream_.expires_after(kRequestTimeout);
    auto [ec] = co_await stream_.async_connect(endpoint_, kTuple);
    if (ec) {
      out.error = "connect: " + ec.message();
      co_return out;
    }
    // Small requests must leave at once; Nagle would add up to 40 ms to latency figures.
    stream_.socket().set_option(tcp::no_delay(true));
    connected_ = true;
  }
  http::request<http::string_body> req{post ? http::verb::post : http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (post) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
  }
  stream_.expires_after(kRequestTimeout);
  if (auto [ec, n] = co_await http::async_write(stream_, req, kTuple); ec) {
    out.error = "write: " + ec.message();
    stream_.close();
    connected_ = false;
    co_return out;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);  // a lease answer with 100 tasks is ~100 KB; headroom for more
  if (auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, kTuple); ec) {
    out.error = "read: " + ec.message();
    stream_.close();
    buffer_.clear();
    connected_ = false;
    co_return out;
  }
  http::response<http::string_body> res = parser.release();
  out.status = static_cast<int>(res.result_int());
  out.body = std::move(res.body());
  if (!res.keep_alive()) {
    stream_.close();
    buffer_.clear();
    connected_ = false;
  }
  co_return out;
}

HttpResponse FetchOnce(const tcp::endpoint& endpoint, std::string_view target,
                       std::chrono::milliseconds timeout) {
  asio::io_context io;
  HttpResponse out;
  out.error = "timed out";
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        HttpConnection conn(co_await asio::this_coro::executor, endpoint);
        out = co_await conn.Get(target);
      },
      asio::detached);
  io.run_for(timeout);
  return out;
}

RunOutcome RunCoroutines(std::vector<std::function<asio::awaitable<void>()>> coroutines,
                         std::chrono::steady_clock::duration limit) {
  asio::io_context io;
  RunOutcome out;
  size_t remaining = coroutines.size();
  // The guard bounds the run even when a coroutine never returns.
  asio::steady_timer guard(io, limit);
  guard.async_wait([&](boost::system::error_code ec) {
    if (!ec) {
      out.finished = false;
      io.stop();
    }
  });
  for (auto& make : coroutines) {
    asio::co_spawn(io, make(), [&](std::exception_ptr e) {
      if (e && out.error.empty()) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          out.error = ex.what();
        }
      }
      if (--remaining == 0) guard.cancel();
    });
  }
  if (remaining == 0) guard.cancel();
  io.run();
  return out;
}

}  // namespace madeira::bench
