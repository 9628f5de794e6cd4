// Identifiers the server makes.
#pragma once

#include <string>

#include "core/clock.h"
#include "core/random.h"

namespace madeira::core {

// RFC 9562 UUIDv7: 48-bit Unix ms timestamp, version 7, variant 10, random rest.
// Lower-case hex with dashes, e.g. "01890a5d-ac96-774b-bcce-b302099a8057".
std::string MakeUuidV7(Millis now, Random& random);

// An opaque random token of 32 hex chars (lease ids, trace ids).
std::string MakeToken(Random& random);

}  // namespace madeira::core
