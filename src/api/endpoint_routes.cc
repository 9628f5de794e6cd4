// Webhook endpoints (admin): create, list, read, patch, delete, rotate. Secrets are shown whole
// only in the create and rotate answers.
#include <boost/json/array.hpp>

#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/webhook_json.h"
#include "core/envelope.h"

namespace madeira::api {

using core::Result;
using delivery::EncodeEndpoint;
using delivery::Endpoint;
using delivery::SecretView;
using store::Callback;

Awaitable HandleCreateEndpoint(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<boost::json::value> body = core::ParseJson(req.body);
  if (!body) co_return ErrorResponse(body.error());
  Result<Endpoint> ep = co_await Await<Endpoint>(
      [&](Callback<Endpoint> done) { ctx.webhooks->CreateEndpoint(*body, std::move(done)); });
  if (!ep) co_return ErrorResponse(ep.error());
  co_return JsonResponse(201, EncodeEndpoint(*ep, SecretView::kWhole));
}

Awaitable HandleListEndpoints(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  boost::json::array out;
  for (const Endpoint& ep : ctx.webhooks->ListEndpoints()) {
    out.push_back(EncodeEndpoint(ep, SecretView::kPrefix));
  }
  co_return JsonResponse(200, {{"endpoints", std::move(out)}});
}

Awaitable HandleGetEndpoint(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<Endpoint> ep = ctx.webhooks->GetEndpoint(req.params[0]);
  if (!ep) co_return ErrorResponse(ep.error());
  co_return JsonResponse(200, EncodeEndpoint(*ep, SecretView::kPrefix));
}

Awaitable HandlePatchEndpoint(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<boost::json::value> body = core::ParseJson(req.body);
  if (!body) co_return ErrorResponse(body.error());
  Result<Endpoint> ep = co_await Await<Endpoint>([&](Callback<Endpoint> done) {
    ctx.webhooks->PatchEndpoint(req.params[0], *body, std::move(done));
  });
  if (!ep) co_return ErrorResponse(ep.error());
  co_return JsonResponse(200, EncodeEndpoint(*ep, SecretView::kPrefix));
}

Awaitable HandleDeleteEndpoint(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<store::Unit> deleted = co_await Await<store::Unit>([&](Callback<store::Unit> done) {
    ctx.webhooks->DeleteEndpoint(req.params[0], std::move(done));
  });
  if (!deleted) co_return ErrorResponse(deleted.error());
  co_return JsonResponse(200, {{"id", req.params[0]}, {"deleted", true}});
}

Awaitable HandleRotateEndpointSecret(RouteContext& ctx, const Request& req) {
  if (ctx.webhooks == nullptr) co_return ErrorResponse(NoWebhooksHere());
  Result<Endpoint> ep = co_await Await<Endpoint>(
      [&](Callback<Endpoint> done) { ctx.webhooks->RotateSecret(req.params[0], std::move(done)); });
  if (!ep) co_return ErrorResponse(ep.error());
  co_return JsonResponse(200, EncodeEndpoint(*ep, SecretView::kWhole));
}

}  // namespace madeira::api
