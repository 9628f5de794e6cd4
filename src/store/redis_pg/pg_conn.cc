#include "store/redis_pg/pg_conn.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace madeira::store::redis_pg {

namespace {

// Migration N (1-based) brings the schema from version N-1 to N. Append only.
const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> migrations = {
      // 1: the durable record. `tasks` mirrors every accepted task (Redis keeps the live state;
      // this row lags it by at most one store batch) and keeps terminal tasks for history.
      R"SQL(
CREATE TABLE tasks (
  task_id text PRIMARY KEY,
  seq bigint NOT NULL UNIQUE,
  ver bigint NOT NULL,
  queue text NOT NULL,
  task_type text NOT NULL,
  payload_version int NOT NULL,
  payload text NOT NULL,
  schedule_time bigint NOT NULL,
  timeout_ms bigint NOT NULL,
  max_retries int NOT NULL,
  priority int NOT NULL,
  trace_id text NOT NULL,
  idempotency_key text,
  content_hash text NOT NULL,
  status text NOT NULL,
  retry_count int NOT NULL,
  attempts int NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  next_attempt_at bigint,
  last_error text,
  result text,
  deduplicated boolean NOT NULL,
  fast_retries_used int NOT NULL,
  in_fast_retry boolean NOT NULL
);
CREATE INDEX tasks_status_seq ON tasks(status, seq);
CREATE INDEX tasks_trace ON tasks(trace_id, seq);
CREATE TABLE attempts (
  task_id text NOT NULL,
  attempt int NOT NULL,
  worker_id text NOT NULL,
  started_at bigint NOT NULL,
  finished_at bigint NOT NULL,
  outcome text NOT NULL,
  error text,
  http_status int,
  response_excerpt text,
  PRIMARY KEY (task_id, attempt)
);
CREATE TABLE schemas (
  task_type text NOT NULL,
  version int NOT NULL,
  schema text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (task_type, version)
);
)SQL",
      // 2: webhook endpoints. seq keeps
      // the order of creation; a replaced endpoint keeps its place.
      R"SQL(
CREATE TABLE endpoints (
  seq bigserial PRIMARY KEY,
  endpoint_id text NOT NULL UNIQUE,
  config text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
)SQL",
      // 3: received events with their deliveries ("endpoint_id\ttask_id" lines, in order), so
      // `madeira recover` can bring them back into Redis. n_deliveries only grows: a late copy
      // of an event never replaces one with more deliveries.
      R"SQL(
CREATE TABLE events (
  source text NOT NULL,
  event_id text NOT NULL,
  seq bigint NOT NULL,
  event_type text NOT NULL,
  payload text NOT NULL,
  trace_id text NOT NULL,
  target_uri text,
  received_at bigint NOT NULL,
  deliveries text NOT NULL,
  n_deliveries int NOT NULL,
  PRIMARY KEY (source, event_id)
);
CREATE INDEX events_seq ON events(seq);
)SQL",
      // 4: events leave Redis a while after their last change (kEvent's ttl); a GET without a
      // source then finds the one received last here, and recover keeps the recent ones.
      R"SQL(
CREATE INDEX events_event_id ON events(event_id, received_at);
CREATE INDEX events_received ON events(received_at);
)SQL",
      // 5: the name of the token that submitted a task (TaskSpec::owner); '' before.
      R"SQL(
ALTER TABLE tasks ADD COLUMN owner text NOT NULL DEFAULT '';
)SQL",
      // 6: a task's changing state in a narrow table of its own. Every lease and ack updates a
      // task's state; in `tasks` each update wrote the whole ~600-byte row again with an entry
      // in all four indexes (status is indexed, so no update is HOT). Here it writes ~100 bytes
      // and two index entries; the wide row is written once. `task_rows` is the row as before,
      // for reads, with state_seq, the same seq from task_states: a search by status orders by
      // it, to walk task_states_status_seq (a join on both seqs would make the planner expect
      // one row and sort them all). The columns moved are dropped from `tasks` (their index
      // goes with them).
      R"SQL(
CREATE TABLE task_states (
  task_id text PRIMARY KEY,
  seq bigint NOT NULL,
  ver bigint NOT NULL,
  status text NOT NULL,
  retry_count int NOT NULL,
  attempts int NOT NULL,
  updated_at bigint NOT NULL,
  next_attempt_at bigint,
  last_error text,
  result text,
  deduplicated boolean NOT NULL,
  fast_retries_used int NOT NULL,
  in_fast_retry boolean NOT NULL
);
INSERT INTO task_states (task_id, seq, ver, status, retry_count, attempts, updated_at,
                         next_attempt_at, last_error, result, deduplicated, fast_retries_used,
                         in_fast_retry)
  SELECT task_id, seq, ver, status, retry_count, attempts, updated_at, next_attempt_at,
         last_error, result, deduplicated, fast_retries_used, in_fast_retry FROM tasks;
CREATE INDEX task_states_status_seq ON task_states(status, seq);
ALTER TABLE tasks DROP COLUMN status, DROP COLUMN retry_count, DROP COLUMN attempts,
  DROP COLUMN updated_at, DROP COLUMN next_attempt_at, DROP COLUMN last_error,
  DROP COLUMN result, DROP COLUMN deduplicated, DROP COLUMN fast_retries_used,
  DROP COLUMN in_fast_retry;
CREATE VIEW task_rows AS
  SELECT t.task_id, t.seq, s.ver, t.queue, t.task_type, t.payload_version, t.payload,
         t.schedule_time, t.timeout_ms, t.max_retries, t.priority, t.trace_id,
         t.idempotency_key, t.content_hash, s.status, s.retry_count, s.attempts, t.created_at,
         s.updated_at, s.next_attempt_at, s.last_error, s.result, s.deduplicated,
         s.fast_retries_used, s.in_fast_retry, t.owner, s.seq AS state_seq
  FROM tasks t JOIN task_states s ON s.task_id = t.task_id;
)SQL",
  };
  return migrations;
}

// The SQLSTATE of a failed statement, and its message without DETAIL or CONTEXT.
std::string SqlState(const PGresult* r) {
  const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  return code != nullptr ? code : "";
}
std::string PrimaryMessage(const PGresult* r) {
  const char* text = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  return text != nullptr ? text : "";
}

// libpq's messages span lines and indent with tabs; errors here are shown as one line.
std::string OneLine(const std::string& text) {
  std::string line;
  for (char c : text) {
    if (c != '\n' && c != '\t' && c != ' ') {
      line += c;
    } else if (!line.empty() && line.back() != ' ') {
      line += ' ';
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace

PgConn::PgConn(std::string url, std::string schema, std::string application_name)
    : url_(std::move(url)),
      schema_(std::move(schema)),
      application_name_(std::move(application_name)) {}

PgConn::~PgConn() {
  if (conn_ != nullptr) PQfinish(conn_);
}

void PgConn::EnsureConnected() {
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK &&
      PQtransactionStatus(conn_) == PQTRANS_IDLE) {
    // Idle, the server has nothing to say; anything readable (a termination notice, EOF) means
    // it is going or gone. Start afresh rather than fail the next statement on it.
    char byte = 0;
    ssize_t n = ::recv(PQsocket(conn_), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      PQfinish(conn_);
      conn_ = nullptr;
    }
  }
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) return;
  if (conn_ != nullptr) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  std::array<const char*, 4> keys = {"dbname", "connect_timeout", "application_name", nullptr};
  std::array<const char*, 4> values = {url_.c_str(), "5", application_name_.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string why = OneLine(conn != nullptr ? PQerrorMessage(conn) : "out of memory");
    if (conn != nullptr) PQfinish(conn);
    healthy_ = false;
    throw PgError("postgresql: " + why);
  }
  conn_ = conn;
  ++generation_;
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  // The schema name is made by the store (letters, digits, underscores): safe to inline.
  Exec("SET search_path TO " + schema_);
}

std::vector<PgResult> PgConn::ExecAll(const std::vector<PgStatement>& statements) {
  EnsureConnected();
  auto broken = [&](const std::string& why) {
    PQfinish(conn_);  // whatever the pipeline still holds goes with the connection
    conn_ = nullptr;
    healthy_ = false;
    return PgError("postgresql: " + why);
  };
  if (PQenterPipelineMode(conn_) != 1) throw broken(OneLine(PQerrorMessage(conn_)));
  for (const PgStatement& st : statements) {
    std::vector<const char*> values;
    values.reserve(st.params.size());
    for (const auto& p : st.params) values.push_back(p ? p->c_str() : nullptr);
    if (PQsendQueryParams(conn_, st.sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0) != 1) {
      throw broken(OneLine(PQerrorMessage(conn_)));
    }
  }
  if (PQpipelineSync(conn_) != 1) throw broken(OneLine(PQerrorMessage(conn_)));
  std::vector<PgResult> results;
  std::string error;  // the first statement's error; those after it are skipped (aborted)
  std::string sqlstate;
  std::string primary;
  for (size_t i = 0; i < statements.size(); ++i) {
    PGresult* raw = PQgetResult(conn_);
    if (raw == nullptr) throw broken(OneLine(PQerrorMessage(conn_)));
    PgResult result(raw);
    const ExecStatusType status = PQresultStatus(raw);
    if (status == PGRES_FATAL_ERROR && error.empty()) {
      error = OneLine(PQresultErrorMessage(raw));
      sqlstate = SqlState(raw);
      primary = PrimaryMessage(raw);
    }
    while (PGresult* end = PQgetResult(conn_)) PQclear(end);  // each result ends with a null
    results.push_back(std::move(result));
  }
  PGresult* sync = PQgetResult(conn_);
  const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  if (sync != nullptr) PQclear(sync);
  if (!synced || PQexitPipelineMode(conn_) != 1) throw broken(OneLine(PQerrorMessage(conn_)));
  if (!error.empty()) {
    healthy_ = PQstatus(conn_) == CONNECTION_OK;
    throw PgError("postgresql: " + error, sqlstate, primary);
  }
  healthy_ = true;
  return results;
}

std::vector<PgResult> PgConn::CopyThenExecAll(const std::vector<PgCopy>& copies,
                                              const std::vector<PgStatement>& statements) {
  // A failure inside the transaction leaves it open and aborted: roll it back, so the
  // connection is usable again (or gone, and the next call connects afresh).
  auto roll_back = [&] {
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK &&
        PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      PQclear(PQexec(conn_, "ROLLBACK"));
    }
  };
  // One simple query holds BEGIN, the COPYs and, when none takes parameters, the statements
  // and the COMMIT: the server starts each COPY as the last one ends, so the whole transaction
  // costs a round trip per COPY and one more, not a round trip per step (each waits for a
  // process to be scheduled on a busy machine, and submits wait for this commit).
  const bool inline_statements =
      std::all_of(statements.begin(), statements.end(),
                  [](const PgStatement& st) { return st.params.empty(); });
  std::string query = "BEGIN";
  for (const PgCopy& copy : copies) query += ";\n" + copy.sql;
  if (inline_statements) {
    for (const PgStatement& st : statements) query += ";\n" + st.sql;
    query += ";\nCOMMIT";
  }
  EnsureConnected();
  if (PQsendQuery(conn_, query.c_str()) != 1) Fail(nullptr);
  std::vector<PgResult> results;  // BEGIN's, each COPY's, then the inline statements' and COMMIT's
  std::optional<PgResult> failed;
  size_t next_copy = 0;
  while (PGresult* raw = PQgetResult(conn_)) {
    PgResult result(raw);
    const ExecStatusType status = PQresultStatus(raw);
    if (status == PGRES_COPY_IN) {
      // A COPY the query did not name cannot happen; end it rather than hang.
      const std::string_view rows = next_copy < copies.size() ? copies[next_copy].rows : "";
      ++next_copy;
      if (PQputCopyData(conn_, rows.data(), static_cast<int>(rows.size())) != 1 ||
          PQputCopyEnd(conn_, nullptr) != 1) {
        Fail(nullptr);
      }
    } else if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      if (!failed) failed = std::move(result);  // the rest of the query is skipped
    } else {
      results.push_back(std::move(result));
    }
  }
  if (failed) {
    roll_back();
    Fail(failed->get());
  }
  if (PQstatus(conn_) != CONNECTION_OK) Fail(nullptr);
  if (inline_statements) {
    results.erase(results.begin(), results.begin() + 1 + static_cast<long>(copies.size()));
    results.pop_back();  // COMMIT's
    healthy_ = true;
    return results;
  }
  try {
    std::vector<PgStatement> all = statements;
    all.push_back({"COMMIT", {}});
    results = ExecAll(all);
    results.pop_back();
    return results;
  } catch (const PgError&) {
    roll_back();
    throw;
  }
}

void PgConn::Fail(const PGresult* r) {
  std::string why = OneLine(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
  if (why.empty()) why = OneLine(PQerrorMessage(conn_));
  std::string sqlstate = r != nullptr ? SqlState(r) : "";
  std::string primary = r != nullptr ? PrimaryMessage(r) : "";
  if (PQstatus(conn_) != CONNECTION_OK) {
    PQfinish(conn_);
    conn_ = nullptr;
    healthy_ = false;
  }
  throw PgError("postgresql: " + why, sqlstate, primary);
}

PgResult PgConn::Exec(const std::string& sql,
                      const std::vector<std::optional<std::string>>& params) {
  EnsureConnected();
  PGresult* raw = nullptr;
  if (params.empty()) {
    raw = PQexec(conn_, sql.c_str());  // may hold several statements (migrations)
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    raw = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                       nullptr, nullptr, 0);
  }
  PgResult result(raw);
  ExecStatusType status = PQresultStatus(raw);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) Fail(raw);
  healthy_ = true;
  return result;
}

void MigratePg(PgConn& pg, const std::string& schema, int up_to) {
  pg.Exec("CREATE SCHEMA IF NOT EXISTS " + schema);
  pg.Exec("BEGIN");
  try {
    // One migrator at a time across processes: the lock is released at COMMIT/ROLLBACK.
    pg.Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {"madeira.migrate." + schema});
    pg.Exec("CREATE TABLE IF NOT EXISTS schema_version (version int NOT NULL)");
    PgResult v = pg.Exec("SELECT COALESCE(MAX(version), 0) FROM schema_version");
    int have = static_cast<int>(v.Int(0, 0));
    if (have > kPgSchemaVersion) {
      throw PgError("postgresql schema " + schema + " is version " + std::to_string(have) +
                    ", written by a newer Madeira (this one knows up to " +
                    std::to_string(kPgSchemaVersion) + ")");
    }
    const auto& migrations = Migrations();
    for (int n = have + 1; n <= up_to; ++n) {
      pg.Exec(migrations[n - 1]);
      pg.Exec("DELETE FROM schema_version");
      pg.Exec("INSERT INTO schema_version(version) VALUES ($1)", {std::to_string(n)});
    }
    pg.Exec("COMMIT");
  } catch (...) {
    try {
      pg.Exec("ROLLBACK");
    } catch (const PgError&) {
    }
    throw;
  }
}

}  // namespace madeira::store::redis_pg
