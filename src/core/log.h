// Logs: one JSON object a line on stderr, with trace_id where one is known.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace madeira::core {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

using LogFields = std::vector<std::pair<std::string_view, std::string_view>>;

void SetLogLevel(LogLevel min_level);
// {"ts":"...","level":"info","msg":"...","trace_id":"...", fields...}
void Log(LogLevel level, std::string_view msg, const LogFields& fields = {},
         std::string_view trace_id = {});

}  // namespace madeira::core
