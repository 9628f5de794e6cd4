// One connection to Redis: RESP encoding and parsing by hiredis, socket I/O by Boost.Asio.
// Used from one thread (the store thread). Every call waits at most `io_timeout` for the
// network; a timeout or socket error closes the connection and throws RedisIoError, and the
// next call connects again.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace madeira::store::redis_pg {

// The connection is gone or timed out: the outcome of the command in flight is unknown.
class RedisIoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RedisReply {
  enum class Type { kString, kArray, kInteger, kNil, kStatus, kError };
  Type type = Type::kNil;
  std::string str;  // string, status and error text
  int64_t integer = 0;
  std::vector<RedisReply> elements;

  bool IsError() const { return type == Type::kError; }
  bool IsNil() const { return type == Type::kNil; }
};

using RedisCommand = std::vector<std::string>;
// `command` as Redis reads it (RESP: an array of bulk strings), after `out`.
void AppendCommand(std::string& out, const RedisCommand& command);

// redis://[[user]:password@]host[:port][/db]
struct RedisEndpoint {
  std::string host;
  uint16_t port = 6379;
  std::string user;
  std::string password;
  int db = 0;
};
core::Result<RedisEndpoint> ParseRedisUrl(const std::string& url);

class RedisConn {
 public:
  // `client_name` (CLIENT SETNAME) lets an operator see whose connection this is.
  RedisConn(RedisEndpoint endpoint, core::Millis io_timeout, std::string client_name = "");
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // Sends every command in one write, then reads one reply for each, in order.
  std::vector<RedisReply> Pipeline(const std::vector<RedisCommand>& commands);
  // Pipeline in two halves, so the caller can work while Redis runs the commands: Send writes
  // them (connecting first if need be), Receive reads the `n` replies they get. Nothing else may
  // be sent in between.
  void Send(const std::vector<RedisCommand>& commands);
  std::vector<RedisReply> Receive(size_t n);
  // Send for commands that go behind others whose replies are still to be read: the same write,
  // without EnsureConnected's check that the connection is idle (it is not). Throws
  // RedisIoError when not connected.
  void SendBehind(const std::vector<RedisCommand>& commands);
  // Waits until a reply can be read (bytes came, or the reader holds some already) and says
  // so; false when `interrupt_fd` became readable first. After `timeout` with neither, or when
  // the connection is gone, true: Receive then waits its own io_timeout or reports the loss.
  bool AwaitReply(core::Millis timeout, int interrupt_fd);
  RedisReply Command(const RedisCommand& command);

  // Connects now (AUTH and SELECT included) unless connected. A connection the server closed
  // while it was idle (a restart, CLIENT KILL, a timeout) is noticed here and replaced, so no
  // command is ever sent on it. Throws RedisIoError.
  void EnsureConnected();
  void Disconnect();
  bool connected() const { return io_ != nullptr; }

  // For a subscribed connection (pushed messages, nothing sent): the next reply, waiting at
  // most `timeout` and returning early (nullopt) when `interrupt_fd` (if >= 0) becomes
  // readable. nullopt on timeout too; the connection stays. Throws RedisIoError when the
  // connection is gone.
  std::optional<RedisReply> ReadWithin(core::Millis timeout, int interrupt_fd = -1);
  // Bumped on every (re)connect, so callers know to load their scripts again.
  uint64_t generation() const { return generation_; }

 private:
  struct Io;
  void WriteAll(const std::string& data);
  RedisReply ReadReply();
  // A whole reply already in the reader's buffer, if there is one.
  std::optional<RedisReply> BufferedReply();

  bool PeerClosed();

  RedisEndpoint endpoint_;
  core::Millis io_timeout_;
  std::string client_name_;
  std::unique_ptr<Io> io_;
  uint64_t generation_ = 0;
};

}  // namespace madeira::store::redis_pg
