#include "delivery/webhook_service.h"

#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <set>

#include "core/digest.h"
#include "core/envelope.h"
#include "core/field_reader.h"
#include "core/ids.h"
#include "core/log.h"
#include "core/time.h"
#include "delivery/payload_template.h"
#include "delivery/source_signature.h"
#include "delivery/standard_webhooks.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;
using core::ErrorCode;
using core::FieldReader;
using core::MakeError;
using core::Presence;
using core::Result;

// An event may carry this much besides its payload (ids, type, trace id, target).
constexpr size_t kEventOverheadBytes = 4096;
// The lease outlives the HTTP attempt by this much, so an attempt never races its own expiry.
constexpr Millis kLeaseMarginMs = 5000;
constexpr size_t kMaxIdBytes = 200;

std::string DirectEndpointId(std::string_view source) { return "direct:" + std::string(source); }

}  // namespace

std::string EncodeDeliveryPayload(const DeliveryPayload& p) {
  json::object o{{"endpoint_id", p.endpoint_id}, {"event_id", p.event_id},
                 {"event_type", p.event_type},   {"source", p.source},
                 {"trace_id", p.trace_id},       {"body", p.body}};
  if (p.url) o["url"] = *p.url;
  return json::serialize(o);
}

Result<DeliveryPayload> DecodeDeliveryPayload(std::string_view text) {
  auto parsed = core::ParseJson(text);
  if (!parsed || !parsed->is_object()) {
    return MakeError(ErrorCode::kInvalidJson, "a delivery payload is a JSON object", "payload");
  }
  FieldReader r(parsed->as_object(), "payload.");
  DeliveryPayload p;
  p.endpoint_id = r.String("endpoint_id", Presence::kRequired).value_or("");
  p.event_id = r.String("event_id", Presence::kRequired).value_or("");
  p.event_type = r.String("event_type", Presence::kOptional).value_or("");
  p.source = r.String("source", Presence::kOptional).value_or("");
  p.trace_id = r.String("trace_id", Presence::kOptional).value_or("");
  p.url = r.String("url", Presence::kOptional);
  if (const json::value* body = r.Value("body", Presence::kOptional)) p.body = *body;
  if (!r.ok()) return *r.error();
  return p;
}

WebhookService::WebhookService(engine::Engine& engine, store::Store& store,
                               const core::Clock& clock, core::Random& ids, core::Random& secrets,
                               core::Metrics& metrics, WebhookConfig config)
    : engine_(engine),
      store_(store),
      clock_(clock),
      ids_(ids),
      secrets_(secrets),
      metrics_(metrics),
      config_(std::move(config)),
      replays_(2 * kSourceToleranceSeconds * 1000) {
  metrics_.Describe(metric::kEventsReceived, "counter",
                    "Inbound events by source and result (accepted, duplicate, bad_signature, "
                    "invalid).");
  metrics_.Describe(metric::kDeliveries, "counter",
                    "Webhook delivery attempts by endpoint and result.");
  metrics_.Describe(metric::kDeliveryDuration, "histogram",
                    "Seconds from request start to the end of the response, by endpoint.");
}

void WebhookService::Start(Callback<Unit> done) {
  for (const SourceConfig& source : config_.sources) {
    if (!source.allow_target_uri) continue;
    Endpoint direct;
    direct.id = DirectEndpointId(source.id);
    direct.direct = true;
    direct.secrets = source.target_secrets;
    direct.event_types = {"*"};
    direct.sources = {source.id};
    ApplyPolicy(direct);
    directory_.Put(std::move(direct));
  }
  {
    std::lock_guard lock(state_mu_);
    reloading_ = true;  // the first load: a change announced meanwhile is read after it
  }
  // Set before that load, so that nothing another process changes is missed in between.
  store_.SetChangeHandler([this](std::string_view what) {
    if (what == store::kEndpointsChanged) RequestReload();
  });
  LoadEndpoints(std::move(done));
}

WebhookService::~WebhookService() {
  store_.SetChangeHandler(nullptr);  // returns once no notification is running
  std::unique_lock lock(state_mu_);
  stopping_ = true;
  settled_cv_.wait(lock, [&] { return !reloading_ && writes_in_flight_ == 0; });
}

// ---- endpoints changed by other processes ----

void WebhookService::RequestReload() {
  {
    std::lock_guard lock(state_mu_);
    if (stopping_) return;
    // A read overlapping a write of ours could bring back what that write replaces.
    if (reloading_ || writes_in_flight_ > 0) {
      reload_again_ = true;
      return;
    }
    reloading_ = true;
  }
  LoadEndpoints(nullptr);
}

// Only enqueues a store read: the notifying thread (the store's subscriber) is never held, and
// the directory is updated on the store's callback thread, as Start and Save do.
void WebhookService::LoadEndpoints(Callback<Unit> done) {
  uint64_t writes_before = 0;
  {
    std::lock_guard lock(state_mu_);
    writes_before = writes_done_;
  }
  store_.ListEndpoints([this, done = std::move(done),
                        writes_before](Result<std::vector<store::EndpointRecord>> records) {
    bool again = false;
    {
      std::lock_guard lock(state_mu_);
      if (records && writes_in_flight_ == 0 && writes_done_ == writes_before) {
        ApplyStored(*records);
      } else if (records) {
        reload_again_ = true;  // a write of ours overlapped the read: read again after it
      }
      reloading_ = false;
      if (reload_again_ && writes_in_flight_ == 0 && !stopping_) {
        reload_again_ = false;
        reloading_ = again = true;
      }
      settled_cv_.notify_all();
    }
    if (!records && !done) {
      // The next announcement, or the store's periodic one, reads them again.
      core::Log(core::LogLevel::kWarn, "endpoints not reloaded",
                {{"error", records.error().message}});
    }
    if (again) LoadEndpoints(nullptr);
    if (done) done(records ? Result<Unit>(Unit{}) : Result<Unit>(records.error()));
  });
}

void WebhookService::ApplyStored(const std::vector<store::EndpointRecord>& records) {
  std::set<std::string> stored;
  for (const auto& record : records) {
    stored.insert(record.endpoint_id);
    auto ep = FromRecord(record);
    if (!ep) {
      core::Log(core::LogLevel::kError, "stored endpoint skipped",
                {{"endpoint_id", record.endpoint_id}, {"error", ep.error().message}});
      continue;
    }
    auto current = directory_.Get(ep->id);
    if (current && !current->direct) {
      store::EndpointRecord known = ToRecord(*current), fresh = ToRecord(*ep);
      if (known.config == fresh.config && known.created_at == fresh.created_at &&
          known.updated_at == fresh.updated_at) {
        continue;  // unchanged: the deliverer's pump keeps its state untouched
      }
    }
    ApplyPolicy(*ep);
    directory_.Put(std::move(*ep));
  }
  for (const auto& ep : directory_.All()) {
    if (!ep->direct && stored.count(ep->id) == 0) directory_.Remove(ep->id);
  }
}

void WebhookService::BeginWrite() {
  std::lock_guard lock(state_mu_);
  ++writes_in_flight_;
}

bool WebhookService::EndWriteLocked() {
  --writes_in_flight_;
  ++writes_done_;
  settled_cv_.notify_all();
  if (writes_in_flight_ > 0 || !reload_again_ || reloading_ || stopping_) return false;
  reload_again_ = false;
  reloading_ = true;
  return true;
}

const SourceConfig* WebhookService::FindSource(std::string_view id) const {
  for (const SourceConfig& s : config_.sources) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

// ---- events ----

void WebhookService::AcceptEvent(InboundEvent in, Callback<EventAccepted> done) {
  const Millis now = clock_.Now();
  const SourceConfig* source = FindSource(in.source);
  // An unknown source's id is not a label: it would let anyone grow the series set.
  const std::string label = source != nullptr ? source->id : "unknown";
  auto reject = [&](core::Error error, std::string_view result) {
    metrics_.Inc(metric::kEventsReceived, {{"source", label}, {"result", std::string(result)}});
    done(std::move(error));
  };
  if (in.body.size() > config_.max_payload_bytes + kEventOverheadBytes) {
    return reject(MakeError(ErrorCode::kRequestTooLarge, "the event is over the size limit"),
                  "invalid");
  }
  // One answer for every signature problem: no hint whether the source, time or HMAC failed.
  auto bad_signature = MakeError(ErrorCode::kBadSignature, "the event signature was rejected");
  if (source == nullptr) return reject(bad_signature, "bad_signature");
  if (!VerifySourceEvent(in.timestamp, in.signature, in.body, source->secrets, now)) {
    return reject(bad_signature, "bad_signature");
  }
  std::string request_key = source->id + "\n" + in.timestamp + "\n" + in.signature;
  if (replays_.Seen(request_key, now)) return reject(bad_signature, "bad_signature");

  auto parsed = core::ParseJson(in.body);
  if (!parsed) return reject(parsed.error(), "invalid");
  if (!parsed->is_object()) {
    return reject(MakeError(ErrorCode::kInvalidJson, "the event must be a JSON object"), "invalid");
  }
  FieldReader r(parsed->as_object());
  r.AllowOnly({"event_id", "event_type", "payload", "trace_id", "target_uri"});
  store::EventRecord event;
  event.source = source->id;
  event.received_at = now;
  event.event_id = r.String("event_id", Presence::kRequired).value_or("");
  event.event_type = r.String("event_type", Presence::kRequired).value_or("");
  const json::value* payload = r.Value("payload", Presence::kRequired);
  auto trace_id = r.String("trace_id", Presence::kOptional);
  event.target_uri = r.String("target_uri", Presence::kOptional);
  const auto bad_id = [](const std::string& s) {
    return s.empty() || s.size() > kMaxIdBytes || core::HasControlCharacter(s);
  };
  if (r.ok() && bad_id(event.event_id)) {
    r.Fail(ErrorCode::kInvalidField, "1 to 200 characters, none of them a control character",
           "event_id");
  }
  if (r.ok() && bad_id(event.event_type)) {
    r.Fail(ErrorCode::kInvalidField, "1 to 200 characters, none of them a control character",
           "event_type");
  }
  // The event's trace_id becomes its deliveries' (tasks'): the same rule as a task's.
  if (r.ok() && trace_id && !core::IsValidTraceId(*trace_id)) {
    r.Fail(ErrorCode::kInvalidField, "1 to 128 visible ASCII characters", "trace_id");
  }
  if (r.ok() && event.target_uri) {
    auto url = boost::urls::parse_absolute_uri(*event.target_uri);
    if (!source->allow_target_uri) {
      r.Fail(ErrorCode::kInvalidField, "this source may not name targets", "target_uri");
    } else if (!url || (url->scheme() != "http" && url->scheme() != "https") ||
               url->encoded_host().empty()) {
      r.Fail(ErrorCode::kInvalidField, "must be an absolute http:// or https:// URL", "target_uri");
    }
  }
  if (!r.ok()) return reject(*r.error(), "invalid");
  event.payload = json::serialize(*payload);
  if (event.payload.size() > config_.max_payload_bytes) {
    return reject(MakeError(ErrorCode::kRequestTooLarge, "the event payload is over the limit"),
                  "invalid");
  }
  if (core::JsonDepth(*payload) > config_.max_depth) {
    return reject(MakeError(ErrorCode::kPayloadTooDeep, "the payload nests too deeply", "payload"),
                  "invalid");
  }
  if (trace_id) {
    event.trace_id = *trace_id;
  } else {
    std::lock_guard lock(random_mu_);
    event.trace_id = core::MakeOrderedToken(now, ids_);
  }

  auto deliveries = Route(event, *payload, nullptr);
  const int count = static_cast<int>(deliveries.size());
  engine_.SubmitEvent(
      event, std::move(deliveries),
      [this, label, count, now, request_key = std::move(request_key),
       done](Result<store::EventSubmitOutcome> outcome) mutable {
        if (!outcome) return done(outcome.error());
        replays_.Remember(std::move(request_key), now);
        metrics_.Inc(
            metric::kEventsReceived,
            {{"source", label}, {"result", outcome->duplicate ? "duplicate" : "accepted"}});
        EventAccepted accepted;
        accepted.event_id = outcome->stored.event.event_id;
        accepted.duplicate = outcome->duplicate;
        accepted.deliveries =
            outcome->duplicate ? static_cast<int>(outcome->stored.deliveries.size()) : count;
        done(std::move(accepted));
      });
}

std::vector<store::NewDelivery> WebhookService::Route(const store::EventRecord& event,
                                                      const json::value& payload,
                                                      const std::vector<std::string>* only) const {
  std::vector<store::NewDelivery> out;
  if (event.target_uri) {
    if (auto direct = directory_.Get(DirectEndpointId(event.source))) {
      out.push_back(MakeDelivery(*direct, event, payload, event.target_uri));
    }
    return out;
  }
  if (only != nullptr) {
    for (const std::string& id : *only) {
      if (auto ep = directory_.Get(id)) out.push_back(MakeDelivery(*ep, event, payload, {}));
    }
    return out;
  }
  for (const auto& ep : directory_.All()) {
    if (ep->direct || !ep->enabled) continue;
    if (Subscribes(*ep, event.event_type, event.source)) {
      out.push_back(MakeDelivery(*ep, event, payload, {}));
    }
  }
  return out;
}

store::NewDelivery WebhookService::MakeDelivery(const Endpoint& ep, const store::EventRecord& event,
                                                const json::value& payload,
                                                std::optional<std::string> url) const {
  const json::object event_object =
      MakeEventObject(event.event_id, event.event_type, event.source, payload, event.trace_id);
  DeliveryPayload p{ep.id,
                    event.event_id,
                    event.event_type,
                    event.source,
                    event.trace_id,
                    std::move(url),
                    RenderBody(ep.body_template, event_object)};
  core::TaskSpec task;
  const Millis now = clock_.Now();
  {
    std::lock_guard lock(random_mu_);
    task.task_id = core::MakeUuidV7(now, ids_);
  }
  task.task_type = std::string(kDeliveryTaskType);
  task.queue = ep.Queue();
  task.payload = EncodeDeliveryPayload(p);
  task.schedule_time = now;
  task.timeout_ms = ep.timeout_ms + kLeaseMarginMs;
  task.max_retries = ep.retry ? ep.retry->max_retries : config_.max_retries;
  task.trace_id = event.trace_id;
  task.content_hash = core::Sha256Hex(task.payload);
  return store::NewDelivery{ep.id, std::move(task)};
}

void WebhookService::GetEvent(std::string event_id, std::optional<std::string> source,
                              Callback<store::StoredEvent> done) {
  store_.GetEvent(std::move(event_id), std::move(source), std::move(done));
}

void WebhookService::Redeliver(std::string event_id, std::optional<std::string> source,
                               std::vector<std::string> endpoint_ids,
                               Callback<store::StoredEvent> done) {
  for (const std::string& id : endpoint_ids) {
    auto ep = directory_.Get(id);
    if (!ep || ep->direct) {
      return done(MakeError(ErrorCode::kNotFound, "no endpoint " + id, "endpoints"));
    }
  }
  store_.GetEvent(
      std::move(event_id), std::move(source),
      [this, endpoint_ids = std::move(endpoint_ids), done](Result<store::StoredEvent> stored) {
        if (!stored) return done(stored.error());
        auto payload = core::ParseJson(stored->event.payload);
        if (!payload) return done(MakeError(ErrorCode::kInternal, "stored event payload"));
        auto deliveries =
            Route(stored->event, *payload, endpoint_ids.empty() ? nullptr : &endpoint_ids);
        if (deliveries.empty()) return done(std::move(*stored));
        engine_.AddDeliveries(stored->event.source, stored->event.event_id, std::move(deliveries),
                              done);
      });
}

// ---- endpoints ----

void WebhookService::ApplyPolicy(const Endpoint& ep) {
  engine_.SetQueuePolicy(ep.Queue(), ep.retry ? ep.retry->policy : config_.retry);
}

void WebhookService::Save(Endpoint ep, Callback<Endpoint> done) {
  auto record = ToRecord(ep);
  BeginWrite();
  store_.PutEndpoint(std::move(record),
                     [this, ep = std::move(ep), done](Result<Unit> stored) mutable {
                       bool reload = false;
                       {
                         std::lock_guard lock(state_mu_);
                         if (stored) {
                           ApplyPolicy(ep);
                           directory_.Put(ep);
                         }
                         reload = EndWriteLocked();
                       }
                       if (reload) LoadEndpoints(nullptr);
                       if (!stored) return done(stored.error());
                       done(std::move(ep));
                     });
}

void WebhookService::CreateEndpoint(const json::value& body, Callback<Endpoint> done) {
  const Millis now = clock_.Now();
  Result<Endpoint> ep = [&] {
    std::lock_guard lock(random_mu_);
    return DecodeEndpoint(body, Endpoint{}, /*is_create=*/true, secrets_);
  }();
  if (!ep) return done(ep.error());
  {
    std::lock_guard lock(random_mu_);
    ep->id = "ep_" + core::MakeOrderedToken(now, ids_);
  }
  ep->created_at = ep->updated_at = now;
  Save(std::move(*ep), std::move(done));
}

void WebhookService::PatchEndpoint(std::string id, const json::value& body,
                                   Callback<Endpoint> done) {
  auto current = directory_.Get(id);
  if (!current || current->direct)
    return done(MakeError(ErrorCode::kNotFound, "no endpoint " + id));
  Result<Endpoint> ep = [&] {
    std::lock_guard lock(random_mu_);
    return DecodeEndpoint(body, *current, /*is_create=*/false, secrets_);
  }();
  if (!ep) return done(ep.error());
  ep->updated_at = clock_.Now();
  Save(std::move(*ep), std::move(done));
}

void WebhookService::DeleteEndpoint(std::string id, Callback<Unit> done) {
  auto current = directory_.Get(id);
  if (!current || current->direct)
    return done(MakeError(ErrorCode::kNotFound, "no endpoint " + id));
  BeginWrite();
  store_.DeleteEndpoint(id, [this, id, done](Result<Unit> deleted) {
    bool reload = false;
    {
      std::lock_guard lock(state_mu_);
      if (deleted) directory_.Remove(id);
      reload = EndWriteLocked();
    }
    if (reload) LoadEndpoints(nullptr);
    done(std::move(deleted));
  });
}

void WebhookService::RotateSecret(std::string id, Callback<Endpoint> done) {
  auto current = directory_.Get(id);
  if (!current || current->direct) {
    return done(MakeError(ErrorCode::kNotFound, "no endpoint " + id));
  }
  Endpoint ep = *current;
  {
    std::lock_guard lock(random_mu_);
    ep.secrets.insert(ep.secrets.begin(), GenerateSecret(secrets_));
  }
  if (ep.secrets.size() > kMaxEndpointSecrets) ep.secrets.resize(kMaxEndpointSecrets);
  ep.updated_at = clock_.Now();
  Save(std::move(ep), std::move(done));
}

Result<Endpoint> WebhookService::GetEndpoint(const std::string& id) const {
  auto ep = directory_.Get(id);
  if (!ep || ep->direct) return MakeError(ErrorCode::kNotFound, "no endpoint " + id);
  return *ep;
}

std::vector<Endpoint> WebhookService::ListEndpoints() const {
  std::vector<Endpoint> out;
  for (const auto& ep : directory_.All()) {
    if (!ep->direct) out.push_back(*ep);
  }
  return out;
}

// ---- endpoint state reported by the deliverer ----

void WebhookService::RecordSuccess(const std::string& endpoint_id) {
  Endpoint ep;
  {
    std::lock_guard lock(state_mu_);
    auto current = directory_.Get(endpoint_id);
    if (!current || current->direct || !current->failing_since) return;
    ep = *current;
    ep.failing_since.reset();
    directory_.Put(ep);  // at once: the next report must see it
    ++writes_in_flight_;
  }
  StoreState(std::move(ep));
}

void WebhookService::StoreState(Endpoint ep) {
  store_.PutEndpoint(ToRecord(ep), [this, endpoint_id = ep.id](Result<Unit> r) {
    if (!r) {
      core::Log(core::LogLevel::kError, "endpoint state not stored",
                {{"endpoint_id", endpoint_id}, {"error", r.error().message}});
    }
    bool reload = false;
    {
      std::lock_guard lock(state_mu_);
      reload = EndWriteLocked();
    }
    if (reload) LoadEndpoints(nullptr);
  });
}

void WebhookService::RecordFailure(const std::string& endpoint_id, const std::string& reason) {
  const Millis now = clock_.Now();
  std::unique_lock lock(state_mu_);
  auto current = directory_.Get(endpoint_id);
  if (!current || current->direct) return;
  Endpoint ep = *current;
  if (!ep.failing_since) {
    ep.failing_since = now;
  } else if (ep.enabled && now - *ep.failing_since >= config_.disable_after) {
    ep.enabled = false;
    ep.disabled_reason = "disabled automatically: failing without a success since " +
                         core::FormatRfc3339(*ep.failing_since) + "; last failure: " + reason;
    core::Log(core::LogLevel::kWarn, "endpoint disabled",
              {{"endpoint_id", endpoint_id}, {"reason", ep.disabled_reason}});
  } else {
    return;  // a streak already on record: nothing new to store
  }
  ep.updated_at = now;
  directory_.Put(ep);
  ++writes_in_flight_;
  lock.unlock();  // a store closed already answers on this thread
  StoreState(std::move(ep));
}

}  // namespace madeira::delivery
