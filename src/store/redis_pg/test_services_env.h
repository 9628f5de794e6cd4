// For the redis-pg tests: where the private Redis and PostgreSQL of the test run are.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

namespace madeira::store::redis_pg::test {

// A variable from the environment, else from the file ctest's redis_pg_services fixture wrote
// (MADEIRA_TEST_SERVICES_ENV names it; lines NAME=VALUE).
inline std::string Env(const char* name) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  const char* file = std::getenv("MADEIRA_TEST_SERVICES_ENV");
  if (file == nullptr) return "";
  std::ifstream in(file);
  std::string line;
  const std::string want = std::string(name) + "=";
  while (std::getline(in, line)) {
    if (line.rfind(want, 0) == 0) return line.substr(want.size());
  }
  return "";
}

}  // namespace madeira::store::redis_pg::test
