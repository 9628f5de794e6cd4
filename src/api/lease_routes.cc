// Worker routes: lease (long-poll), ack, batch ack, fail, extend, heartbeat.
#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/lease_body.h"
#include "api/request_decoders.h"
#include "core/time.h"

namespace madeira::api {

using core::Result;
using store::Callback;
using store::Unit;

Awaitable HandleLease(RouteContext& ctx, const Request& req) {
  Result<engine::LeaseParams> params = DecodeLease(req.body);
  if (!params) co_return ErrorResponse(params.error());
  using Leases = std::vector<store::Lease>;
  Result<Leases> leases = co_await Await<Leases>(
      [&](Callback<Leases> done) { ctx.engine.Lease(std::move(*params), std::move(done)); });
  if (!leases) co_return ErrorResponse(leases.error());
  Response response;
  response.body = LeasesBody(*leases);
  co_return response;
}

Awaitable HandleAck(RouteContext& ctx, const Request& req) {
  Result<std::optional<std::string>> result = DecodeAck(req.body);
  if (!result) co_return ErrorResponse(result.error());
  Result<Unit> acked = co_await Await<Unit>([&](Callback<Unit> done) {
    ctx.engine.Ack(req.params[0], std::move(*result), std::move(done));
  });
  if (!acked) co_return ErrorResponse(acked.error());
  co_return JsonResponse(200, {{"status", "succeeded"}});
}

Awaitable HandleAckBatch(RouteContext& ctx, const Request& req) {
  Result<std::vector<AckItem>> items = DecodeAckBatch(req.body);
  if (!items) co_return ErrorResponse(items.error());
  // One hand-over for the whole batch: the store then takes it in one go (Store::AckBatch).
  std::vector<engine::AckParams> acks;
  acks.reserve(items->size());
  for (const AckItem& item : *items) acks.push_back({item.lease_id, item.result});
  std::vector<Result<Unit>> acked =
      co_await AwaitEach<Unit>(items->size(), [&](std::vector<Callback<Unit>> done) {
        ctx.engine.AckBatch(std::move(acks), std::move(done));
      });
  Response response;
  response.body = AckResultsBody(*items, acked);
  co_return response;
}

Awaitable HandleFail(RouteContext& ctx, const Request& req) {
  Result<engine::FailParams> params = DecodeFail(req.body);
  if (!params) co_return ErrorResponse(params.error());
  params->lease_id = req.params[0];
  Result<engine::FailResult> failed =
      co_await Await<engine::FailResult>([&](Callback<engine::FailResult> done) {
        ctx.engine.Fail(std::move(*params), std::move(done));
      });
  if (!failed) co_return ErrorResponse(failed.error());
  boost::json::object out{{"status", core::TaskStatusName(failed->status)}};
  if (failed->next_attempt_at)
    out["next_attempt_at"] = core::FormatRfc3339(*failed->next_attempt_at);
  co_return JsonResponse(200, out);
}

Awaitable HandleExtend(RouteContext& ctx, const Request& req) {
  Result<core::Millis> extend_ms = DecodeExtend(req.body);
  if (!extend_ms) co_return ErrorResponse(extend_ms.error());
  Result<core::Millis> deadline = co_await Await<core::Millis>([&](Callback<core::Millis> done) {
    ctx.engine.Extend(req.params[0], *extend_ms, std::move(done));
  });
  if (!deadline) co_return ErrorResponse(deadline.error());
  co_return JsonResponse(200, {{"deadline", core::FormatRfc3339(*deadline)}});
}

Awaitable HandleHeartbeat(RouteContext& ctx, const Request& req) {
  Result<engine::WorkerHeartbeat> heartbeat = DecodeHeartbeat(req.body);
  if (!heartbeat) co_return ErrorResponse(heartbeat.error());
  ctx.engine.Heartbeat(std::move(*heartbeat));
  co_return JsonResponse(200, boost::json::object());
}

}  // namespace madeira::api
