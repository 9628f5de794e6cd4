// Starts a real `madeira serve` on a free loopback port with a fresh data directory.
#ifndef MADEIRA_SDK_TESTS_SERVER_H_
#define MADEIRA_SDK_TESTS_SERVER_H_

#include <sys/types.h>

#include <string>
#include <thread>

namespace madeira::sdk::testing {

class TestServer {
 public:
  // The binary is $MADEIRA_BIN, else the madeira of this build tree. With `config_toml`, the
  // server reads it as its --config file. Throws on failure.
  explicit TestServer(std::string config_toml = {});
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  const std::string& url() const { return url_; }

 private:
  void Start();
  void Stop();

  std::string config_toml_;
  pid_t pid_ = -1;
  std::string data_dir_;
  std::string url_;
  std::thread drain_;
};

}  // namespace madeira::sdk::testing

#endif  // MADEIRA_SDK_TESTS_SERVER_H_
