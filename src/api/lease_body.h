// The answer to POST /v1/leases written straight as text. It says what LeaseJson says, but each
// task's payload, stored as JSON text, is checked and copied in instead of being parsed into
// values and printed again: that round trip was most of an HTTP thread's time in the drain.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace madeira::api {

// {"leases":[LeaseJson(lease)...]}
std::string LeasesBody(const std::vector<store::Lease>& leases);

// Appends `text` as a JSON string, escaped as boost::json::serialize escapes it.
void AppendJsonString(std::string& out, std::string_view text);

// True when `text` is one complete JSON value (the check that lets stored text be copied in).
bool IsJsonText(std::string_view text);

}  // namespace madeira::api
