// Payload schemas: registering one, and keeping this process's set in step with the store's.
#include <boost/asio/post.hpp>
#include <boost/json/serialize.hpp>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace madeira::engine {

// How often a process re-reads the schemas on a store other processes share. Submits do not
// depend on it (the store refuses one validated against an older set); it keeps them from
// paying for the read themselves.
constexpr auto kSchemaSync = std::chrono::seconds(1);

void Engine::Impl::PutSchema(std::string task_type, int version, boost::json::value schema,
                             Callback<Unit> done) {
  SchemaRegistry scratch;  // compile first: an invalid schema must change nothing
  if (auto ok = scratch.Put(task_type, version, schema); !ok) return done(ok.error());
  store::SchemaRecord record{task_type, version, boost::json::serialize(schema), clock_.Now()};
  store_.PutSchema(std::move(record), [self = shared_from_this(), task_type, version,
                                       schema = std::move(schema), done](Result<Unit> stored) {
    if (!stored) return done(stored.error());
    {
      std::lock_guard lock(self->schema_text_mu_);
      (void)self->schemas_.Put(task_type, version, schema);
      self->schema_text_[{task_type, version}] = boost::json::serialize(schema);
    }
    if (!self->store_.SharedByProcesses()) return done(Unit{});
    // The put made a new version of the set: read it, or this process's next submits would
    // each be refused once as stale.
    self->ReadSchemas([done](Result<Unit>) { done(Unit{}); });
  });
}

void Engine::Impl::ReadSchemas(Callback<Unit> done) {
  uint64_t read = 0;
  {
    std::lock_guard lock(schema_text_mu_);
    read = ++schema_reads_;
  }
  store_.ListSchemaSet([self = shared_from_this(), read, done](Result<store::SchemaSet> set) {
    if (!set) return done(set.error());
    self->LoadSchemaSet(read, *set);
    done(Unit{});
  });
}

void Engine::Impl::LoadSchemaSet(uint64_t read, const store::SchemaSet& set) {
  std::lock_guard lock(schema_text_mu_);
  // A read begun before the one loaded last is dropped: its older schemas would be used by
  // submits that took the newer version, which is all the store checks.
  if (read <= schema_read_loaded_) return;
  schema_read_loaded_ = read;
  for (const auto& record : set.schemas) {
    std::string& loaded = schema_text_[{record.task_type, record.version}];
    if (loaded == record.schema) continue;
    auto json = core::ParseJson(record.schema);
    if (!json || !schemas_.Put(record.task_type, record.version, *json)) {
      core::Log(core::LogLevel::kError, "stored schema no longer compiles",
                {{"task_type", record.task_type}});
    }
    loaded = record.schema;
  }
  schemas_version_ = set.version;
}

std::string Engine::Impl::SchemasVersion() {
  std::lock_guard lock(schema_text_mu_);
  return schemas_version_;
}

void Engine::Impl::SyncSchemasLater() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopped_) return;
    self->schema_timer_.expires_after(kSchemaSync);
    self->schema_timer_.async_wait([self](boost::system::error_code ec) {
      if (ec || self->stopped_) return;
      // A failed read: the next tick reads again.
      self->ReadSchemas([self](Result<Unit>) { self->SyncSchemasLater(); });
    });
  });
}

}  // namespace madeira::engine
