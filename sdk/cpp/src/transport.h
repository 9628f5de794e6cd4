// HTTP/1.1 keep-alive transport over libcurl, shared by the producer and worker sides.
#ifndef MADEIRA_SDK_SRC_TRANSPORT_H_
#define MADEIRA_SDK_SRC_TRANSPORT_H_

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace madeira::sdk::internal {

class Transport {
 public:
  Transport(std::string base_url, std::string token, std::chrono::milliseconds timeout);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Sends one request (body is JSON text, empty for none) and returns the parsed 2xx answer
  // (null for an empty body). Non-2xx throws ApiError; no answer throws TransportError.
  // A set *abort stops the request within about a second (used by Worker::Close).
  boost::json::value Call(std::string_view method, std::string_view path, const std::string& body,
                          std::chrono::milliseconds timeout = {},
                          const std::atomic<bool>* abort = nullptr);

 private:
  void* Acquire();
  void Release(void* handle);

  std::string base_;
  std::string auth_header_;
  std::chrono::milliseconds timeout_;
  // Idle easy handles; each keeps its own connections alive, so a request reuses one.
  std::mutex mu_;
  std::vector<void*> idle_;
};

// "/v1/tasks/" + percent-escaped id.
std::string EscapePath(std::string_view segment);

}  // namespace madeira::sdk::internal

#endif  // MADEIRA_SDK_SRC_TRANSPORT_H_
