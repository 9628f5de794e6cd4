// JSON of the event routes, and their small decoders.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_types.h"
#include "core/error.h"
#include "store/store.h"

namespace madeira::api {

// {"event_id","event_type","source","payload","trace_id","received_at","deliveries":[...]}
boost::json::object EventJson(const store::StoredEvent& event);

// ?source=ID, the one query parameter of the event routes.
core::Result<std::optional<std::string>> DecodeEventSource(const QueryParams& query);

// The redeliver body: empty, {} or {"endpoints": ["ep_…", …]} (empty: every subscriber).
core::Result<std::vector<std::string>> DecodeRedeliver(std::string_view body);

// 503 for a process started without webhooks.
core::Error NoWebhooksHere();

}  // namespace madeira::api
