#include "api/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>

namespace madeira::api {

Authenticator::Authenticator(std::vector<ApiToken> tokens) {
  for (ApiToken& t : tokens) {
    Known k{std::move(t.sha256_hex), 0, std::move(t.name)};
    for (char& c : k.sha256_hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Scope s : t.scopes) k.scopes |= ScopeBit(s);
    tokens_.push_back(std::move(k));
  }
}

core::Result<Caller> Authenticator::Check(std::string_view authorization, ScopeMask allowed) const {
  if (!enabled() || allowed == kPublic) return Caller{};
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() ||
      authorization.substr(0, kBearer.size()) != kBearer) {
    return core::MakeError(core::ErrorCode::kUnauthorized, "a bearer token is required");
  }
  const std::string presented = Sha256Hex(authorization.substr(kBearer.size()));
  // Every configured hash is compared, so the time taken does not tell which one matched.
  ScopeMask scopes = 0;
  const Known* known = nullptr;
  for (const Known& k : tokens_) {
    if (k.sha256_hex.size() == presented.size() &&
        CRYPTO_memcmp(k.sha256_hex.data(), presented.data(), presented.size()) == 0) {
      if (known == nullptr) known = &k;
      scopes |= k.scopes;
    }
  }
  if (!known) return core::MakeError(core::ErrorCode::kUnauthorized, "unknown token");
  if ((scopes & (allowed | kAdminOnly)) == 0) {
    return core::MakeError(core::ErrorCode::kForbidden,
                           "the token lacks the scope this route needs");
  }
  return Caller{known->name, (scopes & kAdminOnly) != 0};
}

}  // namespace madeira::api
