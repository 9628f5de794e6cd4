// SHA-256 as lower-case hex (content hashes of envelopes, bearer-token digests).
#pragma once

#include <string>
#include <string_view>

namespace madeira::core {

std::string Sha256Hex(std::string_view data);

}  // namespace madeira::core
