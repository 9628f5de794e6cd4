#include "workload.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <stdexcept>

namespace madeira::bench {

namespace json = boost::json;

namespace {

void AppendEnvelope(std::string& out, std::string_view task_id, std::string_view schedule_time) {
  out += R"({"task_type":"bench.noop","queue":")";
  out += kQueue;
  out += R"(","payload_version":1,)";
  if (!task_id.empty()) {
    out += R"("task_id":")";
    out += task_id;
    out += R"(",)";
  }
  if (!schedule_time.empty()) {
    out += R"("schedule_time":")";
    out += schedule_time;
    out += R"(",)";
  }
  out += R"("payload":)";
  out += Payload();
  out += '}';
}

}  // namespace

// About 300 bytes, the size the targets are quoted for.
const std::string& Payload() {
  static const std::string payload = [] {
    std::string p = R"({"order_id":202509110001,"store_id":"S10086","customer":"c-000042",)"
                    R"("items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":")";
    while (p.size() < 298) p.push_back('x');
    return p + R"("})";
  }();
  return payload;
}

std::string Envelope(std::string_view task_id, std::string_view schedule_time) {
  std::string out;
  out.reserve(Payload().size() + 160);
  AppendEnvelope(out, task_id, schedule_time);
  return out;
}

std::string BatchBody(int count, std::string_view id_prefix, int64_t first_seq,
                      std::string_view schedule_time) {
  std::string out;
  out.reserve(static_cast<size_t>(count) * (Payload().size() + 160) + 16);
  out += R"({"tasks":[)";
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    std::string id;
    if (!id_prefix.empty()) id = std::string(id_prefix) + std::to_string(first_seq + i);
    AppendEnvelope(out, id, schedule_time);
  }
  out += "]}";
  return out;
}

std::string LeaseBody(std::string_view worker_id, int max_tasks, int wait_ms) {
  return R"({"worker_id":")" + std::string(worker_id) + R"(","queues":[")" + std::string(kQueue) +
         R"("],"max_tasks":)" + std::to_string(max_tasks) + R"(,"wait_ms":)" +
         std::to_string(wait_ms) + "}";
}

std::vector<LeasedTask> ParseLeases(std::string_view body) {
  json::value v = json::parse(body);
  std::vector<LeasedTask> out;
  const json::array& leases = v.at("leases").as_array();
  out.reserve(leases.size());
  for (const json::value& l : leases) {
    out.push_back({std::string(l.at("lease_id").as_string()),
                   std::string(l.at("task").at("task_id").as_string())});
  }
  return out;
}

std::string AckBody(const std::vector<LeasedTask>& leases) {
  std::string out = R"({"acks":[)";
  for (size_t i = 0; i < leases.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"lease_id":")";
    out += leases[i].lease_id;
    out += R"("})";
  }
  out += "]}";
  return out;
}

BatchCounts CountResults(std::string_view body) {
  json::value v = json::parse(body);
  BatchCounts out;
  for (const json::value& item : v.at("results").as_array()) {
    if (const json::value* err = item.as_object().if_contains("error")) {
      ++out.failed;
      if (out.first_error.empty()) out.first_error = json::serialize(*err);
    } else {
      ++out.ok;
    }
  }
  return out;
}

int64_t WallMillis() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace madeira::bench
