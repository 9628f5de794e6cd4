// Inbound events: accept (source-signed), read with each delivery's status, redeliver.
#include <boost/json/array.hpp>

#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/webhook_json.h"
#include "core/field_reader.h"

namespace madeira::api {

using core::Result;
using store::Callback;
using store::StoredEvent;

Awaitable HandleAcceptEvent(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  delivery::InboundEvent in{std::string(MadeiraHeader(req, "x-madeira-source")),
                            std::string(MadeiraHeader(req, "x-madeira-timestamp")),
                            std::string(MadeiraHeader(req, "x-madeira-signature")), req.body};
  using Accepted = delivery::EventAccepted;
  Result<Accepted> accepted = co_await Await<Accepted>(
      [&](Callback<Accepted> done) { ctx.webhooks->AcceptEvent(std::move(in), std::move(done)); });
  if (!accepted) co_return ErrorResponse(accepted.error());
  boost::json::object body{{"event_id", accepted->event_id}, {"deliveries", accepted->deliveries}};
  if (accepted->duplicate) body["duplicate"] = true;
  co_return JsonResponse(202, body);
}

Awaitable HandleGetEvent(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<std::optional<std::string>> source = DecodeEventSource(req.query);
  if (!source) co_return ErrorResponse(source.error());
  Result<StoredEvent> event = co_await Await<StoredEvent>([&](Callback<StoredEvent> done) {
    ctx.webhooks->GetEvent(req.params[0], *source, std::move(done));
  });
  if (!event) co_return ErrorResponse(event.error());
  co_return JsonResponse(200, EventJson(*event));
}

Awaitable HandleRedeliverEvent(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<std::optional<std::string>> source = DecodeEventSource(req.query);
  if (!source) co_return ErrorResponse(source.error());
  Result<std::vector<std::string>> endpoints = DecodeRedeliver(req.body);
  if (!endpoints) co_return ErrorResponse(endpoints.error());
  Result<StoredEvent> event = co_await Await<StoredEvent>([&](Callback<StoredEvent> done) {
    ctx.webhooks->Redeliver(req.params[0], *source, std::move(*endpoints), std::move(done));
  });
  if (!event) co_return ErrorResponse(event.error());
  co_return JsonResponse(202, EventJson(*event));
}

}  // namespace madeira::api
