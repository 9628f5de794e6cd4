// Producer routes: submit, batch submit, get, attempts, search, cancel.
#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>

#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/query_decoders.h"
#include "api/request_decoders.h"
#include "api/task_json.h"

namespace madeira::api {

using core::Result;
using store::SubmitKind;
using store::SubmitOutcome;

namespace {

using Outcomes = std::vector<Result<SubmitOutcome>>;

// A conflict may come back as an outcome kind or as an error; both answer 409.
Result<SubmitOutcome> AsResult(Result<SubmitOutcome> outcome) {
  if (outcome && outcome->kind == SubmitKind::kConflict) {
    return core::MakeError(core::ErrorCode::kTaskIdConflict,
                           "task_id " + outcome->task_id + " exists with different content",
                           "task_id");
  }
  return outcome;
}

boost::json::object OutcomeJson(const SubmitOutcome& o, boost::json::storage_ptr sp = {}) {
  return boost::json::object({{"task_id", o.task_id},
                              {"status", core::TaskStatusName(o.status)},
                              {"duplicate", o.kind == SubmitKind::kDuplicate}},
                             std::move(sp));
}

boost::asio::awaitable<Result<Outcomes>> Submit(RouteContext& ctx,
                                                std::vector<boost::json::value> envelopes) {
  co_return co_await Await<Outcomes>([&](store::Callback<Outcomes> done) {
    ctx.engine.Submit(std::move(envelopes), std::move(done));
  });
}

}  // namespace

Awaitable HandleSubmit(RouteContext& ctx, const Request& req) {
  Result<boost::json::value> envelope = DecodeSubmit(req.body);
  if (!envelope) co_return ErrorResponse(envelope.error());
  std::vector<boost::json::value> one;
  one.push_back(std::move(*envelope));
  Result<Outcomes> outcomes = co_await Submit(ctx, std::move(one));
  if (!outcomes) co_return ErrorResponse(outcomes.error());
  if (outcomes->size() != 1) {
    co_return ErrorResponse(core::MakeError(core::ErrorCode::kInternal, "submit lost its answer"));
  }
  Result<SubmitOutcome> outcome = AsResult(std::move(outcomes->front()));
  if (!outcome) co_return ErrorResponse(outcome.error());
  co_return JsonResponse(outcome->kind == SubmitKind::kDuplicate ? 200 : 202,
                         OutcomeJson(*outcome));
}

Awaitable HandleSubmitBatch(RouteContext& ctx, const Request& req) {
  Result<std::vector<boost::json::value>> envelopes = DecodeSubmitBatch(req.body);
  if (!envelopes) co_return ErrorResponse(envelopes.error());
  const size_t n = envelopes->size();
  Result<Outcomes> outcomes = co_await Submit(ctx, std::move(*envelopes));
  if (!outcomes) co_return ErrorResponse(outcomes.error());
  if (outcomes->size() != n) {
    co_return ErrorResponse(core::MakeError(core::ErrorCode::kInternal, "submit lost answers"));
  }
  // The answer is built and serialised at once: one arena instead of a malloc per member.
  boost::json::monotonic_resource arena(n * 160);
  boost::json::object body(&arena);
  boost::json::array& results =
      body.emplace("results", boost::json::array()).first->value().get_array();
  results.reserve(n);
  for (Result<SubmitOutcome>& item : *outcomes) {
    Result<SubmitOutcome> outcome = AsResult(std::move(item));
    if (outcome) {
      results.push_back(OutcomeJson(*outcome, &arena));
    } else {
      results.push_back(boost::json::object({{"error", ErrorObject(outcome.error())}}, &arena));
    }
  }
  co_return JsonResponse(200, body);
}

Awaitable HandleGetTask(RouteContext& ctx, const Request& req) {
  Result<core::Task> task = co_await Await<core::Task>(
      [&](store::Callback<core::Task> done) { ctx.engine.Get(req.params[0], std::move(done)); });
  if (!task) co_return ErrorResponse(task.error());
  co_return JsonResponse(200, TaskJson(*task));
}

Awaitable HandleTaskAttempts(RouteContext& ctx, const Request& req) {
  using Attempts = std::vector<core::Attempt>;
  Result<Attempts> attempts = co_await Await<Attempts>(
      [&](store::Callback<Attempts> done) { ctx.engine.Attempts(req.params[0], std::move(done)); });
  if (!attempts) co_return ErrorResponse(attempts.error());
  boost::json::array out;
  out.reserve(attempts->size());
  for (const core::Attempt& a : *attempts) out.push_back(AttemptJson(a));
  co_return JsonResponse(200, {{"attempts", std::move(out)}});
}

Awaitable HandleSearchTasks(RouteContext& ctx, const Request& req) {
  Result<store::SearchQuery> query = DecodeSearchQuery(req.query);
  if (!query) co_return ErrorResponse(query.error());
  Result<store::SearchPage> page =
      co_await Await<store::SearchPage>([&](store::Callback<store::SearchPage> done) {
        ctx.engine.Search(std::move(*query), std::move(done));
      });
  if (!page) co_return ErrorResponse(page.error());
  co_return JsonResponse(200, SearchPageJson(*page));
}

Awaitable HandleCancelTask(RouteContext& ctx, const Request& req) {
  if (Result<void> body = DecodeEmpty(req.body); !body) co_return ErrorResponse(body.error());
  Result<core::Task> task = co_await Await<core::Task>(
      [&](store::Callback<core::Task> done) { ctx.engine.Cancel(req.params[0], std::move(done)); });
  if (!task) co_return ErrorResponse(task.error());
  co_return JsonResponse(200, TaskJson(*task));
}

}  // namespace madeira::api
