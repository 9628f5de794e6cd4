// JSON text written or checked without building values: the answers a draining worker or a
// batch submitter gets are written straight as text (see api/lease_body.h, api/tasks_routes.cc),
// and the packed task records of the redis-pg store (store/redis_pg/task_codec.h).
#pragma once

#include <string>
#include <string_view>

namespace madeira::core {

// Appends `text` as a JSON string, byte for byte as boost::json::serialize writes it.
void AppendJsonString(std::string& out, std::string_view text);

// True when `text` is one complete JSON value (the check that lets stored text be copied in).
bool IsJsonText(std::string_view text);

}  // namespace madeira::core
