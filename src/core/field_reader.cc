#include "core/field_reader.h"

#include <algorithm>
#include <limits>

namespace madeira::core {

std::optional<int64_t> AsInt(const boost::json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() &&
      v.get_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(v.get_uint64());
  }
  return std::nullopt;
}

FieldReader::FieldReader(const boost::json::object& object, std::string prefix)
    : object_(object), prefix_(std::move(prefix)) {}

void FieldReader::Fail(ErrorCode code, std::string message, std::string_view name) {
  if (!error_) error_ = MakeError(code, std::move(message), Path(name));
}

void FieldReader::AllowOnly(std::initializer_list<std::string_view> names) {
  for (const auto& kv : object_) {
    if (std::find(names.begin(), names.end(), kv.key()) == names.end()) {
      Fail(ErrorCode::kUnknownField, "unknown field " + Path(kv.key()), kv.key());
      return;
    }
  }
}

const boost::json::value* FieldReader::Find(std::string_view name, Presence presence) {
  if (error_) return nullptr;
  const boost::json::value* v = object_.if_contains(name);
  if (v != nullptr && !v->is_null()) return v;
  if (presence == Presence::kRequired) {
    Fail(ErrorCode::kMissingField, Path(name) + " is required", name);
  }
  return nullptr;
}

std::optional<std::string> FieldReader::String(std::string_view name, Presence presence) {
  const boost::json::value* v = Find(name, presence);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    Fail(ErrorCode::kInvalidField, Path(name) + " must be a string", name);
    return std::nullopt;
  }
  return std::string(v->get_string());
}

std::optional<int64_t> FieldReader::Int(std::string_view name, int64_t lo, int64_t hi,
                                        Presence presence) {
  const boost::json::value* v = Find(name, presence);
  if (v == nullptr) return std::nullopt;
  std::optional<int64_t> n = AsInt(*v);
  if (!n || *n < lo || *n > hi) {
    Fail(ErrorCode::kInvalidField,
         Path(name) + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi),
         name);
    return std::nullopt;
  }
  return n;
}

const boost::json::array* FieldReader::Array(std::string_view name, Presence presence) {
  const boost::json::value* v = Find(name, presence);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    Fail(ErrorCode::kInvalidField, Path(name) + " must be an array", name);
    return nullptr;
  }
  return &v->get_array();
}

const boost::json::object* FieldReader::Object(std::string_view name, Presence presence) {
  const boost::json::value* v = Find(name, presence);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    Fail(ErrorCode::kInvalidField, Path(name) + " must be an object", name);
    return nullptr;
  }
  return &v->get_object();
}

const boost::json::value* FieldReader::Value(std::string_view name, Presence presence) {
  return Find(name, presence);
}

}  // namespace madeira::core
