#include "cli/store_open.h"

#include <iostream>

#include "cli/serve.h"
#include "core/clock.h"
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
  o.ended_claims_retention = cfg.ended_claims_retention;
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

int RunRecover(const ServeFlags& flags) {
  auto loaded = LoadServeConfig(flags, ProcessEnv());
  if (!loaded) {
    std::cerr << "madeira recover: invalid configuration: " << loaded.error().message << "\n";
    return kServeBadConfig;
  }
  if (loaded->store != "redis-pg") {
    std::cerr << "madeira recover: only the redis-pg store has a Redis to rebuild (use --store "
                 "redis-pg with --redis-url and --database-url)\n";
    return kServeBadConfig;
  }
  core::SystemClock clock;
  auto report =
      store::RecoverRedisPg(RedisPgOptionsOf(*loaded), clock.Now(), loaded->idempotency_ttl);
  if (!report) {
    std::cerr << "madeira recover: " << report.error().message << "\n";
    return report.error().code == core::ErrorCode::kInvalidField ? kServeBadConfig : kServeFailed;
  }
  std::cout << "recovered " << report->tasks << " non-terminal tasks into redis ("
            << report->running_to_pending
            << " were running: their leases were lost with Redis, so they are pending again and "
               "the lost attempt is logged as lease_expired), "
            << report->ended << " ended task ids, " << report->idempotency_keys
            << " idempotency keys, " << report->events << " events\n";
  return kServeOk;
}

}  // namespace madeira::cli
