#include "delivery/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace madeira::delivery {

Sha256Digest HmacSha256(std::string_view key, std::string_view message) {
  Sha256Digest out{};
  unsigned int len = 0;
  const unsigned char* ok = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                                 reinterpret_cast<const unsigned char*>(message.data()),
                                 message.size(), out.data(), &len);
  // HMAC-SHA256 only fails when OpenSSL itself is broken: a bug, not an input error.
  if (ok == nullptr || len != out.size()) throw std::runtime_error("HMAC-SHA256 failed");
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  if (text.find_first_of(" \t\r\n") != std::string_view::npos) return std::nullopt;
  std::string out(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts padding as zero bytes; drop one per trailing '='.
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

bool EqualConstantTime(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace madeira::delivery
