#include "api/lease_body.h"

#include <boost/json/serialize.hpp>
#include <charconv>
#include <cstdint>

#include "api/error_table.h"
#include "core/json_text.h"
#include "core/time.h"

namespace madeira::api {

using core::AppendJsonString;
using core::IsJsonText;

namespace {

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

// `"key":`, for keys that need no escaping.
void AppendKey(std::string& out, std::string_view key) {
  out += '"';
  out += key;
  out += "\":";
}

// Stored JSON text as it is; text that is not JSON (never expected) as a string, as EmbeddedJson.
void AppendEmbeddedJson(std::string& out, const std::string& text) {
  if (IsJsonText(text)) {
    out += text;
  } else {
    AppendJsonString(out, text);
  }
}

// `,"key":value` (the comma left out for the first member of an object).
void StringField(std::string& out, std::string_view key, std::string_view value,
                 bool first = false) {
  if (!first) out += ',';
  AppendKey(out, key);
  AppendJsonString(out, value);
}
void IntField(std::string& out, std::string_view key, int64_t value) {
  out += ',';
  AppendKey(out, key);
  AppendInt(out, value);
}

void AppendLease(std::string& out, const store::Lease& lease) {
  const core::Task& task = lease.task;
  const core::TaskSpec& s = task.spec;
  out += '{';
  StringField(out, "lease_id", lease.lease_id, /*first=*/true);
  StringField(out, "deadline", core::FormatRfc3339(lease.deadline));
  IntField(out, "fencing_token", lease.fencing_token);
  out += ",\"task\":{";
  StringField(out, "task_id", s.task_id, /*first=*/true);
  StringField(out, "task_type", s.task_type);
  StringField(out, "queue", s.queue);
  IntField(out, "payload_version", s.payload_version);
  out += ',';
  AppendKey(out, "payload");
  AppendEmbeddedJson(out, s.payload);
  StringField(out, "schedule_time", core::FormatRfc3339(s.schedule_time));
  IntField(out, "timeout_ms", s.timeout_ms);
  IntField(out, "max_retries", s.max_retries);
  IntField(out, "retry_count", task.retry_count);
  IntField(out, "priority", s.priority);
  StringField(out, "trace_id", s.trace_id);
  if (s.idempotency_key) StringField(out, "idempotency_key", *s.idempotency_key);
  IntField(out, "attempt", task.attempts);
  out += "}}";
}

}  // namespace

std::string LeasesBody(const std::vector<store::Lease>& leases) {
  std::string out;
  size_t size = 16;
  for (const store::Lease& lease : leases) size += 512 + lease.task.spec.payload.size();
  out.reserve(size);
  out += "{\"leases\":[";
  for (size_t i = 0; i < leases.size(); ++i) {
    if (i > 0) out += ',';
    AppendLease(out, leases[i]);
  }
  out += "]}";
  return out;
}

std::string AckResultsBody(const std::vector<AckItem>& items,
                           const std::vector<core::Result<store::Unit>>& acked) {
  std::string out;
  out.reserve(16 + items.size() * 96);
  out += "{\"results\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    AppendKey(out, "lease_id");
    AppendJsonString(out, items[i].lease_id);
    if (acked[i]) {
      out += ",\"status\":\"succeeded\"}";
    } else {
      out += ",\"error\":";
      out += boost::json::serialize(ErrorObject(acked[i].error()));
      out += '}';
    }
  }
  out += "]}";
  return out;
}

}  // namespace madeira::api
