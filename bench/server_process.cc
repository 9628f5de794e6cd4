#include "server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "http_load.h"

namespace madeira::bench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "madeira-bench-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {

// Parses "127.0.0.1:PORT" or "[::1]:PORT".
boost::asio::ip::tcp::endpoint ParseHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("bad listen address: " + text);
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  auto port = static_cast<unsigned short>(std::stoi(text.substr(colon + 1)));
  return {boost::asio::ip::make_address(host), port};
}

// Reads one line from `fd`, waiting at most until `deadline`; empty on EOF or time-out.
std::string ReadLine(int fd, Clock::time_point deadline) {
  std::string line;
  char c;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return {};
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return {};
    ssize_t n = read(fd, &c, 1);
    if (n <= 0) return {};
    if (c == '\n') return line;
    line.push_back(c);
  }
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

ServerProcess::ServerProcess(const std::string& binary, const fs::path& data_dir,
                             const fs::path& log_file, std::chrono::seconds startup_timeout,
                             const fs::path& config_file,
                             const std::vector<std::string>& store_args) {
  if (access(binary.c_str(), X_OK) != 0) {
    throw std::runtime_error("no executable server binary at " + binary);
  }
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  int log_fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot open " + log_file.string());
  std::vector<std::string> args = {binary,        "serve",      "--listen",
                                   "127.0.0.1:0", "--data-dir", data_dir.string()};
  if (store_args.empty()) {
    args.insert(args.end(), {"--store", "sqlite"});
  } else {
    args.insert(args.end(), store_args.begin(), store_args.end());
  }
  if (!config_file.empty()) {
    args.push_back("--config");
    args.push_back(config_file.string());
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  started_at_ = Clock::now();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // A killed benchmark must not leave a server behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(log_fd);
  stdout_fd_ = out_pipe[0];

  Clock::time_point deadline = Clock::now() + startup_timeout;
  const std::string prefix = "listening on ";
  while (true) {
    std::string line = ReadLine(stdout_fd_, deadline);
    if (line.empty()) {
      std::string how = Stop(std::chrono::seconds(5));
      throw std::runtime_error("server printed no 'listening on' line (" + how + "); see " +
                               log_file.string());
    }
    if (line.rfind(prefix, 0) == 0) {
      endpoint_ = ParseHostPort(line.substr(prefix.size()));
      break;
    }
  }
  // Whatever the server prints later must not fill the pipe and block it.
  stdout_drain_ = std::thread([fd = stdout_fd_] {
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
  });
}

ServerProcess::~ServerProcess() { Stop(); }

long ServerProcess::StatusField(const char* name) const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (in >> key) {
    if (key == name) {
      long kib = 0;
      in >> kib;
      return kib;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

long ServerProcess::RssKib() const { return StatusField("VmRSS:"); }
long ServerProcess::PeakRssKib() const { return StatusField("VmHWM:"); }

std::string ServerProcess::Stop(std::chrono::seconds grace) {
  std::string how = "not running";
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    Clock::time_point deadline = Clock::now() + grace;
    pid_t r = 0;
    while ((r = waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
      usleep(10'000);
    }
    if (r == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      how = "killed after " + std::to_string(grace.count()) + " s without exiting";
    } else {
      how = DescribeStatus(status);
    }
    pid_ = -1;
  }
  if (stdout_drain_.joinable()) stdout_drain_.join();
  if (stdout_fd_ >= 0) {
    close(stdout_fd_);
    stdout_fd_ = -1;
  }
  return how;
}

int RunProgram(const std::vector<std::string>& argv, std::string* out) {
  int out_pipe[2] = {-1, -1};
  if (out != nullptr && pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> copy = argv;
  std::vector<char*> cargv;
  for (std::string& a : copy) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (out != nullptr) dup2(out_pipe[1], STDOUT_FILENO);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  if (out != nullptr) {
    close(out_pipe[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(out_pipe[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) out->append(buf, static_cast<size_t>(n));
    }
    close(out_pipe[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

TestServices::TestServices(const std::string& script) : script_(script) {
  if (access(script_.c_str(), R_OK) != 0) {
    throw std::runtime_error("no " + script_ +
                             " (run from the repository root, or pass --services-script)");
  }
  std::string printed;
  int rc = RunProgram({"bash", script_, "start", dir_.path().string()}, &printed);
  std::ifstream env(dir_.path() / "env");
  std::string line;
  while (std::getline(env, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq);
    if (key == "MADEIRA_TEST_REDIS_URL") redis_url_ = line.substr(eq + 1);
    if (key == "MADEIRA_TEST_DATABASE_URL") database_url_ = line.substr(eq + 1);
  }
  if (rc != 0 || redis_url_.empty() || database_url_.empty()) {
    RunProgram({"bash", script_, "stop", dir_.path().string()});
    throw std::runtime_error(script_ + " start failed (exit " + std::to_string(rc) +
                             "): " + printed);
  }
}

TestServices::~TestServices() { RunProgram({"bash", script_, "stop", dir_.path().string()}); }

Clock::time_point WaitReady(const boost::asio::ip::tcp::endpoint& endpoint,
                            std::chrono::seconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::string last;
  while (Clock::now() < deadline) {
    HttpResponse r = FetchOnce(endpoint, "/readyz", std::chrono::milliseconds(500));
    if (r.status == 200) return Clock::now();
    last = r.Describe();
    usleep(2'000);
  }
  throw std::runtime_error("GET /readyz never answered 200; last: " + last);
}

}  // namespace madeira::bench
