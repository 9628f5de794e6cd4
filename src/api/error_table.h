// The one place that turns a core::Error into an HTTP status and an error body
// {"error":{"code","message","field"?}}.
#pragma once

#include <boost/json/object.hpp>

#include "api/http_types.h"
#include "core/error.h"

namespace madeira::api {

unsigned HttpStatusFor(core::ErrorCode code);

// {"code","message","field"?}; an internal error's message is replaced by a generic one so
// no detail of a bug reaches the client.
boost::json::object ErrorObject(const core::Error& error);

// The full error response: status, {"error":{...}}, and Retry-After: 1 for 503.
Response ErrorResponse(const core::Error& error);

}  // namespace madeira::api
