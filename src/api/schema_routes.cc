// Payload schema routes: register (admin), read one, list.
#include <boost/json/array.hpp>

#include "api/await.h"
#include "api/error_table.h"
#include "api/handlers.h"
#include "api/query_decoders.h"
#include "api/request_decoders.h"
#include "api/task_json.h"

namespace madeira::api {

using core::Result;
using store::Callback;
using store::SchemaRecord;

namespace {

boost::asio::awaitable<Result<SchemaRecord>> GetSchema(RouteContext& ctx, const SchemaKey& key) {
  co_return co_await Await<SchemaRecord>([&](Callback<SchemaRecord> done) {
    ctx.engine.GetSchema(key.task_type, key.version, std::move(done));
  });
}

}  // namespace

Awaitable HandleListSchemas(RouteContext& ctx, const Request& req) {
  using Records = std::vector<SchemaRecord>;
  Result<Records> records = co_await Await<Records>(
      [&](Callback<Records> done) { ctx.engine.ListSchemas(std::move(done)); });
  if (!records) co_return ErrorResponse(records.error());
  boost::json::array out;
  out.reserve(records->size());
  for (const SchemaRecord& r : *records) {
    out.push_back(boost::json::object{{"task_type", r.task_type}, {"version", r.version}});
  }
  co_return JsonResponse(200, {{"schemas", std::move(out)}});
}

Awaitable HandlePutSchema(RouteContext& ctx, const Request& req) {
  Result<SchemaKey> key = DecodeSchemaKey(req.params[0], req.params[1]);
  if (!key) co_return ErrorResponse(key.error());
  Result<boost::json::value> schema = DecodeSchemaBody(req.body);
  if (!schema) co_return ErrorResponse(schema.error());
  // Asked first only to answer 201 for a new version and 200 for a replaced one.
  Result<SchemaRecord> existing = co_await GetSchema(ctx, *key);
  if (!existing && existing.error().code != core::ErrorCode::kNotFound) {
    co_return ErrorResponse(existing.error());
  }
  boost::json::value copy = *schema;
  Result<store::Unit> put = co_await Await<store::Unit>([&](Callback<store::Unit> done) {
    ctx.engine.PutSchema(key->task_type, key->version, std::move(copy), std::move(done));
  });
  if (!put) co_return ErrorResponse(put.error());
  co_return JsonResponse(
      existing ? 200 : 201,
      {{"task_type", key->task_type}, {"version", key->version}, {"schema", std::move(*schema)}});
}

Awaitable HandleGetSchema(RouteContext& ctx, const Request& req) {
  Result<SchemaKey> key = DecodeSchemaKey(req.params[0], req.params[1]);
  if (!key) co_return ErrorResponse(key.error());
  Result<SchemaRecord> record = co_await GetSchema(ctx, *key);
  if (!record) co_return ErrorResponse(record.error());
  co_return JsonResponse(200, SchemaJson(*record));
}

}  // namespace madeira::api
