// One libpq connection, used from the store thread. Failures throw PgError; the next call
// resets the connection.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace madeira::store::redis_pg {

class PgError : public std::runtime_error {
 public:
  explicit PgError(const std::string& message, std::string sqlstate = {}, std::string primary = {})
      : std::runtime_error(message), sqlstate_(std::move(sqlstate)), primary_(std::move(primary)) {}
  // The server's SQLSTATE; empty when the connection failed, not a statement.
  const std::string& sqlstate() const { return sqlstate_; }
  // The server's one-line message without DETAIL or CONTEXT (those may quote the data).
  const std::string& primary() const { return primary_; }
  // The data refused (class 22 data exception, 23 integrity violation): running the same
  // statement again fails again, unlike a lost connection or a deadlock.
  bool refused_data() const {
    return sqlstate_.rfind("22", 0) == 0 || sqlstate_.rfind("23", 0) == 0;
  }

 private:
  std::string sqlstate_;
  std::string primary_;
};

// One query result; rows and columns by index.
class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r, PQclear) {}
  const PGresult* get() const { return r_.get(); }
  int Rows() const { return PQntuples(r_.get()); }
  bool IsNull(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
  std::string Text(int row, int col) const { return PQgetvalue(r_.get(), row, col); }
  std::optional<std::string> OptText(int row, int col) const {
    if (IsNull(row, col)) return std::nullopt;
    return Text(row, col);
  }
  int64_t Int(int row, int col) const { return std::stoll(Text(row, col)); }
  std::optional<int64_t> OptInt(int row, int col) const {
    if (IsNull(row, col)) return std::nullopt;
    return Int(row, col);
  }

 private:
  std::unique_ptr<PGresult, void (*)(PGresult*)> r_;
};

// A statement and its text parameters (nullopt = NULL).
struct PgStatement {
  std::string sql;
  std::vector<std::optional<std::string>> params;
};

// A COPY ... FROM STDIN and the rows it reads, in COPY's text format.
struct PgCopy {
  std::string sql;
  std::string_view rows;
};

class PgConn {
 public:
  // `schema` is the PostgreSQL schema every statement runs in (search_path); `application_name`
  // shows in pg_stat_activity.
  PgConn(std::string url, std::string schema, std::string application_name = "madeira");
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Connects now unless connected. Outside a transaction, a connection the server closed while
  // it was idle is noticed and replaced; inside one it is left to fail the statement (a new
  // connection would silently run the rest of the transaction's statements on their own).
  // Throws PgError.
  void EnsureConnected();
  // Runs one statement with text parameters (nullopt = NULL).
  PgResult Exec(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
  // Runs the statements in one round trip and one transaction: sent in libpq's pipeline mode
  // before one Sync, they commit together at it, or none does. A result per statement.
  std::vector<PgResult> ExecAll(const std::vector<PgStatement>& statements);
  // COPYs, then the statements, in one transaction that commits at the end or not at all: each
  // copy reads its rows, then the statements run. A result per statement. Statements without
  // parameters go in the COPYs' query, so it all takes a round trip per COPY and one more.
  std::vector<PgResult> CopyThenExecAll(const std::vector<PgCopy>& copies,
                                        const std::vector<PgStatement>& statements);
  // Counts the connections made: a new one has none of the last one's temporary tables.
  uint64_t generation() const { return generation_; }
  // False once a statement or a connect failed, true again after one succeeds.
  bool healthy() const { return healthy_; }

 private:
  // Throws the PgError of a failed statement or step (`r`'s error, else the connection's); a
  // broken connection is dropped.
  [[noreturn]] void Fail(const PGresult* r);

  std::string url_;
  std::string schema_;
  std::string application_name_;
  PGconn* conn_ = nullptr;
  uint64_t generation_ = 0;
  bool healthy_ = true;
};

// The schema version this build writes; an older one is migrated, a newer one refused.
inline constexpr int kPgSchemaVersion = 6;

// Creates the schema when missing and applies migrations up to kPgSchemaVersion (tests stop
// earlier, to make an older schema), under an advisory lock so concurrent starts do it once.
// Throws PgError (also for a newer schema).
void MigratePg(PgConn& pg, const std::string& schema, int up_to = kPgSchemaVersion);

}  // namespace madeira::store::redis_pg
