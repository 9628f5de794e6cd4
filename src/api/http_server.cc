// The only translation unit with Beast: sockets, HTTP parsing and limits, keep-alive, and
// graceful stop. Everything after parsing is Dispatcher's.
#include "api/http_server.h"

#include <array>
#include <boost/algorithm/string/case_conv.hpp>
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <map>
#include <mutex>

#include "api/dispatch.h"
#include "api/error_table.h"
#include "core/log.h"

namespace madeira::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view kUnmatchedRoute = "unmatched";

// Maps a failed read to the error answered before closing; empty means just close (the peer
// left, timed out, or the server is stopping).
std::optional<core::Error> ReadFailure(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit) {
    return core::MakeError(core::ErrorCode::kHeadersTooLarge, "request headers too large");
  }
  if (ec == http::error::body_limit) {
    return core::MakeError(core::ErrorCode::kRequestTooLarge, "request body too large");
  }
  const auto& http_category = http::make_error_code(http::error::end_of_stream).category();
  if (ec != http::error::end_of_stream && ec.category() == http_category) {
    return core::MakeError(core::ErrorCode::kInvalidField,
                           "malformed HTTP request: " + ec.message());
  }
  return std::nullopt;
}

// Parses what the header's read already buffered of the body, as http::async_read would first
// do. A body that came with its header (nearly every request) is then complete without a second
// asynchronous operation, whose completion Beast posts through the scheduler when no I/O was done.
void ParseBuffered(http::request_parser<http::string_body>& parser, beast::flat_buffer& buffer,
                   boost::system::error_code& ec) {
  if (buffer.size() == 0) return;
  parser.eager(true);
  buffer.consume(parser.put(buffer.data(), ec));
  if (ec == http::error::need_more) ec = {};
}

}  // namespace

class HttpServer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, engine::Engine& engine, core::Metrics& metrics, ApiConfig config,
       delivery::WebhookService* webhooks)
      : io_(io),
        config_(std::move(config)),
        dispatcher_(engine, metrics, config_, webhooks),
        acceptor_(asio::make_strand(io)) {}

  core::Result<tcp::endpoint> Listen(const std::string& host, uint16_t port);
  void Stop();

 private:
  using Strand = asio::strand<asio::io_context::executor_type>;
  using Clock = std::chrono::steady_clock;

  // Touched only on the connection's strand. Read/write timeouts come from a watchdog timer
  // rather than beast::basic_stream's own: with Boost 1.81, basic_stream's timeout handler
  // released the connection strand twice (a heap-use-after-free that ASan showed every few
  // dozen requests).
  struct Connection {
    explicit Connection(const Strand& strand) : socket(strand), watchdog(strand) {}
    asio::basic_stream_socket<tcp, Strand> socket;
    asio::basic_waitable_timer<Clock, asio::wait_traits<Clock>, Strand> watchdog;
    Clock::time_point deadline = Clock::time_point::max();
    bool idle = true;  // waiting for the next request, so Stop may close it

    // The socket is closed if the current read or write is not done by then.
    void ArmDeadline(std::chrono::milliseconds timeout) {
      deadline = Clock::now() + timeout;
      if (watchdog.expiry() > deadline) watchdog.cancel();  // the watchdog re-reads deadline
    }
    void DisarmDeadline() { deadline = Clock::time_point::max(); }
  };

  static asio::awaitable<void> Watchdog(std::shared_ptr<Connection> conn);
  // Half-closes and drains what the client still sends, so the answer written just before
  // (413, 431, 400) is not discarded by a TCP reset.
  static asio::awaitable<void> LingeringClose(Connection& conn);
  asio::awaitable<void> Accept(std::shared_ptr<Impl> self);
  asio::awaitable<void> Serve(std::shared_ptr<Impl> self, std::shared_ptr<Connection> conn);
  asio::awaitable<bool> Write(Connection& conn, Response response, unsigned version, bool keep);

  asio::io_context& io_;
  const ApiConfig config_;
  Dispatcher dispatcher_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<Connection*, std::weak_ptr<Connection>> connections_;
};

core::Result<tcp::endpoint> HttpServer::Impl::Listen(const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return core::MakeError(core::ErrorCode::kUnavailable,
                           "cannot resolve " + host + ": " + ec.message(), "listen");
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  if (acceptor_.open(endpoint.protocol(), ec); !ec) {
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    return core::MakeError(
        core::ErrorCode::kUnavailable,
        "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message(), "listen");
  }
  const tcp::endpoint bound = acceptor_.local_endpoint(ec);
  // The caller logs "listening" with the rest of its configuration.
  asio::co_spawn(acceptor_.get_executor(), Accept(shared_from_this()), asio::detached);
  return bound;
}

void HttpServer::Impl::Stop() {
  if (stopping_.exchange(true)) return;
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acceptor_.close(ignored);
  });
  std::lock_guard lock(mu_);
  for (auto& [raw, weak] : connections_) {
    std::shared_ptr<Connection> conn = weak.lock();
    if (!conn) continue;
    asio::post(conn->socket.get_executor(), [conn] {
      boost::system::error_code ignored;
      if (conn->idle) conn->socket.cancel(ignored);
    });
  }
}

asio::awaitable<void> HttpServer::Impl::Accept(std::shared_ptr<Impl> self) {
  while (!stopping_) {
    auto conn = std::make_shared<Connection>(asio::make_strand(io_.get_executor()));
    auto [ec] = co_await acceptor_.async_accept(conn->socket, kTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // Out of descriptors or similar: pause instead of spinning on the same error.
      asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(kTuple);
      continue;
    }
    conn->socket.set_option(tcp::no_delay(true), ec);
    {
      std::lock_guard lock(mu_);
      connections_.emplace(conn.get(), conn);
    }
    asio::co_spawn(conn->socket.get_executor(), Watchdog(conn), asio::detached);
    asio::co_spawn(conn->socket.get_executor(), Serve(self, conn), asio::detached);
  }
}

asio::awaitable<bool> HttpServer::Impl::Write(Connection& conn, Response response, unsigned version,
                                              bool keep) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), version};
  res.set(http::field::server, "Madeira/" MADEIRA_VERSION);
  res.set(http::field::content_type, response.content_type);
  for (auto& [name, value] : response.headers) res.set(name, value);
  res.body() = std::move(response.body);
  res.keep_alive(keep);
  res.prepare_payload();
  // A client that stops reading its answer is dropped like one that stops sending.
  conn.ArmDeadline(std::chrono::milliseconds(config_.read_timeout_ms));
  auto [ec, n] = co_await http::async_write(conn.socket, res, kTuple);
  conn.DisarmDeadline();
  co_return !ec;
}

asio::awaitable<void> HttpServer::Impl::Serve(std::shared_ptr<Impl> self,
                                              std::shared_ptr<Connection> conn) {
  const auto timeout = std::chrono::milliseconds(config_.read_timeout_ms);
  beast::flat_buffer buffer;
  while (!stopping_) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(config_.max_header_bytes));
    parser.body_limit(config_.max_body_bytes);

    conn->idle = true;
    conn->ArmDeadline(timeout);
    auto [ec, n] = co_await http::async_read_header(conn->socket, buffer, parser, kTuple);
    conn->idle = false;
    if (!ec && parser.get()[http::field::expect] == "100-continue" && !parser.is_done()) {
      // Clients such as curl wait for this before sending a large body.
      http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
      std::tie(ec, n) = co_await http::async_write(conn->socket, go_on, kTuple);
    }
    if (!ec && !parser.is_done()) ParseBuffered(parser, buffer, ec);
    if (!ec && !parser.is_done()) {
      conn->ArmDeadline(timeout);
      std::tie(ec, n) = co_await http::async_read(conn->socket, buffer, parser, kTuple);
    }
    if (ec) {
      if (std::optional<core::Error> failure = ReadFailure(ec)) {
        Response response = ErrorResponse(*failure);
        dispatcher_.Record(kUnmatchedRoute, response.status);
        if (co_await Write(*conn, std::move(response), 11, false)) co_await LingeringClose(*conn);
      }
      break;
    }
    conn->DisarmDeadline();  // a long-poll lease may take up to wait_ms

    http::request<http::string_body> req = parser.release();
    Request request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.authorization = std::string(req[http::field::authorization]);
    for (const auto& field : req) {
      if (boost::algorithm::istarts_with(field.name_string(), "x-madeira-")) {
        request.madeira_headers.emplace_back(
            boost::algorithm::to_lower_copy(std::string(field.name_string())),
            std::string(field.value()));
      }
    }
    request.body = std::move(req.body());
    Response response = co_await dispatcher_.Handle(std::move(request));
    const bool keep = req.keep_alive() && !stopping_;
    if (!co_await Write(*conn, std::move(response), req.version(), keep) || !keep) break;
  }
  boost::system::error_code ignored;
  conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
  conn->socket.close(ignored);
  conn->watchdog.cancel();
  std::lock_guard lock(mu_);
  connections_.erase(conn.get());
}

asio::awaitable<void> HttpServer::Impl::Watchdog(std::shared_ptr<Connection> conn) {
  while (conn->socket.is_open()) {
    if (conn->deadline <= Clock::now()) {
      boost::system::error_code ignored;
      conn->socket.close(ignored);  // fails the pending read or write; Serve then ends
      co_return;
    }
    conn->watchdog.expires_at(conn->deadline);
    co_await conn->watchdog.async_wait(kTuple);  // fires, or is cancelled when re-armed sooner
  }
}

asio::awaitable<void> HttpServer::Impl::LingeringClose(Connection& conn) {
  boost::system::error_code ec;
  conn.socket.shutdown(tcp::socket::shutdown_send, ec);
  conn.ArmDeadline(std::chrono::milliseconds(1000));
  std::array<char, 16 * 1024> sink;
  for (size_t drained = 0; !ec && drained < (4u << 20);) {
    auto [read_ec, n] = co_await conn.socket.async_read_some(asio::buffer(sink), kTuple);
    ec = read_ec;
    drained += n;
  }
  conn.DisarmDeadline();
}

HttpServer::HttpServer(asio::io_context& io, engine::Engine& engine, core::Metrics& metrics,
                       ApiConfig config, delivery::WebhookService* webhooks)
    : impl_(std::make_shared<Impl>(io, engine, metrics, std::move(config), webhooks)) {}

HttpServer::~HttpServer() { impl_->Stop(); }

core::Result<tcp::endpoint> HttpServer::Listen(const std::string& host, uint16_t port) {
  return impl_->Listen(host, port);
}

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace madeira::api
