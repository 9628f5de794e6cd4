#include "api/request_decoders.h"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>
#include <limits>

#include "core/envelope.h"
#include "core/field_reader.h"
#include "core/time.h"

namespace madeira::api {

using core::AsInt;
using core::ErrorCode;
using core::FieldReader;
using core::MakeError;
using core::Presence;
using core::Result;

namespace {

constexpr int64_t kMaxIntField = std::numeric_limits<int32_t>::max();
constexpr int64_t kDayMs = 86'400'000;
constexpr size_t kMaxWorkerIdChars = 200;

// Turns a reader's first error into the decoder's result.
#define MADEIRA_RETURN_IF_FAILED(reader) \
  if (!(reader).ok()) return *(reader).error()

// Reads one name (queue or task_type) with the shared pattern.
std::optional<std::string> NameField(FieldReader& r, std::string_view name, Presence presence) {
  std::optional<std::string> s = r.String(name, presence);
  if (s && !core::IsValidName(*s)) {
    r.Fail(ErrorCode::kInvalidField, r.Path(name) + " must match ^[a-z0-9][a-z0-9_.-]{0,127}$",
           name);
    return std::nullopt;
  }
  return s;
}

// The replay edits shared by the single and bulk replay bodies.
store::ReplayEdits ReadEdits(FieldReader& r) {
  store::ReplayEdits edits;
  if (const boost::json::object* payload = r.Object("payload", Presence::kOptional)) {
    edits.payload = boost::json::serialize(*payload);
  }
  if (auto v = r.Int("payload_version", 1, kMaxIntField, Presence::kOptional)) {
    edits.payload_version = static_cast<int>(*v);
  }
  if (auto v = r.Int("max_retries", 0, 100, Presence::kOptional)) {
    edits.max_retries = static_cast<int>(*v);
  }
  return edits;
}

// A lease's or heartbeat's worker_id: it goes on every attempt's record.
void CheckWorkerId(FieldReader& r, const std::string& id) {
  if (id.empty() || id.size() > kMaxWorkerIdChars || core::HasControlCharacter(id)) {
    r.Fail(ErrorCode::kInvalidField,
           "worker_id must be 1..200 characters, none of them a control character", "worker_id");
  }
}

}  // namespace

Result<boost::json::object> ParseObjectBody(std::string_view body, bool allow_empty) {
  if (body.empty() && allow_empty) return boost::json::object();
  // A body's DOM lives for one request: one arena (freed with the last value that uses it)
  // instead of a malloc and a free per member, which led the submit profile.
  Result<boost::json::value> v = core::ParseJson(
      body, boost::json::make_shared_resource<boost::json::monotonic_resource>(body.size() * 2));
  if (!v) return v.error();
  if (!v->is_object()) return MakeError(ErrorCode::kInvalidJson, "the body must be a JSON object");
  return std::move(v->get_object());
}

Result<boost::json::value> DecodeSubmit(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  return boost::json::value(std::move(*o));
}

Result<std::vector<boost::json::value>> DecodeSubmitBatch(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"tasks"});
  const boost::json::array* tasks = r.Array("tasks", Presence::kRequired);
  MADEIRA_RETURN_IF_FAILED(r);
  if (tasks->empty()) return MakeError(ErrorCode::kInvalidField, "tasks is empty", "tasks");
  if (tasks->size() > kMaxBatch) {
    return MakeError(ErrorCode::kBatchTooLarge, "at most 1000 tasks per batch", "tasks");
  }
  // Moved, not copied: a copy of each envelope's DOM cost as much as parsing it.
  boost::json::array& owned = o->at("tasks").get_array();
  return std::vector<boost::json::value>(std::make_move_iterator(owned.begin()),
                                         std::make_move_iterator(owned.end()));
}

Result<engine::LeaseParams> DecodeLease(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"worker_id", "queues", "task_types", "max_tasks", "wait_ms", "lease_ms"});
  engine::LeaseParams p;
  if (auto id = r.String("worker_id", Presence::kRequired)) {
    CheckWorkerId(r, *id);
    p.worker_id = std::move(*id);
  }
  if (const boost::json::array* queues = r.Array("queues", Presence::kRequired)) {
    if (queues->empty()) r.Fail(ErrorCode::kInvalidField, "queues is empty", "queues");
    for (size_t i = 0; i < queues->size() && r.ok(); ++i) {
      const boost::json::value& q = (*queues)[i];
      if (!q.is_string() || !core::IsValidName(q.get_string())) {
        r.Fail(ErrorCode::kInvalidField, "queues must hold valid queue names",
               "queues[" + std::to_string(i) + "]");
      } else {
        p.queues.emplace_back(q.get_string());
      }
    }
  }
  if (const boost::json::object* types = r.Object("task_types", Presence::kOptional)) {
    for (const auto& kv : *types) {
      if (!r.ok()) break;
      const std::string field = "task_types." + std::string(kv.key());
      if (!core::IsValidName(kv.key())) {
        r.Fail(ErrorCode::kInvalidField, field + " is not a valid task_type", field);
        break;
      }
      const boost::json::array* versions = kv.value().if_array();
      if (versions == nullptr || versions->empty()) {
        r.Fail(ErrorCode::kInvalidField, field + " must be a non-empty array of versions", field);
        break;
      }
      std::vector<int>& out = p.task_types[std::string(kv.key())];
      for (const boost::json::value& v : *versions) {
        std::optional<int64_t> n = AsInt(v);
        if (!n || *n < 1 || *n > kMaxIntField) {
          r.Fail(ErrorCode::kInvalidField, field + " versions must be integers >= 1", field);
          break;
        }
        out.push_back(static_cast<int>(*n));
      }
    }
  }
  if (auto n = r.Int("max_tasks", 1, 100, Presence::kOptional)) p.max_tasks = static_cast<int>(*n);
  if (auto n = r.Int("wait_ms", 0, 30'000, Presence::kOptional)) p.wait_ms = *n;
  if (auto n = r.Int("lease_ms", 100, kDayMs, Presence::kOptional)) p.lease_ms = *n;
  MADEIRA_RETURN_IF_FAILED(r);
  return p;
}

Result<std::optional<std::string>> DecodeAck(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, true);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"result"});
  const boost::json::value* result = r.Value("result", Presence::kOptional);
  MADEIRA_RETURN_IF_FAILED(r);
  if (result == nullptr) return std::optional<std::string>();
  return std::optional<std::string>(boost::json::serialize(*result));
}

Result<engine::FailParams> DecodeFail(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"error", "retry", "retry_after_ms"});
  engine::FailParams p;
  if (const boost::json::object* error = r.Object("error", Presence::kRequired)) {
    FieldReader e(*error, "error.");
    e.AllowOnly({"type", "message", "stack"});
    boost::json::object out;
    if (auto type = e.String("type", Presence::kRequired)) out["type"] = *type;
    if (auto message = e.String("message", Presence::kRequired)) out["message"] = *message;
    if (auto stack = e.String("stack", Presence::kOptional)) out["stack"] = *stack;
    MADEIRA_RETURN_IF_FAILED(e);
    p.error = boost::json::serialize(out);
  }
  if (auto retry = r.String("retry", Presence::kOptional)) {
    std::optional<core::RetryMode> mode = core::ParseRetryMode(*retry);
    if (!mode) {
      r.Fail(ErrorCode::kInvalidField, "retry must be auto, fast, backoff or never", "retry");
    } else {
      p.retry = *mode;
    }
  }
  if (auto n = r.Int("retry_after_ms", 0, kDayMs, Presence::kOptional)) p.retry_after_ms = *n;
  MADEIRA_RETURN_IF_FAILED(r);
  return p;
}

Result<core::Millis> DecodeExtend(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"extend_ms"});
  std::optional<int64_t> ms = r.Int("extend_ms", 1, kDayMs, Presence::kRequired);
  MADEIRA_RETURN_IF_FAILED(r);
  return *ms;
}

Result<std::vector<AckItem>> DecodeAckBatch(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"acks"});
  const boost::json::array* acks = r.Array("acks", Presence::kRequired);
  MADEIRA_RETURN_IF_FAILED(r);
  if (acks->empty()) return MakeError(ErrorCode::kInvalidField, "acks is empty", "acks");
  if (acks->size() > kMaxBatch) {
    return MakeError(ErrorCode::kBatchTooLarge, "at most 1000 acks per batch", "acks");
  }
  std::vector<AckItem> items;
  for (size_t i = 0; i < acks->size(); ++i) {
    const std::string prefix = "acks[" + std::to_string(i) + "]";
    const boost::json::object* item = (*acks)[i].if_object();
    if (item == nullptr)
      return MakeError(ErrorCode::kInvalidField, prefix + " must be an object", prefix);
    FieldReader a(*item, prefix + ".");
    a.AllowOnly({"lease_id", "result"});
    AckItem out;
    if (auto id = a.String("lease_id", Presence::kRequired)) out.lease_id = std::move(*id);
    if (const boost::json::value* result = a.Value("result", Presence::kOptional)) {
      out.result = boost::json::serialize(*result);
    }
    MADEIRA_RETURN_IF_FAILED(a);
    items.push_back(std::move(out));
  }
  return items;
}

Result<engine::WorkerHeartbeat> DecodeHeartbeat(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  // No AllowOnly: SPEC §3 lists the heartbeat's fields with "…", so SDKs may add their own
  // (hostname, pid, in-flight counts); the known ones are still type-checked.
  FieldReader r(*o);
  engine::WorkerHeartbeat hb;
  if (auto id = r.String("worker_id", Presence::kRequired)) {
    CheckWorkerId(r, *id);
    hb.worker_id = std::move(*id);
  }
  if (auto s = r.String("language", Presence::kOptional)) hb.language = std::move(*s);
  if (auto s = r.String("sdk_version", Presence::kOptional)) hb.sdk_version = std::move(*s);
  if (const boost::json::array* queues = r.Array("queues", Presence::kOptional)) {
    for (size_t i = 0; i < queues->size() && r.ok(); ++i) {
      if (!(*queues)[i].is_string()) {
        r.Fail(ErrorCode::kInvalidField, "queues must hold strings",
               "queues[" + std::to_string(i) + "]");
      } else {
        hb.queues.emplace_back((*queues)[i].get_string());
      }
    }
  }
  MADEIRA_RETURN_IF_FAILED(r);
  return hb;
}

Result<void> DecodeEmpty(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, true);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({});
  MADEIRA_RETURN_IF_FAILED(r);
  return {};
}

Result<store::ReplayEdits> DecodeReplay(std::string_view body) {
  Result<boost::json::object> o = ParseObjectBody(body, true);
  if (!o) return o.error();
  FieldReader r(*o);
  r.AllowOnly({"payload", "payload_version", "max_retries"});
  store::ReplayEdits edits = ReadEdits(r);
  MADEIRA_RETURN_IF_FAILED(r);
  return edits;
}

Result<DeadBulk> DecodeDeadBulk(std::string_view body, bool allow_edits) {
  Result<boost::json::object> o = ParseObjectBody(body, false);
  if (!o) return o.error();
  FieldReader r(*o);
  if (allow_edits) {
    r.AllowOnly({"task_ids", "filter", "payload", "payload_version", "max_retries"});
  } else {
    r.AllowOnly({"task_ids", "filter"});
  }
  DeadBulk bulk;
  const boost::json::array* ids = r.Array("task_ids", Presence::kOptional);
  const boost::json::object* filter = r.Object("filter", Presence::kOptional);
  if (r.ok() && (ids == nullptr) == (filter == nullptr)) {
    if (ids == nullptr) {
      r.Fail(ErrorCode::kMissingField, "give task_ids or filter", "task_ids");
    } else {
      r.Fail(ErrorCode::kInvalidField, "give task_ids or filter, not both", "filter");
    }
  }
  if (r.ok() && ids != nullptr) {
    if (ids->empty() || ids->size() > kMaxBatch) {
      r.Fail(ids->empty() ? ErrorCode::kInvalidField : ErrorCode::kBatchTooLarge,
             "task_ids must hold 1..1000 ids", "task_ids");
    }
    for (size_t i = 0; i < ids->size() && r.ok(); ++i) {
      const boost::json::value& id = (*ids)[i];
      if (!id.is_string() || !core::IsValidTaskId(id.get_string())) {
        r.Fail(ErrorCode::kInvalidField, "task_ids must hold valid task ids",
               "task_ids[" + std::to_string(i) + "]");
      } else {
        bulk.selector.task_ids.emplace_back(id.get_string());
      }
    }
  }
  if (r.ok() && filter != nullptr) {
    FieldReader f(*filter, "filter.");
    f.AllowOnly({"queue", "task_type", "since"});
    bulk.selector.filter.queue = f.String("queue", Presence::kOptional);
    if (bulk.selector.filter.queue && !core::IsFilterQueueName(*bulk.selector.filter.queue)) {
      f.Fail(ErrorCode::kInvalidField, "not a queue name", "queue");
    }
    bulk.selector.filter.task_type = NameField(f, "task_type", Presence::kOptional);
    if (auto since = f.String("since", Presence::kOptional)) {
      Result<core::Millis> t = core::ParseRfc3339(*since, "filter.since");
      if (!t) {
        f.Fail(ErrorCode::kInvalidField, "since must be RFC 3339 with an offset", "since");
      } else {
        bulk.selector.filter.since = *t;
      }
    }
    MADEIRA_RETURN_IF_FAILED(f);
  }
  if (allow_edits) bulk.edits = ReadEdits(r);
  MADEIRA_RETURN_IF_FAILED(r);
  return bulk;
}

#undef MADEIRA_RETURN_IF_FAILED

}  // namespace madeira::api
