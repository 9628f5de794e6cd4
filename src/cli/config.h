// The configuration of `madeira serve` (SPEC §1): TOML file, environment and flags merged with
// the precedence flag > environment > config file > default.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/digest.h"
#include "core/envelope.h"
#include "core/error.h"
#include "core/retry_policy.h"

namespace madeira::cli {

// One [[auth.tokens]] entry. Only the SHA-256 of the token is kept: a plaintext `token` is
// hashed at load and dropped, so a config dump or a core file never holds it.
struct TokenConfig {
  std::string name;
  std::string sha256_hex;           // 64 lower-case hex chars
  std::vector<std::string> scopes;  // each "producer", "worker" or "admin"
};

// One [[sources]] entry (who may POST /v1/events).
struct SourceConfig {
  std::string id;
  std::vector<std::string> secrets;
  bool allow_target_uri = false;            // may its events name their own target_uri?
  std::vector<std::string> target_secrets;  // "whsec_…" signing those deliveries
};

struct ServeConfig {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./data";
  std::string store = "sqlite";  // "sqlite" or "redis-pg"
  std::string redis_url;
  std::string database_url;
  // redis-pg: accept a Redis without appendonly yes + appendfsync always (tasks may be lost).
  bool allow_volatile_redis = false;
  // redis-pg: keeps installations apart on one Redis + PostgreSQL (keys "madeira:<ns>:", schema
  // "madeira_<ns>"); empty = "madeira:" and "madeira". a-z, 0-9 and _ only.
  std::string name_space;
  std::string role = "all";  // all | api | scheduler | deliverer
  // redis-pg: how long Redis keeps the ids of ended tasks (older ones: PostgreSQL).
  core::Millis ended_claims_retention = 3'600'000;
  std::string config_file;  // the file that was read, empty when none

  std::vector<TokenConfig> tokens;
  std::vector<SourceConfig> sources;

  core::EnvelopeLimits limits;
  core::Millis idempotency_ttl = 24LL * 3600 * 1000;

  core::RetryPolicy default_retry = core::RetryPolicy::TaskDefaults();
  std::map<std::string, core::RetryPolicy> retry_by_type;   // [retry."order.close_timeout"]
  std::map<std::string, core::RetryPolicy> retry_by_queue;  // [retry."queue:orders"]
  core::RetryPolicy webhook_retry = core::RetryPolicy::WebhookDefaults();

  // [delivery]
  bool allow_private_targets = false;
  std::vector<std::string> allow_cidrs;                 // private ranges allowed all the same
  core::Millis disable_after = 5LL * 24 * 3600 * 1000;  // failing with no success this long
  int breaker_failures = 5;                             // consecutive, to open the breaker
  core::Millis breaker_cool_down = 30'000;
  int webhook_max_retries = 10;

  bool auth_enabled() const { return !tokens.empty(); }
};

// What was given on the command line; an empty optional means "not given".
struct ServeFlags {
  std::optional<std::string> config_file;
  std::optional<std::string> listen;
  std::optional<std::string> data_dir;
  std::optional<std::string> store;
  std::optional<std::string> redis_url;
  std::optional<std::string> database_url;
  std::optional<std::string> role;
  bool allow_volatile_redis = false;  // --allow-volatile-redis (only ever turns it on)
  std::optional<std::string> name_space;
};

// Reads one environment variable; injected so tests do not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup ProcessEnv();

// Parses TOML text over the defaults. `origin` names the source in error messages. An
// unknown key or a wrong type is an error naming the key (never a token or secret value).
core::Result<ServeConfig> ParseConfigText(std::string_view toml, std::string_view origin);

// Merges defaults, the config file (from the flag, else MADEIRA_CONFIG), the environment
// and the flags, then validates the result.
core::Result<ServeConfig> LoadServeConfig(const ServeFlags& flags, const EnvLookup& env);

struct HostPort {
  std::string host;  // without brackets for IPv6
  uint16_t port = 0;
};
// "127.0.0.1:8080", "[::1]:0", "localhost:80".
core::Result<HostPort> ParseHostPort(std::string_view text);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(std::string_view host);

// Without tokens auth is off, so only a loopback listener is allowed (SPEC §1).
core::Result<void> CheckListenAllowed(const ServeConfig& config);

using core::Sha256Hex;

}  // namespace madeira::cli
