// Identifiers the server makes.
#pragma once

#include <string>

#include "core/clock.h"
#include "core/random.h"

namespace madeira::core {

// RFC 9562 UUIDv7: 48-bit Unix ms timestamp, version 7, variant 10, random rest.
// Lower-case hex with dashes, e.g. "01890a5d-ac96-774b-bcce-b302099a8057".
std::string MakeUuidV7(Millis now, Random& random);

// An opaque random token of 32 hex chars.
std::string MakeToken(Random& random);

// 32 hex chars: 48-bit ms timestamp, then 80 random bits. For ids the server makes and
// indexes (lease ids, trace ids): the time prefix makes index inserts append at the end of
// the b-tree instead of dirtying a random page each, which is what a commit pays for.
std::string MakeOrderedToken(Millis now, Random& random);

}  // namespace madeira::core
