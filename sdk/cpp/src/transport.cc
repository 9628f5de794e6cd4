#include "transport.h"

#include <curl/curl.h>

#include <cstdlib>
#include <memory>

#include "madeira/errors.h"

namespace madeira::sdk::internal {
namespace {

struct Answer {
  std::string body;
  std::string retry_after;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<Answer*>(user)->body.append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    }
    if (match) {
      std::string value(line.substr(kName.size()));
      while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
      static_cast<Answer*>(user)->retry_after = value;
    }
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* abort = static_cast<const std::atomic<bool>*>(user);
  return abort != nullptr && abort->load(std::memory_order_relaxed) ? 1 : 0;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

ApiError ToApiError(long status, const Answer& answer) {
  std::string code = "http_" + std::to_string(status), message = answer.body, field;
  boost::system::error_code ec;
  auto parsed = boost::json::parse(answer.body, ec);
  if (!ec && parsed.is_object()) {
    if (auto* err = parsed.as_object().if_contains("error"); err && err->is_object()) {
      const auto& e = err->as_object();
      auto str = [&](const char* key) {
        auto* v = e.if_contains(key);
        return v && v->is_string() ? std::string(v->as_string()) : std::string();
      };
      code = str("code");
      message = str("message");
      field = str("field");
    }
  }
  std::chrono::seconds retry_after(std::atoi(answer.retry_after.c_str()));
  return ApiError(static_cast<int>(status), code, message, field, retry_after);
}

}  // namespace

Transport::Transport(std::string base_url, std::string token, std::chrono::milliseconds timeout)
    : base_(std::move(base_url)), timeout_(timeout) {
  GlobalInit();
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
  if (!token.empty()) auth_header_ = "Authorization: Bearer " + token;
}

Transport::~Transport() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* Transport::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void Transport::Release(void* handle) {
  std::lock_guard lock(mu_);
  idle_.push_back(handle);
}

boost::json::value Transport::Call(std::string_view method, std::string_view path,
                                   const std::string& body, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>* abort) {
  CURL* curl = static_cast<CURL*>(Acquire());
  if (curl == nullptr) throw TransportError("madeira: curl_easy_init failed");
  // curl_easy_reset keeps the handle's connection cache, so keep-alive survives it.
  curl_easy_reset(curl);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  auto add = [&](const std::string& h) {
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  };
  add("Accept: application/json");
  // curl would otherwise wait for "100 Continue" before sending bodies over 1 KiB.
  add("Expect:");
  if (!body.empty()) add("Content-Type: application/json");
  if (!auth_header_.empty()) add(auth_header_);
  std::string url = base_ + std::string(path);
  std::string verb(method);
  Answer answer;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, verb.c_str());
  if (verb == "POST" || !body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  auto limit = timeout.count() > 0 ? timeout : timeout_;
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(limit.count()));
  if (abort != nullptr) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(abort));
  }
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  Release(curl);
  if (rc != CURLE_OK) {
    throw TransportError("madeira: " + verb + " " + std::string(path) + ": " +
                         curl_easy_strerror(rc));
  }
  if (status < 200 || status > 299) throw ToApiError(status, answer);
  if (answer.body.empty()) return nullptr;
  boost::system::error_code ec;
  auto parsed = boost::json::parse(answer.body, ec);
  if (ec) throw TransportError("madeira: undecodable answer to " + verb + " " + std::string(path));
  return parsed;
}

std::string EscapePath(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : segment) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == ':') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace madeira::sdk::internal
