#include "delivery/http_sender.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace madeira::delivery {
namespace {

constexpr size_t kMaxIdleEasyHandles = 256;

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr const char* kUserAgent = "Madeira/" MADEIRA_VERSION;

// One request in flight; owns its easy handle and everything curl points into.
struct Transfer {
  HttpRequest request;
  HttpSender::Callback done;
  const AddressGuard* guard = nullptr;
  size_t max_body = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  HttpResponse response;
  bool guard_refused = false;  // the guard turned down an address curl tried
  bool body_overflow = false;  // we stopped reading a body past max_body on purpose
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  char error[CURL_ERROR_SIZE] = {};

  ~Transfer() {
    curl_slist_free_all(headers);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
};

// A descriptor curl asked us to wait on, registered with the reactor until curl says REMOVE
// (or closes it). `active` turns false on release so late handlers know to do nothing.
struct Watch {
  Watch(asio::io_context& ioc, curl_socket_t s) : socket(ioc), fd(s) {}
  tcp::socket socket;
  curl_socket_t fd;
  int want = 0;
  bool reading = false;
  bool writing = false;
  bool active = true;
};

bool HasLineBreak(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

TransportError MapError(CURLcode code, const Transfer& t) {
  switch (code) {
    case CURLE_OK:
      return TransportError::kNone;
    case CURLE_WRITE_ERROR:
      return t.body_overflow ? TransportError::kNone : TransportError::kOther;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportError::kTimeout;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportError::kDns;
    case CURLE_COULDNT_CONNECT:
      return t.guard_refused ? TransportError::kRefusedByGuard : TransportError::kConnectionRefused;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return TransportError::kConnectionReset;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return TransportError::kInvalidRequest;
    default:
      return TransportError::kOther;
  }
}

}  // namespace

class HttpSender::Impl {
 public:
  explicit Impl(SenderOptions options)
      : options_(std::move(options)), work_(ioc_.get_executor()), timer_(ioc_) {
    static std::once_flag global_init;
    std::call_once(global_init, [] {
      if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        throw std::runtime_error("curl_global_init failed");
      }
    });
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw std::runtime_error("curl_multi_init failed");
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Impl::OnTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, options_.max_connections);
    thread_ = std::thread([this] { ioc_.run(); });
  }

  ~Impl() { Stop(); }

  void Send(HttpRequest request, Callback done) {
    auto t = std::make_unique<Transfer>();
    t->request = std::move(request);
    t->done = std::move(done);
    {
      std::lock_guard lock(mu_);
      // Under the lock, every Send either precedes Shutdown in the queue or sees stopped_.
      if (!stopped_) {
        asio::post(ioc_, [this, t = std::move(t)]() mutable { Start(std::move(t)); });
        return;
      }
    }
    t->response.error = TransportError::kAborted;
    t->done(std::move(t->response));
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (!stopped_) {
        stopped_ = true;
        asio::post(ioc_, [this] { Shutdown(); });
      }
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Start(std::unique_ptr<Transfer> t) {
    const HttpRequest& req = t->request;
    t->guard = &options_.guard;
    t->max_body = options_.max_body_bytes;
    for (const auto& [name, value] : req.headers) {
      if (HasLineBreak(name) || HasLineBreak(value) || name.empty()) {
        t->response.error = TransportError::kInvalidRequest;
        t->response.error_detail = "header with a line break: " + name;
        return t->done(std::move(t->response));
      }
      t->headers = curl_slist_append(t->headers, (name + ": " + value).c_str());
    }
    // No "Expect: 100-continue" round trip on large bodies.
    t->headers = curl_slist_append(t->headers, "Expect:");

    CURL* e = TakeEasy();
    t->easy = e;
    const long timeout = static_cast<long>(std::max<core::Millis>(1, req.timeout_ms));
    curl_easy_setopt(e, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_PROXY, "");  // a proxy from the environment would bypass the guard
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, kUserAgent);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     std::min(timeout, static_cast<long>(options_.connect_timeout_ms)));
    if (req.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::OnWrite);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &Impl::OnOpenSocket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t.get());
    // The connection (and so this callback) can outlive the transfer in curl's cache.
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &Impl::OnCloseSocket);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    transfers_.emplace(e, std::move(t));
    curl_multi_add_handle(multi_, e);  // curl arms the timer; work starts from there
  }

  void Finish(CURL* e, CURLcode code) {
    auto it = transfers_.find(e);
    if (it == transfers_.end()) return;
    std::unique_ptr<Transfer> t = std::move(it->second);
    transfers_.erase(it);
    HttpResponse& r = t->response;
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    r.status = static_cast<int>(status);
    r.error = MapError(code, *t);
    if (r.error != TransportError::kNone) {
      r.error_detail = t->error[0] != '\0' ? t->error : curl_easy_strerror(code);
    }
    curl_header* h = nullptr;
    if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK) {
      r.retry_after = h->value;
    }
    r.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t->started)
                        .count();
    curl_multi_remove_handle(multi_, e);
    t->easy = nullptr;
    GiveBackEasy(e);
    t->done(std::move(r));
  }

  // Easy handles are reused: setting one up costs more than the request on a warm connection.
  CURL* TakeEasy() {
    if (idle_easy_.empty()) {
      CURL* e = curl_easy_init();
      if (e == nullptr) throw std::runtime_error("curl_easy_init failed");  // out of memory
      return e;
    }
    CURL* e = idle_easy_.back();
    idle_easy_.pop_back();
    return e;
  }

  void GiveBackEasy(CURL* e) {
    if (idle_easy_.size() >= kMaxIdleEasyHandles) {
      curl_easy_cleanup(e);
      return;
    }
    curl_easy_reset(e);  // options back to defaults; the multi handle keeps the connections
    idle_easy_.push_back(e);
  }

  void Drain() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg == CURLMSG_DONE) Finish(msg->easy_handle, msg->data.result);
    }
  }

  void Action(curl_socket_t fd, int events) {
    int running = 0;
    curl_multi_socket_action(multi_, fd, events, &running);
    Drain();
  }

  void Arm(const std::shared_ptr<Watch>& w, tcp::socket::wait_type type) {
    const bool read = type == tcp::socket::wait_read;
    bool& pending = read ? w->reading : w->writing;
    if (pending) return;
    pending = true;
    w->socket.async_wait(type, [this, w, read, type](const boost::system::error_code& ec) {
      (read ? w->reading : w->writing) = false;
      if (!w->active || ec == asio::error::operation_aborted) return;
      Action(w->fd, ec ? CURL_CSELECT_ERR : (read ? CURL_CSELECT_IN : CURL_CSELECT_OUT));
      if (w->active && (w->want & (read ? CURL_POLL_IN : CURL_POLL_OUT)) != 0) Arm(w, type);
    });
  }

  // Takes a descriptor back from the reactor without closing it: curl owns it.
  void Forget(curl_socket_t fd) {
    auto it = watches_.find(fd);
    if (it == watches_.end()) return;
    it->second->active = false;
    boost::system::error_code ec;
    it->second->socket.release(ec);
    watches_.erase(it);
  }

  static int OnSocket(CURL*, curl_socket_t fd, int what, void* self_ptr, void*) {
    auto* self = static_cast<Impl*>(self_ptr);
    if (what == CURL_POLL_REMOVE) {
      self->Forget(fd);
      return 0;
    }
    std::shared_ptr<Watch>& w = self->watches_[fd];
    if (!w) {
      w = std::make_shared<Watch>(self->ioc_, fd);
      boost::system::error_code ec;
      // The protocol only labels the socket object; a wait works on any descriptor.
      w->socket.assign(tcp::v4(), fd, ec);
      if (ec) {
        self->watches_.erase(fd);
        return -1;  // curl fails the transfers on this socket
      }
    }
    std::shared_ptr<Watch> keep = w;  // Arm may run curl, which may erase the map entry
    keep->want = what;
    if ((what & CURL_POLL_IN) != 0) self->Arm(keep, tcp::socket::wait_read);
    if ((what & CURL_POLL_OUT) != 0) self->Arm(keep, tcp::socket::wait_write);
    return 0;
  }

  // curl calls this on every handle added and every step; re-arming the steady timer each time
  // costs a timerfd_settime syscall, so: "now" is a posted action (coalesced), and a later
  // deadline than the one already armed only moves `timer_due_` (the wait re-arms on firing).
  static int OnTimer(CURLM*, long timeout_ms, void* self_ptr) {
    auto* self = static_cast<Impl*>(self_ptr);
    if (timeout_ms < 0) {
      self->timer_due_.reset();
      return 0;
    }
    if (timeout_ms == 0) {
      self->timer_due_.reset();
      if (!self->kick_posted_) {
        self->kick_posted_ = true;
        asio::post(self->ioc_, [self] {
          self->kick_posted_ = false;
          if (self->multi_ != nullptr) self->Action(CURL_SOCKET_TIMEOUT, 0);
        });
      }
      return 0;
    }
    const auto due = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    self->timer_due_ = due;
    if (!self->timer_armed_ || self->timer_.expiry() > due) self->ArmTimer(due);
    return 0;
  }

  void ArmTimer(std::chrono::steady_clock::time_point at) {
    timer_armed_ = true;
    timer_.expires_at(at);  // a wait already pending ends with operation_aborted
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      timer_armed_ = false;
      if (!timer_due_ || multi_ == nullptr) return;
      if (std::chrono::steady_clock::now() < *timer_due_) return ArmTimer(*timer_due_);
      timer_due_.reset();
      Action(CURL_SOCKET_TIMEOUT, 0);
    });
  }

  // Every connection attempt passes here, after DNS: the guard sees the real peer address.
  static curl_socket_t OnOpenSocket(void* transfer_ptr, curlsocktype, curl_sockaddr* addr) {
    auto* t = static_cast<Transfer*>(transfer_ptr);
    tcp::endpoint peer;
    if ((addr->family != AF_INET && addr->family != AF_INET6) || addr->addrlen > peer.capacity()) {
      t->guard_refused = true;
      return CURL_SOCKET_BAD;
    }
    std::memcpy(peer.data(), &addr->addr, addr->addrlen);
    peer.resize(addr->addrlen);
    if (!t->guard->Allows(peer.address())) {
      t->guard_refused = true;
      return CURL_SOCKET_BAD;
    }
    return ::socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
  }

  static int OnCloseSocket(void* self_ptr, curl_socket_t fd) {
    static_cast<Impl*>(self_ptr)->Forget(fd);  // leave the reactor before the number is reused
    return ::close(fd);
  }

  static size_t OnWrite(char* data, size_t size, size_t count, void* transfer_ptr) {
    auto* t = static_cast<Transfer*>(transfer_ptr);
    const size_t len = size * count;
    const size_t room = t->max_body - t->response.body.size();
    if (len > room) {
      // Stop reading: the rest would be thrown away, and a huge body only costs time.
      t->response.body.append(data, room);
      t->response.body_truncated = true;
      t->body_overflow = true;
      return 0;
    }
    t->response.body.append(data, len);
    return len;
  }

  void Shutdown() {
    std::map<CURL*, std::unique_ptr<Transfer>> aborted = std::move(transfers_);
    transfers_.clear();
    for (auto& [e, t] : aborted) {
      curl_multi_remove_handle(multi_, e);
      t->response.error = TransportError::kAborted;
      t->response.error_detail = "sender stopped";
      t->done(std::move(t->response));
    }
    aborted.clear();
    for (CURL* e : idle_easy_) curl_easy_cleanup(e);
    idle_easy_.clear();
    curl_multi_cleanup(multi_);  // closes cached connections through OnCloseSocket
    multi_ = nullptr;
    while (!watches_.empty()) Forget(watches_.begin()->first);
    timer_.cancel();
    work_.reset();
  }

  SenderOptions options_;
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::steady_timer timer_;
  // Only touched on the I/O thread: curl's requested deadline, and whether a wait is out.
  std::optional<std::chrono::steady_clock::time_point> timer_due_;
  bool timer_armed_ = false;
  bool kick_posted_ = false;
  std::vector<CURL*> idle_easy_;
  CURLM* multi_ = nullptr;
  // Only touched on the I/O thread.
  std::map<curl_socket_t, std::shared_ptr<Watch>> watches_;
  std::map<CURL*, std::unique_ptr<Transfer>> transfers_;
  std::mutex mu_;
  bool stopped_ = false;  // guarded by mu_
  std::thread thread_;
};

HttpSender::HttpSender(SenderOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpSender::~HttpSender() = default;
void HttpSender::Send(HttpRequest request, Callback done) {
  impl_->Send(std::move(request), std::move(done));
}
void HttpSender::Stop() { impl_->Stop(); }

}  // namespace madeira::delivery
