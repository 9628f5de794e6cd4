#include "api/lease_body.h"

#include <boost/json/serialize.hpp>
#include <charconv>
#include <cstdint>

#include "api/error_table.h"
#include "api/json_text.h"
#include "core/time.h"

namespace madeira::api {

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

void AppendLease(std::string& out, const store::Lease& lease) {
  const core::Task& task = lease.task;
  const core::TaskSpec& s = task.spec;
  out += '{';
  AppendKey(out, "lease_id");
  AppendJsonString(out, lease.lease_id);
  out += ',';
  AppendKey(out, "deadline");
  AppendJsonString(out, core::FormatRfc3339(lease.deadline));
  out += ',';
  AppendKey(out, "fencing_token");
  AppendInt(out, lease.fencing_token);
  out += ",\"task\":{";
  AppendKey(out, "task_id");
  AppendJsonString(out, s.task_id);
  out += ',';
  AppendKey(out, "task_type");
  AppendJsonString(out, s.task_type);
  out += ',';
  AppendKey(out, "queue");
  AppendJsonString(out, s.queue);
  out += ',';
  AppendKey(out, "payload_version");
  AppendInt(out, s.payload_version);
  out += ',';
  AppendKey(out, "payload");
  AppendEmbeddedJson(out, s.payload);
  out += ',';
  AppendKey(out, "schedule_time");
  AppendJsonString(out, core::FormatRfc3339(s.schedule_time));
  out += ',';
  AppendKey(out, "timeout_ms");
  AppendInt(out, s.timeout_ms);
  out += ',';
  AppendKey(out, "max_retries");
  AppendInt(out, s.max_retries);
  out += ',';
  AppendKey(out, "retry_count");
  AppendInt(out, task.retry_count);
  out += ',';
  AppendKey(out, "priority");
  AppendInt(out, s.priority);
  out += ',';
  AppendKey(out, "trace_id");
  AppendJsonString(out, s.trace_id);
  if (s.idempotency_key) {
    out += ',';
    AppendKey(out, "idempotency_key");
    AppendJsonString(out, *s.idempotency_key);
  }
  out += ',';
  AppendKey(out, "attempt");
  AppendInt(out, task.attempts);
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
