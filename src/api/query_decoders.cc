#include "api/query_decoders.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/envelope.h"
#include "core/time.h"

namespace madeira::api {

using core::ErrorCode;
using core::MakeError;
using core::Result;

namespace {

constexpr int64_t kMaxLimit = 1000;

std::optional<int64_t> ParseDecimal(std::string_view s) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return n;
}

// Query strings are strict like bodies: every key known, none repeated.
Result<void> CheckQueryKeys(const QueryParams& query,
                            std::initializer_list<std::string_view> known) {
  for (size_t i = 0; i < query.size(); ++i) {
    const std::string& key = query[i].first;
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return MakeError(ErrorCode::kUnknownField, "unknown query parameter " + key, key);
    }
    for (size_t j = 0; j < i; ++j) {
      if (query[j].first == key) {
        return MakeError(ErrorCode::kInvalidField, key + " is given twice", key);
      }
    }
  }
  return {};
}

// Fills the parameters both searches share; returns the first error.
Result<void> ReadCommonQuery(const std::string& key, const std::string& value,
                             store::SearchQuery& q) {
  if (key == "queue" || key == "task_type") {
    if (key == "queue" ? !core::IsFilterQueueName(value) : !core::IsValidName(value)) {
      return MakeError(ErrorCode::kInvalidField, key + " is not a valid name", key);
    }
    (key == "queue" ? q.queue : q.task_type) = value;
  } else if (key == "limit") {
    std::optional<int64_t> n = ParseDecimal(value);
    if (!n || *n < 1 || *n > kMaxLimit) {
      return MakeError(ErrorCode::kInvalidField, "limit must be an integer in 1..1000", key);
    }
    q.limit = static_cast<int>(*n);
  } else if (key == "cursor") {
    q.cursor = DecodeCursor(value);
    if (!q.cursor) return MakeError(ErrorCode::kInvalidField, "cursor is not valid", key);
  }
  return {};
}

}  // namespace

Result<store::SearchQuery> DecodeSearchQuery(const QueryParams& query) {
  Result<void> keys =
      CheckQueryKeys(query, {"status", "queue", "task_type", "trace_id", "limit", "cursor"});
  if (!keys) return keys.error();
  store::SearchQuery q;
  for (const auto& [key, value] : query) {
    if (key == "status") {
      q.status = core::ParseTaskStatus(value);
      if (!q.status) return MakeError(ErrorCode::kInvalidField, "unknown status " + value, key);
    } else if (key == "trace_id") {
      if (value.empty()) return MakeError(ErrorCode::kInvalidField, "trace_id is empty", key);
      q.trace_id = value;
    } else if (Result<void> r = ReadCommonQuery(key, value, q); !r) {
      return r.error();
    }
  }
  return q;
}

Result<store::SearchQuery> DecodeDeadQuery(const QueryParams& query) {
  Result<void> keys = CheckQueryKeys(query, {"queue", "task_type", "since", "limit", "cursor"});
  if (!keys) return keys.error();
  store::SearchQuery q;
  q.status = core::TaskStatus::kDead;
  for (const auto& [key, value] : query) {
    if (key == "since") {
      Result<core::Millis> t = core::ParseRfc3339(value, key);
      if (!t) {
        return MakeError(ErrorCode::kInvalidField, "since must be RFC 3339 with an offset", key);
      }
      q.dead_since = *t;
    } else if (Result<void> r = ReadCommonQuery(key, value, q); !r) {
      return r.error();
    }
  }
  return q;
}

Result<SchemaKey> DecodeSchemaKey(std::string_view task_type, std::string_view version) {
  if (!core::IsValidName(task_type)) {
    return MakeError(ErrorCode::kInvalidField, "task_type is not a valid name", "task_type");
  }
  std::optional<int64_t> v = ParseDecimal(version);
  if (!v || *v < 1 || *v > std::numeric_limits<int32_t>::max()) {
    return MakeError(ErrorCode::kInvalidField, "version must be an integer >= 1", "version");
  }
  return SchemaKey{std::string(task_type), static_cast<int>(*v)};
}

Result<boost::json::value> DecodeSchemaBody(std::string_view body) {
  Result<boost::json::value> v = core::ParseJson(body);
  if (!v) return v.error();
  if (!v->is_object()) {
    return MakeError(ErrorCode::kInvalidSchema, "a schema must be a JSON object");
  }
  return v;
}

std::string EncodeCursor(int64_t seq) { return "c" + std::to_string(seq); }

std::optional<int64_t> DecodeCursor(std::string_view cursor) {
  if (cursor.size() < 2 || cursor.front() != 'c') return std::nullopt;
  std::optional<int64_t> n = ParseDecimal(cursor.substr(1));
  if (!n || *n < 0) return std::nullopt;
  return n;
}

}  // namespace madeira::api
