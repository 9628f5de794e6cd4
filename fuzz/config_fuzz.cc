// Feeds arbitrary bytes through what an operator hands `madeira serve`: the TOML config file,
// a listen address and a --redis-url. Any crash or sanitizer report is a bug; so is an error
// message that repeats a token's or a password's value (errors reach the terminal and logs).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/config.h"
#include "store/redis_pg/redis_conn.h"

namespace {

constexpr std::string_view kSecret = "s3cr3t-fuzz-value";

// Any key may be the one that holds a secret: put the value under each and make sure no error
// message carries it back out.
void CheckSecretStaysOut(std::string_view text) {
  if (text.find(kSecret) != std::string_view::npos) return;  // the input may name it itself
  std::string toml(text);
  toml += "\n[auth]\ntokens = [{ name = \"x\", token = \"";
  toml += kSecret;
  toml += "\", scopes = [\"nope\"] }]\n";
  auto config = madeira::cli::ParseConfigText(toml, "fuzz.toml");
  if (!config && config.error().message.find(kSecret) != std::string::npos) __builtin_trap();

  // The same for a --redis-url whose password is the secret and whose host and rest are the input.
  auto url = madeira::store::redis_pg::ParseRedisUrl("redis://user:" + std::string(kSecret) + "@" +
                                                     std::string(text));
  if (!url && url.error().message.find(kSecret) != std::string::npos) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace madeira;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)cli::ParseConfigText(text, "fuzz.toml");
  CheckSecretStaysOut(text);
  if (auto hp = cli::ParseHostPort(text)) {
    if (hp->host.empty()) __builtin_trap();
    (void)cli::IsLoopbackHost(hp->host);
  }
  const std::string url(text);
  if (auto ep = store::redis_pg::ParseRedisUrl(url)) {
    if (ep->host.empty() || ep->port == 0 || ep->db < 0) __builtin_trap();
  }
  return 0;
}
