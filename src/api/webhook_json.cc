#include "api/webhook_json.h"

#include <boost/json/array.hpp>

#include "core/envelope.h"
#include "core/field_reader.h"
#include "core/task.h"
#include "core/time.h"

namespace madeira::api {

namespace json = boost::json;
using core::ErrorCode;
using core::MakeError;

json::object EventJson(const store::StoredEvent& stored) {
  const store::EventRecord& e = stored.event;
  auto payload = core::ParseJson(e.payload);
  json::array deliveries;
  for (const store::EventDelivery& d : stored.deliveries) {
    deliveries.push_back(json::object{{"endpoint_id", d.endpoint_id},
                                      {"task_id", d.task_id},
                                      {"status", core::TaskStatusName(d.status)}});
  }
  json::object o{{"event_id", e.event_id},
                 {"event_type", e.event_type},
                 {"source", e.source},
                 {"payload", payload ? *payload : json::value()},
                 {"trace_id", e.trace_id},
                 {"received_at", core::FormatRfc3339(e.received_at)},
                 {"deliveries", std::move(deliveries)}};
  if (e.target_uri) o["target_uri"] = *e.target_uri;
  return o;
}

core::Result<std::optional<std::string>> DecodeEventSource(const QueryParams& query) {
  std::optional<std::string> source;
  for (const auto& [key, value] : query) {
    if (key != "source") {
      return MakeError(ErrorCode::kUnknownField, "unknown query parameter", key);
    }
    if (value.empty()) return MakeError(ErrorCode::kInvalidField, "must not be empty", "source");
    source = value;
  }
  return source;
}

core::Result<std::vector<std::string>> DecodeRedeliver(std::string_view body) {
  std::vector<std::string> ids;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return ids;
  auto parsed = core::ParseJson(body);
  if (!parsed) return parsed.error();
  if (!parsed->is_object()) return MakeError(ErrorCode::kInvalidJson, "expected a JSON object");
  core::FieldReader r(parsed->as_object());
  r.AllowOnly({"endpoints"});
  if (const json::array* a = r.Array("endpoints", core::Presence::kOptional)) {
    for (const json::value& v : *a) {
      if (!v.is_string() || v.get_string().empty()) {
        r.Fail(ErrorCode::kInvalidField, "endpoint ids are non-empty strings", "endpoints");
        break;
      }
      ids.emplace_back(v.get_string());
    }
  }
  if (!r.ok()) return *r.error();
  return ids;
}

core::Error NoWebhooksHere() {
  return MakeError(ErrorCode::kUnavailable, "this process does not run webhooks");
}

}  // namespace madeira::api
