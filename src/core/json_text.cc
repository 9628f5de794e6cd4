#include "core/json_text.h"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>

namespace madeira::core {

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

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  // Ids, names and times need no escaping: copied as they are; anything else goes through the
  // serialiser (it escapes only '"', '\\' and control characters).
  if (std::none_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\';
      })) {
    out += '"';
    out.append(text);
    out += '"';
    return;
  }
  out += boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

bool IsJsonText(std::string_view text) {
  boost::json::basic_parser<JsonCheck> parser{boost::json::parse_options{}};
  error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  return !ec && used == text.size();
}

}  // namespace madeira::core
