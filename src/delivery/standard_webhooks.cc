#include "delivery/standard_webhooks.h"

#include <openssl/rand.h>

#include <array>
#include <boost/algorithm/string/classification.hpp>
#include <boost/algorithm/string/split.hpp>
#include <stdexcept>

#include "delivery/crypto.h"

namespace madeira::delivery {
namespace {

constexpr std::string_view kVersionPrefix = "v1,";

std::string SignedContent(std::string_view msg_id, int64_t timestamp_seconds,
                          std::string_view body) {
  std::string content;
  content.reserve(msg_id.size() + body.size() + 24);
  content.append(msg_id).append(".").append(std::to_string(timestamp_seconds)).append(".");
  content.append(body);
  return content;
}

std::string_view AsView(const Sha256Digest& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

}  // namespace

core::Result<std::string> DecodeSecret(std::string_view secret) {
  if (!secret.starts_with(kSecretPrefix)) {
    return core::MakeError(core::ErrorCode::kInvalidField, "a secret starts with whsec_",
                           "secrets");
  }
  std::optional<std::string> key = Base64Decode(secret.substr(kSecretPrefix.size()));
  if (!key || key->empty()) {
    return core::MakeError(core::ErrorCode::kInvalidField,
                           "a secret is whsec_ followed by padded base64", "secrets");
  }
  return *std::move(key);
}

std::string GenerateSecret(core::Random& random) {
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    uint64_t word = random.Next64();
    for (int b = 0; b < 8; ++b) bytes.push_back(static_cast<char>((word >> (8 * b)) & 0xff));
  }
  return std::string(kSecretPrefix) + Base64Encode(bytes);
}

core::Result<std::string> Sign(std::string_view msg_id, int64_t timestamp_seconds,
                               std::string_view body, const std::vector<std::string>& secrets) {
  const std::string content = SignedContent(msg_id, timestamp_seconds, body);
  std::string header;
  for (const std::string& secret : secrets) {
    core::Result<std::string> key = DecodeSecret(secret);
    if (!key) return key.error();
    if (!header.empty()) header.push_back(' ');
    header.append(kVersionPrefix).append(Base64Encode(AsView(HmacSha256(*key, content))));
  }
  return header;
}

bool Verify(std::string_view msg_id, int64_t timestamp_seconds, std::string_view body,
            std::string_view signature_header, const std::vector<std::string>& secrets,
            int64_t now_seconds, int64_t tolerance_seconds) {
  if (now_seconds - timestamp_seconds > tolerance_seconds ||
      timestamp_seconds - now_seconds > tolerance_seconds) {
    return false;
  }
  const std::string content = SignedContent(msg_id, timestamp_seconds, body);
  std::vector<std::string> expected;
  for (const std::string& secret : secrets) {
    core::Result<std::string> key = DecodeSecret(secret);
    if (key) expected.push_back(Base64Encode(AsView(HmacSha256(*key, content))));
  }
  std::vector<std::string_view> tokens;
  boost::algorithm::split(tokens, signature_header, boost::algorithm::is_space(),
                          boost::algorithm::token_compress_on);
  bool match = false;
  for (std::string_view token : tokens) {
    if (!token.starts_with(kVersionPrefix)) continue;  // other versions are not understood
    for (const std::string& want : expected) {
      match |= EqualConstantTime(token.substr(kVersionPrefix.size()), want);
    }
  }
  return match;
}

uint64_t OpenSslRandom::Next64() {
  std::array<unsigned char, 8> bytes{};
  // RAND_bytes fails only when the OS entropy source is gone: nothing sensible to continue with.
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  uint64_t word = 0;
  for (unsigned char b : bytes) word = (word << 8) | b;
  return word;
}

}  // namespace madeira::delivery
