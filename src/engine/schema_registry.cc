#include "engine/schema_registry.h"

#define VALIJSON_USE_EXCEPTIONS 1
#include <stdexcept>
#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace madeira::engine {

using core::ErrorCode;
using core::MakeError;

struct SchemaRegistry::Compiled {
  valijson::Schema schema;
};

namespace {

// SPEC §2: unknown payload properties are rejected unless the schema allows them, so an
// object schema that lists properties and says nothing about others is closed.
void CloseObjectSchemas(boost::json::value& node) {
  if (auto* arr = node.if_array()) {
    for (auto& v : *arr) CloseObjectSchemas(v);
    return;
  }
  auto* obj = node.if_object();
  if (obj == nullptr) return;
  if (obj->contains("properties") && !obj->contains("additionalProperties") &&
      !obj->contains("patternProperties")) {
    (*obj)["additionalProperties"] = false;
  }
  for (auto& [key, child] : *obj) {
    // Values of these keywords are data, not subschemas.
    if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;
    CloseObjectSchemas(child);
  }
}

std::string DescribeFailure(valijson::ValidationResults& results) {
  valijson::ValidationResults::Error error;
  std::string out;
  // The deepest error is the most specific; valijson reports outer contexts first.
  while (results.popError(error)) {
    std::string path;
    for (const auto& part : error.context) path += part;
    out = path + ": " + error.description;
  }
  return out.empty() ? "payload does not match the schema" : out;
}

}  // namespace

SchemaRegistry::SchemaRegistry() = default;
SchemaRegistry::~SchemaRegistry() = default;

core::Result<void> SchemaRegistry::Put(const std::string& task_type, int version,
                                       const boost::json::value& schema) {
  if (!schema.is_object()) {
    return MakeError(ErrorCode::kInvalidSchema, "a schema must be a JSON object");
  }
  boost::json::value effective = schema;
  CloseObjectSchemas(effective);
  auto compiled = std::make_shared<Compiled>();
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::BoostJsonAdapter adapter(effective);
    parser.populateSchema(adapter, compiled->schema);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInvalidSchema, std::string("invalid JSON Schema: ") + e.what());
  }
  std::lock_guard lock(mu_);
  schemas_[{task_type, version}] = std::move(compiled);
  return {};
}

core::Result<void> SchemaRegistry::Validate(const std::string& task_type, int version,
                                            const boost::json::value& payload) const {
  std::shared_ptr<Compiled> compiled;
  {
    std::lock_guard lock(mu_);
    auto it = schemas_.find({task_type, version});
    if (it == schemas_.end()) return {};
    compiled = it->second;
  }
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::BoostJsonAdapter target(payload);
  try {
    if (validator.validate(compiled->schema, target, &results)) return {};
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kSchemaViolation, e.what(), "payload");
  }
  return MakeError(ErrorCode::kSchemaViolation, DescribeFailure(results), "payload");
}

bool SchemaRegistry::Has(const std::string& task_type, int version) const {
  std::lock_guard lock(mu_);
  return schemas_.count({task_type, version}) > 0;
}

}  // namespace madeira::engine
