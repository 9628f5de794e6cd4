// Feeds arbitrary bytes through everything the HTTP layer decodes before a handler calls the
// engine: the request target (path segments and query), route matching, the Authorization
// header, every request body decoder and the query-string decoders. Any crash or sanitizer
// report is a bug; so is a decoded value outside the range the decoder promises.
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/auth.h"
#include "api/query_decoders.h"
#include "api/request_decoders.h"
#include "api/router.h"
#include "api/webhook_json.h"
#include "core/envelope.h"

namespace {

using namespace madeira;

// A single admin token, so Check runs the digest comparison and not only the "auth off" path.
const api::Authenticator& Auth() {
  static const api::Authenticator auth({api::ApiToken{
      "fuzz", core::Sha256Hex("mdr_fuzz_token"), {api::Scope::kProducer, api::Scope::kWorker}}});
  return auth;
}

void DecodeBodies(std::string_view body) {
  (void)api::ParseObjectBody(body, true);
  (void)api::DecodeSubmit(body);
  if (auto batch = api::DecodeSubmitBatch(body)) {
    if (batch->empty() || batch->size() > api::kMaxBatch) __builtin_trap();
  }
  if (auto lease = api::DecodeLease(body)) {
    if (lease->queues.empty() || lease->max_tasks < 1 || lease->max_tasks > 100 ||
        lease->wait_ms < 0 || lease->wait_ms > 30'000 || lease->worker_id.empty() ||
        core::HasControlCharacter(lease->worker_id)) {  // it goes on every attempt's record
      __builtin_trap();
    }
  }
  if (auto ack = api::DecodeAck(body); ack && *ack) {
    if (!core::ParseJson(**ack)) __builtin_trap();  // the result is kept as JSON text
  }
  if (auto fail = api::DecodeFail(body)) {
    if (!core::ParseJson(fail->error)) __builtin_trap();
  }
  if (auto extend = api::DecodeExtend(body)) {
    if (*extend < 1) __builtin_trap();
  }
  if (auto acks = api::DecodeAckBatch(body)) {
    if (acks->empty() || acks->size() > api::kMaxBatch) __builtin_trap();
  }
  if (auto hb = api::DecodeHeartbeat(body)) {
    if (hb->worker_id.empty() || core::HasControlCharacter(hb->worker_id)) __builtin_trap();
  }
  (void)api::DecodeEmpty(body);
  (void)api::DecodeReplay(body);
  for (bool allow_edits : {true, false}) {
    if (auto bulk = api::DecodeDeadBulk(body, allow_edits)) {
      if (bulk->selector.task_ids.size() > api::kMaxBatch) __builtin_trap();
      if (!allow_edits &&
          (bulk->edits.payload || bulk->edits.payload_version || bulk->edits.max_retries)) {
        __builtin_trap();
      }
    }
  }
  (void)api::DecodeSchemaBody(body);
  (void)api::DecodeRedeliver(body);
}

void DecodeTarget(std::string_view target) {
  api::QueryParams query;
  auto segments = api::ParseTarget(target, query);
  if (!segments) return;
  static const api::Router router(api::AllRoutes());
  for (std::string_view method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
    api::RouteMatch match = router.Match(method, *segments);
    if (match.kind == api::RouteMatch::Kind::kFound) {
      if (match.route == nullptr || match.route->method != method) __builtin_trap();
      if (match.params.size() == 2) (void)api::DecodeSchemaKey(match.params[0], match.params[1]);
    }
  }
  for (auto decode : {&api::DecodeSearchQuery, &api::DecodeDeadQuery}) {
    if (auto q = decode(query)) {
      if (q->limit < 1 || q->limit > 1000 || (q->cursor && *q->cursor < 0)) __builtin_trap();
    }
  }
  (void)api::DecodeEventSource(query);
  for (const auto& [key, value] : query) (void)api::DecodeCursor(value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  DecodeBodies(text);
  DecodeTarget(text);
  (void)Auth().Check(text, api::kAdminOnly);
  (void)Auth().Check(text, api::kWorkerOnly);
  return 0;
}
