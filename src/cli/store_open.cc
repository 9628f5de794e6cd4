#include "cli/store_open.h"

#include <iostream>

#include "cli/serve.h"
#include "store/redis_pg/redis_pg_store.h"
#include "store/sqlite/sqlite_store.h"

namespace madeira::cli {

namespace {

store::RedisPgOptions RedisPgOptionsOf(const ServeConfig& cfg) {
  store::RedisPgOptions o;
  o.redis_url = cfg.redis_url;
  o.database_url = cfg.database_url;
  o.allow_volatile_redis = cfg.allow_volatile_redis;
  o.name_space = cfg.name_space;
  return o;
}

}  // namespace

core::Result<std::unique_ptr<store::Store>> OpenConfiguredStore(const ServeConfig& cfg) {
  if (cfg.store == "redis-pg") return store::OpenRedisPgStore(RedisPgOptionsOf(cfg));
  return store::OpenSqliteStore(cfg.data_dir);
}

int RunMigrate(const ServeFlags& flags) {
  auto loaded = LoadServeConfig(flags, ProcessEnv());
  if (!loaded) {
    std::cerr << "madeira migrate: invalid configuration: " << loaded.error().message << "\n";
    return kServeBadConfig;
  }
  if (loaded->store == "redis-pg") {
    auto version = store::MigrateRedisPgSchema(RedisPgOptionsOf(*loaded));
    if (!version) {
      std::cerr << "madeira migrate: " << version.error().message << "\n";
      return version.error().code == core::ErrorCode::kInvalidField ? kServeBadConfig
                                                                    : kServeFailed;
    }
    std::cout << "postgresql schema at version " << *version << "\n";
    return kServeOk;
  }
  // The embedded store migrates when it opens.
  auto opened = store::OpenSqliteStore(loaded->data_dir);
  if (!opened) {
    std::cerr << "madeira migrate: " << opened.error().message << "\n";
    return kServeFailed;
  }
  (*opened)->Close();
  std::cout << "sqlite store in " << loaded->data_dir << " is up to date\n";
  return kServeOk;
}

}  // namespace madeira::cli
