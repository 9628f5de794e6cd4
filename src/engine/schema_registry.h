// Payload schemas per (task_type, payload_version): JSON Schema draft 7 through valijson.
#pragma once

#include <boost/json/value.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/error.h"

namespace madeira::engine {

class SchemaRegistry {
 public:
  SchemaRegistry();
  ~SchemaRegistry();

  // Compiles and keeps a schema; an invalid schema is kInvalidSchema.
  core::Result<void> Put(const std::string& task_type, int version,
                         const boost::json::value& schema);
  // No schema registered: ok. Else kSchemaViolation naming the first failing path.
  core::Result<void> Validate(const std::string& task_type, int version,
                              const boost::json::value& payload) const;
  bool Has(const std::string& task_type, int version) const;

 private:
  struct Compiled;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::shared_ptr<Compiled>> schemas_;
};

}  // namespace madeira::engine
