// RFC 3339 timestamps: strict parsing (a zone offset or Z is required) and UTC formatting.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/error.h"

namespace madeira::core {

// Parses "2025-09-11T12:45:00+08:00", "2025-09-11T04:45:00.123Z" (fraction optional, any
// digits, truncated to ms). A time without an offset, a date only, or out-of-range fields
// (month 13, Feb 30, hour 24, offset ±24:00) is kInvalidScheduleTime with `field` set.
Result<Millis> ParseRfc3339(std::string_view text, std::string_view field = "schedule_time");

// Formats as "2025-09-11T04:45:00.000Z".
std::string FormatRfc3339(Millis t);

// Durations as written in the config: "250ms", "30s", "15m", "24h", "90d", integer + unit.
Result<Millis> ParseDuration(std::string_view text, std::string_view field = "duration");

}  // namespace madeira::core
