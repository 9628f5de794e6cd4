// Endpoints and events. An event's deliveries are ordinary tasks, submitted through Submit so
// that counts, leasing and the rest see them; the event only remembers which tasks are its own.
#include "store/sqlite/task_table.h"

namespace madeira::store::sqlite {

namespace {

using core::ErrorCode;
using core::MakeError;

#define MADEIRA_EVENT_COLUMNS \
  "seq, source, event_id, event_type, payload, trace_id, target_uri, received_at"

EventRecord ReadEvent(const Query& q) {
  return EventRecord{q.Text(1), q.Text(2), q.Text(3), q.Text(4), q.Text(5), q.OptText(6), q.Int(7)};
}

}  // namespace

Result<Unit> TaskTable::PutEndpoint(const EndpointRecord& endpoint) {
  db_.Prepare(
         "INSERT INTO endpoints(endpoint_id, config, created_at, updated_at) VALUES(?, ?, ?, ?) "
         "ON CONFLICT(endpoint_id) DO UPDATE SET config = excluded.config, "
         "created_at = excluded.created_at, updated_at = excluded.updated_at")
      .Bind(endpoint.endpoint_id, endpoint.config, endpoint.created_at, endpoint.updated_at)
      .Run();
  return Unit{};
}

Result<Unit> TaskTable::DeleteEndpoint(const std::string& endpoint_id) {
  if (db_.Prepare("DELETE FROM endpoints WHERE endpoint_id = ?").Bind(endpoint_id).Run() == 0) {
    return MakeError(ErrorCode::kNotFound, "no endpoint " + endpoint_id);
  }
  return Unit{};
}

Result<EndpointRecord> TaskTable::GetEndpoint(const std::string& endpoint_id) {
  Query q =
      db_.Prepare("SELECT config, created_at, updated_at FROM endpoints WHERE endpoint_id = ?");
  q.Bind(endpoint_id);
  if (!q.Step()) return MakeError(ErrorCode::kNotFound, "no endpoint " + endpoint_id);
  return EndpointRecord{endpoint_id, q.Text(0), q.Int(1), q.Int(2)};
}

Result<std::vector<EndpointRecord>> TaskTable::ListEndpoints() {
  std::vector<EndpointRecord> endpoints;
  Query q =
      db_.Prepare("SELECT endpoint_id, config, created_at, updated_at FROM endpoints ORDER BY seq");
  while (q.Step()) endpoints.push_back({q.Text(0), q.Text(1), q.Int(2), q.Int(3)});
  return endpoints;
}

Result<EventSubmitOutcome> TaskTable::SubmitEvent(const EventRecord& event,
                                                  const std::vector<NewDelivery>& deliveries,
                                                  Millis now) {
  if (auto stored = FindEvent(event.event_id, event.source)) {
    return EventSubmitOutcome{true, std::move(stored->second)};
  }
  // The tasks first: a conflict on the first one then fails before anything was written, which
  // the commit queue undoes without running the batch again.
  auto made = SubmitDeliveryTasks(deliveries, now);
  if (!made) return made.error();
  db_.Prepare(
         "INSERT INTO events(source, event_id, event_type, payload, trace_id, target_uri, "
         "received_at) VALUES(?, ?, ?, ?, ?, ?, ?)")
      .Bind(event.source, event.event_id, event.event_type, event.payload, event.trace_id,
            event.target_uri, event.received_at)
      .Run();
  RecordDeliveries(sqlite3_last_insert_rowid(db_.handle()), 0, *made);
  return EventSubmitOutcome{false, StoredEvent{event, std::move(*made)}};
}

Result<StoredEvent> TaskTable::AddDeliveries(const std::string& source, const std::string& event_id,
                                             const std::vector<NewDelivery>& deliveries,
                                             Millis now) {
  auto found = FindEvent(event_id, source);
  if (!found) return MakeError(ErrorCode::kNotFound, "no event " + event_id + " from " + source);
  auto& [seq, stored] = *found;
  auto made = SubmitDeliveryTasks(deliveries, now);
  if (!made) return made.error();
  // Delivery rows are never deleted, so positions run 0..n-1 and the next one is n.
  RecordDeliveries(seq, static_cast<int64_t>(stored.deliveries.size()), *made);
  stored.deliveries.insert(stored.deliveries.end(), made->begin(), made->end());
  return std::move(stored);
}

Result<StoredEvent> TaskTable::GetEvent(const std::string& event_id,
                                        const std::optional<std::string>& source) {
  auto found = FindEvent(event_id, source);
  if (!found) return MakeError(ErrorCode::kNotFound, "no event " + event_id);
  return std::move(found->second);
}

std::optional<std::pair<int64_t, StoredEvent>> TaskTable::FindEvent(
    const std::string& event_id, const std::optional<std::string>& source) {
  int64_t seq = 0;
  StoredEvent stored;
  {
    Query q = source ? db_.Prepare("SELECT " MADEIRA_EVENT_COLUMNS
                                   " FROM events WHERE event_id = ? AND source = ?")
                     : db_.Prepare("SELECT " MADEIRA_EVENT_COLUMNS
                                   " FROM events WHERE event_id = ? "
                                   "ORDER BY received_at DESC, seq DESC LIMIT 1");
    q.Bind(event_id);
    if (source) q.BindAt(2, *source);
    if (!q.Step()) return std::nullopt;
    seq = q.Int(0);
    stored.event = ReadEvent(q);
  }
  stored.deliveries = DeliveriesOf(seq);
  return std::make_pair(seq, std::move(stored));
}

std::vector<EventDelivery> TaskTable::DeliveriesOf(int64_t event_seq) {
  std::vector<EventDelivery> deliveries;
  Query q = db_.Prepare(
      "SELECT d.endpoint_id, d.task_id, t.status FROM event_deliveries d "
      "LEFT JOIN tasks t ON t.task_id = d.task_id WHERE d.event_seq = ? ORDER BY d.position");
  q.Bind(event_seq);
  while (q.Step()) {
    // Tasks are never deleted: a delivery without its task is a damaged file, not a user error.
    if (q.IsNull(2)) throw DbError(SQLITE_CORRUPT, "delivery task " + q.Text(1) + " is missing");
    deliveries.push_back({q.Text(0), q.Text(1), ParseStatusText(q.Text(2))});
  }
  return deliveries;
}

Result<std::vector<EventDelivery>> TaskTable::SubmitDeliveryTasks(
    const std::vector<NewDelivery>& deliveries, Millis now) {
  std::vector<core::TaskSpec> specs;
  specs.reserve(deliveries.size());
  for (const NewDelivery& d : deliveries) specs.push_back(d.task);
  auto outcomes = Submit(specs, now);
  if (!outcomes) return outcomes.error();
  std::vector<EventDelivery> made;
  made.reserve(deliveries.size());
  for (size_t i = 0; i < deliveries.size(); ++i) {
    const SubmitOutcome& o = (*outcomes)[i];
    // Even a task with the same content is refused: it would belong to two deliveries.
    if (o.kind != SubmitKind::kCreated) {
      return MakeError(ErrorCode::kTaskIdConflict, "task " + o.task_id + " already exists",
                       "task_id");
    }
    made.push_back({deliveries[i].endpoint_id, o.task_id, o.status});
  }
  return made;
}

void TaskTable::RecordDeliveries(int64_t event_seq, int64_t position,
                                 const std::vector<EventDelivery>& deliveries) {
  for (const EventDelivery& d : deliveries) {
    db_.Prepare(
           "INSERT INTO event_deliveries(event_seq, position, endpoint_id, task_id) "
           "VALUES(?, ?, ?, ?)")
        .Bind(event_seq, position++, d.endpoint_id, d.task_id)
        .Run();
  }
}

#undef MADEIRA_EVENT_COLUMNS

}  // namespace madeira::store::sqlite
