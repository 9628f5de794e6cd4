// Strict decoders for the query strings and path parameters of SPEC §3: every key known,
// none repeated, values in range; errors name the parameter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "core/error.h"
#include "store/store.h"

namespace madeira::api {

// GET /v1/tasks?status=&queue=&task_type=&trace_id=&limit=&cursor=
core::Result<store::SearchQuery> DecodeSearchQuery(const QueryParams& query);
// GET /v1/dead?queue=&task_type=&since=&limit=&cursor= (status is dead)
core::Result<store::SearchQuery> DecodeDeadQuery(const QueryParams& query);

// The {task_type}/{version} of the schema routes.
struct SchemaKey {
  std::string task_type;
  int version = 1;
};
core::Result<SchemaKey> DecodeSchemaKey(std::string_view task_type, std::string_view version);
// Paging cursors are opaque to clients; today they carry the store's seq.
std::string EncodeCursor(int64_t seq);
std::optional<int64_t> DecodeCursor(std::string_view cursor);

}  // namespace madeira::api
