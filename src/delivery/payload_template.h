// Endpoint body templates (SPEC §3): an endpoint may reshape the event it receives.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string_view>

#include "core/error.h"

namespace madeira::delivery {

// The object templates point into: {"event_id","event_type","source","payload","trace_id"}.
boost::json::object MakeEventObject(std::string_view event_id, std::string_view event_type,
                                    std::string_view source, const boost::json::value& payload,
                                    std::string_view trace_id);

// A copy of `tmpl` in which every string that is exactly "{{/json/pointer}}" is replaced by the
// value at that RFC 6901 pointer in `event`, keeping its type (a number stays a number). Objects
// and arrays are walked at any depth; other strings are left alone. A pointer that names
// nothing in the event becomes null, so one absent field does not fail the delivery.
boost::json::value RenderTemplate(const boost::json::value& tmpl, const boost::json::value& event);

// The delivery body: the rendered template, or the event's payload when there is none.
boost::json::value RenderBody(const std::optional<boost::json::value>& tmpl,
                              const boost::json::object& event);

// For endpoint create/update: kInvalidField when a placeholder's pointer is not valid RFC 6901
// syntax (such a pointer could never match, so it is the user's mistake, not missing data).
core::Result<void> ValidateTemplate(const boost::json::value& tmpl);

}  // namespace madeira::delivery
