#include "core/digest.h"

#include <openssl/evp.h>

#include <array>
#include <memory>
#include <stdexcept>

namespace madeira::core {

namespace {

// OpenSSL 3 looks the algorithm up (and allocates a context) on every EVP_Digest(EVP_sha256())
// call; fetch it once and keep one context per thread instead.
struct Sha256Context {
  Sha256Context() : md(EVP_MD_fetch(nullptr, "SHA256", nullptr)), ctx(EVP_MD_CTX_new()) {
    if (md == nullptr || ctx == nullptr) throw std::runtime_error("SHA-256 is not available");
  }
  ~Sha256Context() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
  EVP_MD* md;
  EVP_MD_CTX* ctx;
};

}  // namespace

std::string Sha256Hex(std::string_view data) {
  thread_local Sha256Context sha256;
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestInit_ex2(sha256.ctx, sha256.md, nullptr) != 1 ||
      EVP_DigestUpdate(sha256.ctx, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(sha256.ctx, digest.data(), &length) != 1) {
    throw std::runtime_error("SHA-256 digest failed");  // only if OpenSSL is broken
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace madeira::core
