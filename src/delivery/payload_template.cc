#include "delivery/payload_template.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;

// The pointer inside "{{...}}", or nullopt when the string is not a placeholder.
std::optional<std::string_view> Placeholder(std::string_view s) {
  if (s.size() < 5 || !s.starts_with("{{/") || !s.ends_with("}}")) return std::nullopt;
  return s.substr(2, s.size() - 4);
}

// Recursion depth is bounded by the template's parse depth (Boost.JSON max_depth).
template <typename Visit>
void ForEachPlaceholder(const json::value& v, Visit&& visit) {
  if (const json::string* s = v.if_string()) {
    if (auto ptr = Placeholder(*s)) visit(*ptr);
  } else if (const json::array* a = v.if_array()) {
    for (const json::value& item : *a) ForEachPlaceholder(item, visit);
  } else if (const json::object* o = v.if_object()) {
    for (const auto& kv : *o) ForEachPlaceholder(kv.value(), visit);
  }
}

}  // namespace

json::object MakeEventObject(std::string_view event_id, std::string_view event_type,
                             std::string_view source, const json::value& payload,
                             std::string_view trace_id) {
  return json::object{{"event_id", event_id},
                      {"event_type", event_type},
                      {"source", source},
                      {"payload", payload},
                      {"trace_id", trace_id}};
}

json::value RenderTemplate(const json::value& tmpl, const json::value& event) {
  if (const json::string* s = tmpl.if_string()) {
    std::optional<std::string_view> ptr = Placeholder(*s);
    if (!ptr) return tmpl;
    boost::system::error_code ec;
    const json::value* found = event.find_pointer(*ptr, ec);
    return found != nullptr ? *found : json::value(nullptr);
  }
  if (const json::array* a = tmpl.if_array()) {
    json::array out;
    out.reserve(a->size());
    for (const json::value& item : *a) out.push_back(RenderTemplate(item, event));
    return out;
  }
  if (const json::object* o = tmpl.if_object()) {
    json::object out;
    out.reserve(o->size());
    for (const auto& kv : *o) out.emplace(kv.key(), RenderTemplate(kv.value(), event));
    return out;
  }
  return tmpl;
}

json::value RenderBody(const std::optional<json::value>& tmpl, const json::object& event) {
  if (tmpl) return RenderTemplate(*tmpl, event);
  const json::value* payload = event.if_contains("payload");
  return payload != nullptr ? *payload : json::value(nullptr);
}

core::Result<void> ValidateTemplate(const json::value& tmpl) {
  std::optional<std::string> bad;
  ForEachPlaceholder(tmpl, [&](std::string_view ptr) {
    // Boost.JSON checks pointer syntax only while walking a document, and stops at the first
    // missing token; RFC 6901's one rule (`~` is followed by 0 or 1) is checked here instead.
    for (size_t i = ptr.find('~'); i != std::string_view::npos; i = ptr.find('~', i + 1)) {
      if (i + 1 >= ptr.size() || (ptr[i + 1] != '0' && ptr[i + 1] != '1')) {
        if (!bad) bad = std::string(ptr);
        return;
      }
    }
  });
  if (bad) {
    return core::MakeError(core::ErrorCode::kInvalidField,
                           "template placeholder is not a JSON pointer: " + *bad, "template");
  }
  return {};
}

}  // namespace madeira::delivery
