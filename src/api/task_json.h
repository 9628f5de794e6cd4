// JSON views of tasks, attempts, leases and schemas as SPEC §3 shows them. Times are
// RFC 3339 UTC; stored JSON text (payload, last_error, result) is embedded as JSON values.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "store/store.h"

namespace madeira::api {

// The envelope fields: task_id ... trace_id, idempotency_key when set. `sp`, here and below:
// where the value allocates (an arena for a response built and serialised at once).
boost::json::object EnvelopeJson(const core::Task& task, boost::json::storage_ptr sp = {});
// Envelope + status, created_at, updated_at, next_attempt_at, attempts, last_error, result,
// deduplicated.
boost::json::object TaskJson(const core::Task& task);
boost::json::object AttemptJson(const core::Attempt& attempt);
// {"lease_id","deadline","fencing_token","task":{envelope + "attempt"}}
boost::json::object LeaseJson(const store::Lease& lease, boost::json::storage_ptr sp = {});
// {"tasks":[...],"next_cursor":"..."|null}
boost::json::object SearchPageJson(const store::SearchPage& page);
// {"task_type","version","schema"} (+ created_at when known)
boost::json::object SchemaJson(const store::SchemaRecord& record);

// Stored JSON text as a value; text that does not parse (never expected) stays a string.
boost::json::value EmbeddedJson(const std::string& text, boost::json::storage_ptr sp = {});
boost::json::value OptionalJson(const std::optional<std::string>& text);
boost::json::value OptionalTime(const std::optional<core::Millis>& t);

}  // namespace madeira::api
