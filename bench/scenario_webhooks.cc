// (w) Webhook deliveries (issue 3 item 10): signed events in over POST /v1/events, one endpoint
// (max_in_flight 256), a loopback receiver inside this process counting what Madeira delivers.
//   w.rate     deliveries/s, one event per request over 64 keep-alive connections as fast as
//              answered; from the first event sent to the last delivery the receiver saw.
//   w.backlog  deliveries/s of events already stored (held back by a rate limit, then released):
//              delivery without ingest. w.cpu* are the server's CPU time per event.
//   w.p50...   latency at a steady 2,000 events/s for 10 s: from the moment the event's request
//              was sent (w.p50, w.p99, w.max) or its 202 came back (w.acc50, w.acc99) to the
//              first byte of its delivery at the receiver, matched by webhook-id (= event_id).
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_to.hpp>
#include <cctype>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>

#include "scenario_support.h"
#include "scenarios.h"
#include "stats.h"
#include "workload.h"

namespace madeira::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using asio::ip::tcp;

namespace {

constexpr std::string_view kSource = "bench";
constexpr std::string_view kSourceSecret = "k1";
const std::string kConfig = R"([[sources]]
id = "bench"
secrets = ["k1"]

[delivery]
allow_private_targets = true
)";

constexpr int kThroughputConnections = 64;
constexpr int kMaxInFlight = 256;
constexpr double kLatencyRate = 2000;  // events/s, open loop
constexpr int kLatencySenders = 16;    // so that one slow answer does not hold the schedule back
constexpr auto kRequestTimeout = std::chrono::seconds(30);
// After the last event was accepted, how long its deliveries may still take.
constexpr auto kDrainLimit = std::chrono::seconds(120);

double Millis(SteadyClock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

// User + system CPU seconds the process has used so far, from /proc/PID/stat; 0 if unreadable.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt: fields 3-13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---------------------------------------------------------------------------------------------
// The receiver.

struct Delivery {
  std::string webhook_id;
  SteadyClock::time_point first_byte;  // when the read that brought its first byte returned
};

// Finds `name:` (lower case, without the colon) among the header lines of `head` and returns
// its trimmed value, or an empty view.
std::string_view HeaderValue(std::string_view head, std::string_view name) {
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    size_t begin = pos + 2;
    size_t end = head.find("\r\n", begin);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(begin, end - begin);
    if (line.size() > name.size() && line[name.size()] == ':') {
      bool same = true;
      for (size_t i = 0; i < name.size() && same; ++i) {
        same = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
      }
      if (same) {
        std::string_view v = line.substr(name.size() + 1);
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
        return v;
      }
    }
    pos = end;
  }
  return {};
}

// Hand-written on raw Asio rather than Beast or a framework: the receiver must cost next to
// nothing, so that the figure measures Madeira and not the receiver.
// HTTP/1.1 keep-alive on 127.0.0.1:0, its own thread: reads headers up to \r\n\r\n, then
// Content-Length bytes, answers "200 OK" with an empty body and records the webhook-id.
class Receiver {
 public:
  Receiver() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io_, Accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Receiver() { Stop(); }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  unsigned short port() const { return port_; }
  long delivered() const { return delivered_.load(std::memory_order_acquire); }
  SteadyClock::time_point last_delivery() const {
    return SteadyClock::time_point(
        SteadyClock::duration(last_delivery_.load(std::memory_order_acquire)));
  }
  std::string error() const {
    std::lock_guard lock(mu_);
    return error_;
  }

  // Stops the I/O thread; after that, deliveries() may be read.
  void Stop() {
    if (thread_.joinable()) {
      io_.stop();
      thread_.join();
    }
  }
  const std::vector<Delivery>& deliveries() const { return deliveries_; }

 private:
  asio::awaitable<void> Accept() {
    while (true) {
      auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      asio::co_spawn(io_, Session(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> Session(tcp::socket socket) {
    constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
    static constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::string pending;  // bytes read and not yet consumed
    std::string answers;
    char chunk[16384];
    SteadyClock::time_point request_start{};
    while (true) {
      auto [ec, n] = co_await socket.async_read_some(asio::buffer(chunk), kTuple);
      if (ec) co_return;
      const SteadyClock::time_point now = SteadyClock::now();
      if (pending.empty()) request_start = now;
      pending.append(chunk, n);
      answers.clear();
      size_t consumed = 0;
      while (true) {
        std::string_view rest = std::string_view(pending).substr(consumed);
        size_t head_end = rest.find("\r\n\r\n");
        if (head_end == std::string_view::npos) break;
        std::string_view head = rest.substr(0, head_end);
        std::string_view length_text = HeaderValue(head, "content-length");
        size_t length = 0;
        for (char c : length_text) {
          if (c < '0' || c > '9') {
            Fail("bad Content-Length: " + std::string(length_text));
            co_return;
          }
          length = length * 10 + static_cast<size_t>(c - '0');
        }
        if (rest.size() < head_end + 4 + length) break;
        deliveries_.push_back({std::string(HeaderValue(head, "webhook-id")), request_start});
        last_delivery_.store(now.time_since_epoch().count(), std::memory_order_release);
        delivered_.fetch_add(1, std::memory_order_acq_rel);
        answers += kOk;
        consumed += head_end + 4 + length;
        request_start = now;  // the next request, if any, began in this same read
      }
      pending.erase(0, consumed);
      if (!answers.empty()) {
        auto [wec, w] = co_await asio::async_write(socket, asio::buffer(answers), kTuple);
        if (wec) co_return;
      }
    }
  }

  void Fail(std::string message) {
    std::lock_guard lock(mu_);
    if (error_.empty()) error_ = std::move(message);
  }

  asio::io_context io_{1};
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread thread_;
  std::vector<Delivery> deliveries_;  // I/O thread only until Stop()
  std::atomic<long> delivered_{0};
  std::atomic<SteadyClock::rep> last_delivery_{0};
  mutable std::mutex mu_;
  std::string error_;
};

// ---------------------------------------------------------------------------------------------
// The event sender.

std::string EventBody(std::string_view event_id) {
  std::string body = R"({"event_id":")";
  body += event_id;
  body += R"(","event_type":"bench.created","payload":)";
  body += Payload();
  body += '}';
  return body;
}

// "sha256=" + hex HMAC-SHA256(secret, timestamp + "\n" + body).
std::string SourceSignature(std::string_view timestamp, std::string_view body) {
  std::string message;
  message.reserve(timestamp.size() + 1 + body.size());
  message.append(timestamp).append("\n").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), kSourceSecret.data(), static_cast<int>(kSourceSecret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &mac_len) == nullptr) {
    throw std::runtime_error("HMAC failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned int i = 0; i < mac_len; ++i) {
    out.push_back(kHex[mac[i] >> 4]);
    out.push_back(kHex[mac[i] & 0xf]);
  }
  return out;
}

// One keep-alive connection to the server: source-signed events, and plain admin requests.
class EventConnection {
 public:
  EventConnection(asio::any_io_executor ex, tcp::endpoint endpoint)
      : stream_(std::move(ex)), endpoint_(endpoint) {}

  // POST /v1/events with the X-Madeira-* headers; throws on a transport error.
  asio::awaitable<http::response<http::string_body>> Post(std::string body) {
    return Exchange(http::verb::post, "/v1/events", std::move(body), true);
  }

  // Any request without source headers; throws on a transport error.
  asio::awaitable<http::response<http::string_body>> Exchange(http::verb verb, std::string target,
                                                              std::string body, bool sign) {
    constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
    const std::string what = std::string(http::to_string(verb)) + " " + target;
    if (!connected_) {
      stream_.expires_after(kRequestTimeout);
      auto [ec] = co_await stream_.async_connect(endpoint_, kTuple);
      if (ec) throw std::runtime_error(what + ": connect: " + ec.message());
      stream_.socket().set_option(tcp::no_delay(true));
      connected_ = true;
    }
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    if (sign) {
      const std::string timestamp = std::to_string(std::time(nullptr));
      req.set("X-Madeira-Source", kSource);
      req.set("X-Madeira-Timestamp", timestamp);
      req.set("X-Madeira-Signature", SourceSignature(timestamp, body));
    }
    req.body() = std::move(body);
    req.prepare_payload();
    stream_.expires_after(kRequestTimeout);
    if (auto [ec, n] = co_await http::async_write(stream_, req, kTuple); ec) {
      throw std::runtime_error(what + ": write: " + ec.message());
    }
    http::response<http::string_body> res;
    if (auto [ec, n] = co_await http::async_read(stream_, buffer_, res, kTuple); ec) {
      throw std::runtime_error(what + ": read: " + ec.message());
    }
    if (!res.keep_alive()) {
      stream_.close();
      buffer_.clear();
      connected_ = false;
    }
    co_return res;
  }

 private:
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  tcp::endpoint endpoint_;
  bool connected_ = false;
};

// One admin request on a fresh connection; throws unless it answered `want`. Returns the body.
std::string AdminRequest(const tcp::endpoint& endpoint, http::verb verb, std::string target,
                         std::string body, unsigned want) {
  http::response<http::string_body> res;
  RunOutcome run =
      RunCoroutines({[&]() -> asio::awaitable<void> {
                      EventConnection conn(co_await asio::this_coro::executor, endpoint);
                      res = co_await conn.Exchange(verb, target, body, false);
                    }},
                    std::chrono::seconds(10));
  if (!run.error.empty()) throw std::runtime_error(run.error);
  if (res.result_int() != want) {
    throw std::runtime_error(std::string(http::to_string(verb)) + " " + target + " " + body +
                             ": HTTP " + std::to_string(res.result_int()) + " " +
                             res.body().substr(0, 300));
  }
  return res.body();
}

// Throws unless the event was accepted fresh with exactly one delivery.
void CheckAccepted(const http::response<http::string_body>& res, std::string_view event_id) {
  if (res.result_int() != 202 || res.body().find(R"("deliveries":1)") == std::string::npos ||
      res.body().find(R"("duplicate")") != std::string::npos) {
    throw std::runtime_error("POST /v1/events (" + std::string(event_id) + "): HTTP " +
                             std::to_string(res.result_int()) + " " + res.body().substr(0, 300) +
                             " (wanted 202 with one delivery)");
  }
}

// A webhook-enabled server with one endpoint (every event type) pointing at `receiver`;
// `extra` adds fields to the endpoint, e.g. a rate limit.
struct WebhookSetup {
  WebhookSetup(const ScenarioEnv& env, const Receiver& receiver, std::string_view extra = {})
      : server(env.madeira, kConfig) {
    std::string body = R"({"url":"http://127.0.0.1:)" + std::to_string(receiver.port()) +
                       R"(/hook","event_types":["*"],"max_in_flight":)" +
                       std::to_string(kMaxInFlight);
    body += extra;
    body += "}";
    std::string answer =
        AdminRequest(server.process->endpoint(), http::verb::post, "/v1/endpoints", body, 201);
    boost::system::error_code ec;
    json::value v = json::parse(answer, ec);
    if (ec || !v.is_object() || !v.as_object().contains("id")) {
      throw std::runtime_error("POST /v1/endpoints: no id in " + answer.substr(0, 300));
    }
    endpoint_id = json::value_to<std::string>(v.at("id"));
  }
  FreshServer server;
  std::string endpoint_id;
};

// Waits until the receiver has seen `total` deliveries, for at most `limit`.
void WaitDelivered(const Receiver& receiver, long total, SteadyClock::duration limit,
                   const std::string& log_file) {
  SteadyClock::time_point deadline = SteadyClock::now() + limit;
  while (receiver.delivered() < total && SteadyClock::now() < deadline) {
    if (!receiver.error().empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!receiver.error().empty()) throw std::runtime_error("receiver: " + receiver.error());
  if (receiver.delivered() < total) {
    throw std::runtime_error("only " + std::to_string(receiver.delivered()) + " of " +
                             std::to_string(total) + " events delivered " +
                             std::to_string(Seconds(limit)) +
                             " s after the last was accepted; see " + log_file);
  }
}

// Posts events `prefix`0 .. `prefix`(total-1) over `connections` keep-alive connections as fast
// as answered; returns when the last 202 came back.
SteadyClock::time_point PostEvents(const tcp::endpoint& endpoint, long total,
                                   const std::string& prefix, int connections) {
  long claimed = 0;
  SteadyClock::time_point last_accept{};
  std::vector<std::function<asio::awaitable<void>()>> loops;
  for (int c = 0; c < connections; ++c) {
    loops.push_back([&]() -> asio::awaitable<void> {
      EventConnection conn(co_await asio::this_coro::executor, endpoint);
      while (claimed < total) {
        const std::string id = prefix + std::to_string(claimed++);
        CheckAccepted(co_await conn.Post(EventBody(id)), id);
        last_accept = SteadyClock::now();
      }
    });
  }
  RunOutcome run = RunCoroutines(std::move(loops), std::chrono::seconds(120));
  if (!run.error.empty()) throw std::runtime_error(run.error);
  if (!run.finished) throw std::runtime_error("events not all accepted within 120 s");
  return last_accept;
}

// (a) As fast as answered: deliveries/s from the first event sent to the last delivery seen,
// events accepted/s, the seconds from the last 202 to the last delivery, and the server's CPU
// time per event (all its threads), which says how far two cores can go.
std::vector<Measurement> MeasureThroughput(const ScenarioEnv& env) {
  const long total = env.Scaled(50'000, 1000);
  Receiver receiver;  // declared first: outlives the server, which may still be sending
  WebhookSetup setup(env, receiver);
  const double cpu_at_start = CpuSeconds(setup.server.process->pid());
  const SteadyClock::time_point start = SteadyClock::now();
  const SteadyClock::time_point last_accept =
      PostEvents(setup.server.process->endpoint(), total, "w-a-", kThroughputConnections);
  WaitDelivered(receiver, total, kDrainLimit, setup.server.log_file().string());
  const SteadyClock::time_point last_delivery = receiver.last_delivery();
  const double cpu_used = CpuSeconds(setup.server.process->pid()) - cpu_at_start;
  receiver.Stop();
  return {
      {"w.rate", "webhook deliveries, 1 event/req, 64 conns", "deliveries/s",
       static_cast<double>(total) / Seconds(last_delivery - start), 10'000, true},
      {"w.accept", "webhook events accepted (202) in that run", "events/s",
       static_cast<double>(total) / Seconds(last_accept - start), std::nullopt, true},
      {"w.tail", "webhook: last 202 -> last delivery", "s", Seconds(last_delivery - last_accept),
       std::nullopt, false},
      {"w.cpu", "server CPU per event, accepted + delivered", "us",
       1e6 * cpu_used / static_cast<double>(total), std::nullopt, false},
  };
}

// Delivery alone: the events are stored first while the endpoint's rate limit holds their
// deliveries back; then the limit is lifted (PATCH rate_limit null) and the stored backlog is
// delivered. Deliveries/s from that PATCH to the last delivery: tells the cost of accepting
// from the cost of delivering when w.rate misses its target.
std::vector<Measurement> MeasureBacklog(const ScenarioEnv& env) {
  const long total = env.Scaled(20'000, 1000);
  Receiver receiver;
  WebhookSetup setup(env, receiver, R"(,"rate_limit":{"per_second":0.001,"burst":1})");
  const auto endpoint = setup.server.process->endpoint();
  const pid_t pid = setup.server.process->pid();
  const double cpu_at_start = CpuSeconds(pid);
  PostEvents(endpoint, total, "w-d-", kThroughputConnections);
  const double cpu_accepted = CpuSeconds(pid);
  const long before = receiver.delivered();
  const SteadyClock::time_point start = SteadyClock::now();
  AdminRequest(endpoint, http::verb::patch, "/v1/endpoints/" + setup.endpoint_id,
               R"({"rate_limit":null})", 200);
  WaitDelivered(receiver, total, kDrainLimit, setup.server.log_file().string());
  const SteadyClock::time_point last_delivery = receiver.last_delivery();
  const double cpu_delivered = CpuSeconds(pid);
  receiver.Stop();
  const double delivered = static_cast<double>(total - before);
  return {
      {"w.backlog", "webhook deliveries of a stored backlog", "deliveries/s",
       delivered / Seconds(last_delivery - start), std::nullopt, true},
      {"w.cpuacc", "server CPU per accepted event (no sends)", "us",
       1e6 * (cpu_accepted - cpu_at_start) / static_cast<double>(total), std::nullopt, false},
      {"w.cpudel", "server CPU per delivery of the backlog", "us",
       1e6 * (cpu_delivered - cpu_accepted) / delivered, std::nullopt, false},
  };
}

// (b) Open loop at kLatencyRate for ~10 s.
std::vector<Measurement> MeasureLatency(const ScenarioEnv& env) {
  const double seconds = std::max(1.0, 10.0 * env.scale);
  const long total = static_cast<long>(kLatencyRate * seconds);
  const std::string prefix = "w-b-";
  Receiver receiver;
  WebhookSetup setup(env, receiver);
  const auto endpoint = setup.server.process->endpoint();
  std::vector<SteadyClock::time_point> sent_at(total), accepted_at(total);
  std::vector<double> send_lag_ms;
  send_lag_ms.reserve(total);
  long accepted = 0;

  SteadyClock::time_point start = SteadyClock::now() + std::chrono::milliseconds(300);
  SteadyClock::time_point deadline = start + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(seconds + 20));
  auto due = [&](long i) {
    return start + std::chrono::duration_cast<SteadyClock::duration>(
                       std::chrono::duration<double>(static_cast<double>(i) / kLatencyRate));
  };
  std::vector<std::function<asio::awaitable<void>()>> loops;
  for (int s = 0; s < kLatencySenders; ++s) {
    loops.push_back([&, s]() -> asio::awaitable<void> {
      EventConnection conn(co_await asio::this_coro::executor, endpoint);
      asio::steady_timer timer(co_await asio::this_coro::executor);
      for (long i = s; i < total && SteadyClock::now() < deadline; i += kLatencySenders) {
        timer.expires_at(due(i));
        co_await timer.async_wait(asio::use_awaitable);
        const std::string id = prefix + std::to_string(i);
        std::string body = EventBody(id);
        sent_at[i] = SteadyClock::now();
        send_lag_ms.push_back(Millis(sent_at[i] - due(i)));
        CheckAccepted(co_await conn.Post(std::move(body)), id);
        accepted_at[i] = SteadyClock::now();
        ++accepted;
      }
    });
  }
  RunOutcome run =
      RunCoroutines(std::move(loops), deadline - SteadyClock::now() + std::chrono::seconds(5));
  if (!run.error.empty()) throw std::runtime_error(run.error);
  if (accepted < total) {
    throw std::runtime_error("latency: only " + std::to_string(accepted) + " of " +
                             std::to_string(total) + " events accepted by the deadline");
  }
  WaitDelivered(receiver, total, kDrainLimit, setup.server.log_file().string());
  receiver.Stop();

  std::vector<SteadyClock::time_point> first_byte(total);
  long duplicates = 0;
  for (const Delivery& d : receiver.deliveries()) {
    long seq = -1;
    if (d.webhook_id.rfind(prefix, 0) == 0) seq = std::stol(d.webhook_id.substr(prefix.size()));
    if (seq < 0 || seq >= total) {
      throw std::runtime_error("receiver got an unknown webhook-id '" + d.webhook_id + "'");
    }
    if (first_byte[seq] != SteadyClock::time_point{}) {
      ++duplicates;
      continue;
    }
    first_byte[seq] = d.first_byte;
  }
  std::vector<double> from_send_ms, from_accept_ms;
  from_send_ms.reserve(total);
  from_accept_ms.reserve(total);
  for (long i = 0; i < total; ++i) {
    if (first_byte[i] == SteadyClock::time_point{}) {
      throw std::runtime_error("event " + prefix + std::to_string(i) + " was never delivered (" +
                               std::to_string(duplicates) + " duplicate deliveries)");
    }
    from_send_ms.push_back(Millis(first_byte[i] - sent_at[i]));
    // The delivery can start before the 202 is read back: that one waited zero after accept.
    from_accept_ms.push_back(std::max(0.0, Millis(first_byte[i] - accepted_at[i])));
  }
  SteadyClock::time_point last_sent = *std::max_element(sent_at.begin(), sent_at.end());
  return {
      {"w.p50", "webhook @2k/s: sent -> receiver 1st B p50", "ms", Percentile(from_send_ms, 50),
       std::nullopt, false},
      {"w.p99", "webhook @2k/s: sent -> receiver 1st B p99", "ms", Percentile(from_send_ms, 99), 20,
       false},
      {"w.max", "webhook @2k/s: sent -> receiver 1st B max", "ms", Percentile(from_send_ms, 100),
       std::nullopt, false},
      {"w.acc50", "webhook @2k/s: 202 -> receiver 1st B p50", "ms", Percentile(from_accept_ms, 50),
       std::nullopt, false},
      {"w.acc99", "webhook @2k/s: 202 -> receiver 1st B p99", "ms", Percentile(from_accept_ms, 99),
       std::nullopt, false},
      {"w.rate2k", "webhook @2k/s: event rate achieved", "events/s",
       static_cast<double>(total) / Seconds(last_sent - start), std::nullopt, true},
      {"w.lag99", "webhook @2k/s: send lag vs schedule p99", "ms", Percentile(send_lag_ms, 99),
       std::nullopt, false},
      {"w.dups", "webhook @2k/s: duplicate deliveries", "count", static_cast<double>(duplicates),
       std::nullopt, false},
  };
}

}  // namespace

std::vector<Measurement> RunWebhooks(const ScenarioEnv& env) {
  std::vector<Measurement> out = MeasureThroughput(env);
  for (auto* part : {&MeasureBacklog, &MeasureLatency}) {
    std::vector<Measurement> more = part(env);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace madeira::bench
