#include "fake_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <list>
#include <mutex>
#include <thread>

namespace madeira::sdk::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Blocking I/O, a thread per connection: the handlers may block, and a test serves a handful.
struct FakeServer::Impl {
  explicit Impl(Answer a)
      : answer(std::move(a)), acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
    accepting = std::thread([this] { Accept(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    // Wake the blocked accept with a connection of our own, then end every connection's read.
    boost::system::error_code ignored;
    tcp::socket waker(io);
    waker.connect(acceptor.local_endpoint(), ignored);
    accepting.join();
    {
      std::lock_guard lock(mu);
      for (auto& s : sockets) s.shutdown(tcp::socket::shutdown_both, ignored);
    }
    for (auto& t : serving) t.join();
  }

  void Accept() {
    while (true) {
      tcp::socket s(io);
      boost::system::error_code ec;
      acceptor.accept(s, ec);
      std::lock_guard lock(mu);
      if (stopping || ec) return;
      sockets.push_back(std::move(s));
      tcp::socket* mine = &sockets.back();
      serving.emplace_back([this, mine] { Serve(*mine); });
    }
  }

  void Serve(tcp::socket& s) {
    boost::beast::flat_buffer buffer;
    boost::system::error_code ec;
    while (true) {
      http::request<http::string_body> req;
      http::read(s, buffer, req, ec);
      if (ec) return;
      FakeAnswer a = answer(std::string(req.method_string()), std::string(req.target()));
      http::response<http::string_body> res{static_cast<http::status>(a.status), 11};
      res.set(http::field::content_type, "application/json");
      res.body() = a.body;
      res.prepare_payload();
      http::write(s, res, ec);
      if (ec) return;
    }
  }

  Answer answer;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::string url;
  std::mutex mu;
  bool stopping = false;
  std::list<tcp::socket> sockets;  // a list: Serve holds a pointer to its socket
  std::list<std::thread> serving;
  std::thread accepting;
};

FakeServer::FakeServer(Answer answer) : impl_(std::make_unique<Impl>(std::move(answer))) {}
FakeServer::~FakeServer() = default;
const std::string& FakeServer::url() const { return impl_->url; }

}  // namespace madeira::sdk::testing
