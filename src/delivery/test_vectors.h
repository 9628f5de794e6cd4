// Loads the shared SDK vectors (sdk/testdata) so C++ and every SDK check the same cases.
#pragma once

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <string>

namespace madeira::delivery::testing {

inline boost::json::value LoadVectors(const std::string& file) {
  std::ifstream in(std::string(MADEIRA_TESTDATA_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str());
}

}  // namespace madeira::delivery::testing
