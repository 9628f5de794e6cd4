#include "cli/client.h"

#include <curl/curl.h>

#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/time.h"

namespace madeira::cli {
namespace {

namespace json = boost::json;
using core::ErrorCode;
using core::MakeError;

struct HttpResponse {
  long status = 0;
  std::string body;
};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

std::string Escape(CURL* curl, const std::string& s) {
  std::unique_ptr<char, decltype(&curl_free)> e(
      curl_easy_escape(curl, s.data(), static_cast<int>(s.size())), &curl_free);
  return e ? std::string(e.get()) : std::string();
}

// One request. `path` is appended to the base URL; `query` pairs are escaped here.
core::Result<HttpResponse> Request(const ClientOptions& opts, const std::string& method,
                                   const std::string& path,
                                   const std::vector<std::pair<std::string, std::string>>& query,
                                   const std::optional<std::string>& body) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return MakeError(ErrorCode::kInternal, "cannot initialise libcurl");
  std::string url = opts.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += path;
  char sep = '?';
  for (const auto& [k, v] : query) {
    url += sep + k + "=" + Escape(curl.get(), v);
    sep = '&';
  }
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (body) headers = curl_slist_append(headers, "Content-Type: application/json");
  // Built here and freed with the list, so the token lives no longer than the request.
  if (!opts.token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + opts.token).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers,
                                                                           &curl_slist_free_all);
  HttpResponse resp;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return MakeError(ErrorCode::kUnavailable,
                     "cannot reach " + opts.url + ": " + curl_easy_strerror(rc));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  return resp;
}

int Report(const core::Result<HttpResponse>& r) {
  if (!r) {
    std::cerr << "madeira: " << r.error().message << "\n";
    return kExitUsage;
  }
  if (r->status >= 200 && r->status < 300) {
    std::cout << r->body << (r->body.empty() || r->body.back() != '\n' ? "\n" : "");
    std::cout.flush();
    return kExitOk;
  }
  std::cerr << "madeira: server answered " << r->status << ": " << r->body
            << (r->body.empty() || r->body.back() != '\n' ? "\n" : "");
  return kExitRejected;
}

int UsageError(const core::Error& e) {
  std::cerr << "madeira: " << e.message << "\n";
  return kExitUsage;
}

core::Result<json::value> ParseJsonArg(const std::string& text, const std::string& what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return MakeError(ErrorCode::kInvalidJson, what + " is not valid JSON: " + ec.message());
  return v;
}

}  // namespace

core::Result<std::string> BuildSubmitBody(const SubmitArgs& args, core::Millis now) {
  if (args.file) {
    if (args.task_type || args.payload || args.queue || args.delay || args.at || args.priority ||
        args.idempotency_key || args.task_id || args.payload_version) {
      return MakeError(ErrorCode::kInvalidField,
                       "--file carries the whole envelope; give no "
                       "other envelope option with it");
    }
    std::ifstream in(*args.file, std::ios::binary);
    if (!in) return MakeError(ErrorCode::kInvalidField, "cannot read '" + *args.file + "'");
    std::stringstream buf;
    buf << in.rdbuf();
    auto v = ParseJsonArg(buf.str(), *args.file);
    if (!v) return v.error();
    return json::serialize(*v);
  }
  if (!args.task_type) return MakeError(ErrorCode::kMissingField, "--type is required");
  if (!args.payload) return MakeError(ErrorCode::kMissingField, "--payload is required");
  if (args.delay && args.at) {
    return MakeError(ErrorCode::kInvalidField, "give --delay or --at, not both");
  }
  auto payload = ParseJsonArg(*args.payload, "--payload");
  if (!payload) return payload.error();
  json::object env;
  if (args.task_id) env["task_id"] = *args.task_id;
  env["task_type"] = *args.task_type;
  if (args.queue) env["queue"] = *args.queue;
  env["payload_version"] = args.payload_version.value_or(1);
  env["payload"] = std::move(*payload);
  if (args.delay) {
    auto d = core::ParseDuration(*args.delay, "--delay");
    if (!d) {
      return MakeError(
          ErrorCode::kInvalidField,
          "--delay must be a duration such as 30s, 15m or 2h, not '" + *args.delay + "'");
    }
    env["schedule_time"] = core::FormatRfc3339(now + *d);
  }
  if (args.at) env["schedule_time"] = *args.at;
  if (args.priority) env["priority"] = *args.priority;
  if (args.idempotency_key) env["idempotency_key"] = *args.idempotency_key;
  return json::serialize(env);
}

core::Result<std::string> BuildDeadBulkBody(const DeadBulkArgs& args) {
  if (args.all == !args.task_ids.empty()) {
    return MakeError(ErrorCode::kMissingField, "give task ids or --all, not both or neither");
  }
  if (!args.all && (args.queue || args.task_type)) {
    return MakeError(ErrorCode::kInvalidField, "--queue and --type narrow --all only");
  }
  json::object body;
  if (args.all) {
    json::object filter;
    if (args.queue) filter["queue"] = *args.queue;
    if (args.task_type) filter["task_type"] = *args.task_type;
    body["filter"] = std::move(filter);
  } else {
    json::array ids;
    for (const auto& id : args.task_ids) ids.emplace_back(id);
    body["task_ids"] = std::move(ids);
  }
  return json::serialize(body);
}

int RunTaskSubmit(const ClientOptions& opts, const SubmitArgs& args) {
  core::SystemClock clock;
  auto body = BuildSubmitBody(args, clock.Now());
  if (!body) return UsageError(body.error());
  return Report(Request(opts, "POST", "/v1/tasks", {}, *body));
}

int RunTaskGet(const ClientOptions& opts, const std::string& task_id) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  return Report(Request(opts, "GET", "/v1/tasks/" + Escape(curl.get(), task_id), {}, {}));
}

int RunTaskCancel(const ClientOptions& opts, const std::string& task_id) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  return Report(
      Request(opts, "POST", "/v1/tasks/" + Escape(curl.get(), task_id) + "/cancel", {}, "{}"));
}

int RunDeadList(const ClientOptions& opts, const DeadListArgs& args) {
  std::vector<std::pair<std::string, std::string>> query;
  if (args.queue) query.emplace_back("queue", *args.queue);
  if (args.task_type) query.emplace_back("task_type", *args.task_type);
  if (args.limit) query.emplace_back("limit", std::to_string(*args.limit));
  return Report(Request(opts, "GET", "/v1/dead", query, {}));
}

int RunDeadReplay(const ClientOptions& opts, const DeadBulkArgs& args) {
  auto body = BuildDeadBulkBody(args);
  if (!body) return UsageError(body.error());
  return Report(Request(opts, "POST", "/v1/dead/replay", {}, *body));
}

int RunDeadCancel(const ClientOptions& opts, const DeadBulkArgs& args) {
  auto body = BuildDeadBulkBody(args);
  if (!body) return UsageError(body.error());
  return Report(Request(opts, "POST", "/v1/dead/cancel", {}, *body));
}

}  // namespace madeira::cli
