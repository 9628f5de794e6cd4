// Events in and endpoints managed: verifies a source's signature over the raw body, routes the
// event to every enabled subscribed endpoint, and stores the event with its deliveries (one
// webhook.delivery task per endpoint) in one atomic step through the engine. Also the CRUD of
// endpoints, redelivery, and the endpoint state the deliverer reports (failure streaks, the
// automatic disable).
#pragma once

#include <boost/json/object.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/metrics.h"
#include "core/random.h"
#include "delivery/endpoint.h"
#include "delivery/endpoint_directory.h"
#include "delivery/replay_guard.h"
#include "engine/engine.h"

namespace madeira::delivery {

using core::Millis;
using store::Callback;
using store::Unit;

inline constexpr std::string_view kDeliveryTaskType = "webhook.delivery";

// One [[sources]] entry.
struct SourceConfig {
  std::string id;
  std::vector<std::string> secrets;  // HMAC keys as configured; several while rotating
  // May an event name its own target_uri? Those deliveries are signed with target_secrets.
  bool allow_target_uri = false;
  std::vector<std::string> target_secrets;  // "whsec_" + base64
};

struct WebhookConfig {
  std::vector<SourceConfig> sources;
  core::RetryPolicy retry = core::RetryPolicy::WebhookDefaults();  // [retry.webhook]
  int max_retries = kDefaultWebhookMaxRetries;
  Millis disable_after = 5LL * 24 * 3600 * 1000;  // failing with no success this long
  size_t max_payload_bytes = 65536;
  int max_depth = 5;
};

// What POST /v1/events brings, before anything is trusted.
struct InboundEvent {
  std::string source;
  std::string timestamp;  // X-Madeira-Timestamp
  std::string signature;  // X-Madeira-Signature
  std::string body;       // raw bytes as received
};

struct EventAccepted {
  std::string event_id;
  int deliveries = 0;
  bool duplicate = false;
};

// The delivery task's payload: everything the deliverer needs besides the endpoint.
struct DeliveryPayload {
  std::string endpoint_id;
  std::string event_id;
  std::string event_type;
  std::string source;
  std::string trace_id;
  std::optional<std::string> url;  // direct deliveries: the event's target_uri
  boost::json::value body;         // what is sent: the rendered template or the payload
};
std::string EncodeDeliveryPayload(const DeliveryPayload& p);
core::Result<DeliveryPayload> DecodeDeliveryPayload(std::string_view text);

class WebhookService {
 public:
  // `ids` makes event trace ids and endpoint/task ids; `secrets` makes endpoint secrets
  // (a cryptographic source: OpenSslRandom in the server).
  WebhookService(engine::Engine& engine, store::Store& store, const core::Clock& clock,
                 core::Random& ids, core::Random& secrets, core::Metrics& metrics,
                 WebhookConfig config);
  // Waits for the endpoint reads and writes in flight (they call back into the service).
  ~WebhookService();

  // Loads the stored endpoints into the directory and sets their retry policies, and from then
  // on reloads them whenever the store says another process changed them (one service per
  // store: it owns the store's change handler).
  void Start(Callback<Unit> done);

  // kBadSignature for an unknown source, a bad or stale signature, or a request already
  // accepted once (the same timestamp and signature again); kInvalidJson /
  // kInvalidField / kPayloadTooLarge for a malformed event. Nothing is stored then.
  void AcceptEvent(InboundEvent in, Callback<EventAccepted> done);
  void GetEvent(std::string event_id, std::optional<std::string> source,
                Callback<store::StoredEvent> done);
  // Again to the named endpoints (each must exist), or to every enabled subscribed endpoint.
  void Redeliver(std::string event_id, std::optional<std::string> source,
                 std::vector<std::string> endpoint_ids, Callback<store::StoredEvent> done);

  void CreateEndpoint(const boost::json::value& body, Callback<Endpoint> done);
  void PatchEndpoint(std::string id, const boost::json::value& body, Callback<Endpoint> done);
  void DeleteEndpoint(std::string id, Callback<Unit> done);
  // Puts a new secret first and keeps the others (both sign while receivers switch over);
  // drop the old ones with a PATCH of `secrets` once they have.
  void RotateSecret(std::string id, Callback<Endpoint> done);
  core::Result<Endpoint> GetEndpoint(const std::string& id) const;
  std::vector<Endpoint> ListEndpoints() const;

  // The deliverer's reports: a success ends a failure streak; a failure starts one, and one
  // that lasted disable_after disables the endpoint with its reason.
  void RecordSuccess(const std::string& endpoint_id);
  void RecordFailure(const std::string& endpoint_id, const std::string& reason);

  EndpointDirectory& directory() { return directory_; }
  const WebhookConfig& config() const { return config_; }

 private:
  std::vector<store::NewDelivery> Route(const store::EventRecord& event,
                                        const boost::json::value& payload,
                                        const std::vector<std::string>* only) const;
  store::NewDelivery MakeDelivery(const Endpoint& ep, const store::EventRecord& event,
                                  const boost::json::value& payload,
                                  std::optional<std::string> url) const;
  void ApplyPolicy(const Endpoint& ep);
  // Stores the endpoint and, once durable, publishes it in the directory.
  void Save(Endpoint ep, Callback<Endpoint> done);
  // Reloading what other processes changed: one store read at a time (requests meanwhile are
  // merged into one more), never overlapping a store write of this process's own.
  void RequestReload();
  void LoadEndpoints(Callback<Unit> done);
  // Puts what is new or differs and removes what is gone, so the deliverer hears of each.
  void ApplyStored(const std::vector<store::EndpointRecord>& records);  // under state_mu_
  void BeginWrite();
  // Stores state the deliverer reported (the directory has it already); a write as above.
  void StoreState(Endpoint ep);
  // True when the caller must start the reload that waited for the writes to end.
  bool EndWriteLocked();  // under state_mu_
  const SourceConfig* FindSource(std::string_view id) const;

  engine::Engine& engine_;
  store::Store& store_;
  const core::Clock& clock_;
  core::Random& ids_;
  core::Random& secrets_;
  core::Metrics& metrics_;
  WebhookConfig config_;
  EndpointDirectory directory_;
  ReplayGuard replays_;
  mutable std::mutex random_mu_;  // the Random objects are not thread-safe
  std::mutex state_mu_;           // serialises read-modify-write of one endpoint's state
  // Under state_mu_: the reload's state (see RequestReload).
  std::condition_variable settled_cv_;  // a reload or a write ended (the destructor waits)
  bool reloading_ = false;              // a ListEndpoints is out
  bool reload_again_ = false;  // asked for (or found stale) while one was out or writes were
  bool stopping_ = false;
  int writes_in_flight_ = 0;  // this process's endpoint writes not yet answered by the store
  uint64_t writes_done_ = 0;
};

namespace metric {
inline constexpr const char* kEventsReceived = "madeira_events_received_total";
inline constexpr const char* kDeliveries = "madeira_deliveries_total";
inline constexpr const char* kDeliveryDuration = "madeira_delivery_duration_seconds";
}  // namespace metric

}  // namespace madeira::delivery
