#include "madeira/signatures.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <optional>

namespace madeira::sdk {
namespace {

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

// Strict standard base64 (with padding); nullopt for anything else.
std::optional<std::string> Base64Decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < in.size(); i += 4) {
    int pad = 0;
    uint32_t group = 0;
    for (size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      int v = value(c);
      bool padding = c == '=' && i + 4 == in.size() && j >= 2 && (j == 3 || in[i + 3] == '=');
      if (v < 0 && !padding) return std::nullopt;
      if (padding) ++pad;
      group = group << 6 | static_cast<uint32_t>(v < 0 ? 0 : v);
    }
    out.push_back(static_cast<char>(group >> 16));
    if (pad < 2) out.push_back(static_cast<char>(group >> 8 & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(group & 0xFF));
  }
  return out;
}

}  // namespace

std::string EventSignature(std::string_view secret, std::string_view timestamp,
                           std::string_view body) {
  std::string signed_text;
  signed_text.reserve(timestamp.size() + 1 + body.size());
  signed_text.append(timestamp).append("\n").append(body);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned char c : Hmac(secret, signed_text)) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

EventHeaders SignEvent(std::string_view source_id, std::string_view secret, std::string_view body,
                       std::chrono::sys_seconds at) {
  std::string ts = std::to_string(at.time_since_epoch().count());
  return {std::string(source_id), ts, EventSignature(secret, ts, body)};
}

WebhookError::WebhookError(WebhookVerdict verdict)
    : Error(verdict == WebhookVerdict::kBadHeaders
                ? "madeira: webhook-id, webhook-timestamp or webhook-signature missing or malformed"
            : verdict == WebhookVerdict::kTimestampOutsideTolerance
                ? "madeira: webhook timestamp outside tolerance"
                : "madeira: no webhook signature matches"),
      verdict_(verdict) {}

WebhookVerifier::WebhookVerifier(const std::vector<std::string>& secrets,
                                 std::chrono::seconds tolerance)
    : tolerance_(tolerance) {
  if (secrets.empty()) throw Error("madeira: at least one webhook secret is needed");
  for (std::string_view s : secrets) {
    if (s.starts_with("whsec_")) s.remove_prefix(6);
    auto key = Base64Decode(s);
    if (!key || key->empty()) throw Error("madeira: webhook secret is not whsec_ + base64");
    keys_.push_back(std::move(*key));
  }
}

WebhookVerdict WebhookVerifier::Check(std::string_view id, std::string_view timestamp,
                                      std::string_view signature, std::string_view body,
                                      std::chrono::sys_seconds now) const {
  if (id.empty() || timestamp.empty() || signature.empty() || timestamp.size() > 18) {
    return WebhookVerdict::kBadHeaders;
  }
  int64_t ts = 0;
  for (char c : timestamp) {
    if (c < '0' || c > '9') return WebhookVerdict::kBadHeaders;
    ts = ts * 10 + (c - '0');
  }
  int64_t skew = now.time_since_epoch().count() - ts;
  if (skew > tolerance_.count() || -skew > tolerance_.count()) {
    return WebhookVerdict::kTimestampOutsideTolerance;
  }
  std::string signed_text;
  signed_text.append(id).append(".").append(timestamp).append(".").append(body);
  std::vector<std::string> expected;
  for (const auto& key : keys_) expected.push_back(Hmac(key, signed_text));
  // Space-separated "version,base64" entries; versions other than v1 are skipped.
  size_t pos = 0;
  while (pos < signature.size()) {
    size_t end = signature.find(' ', pos);
    if (end == std::string_view::npos) end = signature.size();
    std::string_view part = signature.substr(pos, end - pos);
    pos = end + 1;
    if (!part.starts_with("v1,")) continue;
    auto got = Base64Decode(part.substr(3));
    if (!got) continue;
    for (const auto& want : expected) {
      if (got->size() == want.size() && CRYPTO_memcmp(got->data(), want.data(), want.size()) == 0) {
        return WebhookVerdict::kValid;
      }
    }
  }
  return WebhookVerdict::kNoMatchingSignature;
}

void WebhookVerifier::Verify(std::string_view id, std::string_view timestamp,
                             std::string_view signature, std::string_view body,
                             std::chrono::sys_seconds now) const {
  auto verdict = Check(id, timestamp, signature, body, now);
  if (verdict != WebhookVerdict::kValid) throw WebhookError(verdict);
}

}  // namespace madeira::sdk
