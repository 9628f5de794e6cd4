// Opening the store `serve` is configured with, and `madeira migrate`.
#pragma once

#include <memory>

#include "cli/config.h"
#include "core/error.h"
#include "store/store.h"

namespace madeira::cli {

// sqlite: the file under data_dir. redis-pg: Redis at redis_url + PostgreSQL at database_url
// (kInvalidField when a URL is missing or malformed; kUnavailable, with a message starting
// "redis:" or "postgresql:", when one cannot be used).
core::Result<std::unique_ptr<store::Store>> OpenConfiguredStore(const ServeConfig& cfg);

// `madeira migrate`: brings the configured store's schema up to this build's version and exits.
// Exit codes as serve's.
int RunMigrate(const ServeFlags& flags);

// `madeira recover` (redis-pg only): rebuilds Redis's in-flight state from PostgreSQL after Redis
// lost data, prints what it wrote back, exits. Exit codes as serve's.
int RunRecover(const ServeFlags& flags);

}  // namespace madeira::cli
