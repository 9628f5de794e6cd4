// Operations routes: Prometheus metrics, liveness, readiness. Never authenticated, so probes
// and scrapers need no token.
#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"

namespace madeira::api {

using core::Result;
using store::Callback;
using store::Unit;

Awaitable HandleMetrics(RouteContext& ctx, const Request& req) {
  // Gauges are refreshed on scrape; a failed refresh still renders the counters.
  Result<Unit> refreshed =
      co_await Await<Unit>([&](Callback<Unit> done) { ctx.engine.RefreshGauges(std::move(done)); });
  (void)refreshed;
  Response r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = ctx.metrics.RenderPrometheus();
  co_return r;
}

Awaitable HandleHealthz(RouteContext& ctx, const Request& req) {
  co_return JsonResponse(200, {{"status", "ok"}});
}

Awaitable HandleReadyz(RouteContext& ctx, const Request& req) {
  Result<Unit> ping =
      co_await Await<Unit>([&](Callback<Unit> done) { ctx.engine.Ping(std::move(done)); });
  if (!ping) {
    co_return ErrorResponse(core::MakeError(core::ErrorCode::kUnavailable, "store unreachable"));
  }
  co_return JsonResponse(200, {{"status", "ready"}});
}

}  // namespace madeira::api
