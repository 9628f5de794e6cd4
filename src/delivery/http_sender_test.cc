#include "delivery/http_sender.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "delivery/outcome.h"

namespace madeira::delivery {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// A loopback HTTP receiver on port 0 whose answer depends on the path. Blocking Beast on
// threads: a thread per connection keeps /hang from stalling the others.
class TestReceiver {
 public:
  struct Seen {
    std::string method, target, body, user_agent, webhook_id;
  };

  TestReceiver() : acceptor_(ioc_, {asio::ip::make_address("127.0.0.1"), 0}) {
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~TestReceiver() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // unblocks reads in Serve
    }
    stop_cv_.notify_all();
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // unblocks accept
    accept_thread_.join();
    for (std::thread& t : workers_) t.join();
  }

  std::string Url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) +
           std::string(path);
  }
  int connections() const { return connections_.load(); }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void AcceptLoop() {
    for (;;) {
      tcp::socket socket(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      std::lock_guard lock(mu_);
      if (ec || stop_) return;
      ++connections_;
      open_fds_.insert(socket.native_handle());
      workers_.emplace_back([this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
    }
  }

  void Serve(tcp::socket socket) {
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      boost::system::error_code ec;
      http::read(socket, buffer, req, ec);
      if (ec) break;
      const std::string target(req.target());
      {
        std::lock_guard lock(mu_);
        seen_.push_back({std::string(req.method_string()), target, req.body(),
                         std::string(req[http::field::user_agent]),
                         std::string(req["webhook-id"])});
      }
      if (target == "/hang") {
        std::unique_lock lock(mu_);
        stop_cv_.wait_for(lock, 5s, [this] { return stop_; });
        break;
      }
      if (target == "/reset") {
        socket.set_option(asio::socket_base::linger(true, 0));  // close sends RST
        break;
      }
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.set(http::field::content_type, "application/json");
      res.body() = R"({"success":true})";
      if (target == "/fail") res.result(http::status::internal_server_error);
      if (target == "/missing") res.result(http::status::not_found);
      if (target == "/busy") {
        res.result(http::status::service_unavailable);
        res.set(http::field::retry_after, "7");
      }
      if (target == "/slow-down") {
        res.result(http::status::too_many_requests);
        res.set(http::field::retry_after, "2");
      }
      if (target == "/redirect") {
        res.result(http::status::found);
        res.set(http::field::location, "/ok");
      }
      if (target == "/big") res.body() = std::string(100'000, 'x');
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(socket, res, ec);
      if (ec || !req.keep_alive()) break;
    }
    std::lock_guard lock(mu_);
    open_fds_.erase(socket.native_handle());
  }

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread accept_thread_;
  std::vector<std::thread> workers_;  // only touched by the accept thread until it is joined
  std::atomic<int> connections_ = 0;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::set<int> open_fds_;
  std::vector<Seen> seen_;
};

SenderOptions LoopbackAllowed() {
  SenderOptions options;
  options.guard = *AddressGuard::Create({.allow_private_targets = true});
  options.max_body_bytes = 4096;
  return options;
}

HttpRequest Post(std::string url, core::Millis timeout_ms = 5000) {
  HttpRequest req;
  req.url = std::move(url);
  req.body = R"({"order_id":42})";
  req.headers = {{"Content-Type", "application/json"}, {"webhook-id", "msg_1"}};
  req.timeout_ms = timeout_ms;
  return req;
}

HttpResponse SendAndWait(HttpSender& sender, HttpRequest req) {
  std::promise<HttpResponse> done;
  std::future<HttpResponse> result = done.get_future();
  sender.Send(std::move(req), [&done](HttpResponse r) { done.set_value(std::move(r)); });
  if (result.wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "no completion within 10 s";
    std::abort();  // the callback would write to a dead promise
  }
  return result.get();
}

class HttpSenderTest : public ::testing::Test {
 protected:
  TestReceiver receiver_;  // declared first: outlives the sender and its cached connections
  HttpSender sender_{LoopbackAllowed()};
};

TEST_F(HttpSenderTest, DeliversAndReportsTheAnswer) {
  HttpResponse r = SendAndWait(sender_, Post(receiver_.Url("/ok")));
  EXPECT_EQ(r.error, TransportError::kNone) << r.error_detail;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"success":true})");
  EXPECT_GE(r.duration_ms, 0);
  std::vector<TestReceiver::Seen> seen = receiver_.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].body, R"({"order_id":42})");
  EXPECT_EQ(seen[0].user_agent, "Madeira/" MADEIRA_VERSION);
  EXPECT_EQ(seen[0].webhook_id, "msg_1");
  EXPECT_EQ(Classify(r, SuccessCheck{"/success", true}, 0).kind, OutcomeKind::kSuccess);
}

TEST_F(HttpSenderTest, StatusAnswersAreClassified) {
  HttpResponse fail = SendAndWait(sender_, Post(receiver_.Url("/fail")));
  EXPECT_EQ(fail.status, 500);
  EXPECT_EQ(Classify(fail, std::nullopt, 0).kind, OutcomeKind::kRetryable);

  HttpResponse missing = SendAndWait(sender_, Post(receiver_.Url("/missing")));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Classify(missing, std::nullopt, 0).kind, OutcomeKind::kPermanent);

  HttpResponse busy = SendAndWait(sender_, Post(receiver_.Url("/busy")));
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.retry_after, "7");
  EXPECT_EQ(Classify(busy, std::nullopt, 0).retry_after, 7000);

  HttpResponse slow = SendAndWait(sender_, Post(receiver_.Url("/slow-down")));
  EXPECT_EQ(slow.status, 429);
  EXPECT_EQ(Classify(slow, std::nullopt, 0).retry_after, 2000);
}

TEST_F(HttpSenderTest, RedirectIsNotFollowed) {
  HttpResponse r = SendAndWait(sender_, Post(receiver_.Url("/redirect")));
  EXPECT_EQ(r.error, TransportError::kNone);
  EXPECT_EQ(r.status, 302);
  EXPECT_EQ(Classify(r, std::nullopt, 0).kind, OutcomeKind::kUnknown);
  EXPECT_EQ(receiver_.seen().size(), 1u);
}

TEST_F(HttpSenderTest, HangingReceiverTimesOut) {
  HttpResponse r = SendAndWait(sender_, Post(receiver_.Url("/hang"), 300));
  EXPECT_EQ(r.error, TransportError::kTimeout) << r.error_detail;
  EXPECT_LT(r.duration_ms, 3000);
  EXPECT_EQ(Classify(r, std::nullopt, 0).kind, OutcomeKind::kRetryable);
}

TEST_F(HttpSenderTest, ResetConnectionIsReported) {
  HttpResponse r = SendAndWait(sender_, Post(receiver_.Url("/reset")));
  EXPECT_EQ(r.error, TransportError::kConnectionReset) << r.error_detail;
  EXPECT_EQ(Classify(r, std::nullopt, 0).kind, OutcomeKind::kRetryable);
}

TEST_F(HttpSenderTest, ClosedPortIsConnectionRefused) {
  asio::io_context ioc;
  tcp::acceptor probe(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  const unsigned short port = probe.local_endpoint().port();
  probe.close();
  HttpResponse r = SendAndWait(sender_, Post("http://127.0.0.1:" + std::to_string(port) + "/"));
  EXPECT_EQ(r.error, TransportError::kConnectionRefused) << r.error_detail;
}

TEST_F(HttpSenderTest, ReusesTheConnection) {
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(SendAndWait(sender_, Post(receiver_.Url("/ok"))).status, 200);
  EXPECT_EQ(receiver_.connections(), 1);
}

TEST_F(HttpSenderTest, ManyConcurrentRequestsAllComplete) {
  constexpr int kCount = 20;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, ok = 0;
  for (int i = 0; i < kCount; ++i) {
    sender_.Send(Post(receiver_.Url(i % 2 == 0 ? "/ok" : "/fail")), [&](HttpResponse r) {
      std::lock_guard lock(mu);
      ok += (r.status == 200 || r.status == 500) ? 1 : 0;
      ++done;
      cv.notify_one();
    });
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return done == kCount; }));
  EXPECT_EQ(ok, kCount);
}

TEST_F(HttpSenderTest, BodyBeyondTheLimitIsTruncated) {
  HttpResponse r = SendAndWait(sender_, Post(receiver_.Url("/big")));
  EXPECT_EQ(r.error, TransportError::kNone) << r.error_detail;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body_truncated);
  EXPECT_EQ(r.body.size(), 4096u);
}

TEST_F(HttpSenderTest, BadUrlAndHeaderInjectionArePermanent) {
  HttpResponse scheme = SendAndWait(sender_, Post("file:///etc/passwd"));
  EXPECT_EQ(scheme.error, TransportError::kInvalidRequest) << scheme.error_detail;
  HttpRequest injected = Post(receiver_.Url("/ok"));
  injected.headers.emplace_back("X-Evil", "a\r\nX-Other: b");
  EXPECT_EQ(SendAndWait(sender_, injected).error, TransportError::kInvalidRequest);
  EXPECT_EQ(receiver_.connections(), 0);
}

TEST_F(HttpSenderTest, StopAbortsWhatIsInFlightAndLaterSends) {
  std::promise<HttpResponse> hung;
  sender_.Send(Post(receiver_.Url("/hang"), 5000),
               [&hung](HttpResponse r) { hung.set_value(std::move(r)); });
  while (receiver_.seen().empty()) std::this_thread::sleep_for(5ms);  // the request is there
  sender_.Stop();
  std::future<HttpResponse> result = hung.get_future();
  ASSERT_EQ(result.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(result.get().error, TransportError::kAborted);
  EXPECT_EQ(SendAndWait(sender_, Post(receiver_.Url("/ok"))).error, TransportError::kAborted);
}

TEST(HttpSenderGuardTest, LoopbackTargetIsRefusedWithoutConnecting) {
  TestReceiver receiver;
  HttpSender sender(SenderOptions{});  // default guard: public addresses only
  HttpResponse r = SendAndWait(sender, Post(receiver.Url("/ok")));
  EXPECT_EQ(r.error, TransportError::kRefusedByGuard) << r.error_detail;
  Outcome o = Classify(r, std::nullopt, 0);
  EXPECT_EQ(o.kind, OutcomeKind::kPermanent);
  EXPECT_EQ(o.reason, "target address refused");

  // By name too: the guard sees the resolved address, not the host name.
  std::string by_name = receiver.Url("/ok");
  by_name.replace(by_name.find("127.0.0.1"), 9, "localhost");
  EXPECT_EQ(SendAndWait(sender, Post(by_name)).error, TransportError::kRefusedByGuard);
  EXPECT_EQ(receiver.connections(), 0);
}

TEST(HttpSenderGuardTest, AllowListAdmitsLoopback) {
  TestReceiver receiver;
  SenderOptions options;
  options.guard = *AddressGuard::Create({.allow_cidrs = {"127.0.0.0/8"}});
  HttpSender sender(std::move(options));
  EXPECT_EQ(SendAndWait(sender, Post(receiver.Url("/ok"))).status, 200);
}

}  // namespace
}  // namespace madeira::delivery
