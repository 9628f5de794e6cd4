#include "server.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "transport.h"

extern char** environ;

namespace madeira::sdk::testing {

TestServer::TestServer(std::string config_toml) : config_toml_(std::move(config_toml)) {
  try {
    Start();
  } catch (...) {
    Stop();
    throw;
  }
}

TestServer::~TestServer() { Stop(); }

void TestServer::Start() {
  const char* env = std::getenv("MADEIRA_BIN");
  std::string bin = env != nullptr && *env != 0 ? env : MADEIRA_DEFAULT_BIN;
  char dir[] = "/tmp/madeira-cpp-sdk-XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  data_dir_ = dir;
  int out[2];
  if (pipe(out) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string data_arg = data_dir_;
  const std::string config_path = data_dir_ + "/madeira.toml";
  std::vector<const char*> argv = {bin.c_str(),   "serve",      "--listen",
                                   "127.0.0.1:0", "--data-dir", data_arg.c_str()};
  if (!config_toml_.empty()) {
    std::ofstream(config_path) << config_toml_;
    argv.push_back("--config");
    argv.push_back(config_path.c_str());
  }
  argv.push_back(nullptr);
  int rc =
      posix_spawn(&pid_, bin.c_str(), &actions, nullptr, const_cast<char**>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw std::runtime_error("cannot start " + bin);
  }
  // The first stdout line is "listening on 127.0.0.1:PORT".
  std::string line;
  char c;
  while (line.size() < 200 && read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  // Keep draining stdout: a closed pipe would SIGPIPE the server, a full one would block it.
  drain_ = std::thread([fd = out[0]] {
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
  });
  auto at = line.rfind(' ');
  if (!line.starts_with("listening on ") || at == std::string::npos) {
    throw std::runtime_error("unexpected first line from madeira: \"" + line + "\"");
  }
  url_ = "http://" + line.substr(at + 1);
  internal::Transport http(url_, "", std::chrono::seconds(2));
  for (int i = 0; i < 100; ++i) {
    try {
      http.Call("GET", "/healthz", "");
      return;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  throw std::runtime_error("madeira did not become healthy at " + url_);
}

void TestServer::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  if (drain_.joinable()) drain_.join();
  std::error_code ec;
  std::filesystem::remove_all(data_dir_, ec);
}

}  // namespace madeira::sdk::testing
