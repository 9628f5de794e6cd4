#include "core/envelope.h"

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/digest.h"
#include "core/ids.h"
#include "core/time.h"

namespace madeira::core {

namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 12> kKnownFields = {
    "task_id",    "task_type",   "queue",       "payload_version", "payload",  "schedule_time",
    "timeout_ms", "max_retries", "retry_count", "priority",        "trace_id", "idempotency_key"};
constexpr std::array<std::string_view, 3> kRequiredFields = {"task_type", "payload_version",
                                                             "payload"};

constexpr size_t kMaxNameLength = 128;
constexpr size_t kMaxTaskIdLength = 128;
constexpr size_t kMaxTraceIdLength = 128;
constexpr size_t kMaxIdempotencyKeyLength = 200;

Error InvalidField(std::string_view field, std::string_view rule) {
  return MakeError(ErrorCode::kInvalidField, std::string(field) + " " + std::string(rule),
                   std::string(field));
}

// An integer field in [lo, hi]. Floats such as 3.0 are refused: the envelope is strict, and
// what a producer's JSON library writes as 3.0 is a sign it is not the type we document.
Result<int64_t> IntegerField(const json::object& obj, std::string_view name, int64_t lo, int64_t hi,
                             int64_t default_value) {
  const json::value* v = obj.if_contains(name);
  if (v == nullptr) return default_value;
  // a uint64 is beyond every range
  if (v->is_int64() && v->get_int64() >= lo && v->get_int64() <= hi) return v->get_int64();
  return InvalidField(
      name, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
}

// Counts code points; the text came through Boost.JSON, so it is valid UTF-8.
size_t Utf8Length(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

Millis SaturatingAdd(Millis a, Millis b) {
  Millis sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::numeric_limits<Millis>::max();
  return sum;
}

// True when `s` holds a character JSON must escape (a control character, '"' or '\\'), eight bytes
// at a time: most strings hold none and are copied as they are.
bool NeedsEscape(std::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  // Any byte of x below n (n <= 128); exact as a yes/no answer.
  auto has_less = [](uint64_t x, uint64_t n) { return ((x - kOnes * n) & ~x & kHighs) != 0; };
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, s.data() + i, sizeof word);
    if (has_less(word, 0x20) || has_less(word ^ (kOnes * '"'), 1) ||
        has_less(word ^ (kOnes * '\\'), 1)) {
      return true;
    }
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') return true;
  }
  return false;
}

// Writes JSON through one serializer and a stack buffer: json::serialize per key and scalar
// allocated a string each time, a third of the envelope's cost in the profile. Canonical mode
// sorts members by key at every depth (the content hash); otherwise the bytes are exactly those
// json::serialize writes (strings and integers are written here as it writes them).
class JsonWriter {
 public:
  JsonWriter(std::string& out, bool canonical) : out_(out), canonical_(canonical) {}

  void Value(const json::value& v) {
    if (const json::object* obj = v.if_object()) {
      Object(*obj, {}, nullptr);
    } else if (const json::array* arr = v.if_array()) {
      out_.push_back('[');
      for (size_t i = 0; i < arr->size(); ++i) {
        if (i > 0) out_.push_back(',');
        Value((*arr)[i]);
      }
      out_.push_back(']');
    } else if (v.is_string()) {
      String(v.get_string());
    } else if (v.is_int64() || v.is_uint64()) {
      char buf[24];
      auto [end, ec] = v.is_int64() ? std::to_chars(buf, buf + sizeof buf, v.get_int64())
                                    : std::to_chars(buf, buf + sizeof buf, v.get_uint64());
      out_.append(buf, end);
    } else {
      serializer_.reset(&v);  // doubles, booleans, null
      Drain();
    }
  }

  // `skip` is left out and `replace`, when given, stands for the value of the member named
  // schedule_time (the envelope's own normalisations).
  void Object(const json::object& obj, std::string_view skip, const std::string* replace) {
    // Members in the order written; on the stack for all but large objects.
    constexpr size_t kInline = 16;
    std::array<const json::key_value_pair*, kInline> inline_members;
    std::vector<const json::key_value_pair*> many;
    const json::key_value_pair** members = inline_members.data();
    if (obj.size() > kInline) {
      many.resize(obj.size());
      members = many.data();
    }
    size_t n = 0;
    for (const auto& kv : obj) {
      if (skip.empty() || kv.key() != skip) members[n++] = &kv;
    }
    if (canonical_) {
      std::sort(members, members + n,
                [](const auto* a, const auto* b) { return a->key() < b->key(); });
    }
    out_.push_back('{');
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) out_.push_back(',');
      String(members[i]->key());
      out_.push_back(':');
      if (replace != nullptr && members[i]->key() == "schedule_time") {
        String(*replace);
      } else {
        Value(members[i]->value());
      }
    }
    out_.push_back('}');
  }

 private:
  void String(std::string_view s) {
    // The serializer escapes only '"', '\\' and controls: other text is the same bytes.
    if (!NeedsEscape(s)) {
      out_.push_back('"');
      out_.append(s);
      out_.push_back('"');
      return;
    }
    serializer_.reset(json::string_view(s.data(), s.size()));
    Drain();
  }
  void Drain() {
    char buf[256];
    while (!serializer_.done()) {
      json::string_view part = serializer_.read(buf, sizeof buf);
      out_.append(part.data(), part.size());
    }
  }

  std::string& out_;
  const bool canonical_;
  json::serializer serializer_;
};

// True when a number of `v` is beyond a double (1e400 parses to infinity): boost::json would
// write it back as `Infinity`, which is not JSON, so such a body is refused where it is read.
bool HasNonFiniteNumber(const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_:
      return !std::isfinite(v.get_double());
    case json::kind::array:
      return std::any_of(v.get_array().begin(), v.get_array().end(), HasNonFiniteNumber);
    case json::kind::object:
      return std::any_of(
          v.get_object().begin(), v.get_object().end(),
          [](const json::key_value_pair& kv) { return HasNonFiniteNumber(kv.value()); });
    default:
      return false;
  }
}

}  // namespace

Result<json::value> ParseJson(std::string_view text, json::storage_ptr storage) {
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  boost::system::error_code ec;
  json::value v =
      json::parse(json::string_view(text.data(), text.size()), ec, std::move(storage), options);
  if (ec) return MakeError(ErrorCode::kInvalidJson, "the body is not valid JSON: " + ec.message());
  if (HasNonFiniteNumber(v)) {
    return MakeError(ErrorCode::kInvalidJson,
                     "the body has a number beyond a double's range (about 1.8e308)");
  }
  return v;
}

bool IsValidName(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(),
                     [&](char c) { return lower_or_digit(c) || c == '_' || c == '.' || c == '-'; });
}

bool IsFilterQueueName(std::string_view s) {
  constexpr std::string_view kWebhookPrefix = "webhook:";
  if (IsValidName(s)) return true;
  if (!s.starts_with(kWebhookPrefix) || s.size() == kWebhookPrefix.size()) return false;
  return IsValidTaskId(s.substr(kWebhookPrefix.size()));  // ids: [A-Za-z0-9._:-]
}

bool IsValidTaskId(std::string_view s) {
  if (s.empty() || s.size() > kMaxTaskIdLength) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
}

bool IsValidTraceId(std::string_view s) {
  return !s.empty() && s.size() <= kMaxTraceIdLength &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

bool HasControlCharacter(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

int JsonDepth(const json::value& v) {
  int deepest_child = 0;
  if (const json::object* obj = v.if_object()) {
    for (const auto& kv : *obj) deepest_child = std::max(deepest_child, JsonDepth(kv.value()));
    return deepest_child + 1;
  }
  if (const json::array* arr = v.if_array()) {
    for (const auto& item : *arr) deepest_child = std::max(deepest_child, JsonDepth(item));
    return deepest_child + 1;
  }
  return 0;
}

std::string CanonicalJson(const json::value& v) {
  std::string out;
  JsonWriter(out, true).Value(v);
  return out;
}

Result<TaskSpec> ParseEnvelope(const json::value& envelope, const EnvelopeLimits& limits,
                               Millis now, Random& random) {
  const json::object* obj = envelope.if_object();
  if (obj == nullptr) {
    return MakeError(ErrorCode::kInvalidJson, "a task envelope must be a JSON object");
  }
  for (const auto& kv : *obj) {
    if (std::find(kKnownFields.begin(), kKnownFields.end(), kv.key()) == kKnownFields.end()) {
      return MakeError(ErrorCode::kUnknownField, "unknown field \"" + std::string(kv.key()) + "\"",
                       std::string(kv.key()));
    }
  }
  for (std::string_view name : kRequiredFields) {
    if (!obj->contains(name)) {
      return MakeError(ErrorCode::kMissingField, std::string(name) + " is required",
                       std::string(name));
    }
  }

  TaskSpec spec;

  if (const json::value* v = obj->if_contains("task_id")) {
    if (!v->is_string() || !IsValidTaskId(v->get_string())) {
      return InvalidField("task_id", "must be 1-128 characters of [A-Za-z0-9._:-]");
    }
    spec.task_id = v->get_string();
  } else {
    spec.task_id = MakeUuidV7(now, random);
    spec.id_made_here = true;
  }

  const json::value& task_type = obj->at("task_type");
  if (!task_type.is_string() || !IsValidName(task_type.get_string())) {
    return InvalidField("task_type", "must match ^[a-z0-9][a-z0-9_.-]{0,127}$");
  }
  spec.task_type = task_type.get_string();

  if (const json::value* v = obj->if_contains("queue")) {
    if (!v->is_string() || !IsValidName(v->get_string())) {
      return InvalidField("queue", "must match ^[a-z0-9][a-z0-9_.-]{0,127}$");
    }
    spec.queue = v->get_string();
  }

  auto version = IntegerField(*obj, "payload_version", 1, std::numeric_limits<int32_t>::max(), 1);
  if (!version) return version.error();
  spec.payload_version = static_cast<int>(*version);

  const json::value& payload = obj->at("payload");
  if (!payload.is_object()) return InvalidField("payload", "must be a JSON object");
  if (JsonDepth(payload) > limits.max_depth) {
    return MakeError(ErrorCode::kPayloadTooDeep,
                     "payload nests deeper than " + std::to_string(limits.max_depth) +
                         " levels (the payload object itself is level 1)",
                     "payload");
  }
  // Written into a reused buffer, then copied once at its size, instead of a string grown by
  // doubling. The same bytes as json::serialize(payload).
  thread_local std::string scratch;
  scratch.clear();
  JsonWriter(scratch, false).Value(payload);
  spec.payload = scratch;
  if (spec.payload.size() > limits.max_payload_bytes) {
    return MakeError(ErrorCode::kPayloadTooLarge,
                     "payload is " + std::to_string(spec.payload.size()) + " bytes; the limit is " +
                         std::to_string(limits.max_payload_bytes),
                     "payload");
  }

  spec.schedule_time = now;
  std::optional<std::string> normalised_schedule;
  if (const json::value* v = obj->if_contains("schedule_time")) {
    if (!v->is_string()) {
      return MakeError(ErrorCode::kInvalidScheduleTime,
                       "schedule_time must be an RFC 3339 string with a zone offset, e.g. "
                       "\"2025-09-11T12:45:00+08:00\"",
                       "schedule_time");
    }
    auto at = ParseRfc3339(v->get_string(), "schedule_time");
    if (!at) return at.error();
    if (*at > SaturatingAdd(now, limits.max_delay)) {
      return MakeError(
          ErrorCode::kScheduleTooFar,
          "schedule_time is more than " + std::to_string(limits.max_delay) + " ms ahead",
          "schedule_time");
    }
    spec.schedule_time = std::max(*at, now);
    // The same instant written in another zone is the same content.
    normalised_schedule = FormatRfc3339(*at);
  }

  auto timeout = IntegerField(*obj, "timeout_ms", 100, 86'400'000, kDefaultTimeoutMs);
  if (!timeout) return timeout.error();
  spec.timeout_ms = *timeout;

  auto max_retries = IntegerField(*obj, "max_retries", 0, 100, kDefaultMaxRetries);
  if (!max_retries) return max_retries.error();
  spec.max_retries = static_cast<int>(*max_retries);

  // Server-owned: a client may only echo 0, which says nothing, so it stays out of the hash.
  auto retry_count = IntegerField(*obj, "retry_count", 0, 0, 0);
  if (!retry_count) return InvalidField("retry_count", "is server-owned; send 0 or omit it");

  auto priority = IntegerField(*obj, "priority", 0, 1000, kDefaultPriority);
  if (!priority) return priority.error();
  spec.priority = static_cast<int>(*priority);

  if (const json::value* v = obj->if_contains("trace_id")) {
    if (!v->is_string() || !IsValidTraceId(v->get_string())) {
      return InvalidField("trace_id", "must be 1-128 visible ASCII characters");
    }
    spec.trace_id = v->get_string();
  } else {
    spec.trace_id = MakeOrderedToken(now, random);
  }

  if (const json::value* v = obj->if_contains("idempotency_key")) {
    if (!v->is_string() || v->get_string().empty() ||
        Utf8Length(v->get_string()) > kMaxIdempotencyKeyLength ||
        HasControlCharacter(v->get_string())) {
      return InvalidField("idempotency_key",
                          "must be a string of 1-200 characters, none of them a control character");
    }
    spec.idempotency_key = std::string(v->get_string());
  }

  // What the producer sent, normalised, is what content_hash covers: server-made fields
  // (task_id, trace_id, schedule_time when absent) stay out so a resubmit hashes the same, and
  // retry_count (only ever 0 here) says nothing.
  std::string& canonical = scratch;  // the payload was copied out of it
  canonical.clear();
  JsonWriter(canonical, true)
      .Object(*obj, "retry_count", normalised_schedule ? &*normalised_schedule : nullptr);
  spec.content_hash = Sha256Hex(canonical);
  return spec;
}

}  // namespace madeira::core
