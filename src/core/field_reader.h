// Strict, typed reading of one JSON object's fields. The first problem found is kept as the
// error (unknown field, missing field, wrong type or range, each naming its field path), so a
// decoder reads every field straight through and checks error() once at the end.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace madeira::core {

enum class Presence { kOptional, kRequired };

class FieldReader {
 public:
  // `prefix` names the object in error fields, e.g. "error." or "acks[3].".
  explicit FieldReader(const boost::json::object& object, std::string prefix = {});

  // Any field not in `names` is kUnknownField.
  void AllowOnly(std::initializer_list<std::string_view> names);

  // Optional fields that are absent or null read as empty.
  std::optional<std::string> String(std::string_view name, Presence presence);
  std::optional<int64_t> Int(std::string_view name, int64_t lo, int64_t hi, Presence presence);
  const boost::json::array* Array(std::string_view name, Presence presence);
  const boost::json::object* Object(std::string_view name, Presence presence);
  // Any JSON value; null reads as empty.
  const boost::json::value* Value(std::string_view name, Presence presence);

  // Records a problem the caller found itself (keeps the first one).
  void Fail(ErrorCode code, std::string message, std::string_view name);
  std::string Path(std::string_view name) const { return prefix_ + std::string(name); }

  bool ok() const { return !error_.has_value(); }
  const std::optional<Error>& error() const { return error_; }

 private:
  // The field's value, or null when absent/null (recording kMissingField if required).
  const boost::json::value* Find(std::string_view name, Presence presence);

  const boost::json::object& object_;
  std::string prefix_;
  std::optional<Error> error_;
};

// Reads a JSON integer (int64 or uint64 kinds only: 1.0 is not an integer here).
std::optional<int64_t> AsInt(const boost::json::value& v);

}  // namespace madeira::core
