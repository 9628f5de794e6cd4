// A loopback HTTP server that answers from a function: for worker behaviour a real server
// cannot be made to show on cue (a lease answered late, an extend held past the deadline).
#ifndef MADEIRA_SDK_TESTS_FAKE_SERVER_H_
#define MADEIRA_SDK_TESTS_FAKE_SERVER_H_

#include <functional>
#include <memory>
#include <string>

namespace madeira::sdk::testing {

struct FakeAnswer {
  int status = 200;
  std::string body = "{}";  // JSON
};

class FakeServer {
 public:
  // `answer` runs on the request's connection thread and may block (to hold an answer).
  using Answer = std::function<FakeAnswer(const std::string& method, const std::string& target)>;

  explicit FakeServer(Answer answer);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  const std::string& url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace madeira::sdk::testing

#endif  // MADEIRA_SDK_TESTS_FAKE_SERVER_H_
