#include "delivery/deliverer.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/serialize.hpp>
#include <deque>
#include <limits>
#include <map>

#include "core/log.h"
#include "delivery/outcome.h"
#include "delivery/rate_limiter.h"
#include "delivery/standard_webhooks.h"

namespace madeira::delivery {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using core::Result;

constexpr int kMaxLeaseBatch = 100;
constexpr Millis kRetryPollAfterErrorMs = 1000;
constexpr Millis kMinAttemptTimeoutMs = 1000;
// Send sets a request's timeout this much short of its lease's deadline.
constexpr Millis kLeaseSendMarginMs = 1000;
// How far ahead a pump may reserve an endpoint's shared tokens.
constexpr Millis kMaxSharedWaitMs = 2000;

const std::string kUserAgent = std::string("Madeira/") + MADEIRA_VERSION;

}  // namespace

class Deliverer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::any_io_executor executor, engine::Engine& engine, store::Store& store,
       WebhookService& service, HttpSender& sender, const core::Clock& clock,
       core::Metrics& metrics, DelivererConfig config)
      : strand_(asio::make_strand(executor)),
        engine_(engine),
        store_(store),
        shared_limits_(store.SharesRateLimits()),
        service_(service),
        sender_(sender),
        clock_(clock),
        metrics_(metrics),
        config_(std::move(config)) {}

  void Start() {
    std::weak_ptr<Impl> weak = shared_from_this();
    service_.directory().SetListener([weak](const std::string& id, EndpointDirectory::Snapshot ep) {
      if (auto self = weak.lock()) {
        asio::post(self->strand_, [self, id, ep] { self->OnEndpoint(id, ep); });
      }
    });
    for (const auto& ep : service_.directory().All()) {
      asio::post(strand_, [self = shared_from_this(), ep] { self->OnEndpoint(ep->id, ep); });
    }
  }

  void Stop() {
    asio::post(strand_, [self = shared_from_this()] {
      self->stopped_ = true;
      for (auto& [id, pump] : self->pumps_) {
        pump->timer.cancel();
        while (!pump->held.empty()) {
          self->GiveBack(pump,
                         "the deliverer stopped before the endpoint's rate limit let it send");
        }
      }
    });
  }

 private:
  // One endpoint's sending state; touched only on strand_.
  struct Pump {
    Pump(asio::strand<asio::any_io_executor>& strand, EndpointDirectory::Snapshot ep, Millis now,
         CircuitBreakerOptions breaker_options)
        : endpoint(std::move(ep)),
          limiter(endpoint->rate_limit.value_or(RateLimit{}), endpoint->max_in_flight, now),
          breaker(breaker_options),
          timer(strand) {}
    EndpointDirectory::Snapshot endpoint;  // null once the endpoint is deleted
    EndpointLimiter limiter;
    CircuitBreaker breaker;
    bool polling = false;        // a lease call is outstanding
    bool holding_probe = false;  // that call holds the half-open breaker's one probe
    int reserved = 0;            // admissions the limiter gave that call (one per lease)
    Millis reserved_at = 0;
    // Leased under the local limiter, waiting for the shared bucket's tokens (shared stores).
    std::deque<store::Lease> held;
    bool asking = false;  // a TakeTokens call is outstanding
    int granted = 0;      // the first `granted` held ones have their tokens, due at send_at
    Millis send_at = 0;
    asio::steady_timer timer;
    Millis timer_due = std::numeric_limits<Millis>::max();
  };
  using PumpPtr = std::shared_ptr<Pump>;

  // What an attempt needs to finish after the response, besides the pump.
  struct Attempt {
    std::string lease_id;
    std::string task_id;
    std::string trace_id;
  };

  void OnEndpoint(const std::string& id, EndpointDirectory::Snapshot ep) {
    auto it = pumps_.find(id);
    if (!ep) {
      if (it != pumps_.end()) {
        it->second->endpoint = nullptr;
        it->second->timer.cancel();
        SendHeld(it->second, it->second->held.size());  // each fails: the endpoint was deleted
        pumps_.erase(it);
      }
      return;
    }
    const Millis now = clock_.Now();
    if (it == pumps_.end()) {
      it = pumps_.emplace(id, std::make_shared<Pump>(strand_, ep, now, config_.breaker)).first;
    } else {
      it->second->endpoint = ep;
      it->second->limiter.Update(ep->rate_limit.value_or(RateLimit{}), ep->max_in_flight, now);
    }
    Poll(it->second);
  }

  // Leases as many deliveries as the endpoint may send now, or waits for the reason it cannot.
  void Poll(const PumpPtr& pump) {
    if (!stopped_ && !pump->held.empty()) return TakeSharedTokens(pump);
    if (stopped_ || !pump->endpoint || !pump->endpoint->enabled || pump->polling) return;
    const Millis now = clock_.Now();
    EndpointLimiter& limiter = pump->limiter;
    int n = std::min(limiter.Available(now), kMaxLeaseBatch);
    if (n <= 0) {
      // In-flight full: a completion polls again. Out of tokens: wake when one is earned.
      if (pump->endpoint->max_in_flight <= 0 ||
          limiter.in_flight() < pump->endpoint->max_in_flight) {
        ArmTimer(pump, limiter.NextTokenAt(now));
      }
      return;
    }
    if (pump->breaker.state() != CircuitBreaker::State::kClosed) {
      auto decision = pump->breaker.Allow(now);
      if (!decision.allowed) {
        if (decision.retry_at > now) ArmTimer(pump, decision.retry_at);
        return;  // else the probe is out: its completion polls again
      }
      n = 1;
      pump->holding_probe = true;
    }
    // Admitted now, not when the lease answers: the lease's round trip must not cost tokens.
    n = limiter.Reserve(n, now);
    pump->reserved = n;
    pump->reserved_at = now;
    pump->polling = true;
    engine::LeaseParams params;
    params.worker_id = config_.worker_id;
    params.queues = {pump->endpoint->Queue()};
    params.max_tasks = n;
    params.wait_ms = config_.poll_wait_ms;
    engine_.Lease(std::move(params),
                  [self = shared_from_this(), pump](Result<std::vector<store::Lease>> leases) {
                    asio::post(self->strand_, [self, pump, leases = std::move(leases)]() mutable {
                      self->OnLeased(pump, std::move(leases));
                    });
                  });
  }

  void OnLeased(const PumpPtr& pump, Result<std::vector<store::Lease>> leases) {
    pump->polling = false;
    const bool had_probe = std::exchange(pump->holding_probe, false);
    const int reserved = std::exchange(pump->reserved, 0);
    const Millis now = clock_.Now();
    if (!leases) {
      pump->limiter.CancelReservations(reserved, now);
      if (had_probe) pump->breaker.CancelProbe();
      core::Log(core::LogLevel::kWarn, "delivery lease failed",
                {{"error", leases.error().message}});
      ArmTimer(pump, clock_.Now() + kRetryPollAfterErrorMs);
      return;
    }
    if (leases->empty() && had_probe) pump->breaker.CancelProbe();
    const int used = std::min(reserved, static_cast<int>(leases->size()));
    pump->limiter.CancelReservations(reserved - used, now);
    const bool hold = pump->endpoint && UsesSharedBucket(*pump->endpoint);
    for (int i = 0; i < used; ++i) {
      pump->limiter.UseReservation(pump->reserved_at, now);
      if (hold) {
        pump->held.push_back(std::move((*leases)[i]));  // the Poll below asks for their tokens
      } else {
        Send(pump, (*leases)[i]);
      }
    }
    for (size_t i = used; i < leases->size(); ++i) {  // not expected: max_tasks was `reserved`
      Attempt attempt{(*leases)[i].lease_id, (*leases)[i].task.spec.task_id,
                      (*leases)[i].task.spec.trace_id};
      FailAttempt(attempt, core::RetryMode::kBackoff, "webhook.rate_limited",
                  "the endpoint's rate limit was reached", {});
    }
    Poll(pump);
  }

  bool UsesSharedBucket(const Endpoint& ep) const {
    return shared_limits_ && ep.rate_limit && ep.rate_limit->per_second > 0;
  }

  // Held deliveries take their tokens from the store's shared bucket (the local limiter admitted
  // them already, so one process never exceeds the rate by itself). The bucket reserves the
  // tokens due within what the first lease can wait; they are sent when the last one is due.
  void TakeSharedTokens(const PumpPtr& pump) {
    if (pump->asking || pump->held.empty()) return;
    if (!pump->endpoint || !pump->endpoint->enabled || !UsesSharedBucket(*pump->endpoint)) {
      return SendHeld(pump, pump->held.size());  // Send fails them, or the limit was removed
    }
    const Millis now = clock_.Now();
    if (pump->granted > 0) {
      if (now < pump->send_at) return ArmTimer(pump, pump->send_at);
      SendHeld(pump, pump->granted);
      if (pump->held.empty()) return Poll(pump);
    }
    while (!pump->held.empty() && SendBy(pump->held.front()) < now) {
      GiveBack(pump, "the endpoint's rate limit, shared by the processes, left no token in time");
    }
    if (pump->held.empty()) return Poll(pump);
    const Endpoint& ep = *pump->endpoint;
    store::TokenRequest request;
    request.bucket = ep.Queue();
    request.per_second = ep.rate_limit->per_second;
    request.burst = ep.rate_limit->burst;
    request.wanted = static_cast<int>(pump->held.size());
    request.max_wait_ms = std::min(kMaxSharedWaitMs, SendBy(pump->held.front()) - now);
    pump->asking = true;
    store_.TakeTokens(std::move(request),
                      [self = shared_from_this(), pump](Result<store::TokenGrant> grant) mutable {
                        asio::post(self->strand_, [self, pump, grant = std::move(grant)] {
                          self->OnTokens(pump, grant);
                        });
                      });
  }

  void OnTokens(const PumpPtr& pump, const Result<store::TokenGrant>& grant) {
    pump->asking = false;
    const Millis now = clock_.Now();
    if (!grant) {
      if (!std::exchange(shared_bucket_down_, true)) {
        core::Log(core::LogLevel::kWarn,
                  "shared rate limits unavailable: each process keeps to the rate by itself",
                  {{"error", grant.error().message}});
      }
      SendHeld(pump, pump->held.size());  // under the local limiter alone
      return Poll(pump);
    }
    if (std::exchange(shared_bucket_down_, false)) {
      core::Log(core::LogLevel::kInfo, "shared rate limits answer again");
    }
    if (grant->granted > 0) {
      pump->granted = std::min(grant->granted, static_cast<int>(pump->held.size()));
      pump->send_at = now + grant->wait_ms;
      return Poll(pump);  // sends them now, or when they are due
    }
    ArmTimer(pump, now + std::max<Millis>(grant->wait_ms, 1));  // asks again then
  }

  // The latest time a held delivery can still be sent within its lease (see Send's timeout).
  static Millis SendBy(const store::Lease& lease) {
    return lease.deadline - kMinAttemptTimeoutMs - kLeaseSendMarginMs;
  }

  void SendHeld(const PumpPtr& pump, size_t n) {
    pump->granted = 0;
    for (size_t i = 0; i < n && !pump->held.empty(); ++i) {
      store::Lease lease = std::move(pump->held.front());
      pump->held.pop_front();
      Send(pump, lease);
    }
  }

  // Fails the first held delivery back to its queue, unsent (a back-off attempt).
  void GiveBack(const PumpPtr& pump, std::string message) {
    const store::Lease& lease = pump->held.front();
    pump->limiter.Release();
    FailAttempt({lease.lease_id, lease.task.spec.task_id, lease.task.spec.trace_id},
                core::RetryMode::kBackoff, "webhook.rate_limited", std::move(message), {});
    pump->held.pop_front();
    pump->granted = std::max(0, pump->granted - 1);
  }

  // Sends one leased delivery under an admission already taken from the limiter.
  void Send(const PumpPtr& pump, const store::Lease& lease) {
    const Millis now = clock_.Now();
    Attempt attempt{lease.lease_id, lease.task.spec.task_id, lease.task.spec.trace_id};
    if (!pump->endpoint) {
      pump->limiter.Release();
      return FailAttempt(attempt, core::RetryMode::kNever, "webhook.endpoint_deleted",
                         "the endpoint was deleted", {});
    }
    const Endpoint& ep = *pump->endpoint;
    if (!ep.enabled) {
      // Leased by a poll that was parked when the endpoint was disabled: not sent; back to
      // the queue, where it waits for the endpoint to be enabled again.
      pump->limiter.Release();
      return FailAttempt(attempt, core::RetryMode::kBackoff, "webhook.endpoint_disabled",
                         "the endpoint is disabled; not sent", {});
    }
    auto payload = DecodeDeliveryPayload(lease.task.spec.payload);
    if (!payload) {
      pump->limiter.Release();
      return FailAttempt(attempt, core::RetryMode::kNever, "webhook.bad_payload",
                         payload.error().message, {});
    }
    const std::string body = json::serialize(payload->body);
    auto signature = Sign(payload->event_id, now / 1000, body, ep.secrets);
    if (!signature) {
      pump->limiter.Release();
      return FailAttempt(attempt, core::RetryMode::kNever, "webhook.bad_secret",
                         signature.error().message, {});
    }
    HttpRequest request;
    request.url = payload->url.value_or(ep.url);
    request.body = body;
    request.timeout_ms = std::max(
        kMinAttemptTimeoutMs, std::min(ep.timeout_ms, lease.deadline - now - kLeaseSendMarginMs));
    request.headers = {{"Content-Type", "application/json"},
                       {"User-Agent", kUserAgent},
                       {std::string(kWebhookIdHeader), payload->event_id},
                       {std::string(kWebhookTimestampHeader), std::to_string(now / 1000)},
                       {std::string(kWebhookSignatureHeader), *signature},
                       {"X-Trace-Id", payload->trace_id}};
    for (const auto& header : ep.headers) request.headers.push_back(header);
    sender_.Send(std::move(request), [self = shared_from_this(), pump,
                                      attempt = std::move(attempt)](HttpResponse response) mutable {
      asio::post(self->strand_, [self, pump, attempt = std::move(attempt),
                                 response = std::move(response)]() mutable {
        self->OnResponse(pump, attempt, response);
      });
    });
  }

  void OnResponse(const PumpPtr& pump, const Attempt& attempt, const HttpResponse& response) {
    const Millis now = clock_.Now();
    pump->limiter.Release();
    const EndpointDirectory::Snapshot ep = pump->endpoint;
    const std::string endpoint_id = ep ? ep->id : "deleted";
    Outcome outcome = Classify(response, ep ? ep->success : std::optional<SuccessCheck>{}, now);
    // The breaker counts a receiver that is down, not one that answers "no" or "slow down".
    const bool receiver_down =
        outcome.kind == OutcomeKind::kRetryable && outcome.http_status != 429;
    if (receiver_down) {
      pump->breaker.RecordFailure(now);
    } else {
      pump->breaker.RecordSuccess();
    }
    const std::string result(OutcomeKindName(outcome.kind));
    metrics_.Inc(metric::kDeliveries, {{"endpoint", endpoint_id}, {"result", result}});
    metrics_.Observe(metric::kDeliveryDuration, {{"endpoint", endpoint_id}},
                     static_cast<double>(response.duration_ms) / 1000.0);
    if (ep && !ep->direct) {
      if (outcome.kind == OutcomeKind::kSuccess) {
        service_.RecordSuccess(ep->id);
      } else {
        service_.RecordFailure(ep->id, outcome.reason);
      }
      // The report may have disabled the endpoint; the listener's update is still queued on
      // this strand, and the Poll below must not lease for a disabled endpoint meanwhile.
      if (auto fresh = service_.directory().Get(ep->id)) pump->endpoint = fresh;
    }
    store::AttemptDetail detail{outcome.http_status,
                                outcome.excerpt.empty() && !outcome.http_status
                                    ? std::nullopt
                                    : std::optional<std::string>(outcome.excerpt)};
    if (outcome.kind == OutcomeKind::kSuccess) {
      engine_.Ack(attempt.lease_id, std::nullopt, std::move(detail),
                  [attempt](Result<Unit> r) { LogIfLost(attempt, r); });
    } else {
      core::Failure failure = ToFailure(outcome);
      engine::FailParams params;
      params.lease_id = attempt.lease_id;
      params.error = std::move(failure.error);
      params.retry = failure.mode;
      params.retry_after_ms = failure.retry_after;
      params.retry_after_is_floor = failure.retry_after_is_floor;
      params.detail = std::move(detail);
      engine_.Fail(std::move(params),
                   [attempt](Result<engine::FailResult> r) { LogIfLost(attempt, r); });
    }
    Poll(pump);
  }

  void FailAttempt(const Attempt& attempt, core::RetryMode mode, std::string type,
                   std::string message, store::AttemptDetail detail) {
    engine::FailParams params;
    params.lease_id = attempt.lease_id;
    params.error = json::serialize(json::object{{"type", type}, {"message", message}});
    params.retry = mode;
    params.detail = std::move(detail);
    engine_.Fail(std::move(params),
                 [attempt](Result<engine::FailResult> r) { LogIfLost(attempt, r); });
  }

  template <typename T>
  static void LogIfLost(const Attempt& attempt, const Result<T>& r) {
    if (r) return;
    core::Log(core::LogLevel::kWarn, "delivery outcome not recorded",
              {{"task_id", attempt.task_id}, {"error", r.error().message}}, attempt.trace_id);
  }

  void ArmTimer(const PumpPtr& pump, Millis due) {
    if (stopped_ || pump->timer_due <= due) return;
    pump->timer_due = due;
    pump->timer.expires_after(std::chrono::milliseconds(std::max<Millis>(0, due - clock_.Now())));
    pump->timer.async_wait([self = shared_from_this(), pump](boost::system::error_code ec) {
      if (ec) return;  // cancelled: superseded by a sooner wake-up, or stopped
      pump->timer_due = std::numeric_limits<Millis>::max();
      self->Poll(pump);
    });
  }

  asio::strand<asio::any_io_executor> strand_;
  engine::Engine& engine_;
  store::Store& store_;
  const bool shared_limits_;         // the store keeps rate limits shared by processes
  bool shared_bucket_down_ = false;  // its last TakeTokens failed (logged once)
  WebhookService& service_;
  HttpSender& sender_;
  const core::Clock& clock_;
  core::Metrics& metrics_;
  DelivererConfig config_;
  bool stopped_ = false;
  std::map<std::string, PumpPtr> pumps_;
};

Deliverer::Deliverer(boost::asio::any_io_executor executor, engine::Engine& engine,
                     store::Store& store, WebhookService& service, HttpSender& sender,
                     const core::Clock& clock, core::Metrics& metrics, DelivererConfig config)
    : impl_(std::make_shared<Impl>(executor, engine, store, service, sender, clock, metrics,
                                   std::move(config))) {}

Deliverer::~Deliverer() { impl_->Stop(); }

void Deliverer::Start() { impl_->Start(); }
void Deliverer::Stop() { impl_->Stop(); }

}  // namespace madeira::delivery
