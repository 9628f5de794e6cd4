#include "store/redis_pg/redis_conn.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/url/parse.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>

namespace madeira::store::redis_pg {

namespace asio = boost::asio;
using asio::ip::tcp;

core::Result<RedisEndpoint> ParseRedisUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return core::MakeError(core::ErrorCode::kInvalidField, "redis url: " + why, "redis_url");
  };
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) return bad("not a URL");
  if (parsed->scheme() != "redis") return bad("scheme must be redis://");
  RedisEndpoint ep;
  ep.host = parsed->host_address();
  if (ep.host.empty()) return bad("no host");
  if (!ep.host.empty() && ep.host.front() == '[') ep.host = ep.host.substr(1, ep.host.size() - 2);
  if (parsed->has_port()) {
    std::string_view port = parsed->port();
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return bad("bad port");
    }
    ep.port = static_cast<uint16_t>(value);
  }
  if (parsed->has_userinfo()) {
    ep.user = parsed->user();
    ep.password = parsed->password();
  }
  std::string path = parsed->path();
  if (!path.empty() && path != "/") {
    std::string_view db = std::string_view(path).substr(1);
    auto [ptr, ec] = std::from_chars(db.data(), db.data() + db.size(), ep.db);
    if (ec != std::errc() || ptr != db.data() + db.size() || ep.db < 0) return bad("bad db number");
  }
  return ep;
}

struct RedisConn::Io {
  asio::io_context io;
  tcp::socket socket{io};
  redisReader* reader = nullptr;
  std::array<char, 64 * 1024> buf{};

  Io() : reader(redisReaderCreate()) {
    if (reader == nullptr) throw std::bad_alloc();
  }
  ~Io() { redisReaderFree(reader); }
};

namespace {

RedisReply Convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
  }
  return out;
}

}  // namespace

// Written here rather than by hiredis's redisFormatCommandArgv, whose 0.14 formats each
// argument's length with sprintf: ~700 instructions an argument, a tenth of what madeira spent
// on an ack (docs/benchmarks.md, twenty-seventh round). RESP's framing is two lines a value.
void AppendCommand(std::string& out, const RedisCommand& command) {
  auto header = [&out](char kind, size_t n) {
    std::array<char, 24> digits{};
    const auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), n);
    out += kind;
    out.append(digits.data(), end);
    out += "\r\n";
  };
  header('*', command.size());
  for (const std::string& arg : command) {
    header('$', arg.size());
    out += arg;
    out += "\r\n";
  }
}

RedisConn::RedisConn(RedisEndpoint endpoint, core::Millis io_timeout, std::string client_name)
    : endpoint_(std::move(endpoint)),
      io_timeout_(io_timeout),
      client_name_(std::move(client_name)) {}

RedisConn::~RedisConn() = default;

void RedisConn::Disconnect() { io_.reset(); }

bool RedisConn::PeerClosed() {
  // Between pipelines nothing is in flight, so any readable byte (or EOF) means the server hung
  // up or the stream is out of step: either way the connection is done.
  char byte = 0;
  ssize_t n = ::recv(io_->socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  return true;
}

void RedisConn::EnsureConnected() {
  if (io_ && PeerClosed()) Disconnect();
  if (io_) return;
  auto io = std::make_unique<Io>();
  boost::system::error_code ec = asio::error::would_block;
  tcp::resolver resolver(io->io);
  auto endpoints = resolver.resolve(endpoint_.host, std::to_string(endpoint_.port), ec);
  if (ec) throw RedisIoError("redis: cannot resolve " + endpoint_.host + ": " + ec.message());
  ec = asio::error::would_block;
  asio::async_connect(io->socket, endpoints,
                      [&](boost::system::error_code e, const tcp::endpoint&) { ec = e; });
  io->io.run_for(std::chrono::milliseconds(io_timeout_));
  if (ec == asio::error::would_block) {
    throw RedisIoError("redis: connect to " + endpoint_.host + ":" +
                       std::to_string(endpoint_.port) + " timed out");
  }
  if (ec) {
    throw RedisIoError("redis: cannot connect to " + endpoint_.host + ":" +
                       std::to_string(endpoint_.port) + ": " + ec.message());
  }
  io->socket.set_option(tcp::no_delay(true));
  io_ = std::move(io);
  ++generation_;
  std::vector<RedisCommand> hello;
  if (!endpoint_.password.empty()) {
    if (endpoint_.user.empty()) {
      hello.push_back({"AUTH", endpoint_.password});
    } else {
      hello.push_back({"AUTH", endpoint_.user, endpoint_.password});
    }
  }
  if (endpoint_.db != 0) hello.push_back({"SELECT", std::to_string(endpoint_.db)});
  const size_t required = hello.size();
  if (!client_name_.empty()) hello.push_back({"CLIENT", "SETNAME", client_name_});
  if (hello.empty()) return;
  auto replies = Pipeline(hello);
  for (size_t i = 0; i < required; ++i) {
    if (replies[i].IsError()) {
      Disconnect();
      throw RedisIoError("redis: " + replies[i].str);
    }
  }
}

void RedisConn::WriteAll(const std::string& data) {
  boost::system::error_code ec = asio::error::would_block;
  asio::async_write(io_->socket, asio::buffer(data),
                    [&](boost::system::error_code e, size_t) { ec = e; });
  io_->io.restart();
  io_->io.run_for(std::chrono::milliseconds(io_timeout_));
  if (ec) {
    std::string why = ec == asio::error::would_block ? "timed out" : ec.message();
    Disconnect();
    throw RedisIoError("redis: write failed: " + why);
  }
}

std::optional<RedisReply> RedisConn::BufferedReply() {
  void* raw = nullptr;
  if (redisReaderGetReply(io_->reader, &raw) != REDIS_OK) {
    Disconnect();
    throw RedisIoError("redis: protocol error");
  }
  if (raw == nullptr) return std::nullopt;
  auto* reply = static_cast<redisReply*>(raw);
  RedisReply out = Convert(reply);
  freeReplyObject(reply);
  return out;
}

RedisReply RedisConn::ReadReply() {
  for (;;) {
    if (std::optional<RedisReply> buffered = BufferedReply()) return std::move(*buffered);
    boost::system::error_code ec = asio::error::would_block;
    size_t n = 0;
    io_->socket.async_read_some(asio::buffer(io_->buf), [&](boost::system::error_code e, size_t k) {
      ec = e;
      n = k;
    });
    io_->io.restart();
    io_->io.run_for(std::chrono::milliseconds(io_timeout_));
    if (ec) {
      std::string why = ec == asio::error::would_block ? "timed out" : ec.message();
      Disconnect();
      throw RedisIoError("redis: read failed: " + why);
    }
    redisReaderFeed(io_->reader, io_->buf.data(), n);
  }
}

std::optional<RedisReply> RedisConn::ReadWithin(core::Millis timeout, int interrupt_fd) {
  if (!io_) throw RedisIoError("redis: not connected");
  for (;;) {
    if (std::optional<RedisReply> buffered = BufferedReply()) return buffered;
    std::array<pollfd, 2> fds{};
    fds[0] = {io_->socket.native_handle(), POLLIN, 0};
    fds[1] = {interrupt_fd, POLLIN, 0};
    int ready = ::poll(fds.data(), interrupt_fd >= 0 ? 2 : 1, static_cast<int>(timeout));
    if (ready < 0 && errno == EINTR) return std::nullopt;
    if (ready < 0) {
      Disconnect();
      throw RedisIoError("redis: poll failed");
    }
    if (ready == 0 || (fds[0].revents == 0)) return std::nullopt;  // timeout or interrupted
    ssize_t n = ::recv(io_->socket.native_handle(), io_->buf.data(), io_->buf.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0) {
      Disconnect();
      throw RedisIoError("redis: connection closed");
    }
    redisReaderFeed(io_->reader, io_->buf.data(), static_cast<size_t>(n));
  }
}

std::vector<RedisReply> RedisConn::Pipeline(const std::vector<RedisCommand>& commands) {
  Send(commands);
  return Receive(commands.size());
}

void RedisConn::Send(const std::vector<RedisCommand>& commands) {
  EnsureConnected();
  SendBehind(commands);
}

void RedisConn::SendBehind(const std::vector<RedisCommand>& commands) {
  if (!io_) throw RedisIoError("redis: not connected");
  size_t size = 0;
  for (const RedisCommand& c : commands) {
    size += 16;
    for (const std::string& arg : c) size += arg.size() + 16;
  }
  std::string out;
  out.reserve(size);
  for (const RedisCommand& c : commands) AppendCommand(out, c);
  WriteAll(out);
}

bool RedisConn::AwaitReply(core::Millis timeout, int interrupt_fd) {
  if (!io_ || io_->reader->pos < io_->reader->len) return true;
  std::array<pollfd, 2> fds{};
  fds[0] = {io_->socket.native_handle(), POLLIN, 0};
  fds[1] = {interrupt_fd, POLLIN, 0};
  const int ready = ::poll(fds.data(), 2, static_cast<int>(timeout));
  if (ready < 0) return errno != EINTR;
  return ready == 0 || fds[0].revents != 0;
}

std::vector<RedisReply> RedisConn::Receive(size_t n) {
  if (!io_) throw RedisIoError("redis: not connected");
  std::vector<RedisReply> replies;
  replies.reserve(n);
  for (size_t i = 0; i < n; ++i) replies.push_back(ReadReply());
  return replies;
}

RedisReply RedisConn::Command(const RedisCommand& command) {
  return std::move(Pipeline({command}).front());
}

}  // namespace madeira::store::redis_pg
