#include "delivery/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>
#include <stdexcept>

namespace madeira::delivery {

namespace {

using MacContext = std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)>;

// An HMAC context with SHA-256 already chosen; re-keyed on every use.
MacContext MakeHmacSha256Context() {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  MacContext ctx(mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr, &EVP_MAC_CTX_free);
  EVP_MAC_free(mac);  // the context keeps its own reference
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                         OSSL_PARAM_construct_end()};
  if (!ctx || EVP_MAC_CTX_set_params(ctx.get(), params) != 1) {
    throw std::runtime_error("HMAC-SHA256 is not available from OpenSSL");
  }
  return ctx;
}

}  // namespace

// OpenSSL 3's one-shot HMAC() looks the algorithm up on every call (a locked fetch); one
// context per thread, re-keyed, does the same work without it.
Sha256Digest HmacSha256(std::string_view key, std::string_view message) {
  thread_local MacContext ctx = MakeHmacSha256Context();
  Sha256Digest out{};
  size_t len = 0;
  static const unsigned char kEmptyKey = 0;  // a zero-length key still needs a valid pointer
  const auto* key_bytes =
      key.empty() ? &kEmptyKey : reinterpret_cast<const unsigned char*>(key.data());
  const bool ok = EVP_MAC_init(ctx.get(), key_bytes, key.size(), nullptr) == 1 &&
                  EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(message.data()),
                                 message.size()) == 1 &&
                  EVP_MAC_final(ctx.get(), out.data(), &len, out.size()) == 1;
  // HMAC-SHA256 only fails when OpenSSL itself is broken: a bug, not an input error.
  if (!ok || len != out.size()) throw std::runtime_error("HMAC-SHA256 failed");
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
