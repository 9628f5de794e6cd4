#include "api/lease_body.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <cstdint>

#include "api/error_table.h"
#include "core/time.h"

namespace madeira::api {

namespace {

using boost::system::error_code;

// A basic_parser handler that keeps nothing: the parser alone says whether the text is JSON.
struct JsonCheck {
  constexpr static std::size_t max_object_size = std::size_t(-1);
  constexpr static std::size_t max_array_size = std::size_t(-1);
  constexpr static std::size_t max_key_size = std::size_t(-1);
  constexpr static std::size_t max_string_size = std::size_t(-1);
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t, error_code&) { return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(std::size_t, error_code&) { return true; }
  bool on_string_part(boost::json::string_view, std::size_t, error_code&) { return true; }
  bool on_string(boost::json::string_view, std::size_t, error_code&) { return true; }
  bool on_key_part(boost::json::string_view, std::size_t, error_code&) { return true; }
  bool on_key(boost::json::string_view, std::size_t, error_code&) { return true; }
  bool on_number_part(boost::json::string_view, error_code&) { return true; }
  bool on_int64(int64_t, boost::json::string_view, error_code&) { return true; }
  bool on_uint64(uint64_t, boost::json::string_view, error_code&) { return true; }
  bool on_double(double, boost::json::string_view, error_code&) { return true; }
  bool on_bool(bool, error_code&) { return true; }
  bool on_null(error_code&) { return true; }
  bool on_comment_part(boost::json::string_view, error_code&) { return true; }
  bool on_comment(boost::json::string_view, error_code&) { return true; }
};

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

bool IsJsonText(std::string_view text) {
  boost::json::basic_parser<JsonCheck> parser{boost::json::parse_options{}};
  error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  return !ec && used == text.size();
}

void AppendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the characters not yet copied; copied a run at a time
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

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
