// The shared vectors in sdk/testdata, read in place (never copied).
#ifndef MADEIRA_SDK_TESTS_TESTDATA_H_
#define MADEIRA_SDK_TESTS_TESTDATA_H_

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace madeira::sdk::testing {

inline boost::json::value ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(MADEIRA_TESTDATA_DIR) + "/" + name);
  if (!in) throw std::runtime_error("cannot read testdata " + name);
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str());
}

}  // namespace madeira::sdk::testing

#endif  // MADEIRA_SDK_TESTS_TESTDATA_H_
