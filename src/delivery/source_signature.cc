#include "delivery/source_signature.h"

#include <algorithm>
#include <boost/algorithm/hex.hpp>
#include <cctype>
#include <charconv>
#include <iterator>

#include "delivery/crypto.h"

namespace madeira::delivery {
namespace {

constexpr std::string_view kSchemePrefix = "sha256=";

std::string SignedContent(std::string_view timestamp_header, std::string_view body) {
  std::string content;
  content.reserve(timestamp_header.size() + 1 + body.size());
  content.append(timestamp_header).append("\n").append(body);
  return content;
}

core::Error BadSignature() {
  return core::MakeError(core::ErrorCode::kBadSignature, "bad signature");
}

}  // namespace

std::string SignSourceEvent(std::string_view secret, std::string_view timestamp_header,
                            std::string_view body) {
  Sha256Digest digest = HmacSha256(secret, SignedContent(timestamp_header, body));
  std::string out(kSchemePrefix);
  boost::algorithm::hex_lower(digest.begin(), digest.end(), std::back_inserter(out));
  return out;
}

core::Result<void> VerifySourceEvent(std::string_view timestamp_header,
                                     std::string_view signature_header, std::string_view body,
                                     const std::vector<std::string>& secrets, core::Millis now,
                                     int64_t tolerance_seconds) {
  int64_t timestamp = 0;
  const char* end = timestamp_header.data() + timestamp_header.size();
  auto [ptr, ec] = std::from_chars(timestamp_header.data(), end, timestamp);
  if (timestamp_header.empty() || ec != std::errc() || ptr != end || timestamp < 0) {
    return BadSignature();
  }
  const int64_t now_seconds = now / 1000;
  if (now_seconds - timestamp > tolerance_seconds || timestamp - now_seconds > tolerance_seconds) {
    return BadSignature();
  }
  if (!signature_header.starts_with(kSchemePrefix)) return BadSignature();
  std::string_view hex = signature_header.substr(kSchemePrefix.size());
  if (hex.size() != 2 * sizeof(Sha256Digest)) return BadSignature();
  // unhex throws on a bad digit; checking first keeps exceptions off the request path.
  if (!std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(uint8_t(c)); })) {
    return BadSignature();
  }
  std::string received;
  boost::algorithm::unhex(hex.begin(), hex.end(), std::back_inserter(received));
  const std::string content = SignedContent(timestamp_header, body);
  bool match = false;
  for (const std::string& secret : secrets) {  // no early exit: time does not tell which matched
    Sha256Digest want = HmacSha256(secret, content);
    match |= EqualConstantTime(received, {reinterpret_cast<const char*>(want.data()), want.size()});
  }
  if (!match) return BadSignature();
  return {};
}

}  // namespace madeira::delivery
