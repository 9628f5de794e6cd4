#include "store/sqlite/db.h"

#include <utility>

namespace madeira::store::sqlite {

namespace {
[[noreturn]] void Throw(sqlite3* db, int rc, std::string_view context) {
  std::string what(context);
  what += ": ";
  what += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw DbError(rc, what);
}
}  // namespace

Query::~Query() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Query::Check(int rc) const {
  if (rc != SQLITE_OK) Throw(db_, rc, "bind");
}

void Query::BindOne(int i, int64_t v) { Check(sqlite3_bind_int64(stmt_, i, v)); }

void Query::BindOne(int i, std::string_view v) {
  // SQLITE_STATIC: the bound string outlives the statement's use within one Query.
  Check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
}

void Query::BindOne(int i, std::nullopt_t) { Check(sqlite3_bind_null(stmt_, i)); }

bool Query::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Throw(db_, rc, sqlite3_sql(stmt_));
}

int Query::Run() {
  while (Step()) {
  }
  return sqlite3_changes(db_);
}

std::string Query::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (p == nullptr) return {};
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<int64_t> Query::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

std::optional<std::string> Query::OptText(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Text(col);
}

Db::Db(const std::string& path) {
  // SQLite's memory statistics put a global mutex around every malloc and free it makes (a few
  // percent of the store thread); nothing reads them. Only possible before SQLite initialises,
  // so the first Db of the process does it; later calls are refused harmlessly.
  static const bool kNoMemStatus = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return true;
  }();
  (void)kNoMemStatus;
  // NOMUTEX: the connection is used by one thread at a time (opened here, then the store thread).
  int rc =
      sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string what = "open " + path + ": " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(rc, what);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  for (auto& [sql, stmt] : literal_statements_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

void Db::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string what = sql + ": " + (err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    throw DbError(rc, what);
  }
}

sqlite3_stmt* Db::PrepareNew(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) Throw(db_, rc, "prepare " + std::string(sql));
  return stmt;
}

Query Db::Prepare(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) it = statements_.emplace(sql, PrepareNew(sql)).first;
  return Query(db_, it->second);
}

Query Db::Prepare(const char* sql) {
  auto it = literal_statements_.find(sql);
  if (it == literal_statements_.end()) {
    it = literal_statements_.emplace(sql, PrepareNew(sql)).first;
  }
  return Query(db_, it->second);
}

std::optional<int64_t> Db::QueryInt(const std::string& sql) {
  Query q = Prepare(sql);
  if (!q.Step()) return std::nullopt;
  return q.OptInt(0);
}

std::optional<int64_t> Db::QueryInt(const char* sql) {
  Query q = Prepare(sql);
  if (!q.Step()) return std::nullopt;
  return q.OptInt(0);
}

}  // namespace madeira::store::sqlite
