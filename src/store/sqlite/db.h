// A thin RAII layer over the SQLite C API: one connection, prepared statements cached by SQL
// text (or a literal's address), values bound and read without ceremony. Each Db is used by one
// thread: the store thread's, or the checkpointer's own.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace madeira::store::sqlite {

// A failed SQLite call. It never leaves the store: the store thread catches it at the boundary
// of each operation and turns it into a kUnavailable result. Checking every sqlite3_step by hand
// would triple the size of the operations for a condition none of them can handle locally.
class DbError : public std::runtime_error {
 public:
  DbError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// One use of a cached statement: bind, step, read; resets itself when it goes out of scope so
// an error path never leaves a statement holding a read transaction or stale bindings.
class Query {
 public:
  Query(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Query(Query&& other) noexcept : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  Query& operator=(Query&&) = delete;
  ~Query();

  // Binds the arguments to parameters 1..N in order.
  template <typename... Args>
  Query& Bind(const Args&... args) {
    int i = 0;
    (BindOne(++i, args), ...);
    return *this;
  }
  // Binds one parameter by index (1-based), for statements built piece by piece.
  template <typename Arg>
  Query& BindAt(int index, const Arg& arg) {
    BindOne(index, arg);
    return *this;
  }

  // True when a row is ready to read; false when the statement is done.
  bool Step();
  // Steps to the end (for writes); returns the number of rows changed.
  int Run();

  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) const;
  std::optional<int64_t> OptInt(int col) const;
  std::optional<std::string> OptText(int col) const;

 private:
  void BindOne(int i, int64_t v);
  void BindOne(int i, int v) { BindOne(i, static_cast<int64_t>(v)); }
  void BindOne(int i, bool v) { BindOne(i, static_cast<int64_t>(v ? 1 : 0)); }
  void BindOne(int i, std::string_view v);
  void BindOne(int i, const std::string& v) { BindOne(i, std::string_view(v)); }
  void BindOne(int i, const char* v) { BindOne(i, std::string_view(v)); }
  void BindOne(int i, std::nullopt_t);
  template <typename T>
  void BindOne(int i, const std::optional<T>& v) {
    if (v) {
      BindOne(i, *v);
    } else {
      BindOne(i, std::nullopt);
    }
  }
  void Check(int rc) const;

  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class Db {
 public:
  // Opens (creating) the file; throws DbError. Only called while opening the store.
  explicit Db(const std::string& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs SQL without results (pragmas, DDL, transaction control).
  void Exec(const std::string& sql);
  // The cached statement for this SQL text, ready to bind. For SQL built at run time.
  Query Prepare(const std::string& sql);
  // The cached statement for a string literal, found by the literal's address: the hot path
  // prepares dozens of statements per task, and hashing the text (after copying it into a
  // std::string) showed in profiles. Only pass literals or other text that lives as long as the
  // Db and never changes.
  Query Prepare(const char* sql);
  // One integer from a one-row query (pragmas, counts); nullopt when no row or NULL.
  std::optional<int64_t> QueryInt(const std::string& sql);
  std::optional<int64_t> QueryInt(const char* sql);

  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  // The rowid of the last row an INSERT added on this connection.
  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* handle() { return db_; }

 private:
  sqlite3_stmt* PrepareNew(std::string_view sql);

  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
  std::unordered_map<const char*, sqlite3_stmt*> literal_statements_;
};

}  // namespace madeira::store::sqlite
