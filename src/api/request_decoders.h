// Strict decoders for every request body and query string of SPEC §3. Unknown fields are
// kUnknownField, wrong types or ranges kInvalidField naming the field, malformed JSON
// kInvalidJson. Envelopes themselves are validated by the engine.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_types.h"
#include "core/error.h"
#include "engine/engine.h"
#include "store/store.h"

namespace madeira::api {

inline constexpr size_t kMaxBatch = 1000;

// A body that must be one JSON object; an empty body reads as {} when `allow_empty`.
core::Result<boost::json::object> ParseObjectBody(std::string_view body, bool allow_empty);

// POST /v1/tasks: the envelope object (judged by the engine).
core::Result<boost::json::value> DecodeSubmit(std::string_view body);
// POST /v1/tasks/batch: {"tasks":[...]} with 1..1000 items, each judged alone later.
core::Result<std::vector<boost::json::value>> DecodeSubmitBatch(std::string_view body);

// POST /v1/leases
core::Result<engine::LeaseParams> DecodeLease(std::string_view body);
// POST /v1/leases/{id}/ack: the result as JSON text, if given.
core::Result<std::optional<std::string>> DecodeAck(std::string_view body);
// POST /v1/leases/{id}/fail (lease_id left for the caller to fill).
core::Result<engine::FailParams> DecodeFail(std::string_view body);
// POST /v1/leases/{id}/extend: extend_ms.
core::Result<core::Millis> DecodeExtend(std::string_view body);

struct AckItem {
  std::string lease_id;
  std::optional<std::string> result;
};
// POST /v1/leases/ack: {"acks":[{"lease_id","result"?}]} with 1..1000 items.
core::Result<std::vector<AckItem>> DecodeAckBatch(std::string_view body);

// POST /v1/workers/heartbeat
core::Result<engine::WorkerHeartbeat> DecodeHeartbeat(std::string_view body);

// A body that takes no fields (empty or {}), e.g. POST /v1/tasks/{id}/cancel.
core::Result<void> DecodeEmpty(std::string_view body);

// POST /v1/tasks/{id}/replay: optional edits.
core::Result<store::ReplayEdits> DecodeReplay(std::string_view body);

struct DeadBulk {
  store::DeadSelector selector;
  store::ReplayEdits edits;
};
// POST /v1/dead/replay (with edits) and /v1/dead/cancel (without): task_ids xor filter.
core::Result<DeadBulk> DecodeDeadBulk(std::string_view body, bool allow_edits);

// PUT /v1/schemas/...: the body is the schema itself, a JSON object.
core::Result<boost::json::value> DecodeSchemaBody(std::string_view body);

}  // namespace madeira::api
