#include "store/sqlite/rows.h"

#include <array>
#include <charconv>
#include <string>

#include "core/ids.h"

namespace madeira::store::sqlite {

std::string MakeLeaseId(core::Millis now, int64_t seq, core::Random& random) {
  std::string id = core::MakeOrderedToken(now, random);
  char hex[17];
  auto [end, ec] = std::to_chars(hex, hex + sizeof(hex), static_cast<uint64_t>(seq), 16);
  id.push_back('-');
  id.append(hex, end);
  return id;
}

std::optional<int64_t> LeaseSeq(std::string_view lease_id) {
  size_t dash = lease_id.rfind('-');
  if (dash == std::string_view::npos || dash + 1 >= lease_id.size()) return std::nullopt;
  uint64_t seq = 0;
  const char* first = lease_id.data() + dash + 1;
  const char* last = lease_id.data() + lease_id.size();
  auto [end, ec] = std::from_chars(first, last, seq, 16);
  if (ec != std::errc() || end != last || seq > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(seq);
}

std::string_view StatusText(core::TaskStatus s) { return core::TaskStatusName(s); }

core::TaskStatus ParseStatusText(std::string_view text) {
  auto s = core::ParseTaskStatus(text);
  if (!s) throw DbError(SQLITE_CORRUPT, "unknown task status '" + std::string(text) + "'");
  return *s;
}

std::optional<core::AttemptOutcome> ParseOutcomeText(std::string_view text) {
  for (auto o : {core::AttemptOutcome::kSucceeded, core::AttemptOutcome::kFailed,
                 core::AttemptOutcome::kLeaseExpired, core::AttemptOutcome::kCancelled}) {
    if (core::AttemptOutcomeName(o) == text) return o;
  }
  return std::nullopt;
}

TaskRow ReadTaskRow(const Query& q) {
  TaskRow row;
  core::Task& t = row.task;
  core::TaskSpec& s = t.spec;
  t.seq = q.Int(0);
  s.task_id = q.Text(1);
  s.task_type = q.Text(2);
  s.queue = q.Text(3);
  s.payload_version = static_cast<int>(q.Int(4));
  s.payload = q.Text(5);
  s.schedule_time = q.Int(6);
  s.timeout_ms = q.Int(7);
  s.max_retries = static_cast<int>(q.Int(8));
  s.priority = static_cast<int>(q.Int(9));
  s.trace_id = q.Text(10);
  s.idempotency_key = q.OptText(11);
  s.content_hash = q.Text(12);
  t.status = ParseStatusText(q.Text(13));
  t.retry_count = static_cast<int>(q.Int(14));
  t.attempts = static_cast<int>(q.Int(15));
  t.created_at = q.Int(16);
  t.updated_at = q.Int(17);
  t.next_attempt_at = q.OptInt(18);
  t.last_error = q.OptText(19);
  t.result = q.OptText(20);
  t.deduplicated = q.Int(21) != 0;
  t.fast_retries_used = static_cast<int>(q.Int(22));
  t.in_fast_retry = q.Int(23) != 0;
  row.lease_id = q.OptText(24);
  row.fencing_token = q.Int(25);
  row.lease_deadline = q.OptInt(26);
  row.attempt_started_at = q.OptInt(27);
  row.attempt_worker = q.OptText(28);
  s.owner = q.Text(29);
  return row;
}

core::Attempt ReadAttempt(const Query& q) {
  core::Attempt a;
  a.attempt = static_cast<int>(q.Int(0));
  a.worker_id = q.Text(1);
  a.started_at = q.Int(2);
  a.finished_at = q.OptInt(3);
  if (auto text = q.OptText(4)) a.outcome = ParseOutcomeText(*text);
  a.error = q.OptText(5);
  if (auto status = q.OptInt(6)) a.http_status = static_cast<int>(*status);
  a.response_excerpt = q.OptText(7);
  return a;
}

}  // namespace madeira::store::sqlite
