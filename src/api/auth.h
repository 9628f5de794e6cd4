// Bearer-token authentication and scope checks. Tokens are only ever compared as sha256
// digests, in constant time, so neither logs nor timing reveal them.
#pragma once

#include <string_view>
#include <vector>

#include "api/config.h"
#include "api/http_types.h"
#include "api/router.h"
#include "core/digest.h"
#include "core/error.h"

namespace madeira::api {

class Authenticator {
 public:
  explicit Authenticator(std::vector<ApiToken> tokens);

  bool enabled() const { return !tokens_.empty(); }
  // `authorization` is the raw header value. Auth off: always ok (an unnamed caller who sees
  // everything). A missing, malformed or unknown token is kUnauthorized; a known token without
  // a scope of `allowed` (and not admin) is kForbidden.
  core::Result<Caller> Check(std::string_view authorization, ScopeMask allowed) const;

 private:
  struct Known {
    std::string sha256_hex;  // lowercase
    ScopeMask scopes;
    std::string name;
  };
  std::vector<Known> tokens_;
};

using core::Sha256Hex;  // tokens are compared as digests

}  // namespace madeira::api
