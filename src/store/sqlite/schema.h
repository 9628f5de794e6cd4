// The on-disk layout of the sqlite store and its migrations (PRAGMA user_version).
#pragma once

#include "store/sqlite/db.h"

namespace madeira::store::sqlite {

// Sets the connection pragmas (WAL, synchronous=FULL, ...) and brings the schema to the current
// version. Throws DbError; refuses a file written by a newer Madeira.
void PrepareDatabase(Db& db, int64_t cache_kib);

}  // namespace madeira::store::sqlite
