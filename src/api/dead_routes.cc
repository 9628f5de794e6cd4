// Admin routes for dead letters: list, replay one, replay many, cancel many.
#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/query_decoders.h"
#include "api/request_decoders.h"
#include "api/task_json.h"

namespace madeira::api {

using core::Result;
using store::Callback;

Awaitable HandleListDead(RouteContext& ctx, const Request& req) {
  Result<store::SearchQuery> query = DecodeDeadQuery(req.query);
  if (!query) co_return ErrorResponse(query.error());
  Result<store::SearchPage> page =
      co_await Await<store::SearchPage>([&](Callback<store::SearchPage> done) {
        ctx.engine.Search(std::move(*query), std::move(done));
      });
  if (!page) co_return ErrorResponse(page.error());
  co_return JsonResponse(200, SearchPageJson(*page));
}

Awaitable HandleReplayTask(RouteContext& ctx, const Request& req) {
  Result<store::ReplayEdits> edits = DecodeReplay(req.body);
  if (!edits) co_return ErrorResponse(edits.error());
  Result<core::Task> task = co_await Await<core::Task>([&](Callback<core::Task> done) {
    ctx.engine.Replay(req.params[0], std::move(*edits), std::move(done));
  });
  if (!task) co_return ErrorResponse(task.error());
  co_return JsonResponse(200, TaskJson(*task));
}

Awaitable HandleReplayDead(RouteContext& ctx, const Request& req) {
  Result<DeadBulk> bulk = DecodeDeadBulk(req.body, /*allow_edits=*/true);
  if (!bulk) co_return ErrorResponse(bulk.error());
  Result<int64_t> n = co_await Await<int64_t>([&](Callback<int64_t> done) {
    ctx.engine.ReplayDead(std::move(bulk->selector), std::move(bulk->edits), std::move(done));
  });
  if (!n) co_return ErrorResponse(n.error());
  co_return JsonResponse(200, {{"replayed", *n}});
}

Awaitable HandleCancelDead(RouteContext& ctx, const Request& req) {
  Result<DeadBulk> bulk = DecodeDeadBulk(req.body, /*allow_edits=*/false);
  if (!bulk) co_return ErrorResponse(bulk.error());
  Result<int64_t> n = co_await Await<int64_t>([&](Callback<int64_t> done) {
    ctx.engine.CancelDead(std::move(bulk->selector), std::move(done));
  });
  if (!n) co_return ErrorResponse(n.error());
  co_return JsonResponse(200, {{"cancelled", *n}});
}

}  // namespace madeira::api
