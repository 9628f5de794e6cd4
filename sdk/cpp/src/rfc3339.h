// RFC 3339 times, always with a zone: Madeira refuses naive times rather than guess a zone.
#ifndef MADEIRA_SDK_SRC_RFC3339_H_
#define MADEIRA_SDK_SRC_RFC3339_H_

#include <optional>
#include <string>
#include <string_view>

#include "madeira/task.h"

namespace madeira::sdk::internal {

// "2025-09-11T04:45:00.000Z"; nullopt for years RFC 3339 cannot write (before 0, after 9999).
std::optional<std::string> FormatTime(Time t);

// Parses "YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)" (T and Z in either case); nullopt for anything
// else, including a time without an offset. Sub-millisecond digits are truncated.
std::optional<Time> ParseTime(std::string_view s);

}  // namespace madeira::sdk::internal

#endif  // MADEIRA_SDK_SRC_RFC3339_H_
