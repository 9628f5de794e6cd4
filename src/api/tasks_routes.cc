// Producer routes: submit, batch submit, get, attempts, search, cancel.
#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/query_decoders.h"
#include "api/request_decoders.h"
#include "api/task_json.h"
#include "core/json_text.h"

namespace madeira::api {

using core::AppendJsonString;

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

// {"task_id","status","duplicate"} written straight into the answer: building a JSON object per
// outcome and serialising it was a tenth of the HTTP threads' work on batch submits.
void AppendOutcome(std::string& out, const SubmitOutcome& o) {
  out += R"({"task_id":)";
  AppendJsonString(out, o.task_id);
  out += R"(,"status":)";
  AppendJsonString(out, core::TaskStatusName(o.status));
  out += o.kind == SubmitKind::kDuplicate ? R"(,"duplicate":true})" : R"(,"duplicate":false})";
}

boost::asio::awaitable<Result<Outcomes>> Submit(RouteContext& ctx, const Request& req,
                                                std::vector<boost::json::value> envelopes) {
  co_return co_await Await<Outcomes>([&](store::Callback<Outcomes> done) {
    ctx.engine.Submit(std::move(envelopes), req.caller.name, std::move(done));
  });
}

boost::asio::awaitable<Result<core::Task>> GetTask(RouteContext& ctx, const std::string& id) {
  co_return co_await Await<core::Task>(
      [&](store::Callback<core::Task> done) { ctx.engine.Get(id, std::move(done)); });
}

// A task submitted under another token's name is, to a caller who sees only its own, a task
// that does not exist: the same 404, so the answer does not tell it is there.
Result<core::Task> Visible(const Request& req, Result<core::Task> task) {
  if (task && !req.caller.sees_all && task->spec.owner != req.caller.name) {
    return core::MakeError(core::ErrorCode::kNotFound, "no task " + task->spec.task_id);
  }
  return task;
}

}  // namespace

Awaitable HandleSubmit(RouteContext& ctx, const Request& req) {
  Result<boost::json::value> envelope = DecodeSubmit(req.body);
  if (!envelope) co_return ErrorResponse(envelope.error());
  std::vector<boost::json::value> one;
  one.push_back(std::move(*envelope));
  Result<Outcomes> outcomes = co_await Submit(ctx, req, std::move(one));
  if (!outcomes) co_return ErrorResponse(outcomes.error());
  if (outcomes->size() != 1) {
    co_return ErrorResponse(core::MakeError(core::ErrorCode::kInternal, "submit lost its answer"));
  }
  Result<SubmitOutcome> outcome = AsResult(std::move(outcomes->front()));
  if (!outcome) co_return ErrorResponse(outcome.error());
  Response response;
  response.status = outcome->kind == SubmitKind::kDuplicate ? 200 : 202;
  AppendOutcome(response.body, *outcome);
  co_return response;
}

Awaitable HandleSubmitBatch(RouteContext& ctx, const Request& req) {
  Result<std::vector<boost::json::value>> envelopes = DecodeSubmitBatch(req.body);
  if (!envelopes) co_return ErrorResponse(envelopes.error());
  const size_t n = envelopes->size();
  Result<Outcomes> outcomes = co_await Submit(ctx, req, std::move(*envelopes));
  if (!outcomes) co_return ErrorResponse(outcomes.error());
  if (outcomes->size() != n) {
    co_return ErrorResponse(core::MakeError(core::ErrorCode::kInternal, "submit lost answers"));
  }
  // {"results":[...]}, written as boost::json::serialize would write it.
  Response response;
  std::string& body = response.body;
  body.reserve(16 + n * 96);
  body += R"({"results":[)";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) body.push_back(',');
    Result<SubmitOutcome> outcome = AsResult(std::move((*outcomes)[i]));
    if (outcome) {
      AppendOutcome(body, *outcome);
    } else {
      body += R"({"error":)";
      body += boost::json::serialize(ErrorObject(outcome.error()));
      body.push_back('}');
    }
  }
  body += "]}";
  co_return response;
}

Awaitable HandleGetTask(RouteContext& ctx, const Request& req) {
  Result<core::Task> task = Visible(req, co_await GetTask(ctx, req.params[0]));
  if (!task) co_return ErrorResponse(task.error());
  co_return JsonResponse(200, TaskJson(*task));
}

Awaitable HandleTaskAttempts(RouteContext& ctx, const Request& req) {
  if (!req.caller.sees_all) {
    Result<core::Task> task = Visible(req, co_await GetTask(ctx, req.params[0]));
    if (!task) co_return ErrorResponse(task.error());
  }
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
  if (!req.caller.sees_all) query->owner = req.caller.name;
  Result<store::SearchPage> page =
      co_await Await<store::SearchPage>([&](store::Callback<store::SearchPage> done) {
        ctx.engine.Search(std::move(*query), std::move(done));
      });
  if (!page) co_return ErrorResponse(page.error());
  co_return JsonResponse(200, SearchPageJson(*page));
}

Awaitable HandleCancelTask(RouteContext& ctx, const Request& req) {
  if (Result<void> body = DecodeEmpty(req.body); !body) co_return ErrorResponse(body.error());
  if (!req.caller.sees_all) {
    // Looked at first; whose a task is never changes, so the cancel below cancels only it.
    Result<core::Task> own = Visible(req, co_await GetTask(ctx, req.params[0]));
    if (!own) co_return ErrorResponse(own.error());
  }
  Result<core::Task> task = co_await Await<core::Task>(
      [&](store::Callback<core::Task> done) { ctx.engine.Cancel(req.params[0], std::move(done)); });
  if (!task) co_return ErrorResponse(task.error());
  co_return JsonResponse(200, TaskJson(*task));
}

}  // namespace madeira::api
