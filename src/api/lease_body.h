// The answers to POST /v1/leases and POST /v1/leases/ack written straight as text, the two
// answers a draining worker gets per batch. A lease answer says what LeaseJson says, but each
// task's payload, stored as JSON text, is checked and copied in instead of being parsed into
// values and printed again: that round trip was most of an HTTP thread's time in the drain.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/request_decoders.h"
#include "core/error.h"
#include "store/store.h"

namespace madeira::api {

// {"leases":[LeaseJson(lease)...]}
std::string LeasesBody(const std::vector<store::Lease>& leases);

// {"results":[{"lease_id","status":"succeeded"} or {"lease_id","error":ErrorObject}...]}, one
// per item in order.
std::string AckResultsBody(const std::vector<AckItem>& items,
                           const std::vector<core::Result<store::Unit>>& acked);

}  // namespace madeira::api
