#include "madeira/client.h"

#include "decode.h"
#include "transport.h"

namespace madeira::sdk {
namespace {

// The largest batch the server takes in one request.
constexpr size_t kMaxBatch = 1000;

// Batch items carry a code but no status; this is the status the server gives the code.
int StatusOfCode(std::string_view code) {
  if (code == "unauthorized") return 401;
  if (code == "forbidden") return 403;
  if (code == "not_found") return 404;
  if (code == "task_id_conflict" || code == "task_running" || code == "task_terminal" ||
      code == "task_not_dead" || code == "lease_lost") {
    return 409;
  }
  if (code == "unavailable") return 503;
  return 400;
}

SubmitResult DecodeSubmit(const boost::json::object& o) {
  const auto* dup = o.if_contains("duplicate");
  return {internal::Str(o, "task_id"), internal::Str(o, "status"),
          dup != nullptr && dup->is_bool() && dup->get_bool()};
}

}  // namespace

Client::Client(std::string base_url, ClientOptions options) : options_(std::move(options)) {
  bool http = base_url.starts_with("http://") || base_url.starts_with("https://");
  if (!http || base_url.size() <= base_url.find("//") + 2) {
    throw Error("madeira: base URL must be http(s)://host[:port], got \"" + base_url + "\"");
  }
  transport_ = std::make_unique<internal::Transport>(std::move(base_url), options_.token,
                                                     options_.request_timeout);
}

Client::~Client() = default;

SubmitResult Client::Submit(const Task& task) {
  auto body = boost::json::serialize(task.ToWire(options_.limits));
  return DecodeSubmit(transport_->Call("POST", "/v1/tasks", body).as_object());
}

std::vector<BatchResult> Client::SubmitBatch(const std::vector<Task>& tasks) {
  std::vector<BatchResult> results(tasks.size());
  boost::json::array wires;
  std::vector<size_t> index;
  auto flush = [&] {
    if (wires.empty()) return;
    boost::json::object req;
    req["tasks"] = std::move(wires);
    auto answer = transport_->Call("POST", "/v1/tasks/batch", boost::json::serialize(req));
    const auto& items = answer.as_object().at("results").as_array();
    for (size_t j = 0; j < items.size() && j < index.size(); ++j) {
      const auto& item = items[j].as_object();
      auto& out = results[index[j]];
      if (const auto* e = item.if_contains("error"); e && e->is_object()) {
        const auto& err = e->get_object();
        std::string code = internal::Str(err, "code");
        out.error = ApiError(StatusOfCode(code), code, internal::Str(err, "message"),
                             internal::Str(err, "field"));
      } else {
        out.result = DecodeSubmit(item);
      }
    }
    wires = boost::json::array();
    index.clear();
  };
  for (size_t i = 0; i < tasks.size(); ++i) {
    try {
      wires.push_back(tasks[i].ToWire(options_.limits));
      index.push_back(i);
    } catch (const ValidationError& e) {
      results[i].error = e;
    }
    if (wires.size() == kMaxBatch) flush();
  }
  flush();
  return results;
}

TaskInfo Client::Get(const std::string& task_id) {
  auto answer = transport_->Call("GET", "/v1/tasks/" + internal::EscapePath(task_id), "");
  return internal::DecodeTask(answer.as_object());
}

std::vector<Attempt> Client::Attempts(const std::string& task_id) {
  auto answer =
      transport_->Call("GET", "/v1/tasks/" + internal::EscapePath(task_id) + "/attempts", "");
  std::vector<Attempt> out;
  for (const auto& v : answer.as_object().at("attempts").as_array()) {
    const auto& a = v.as_object();
    out.push_back(Attempt{
        static_cast<int>(internal::Int(a, "attempt")), internal::Str(a, "worker_id"),
        internal::TimeAt(a, "started_at").value_or(Time{}), internal::TimeAt(a, "finished_at"),
        internal::Str(a, "outcome"), internal::DecodeError(a.if_contains("error"))});
  }
  return out;
}

TaskInfo Client::Cancel(const std::string& task_id) {
  auto answer =
      transport_->Call("POST", "/v1/tasks/" + internal::EscapePath(task_id) + "/cancel", "");
  return internal::DecodeTask(answer.as_object());
}

}  // namespace madeira::sdk
