// Feeds arbitrary bytes through the redis-pg store's readers of what it finds in Redis: a task
// hash (with its packed state and spec), an outbox entry, and the PostgreSQL rows built from
// them. Redis is written by Madeira's own scripts, but a damaged or foreign value must cost one
// task or one entry an error, never the process: these readers may throw std::exception (the
// store answers that task with an error and sets the entry aside) and must do nothing else.
//
// Input: name/value pairs separated by '\n' (a flat HGETALL or stream-entry reply); the whole
// input is also tried as a packed spec, and as a packed state, on its own.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "store/redis_pg/task_codec.h"

namespace {

using namespace madeira::store::redis_pg;

RedisReply FlatReply(std::string_view text) {
  RedisReply flat;
  flat.type = RedisReply::Type::kArray;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    RedisReply& value = flat.elements.emplace_back();
    value.type = RedisReply::Type::kString;
    value.str = std::string(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return flat;
}

size_t CountOf(std::string_view text, char c) {
  size_t n = 0;
  for (char x : text) n += x == c;
  return n;
}

void CheckCopyRows(std::string_view copy, size_t rows, std::string_view columns) {
  if (!copy.empty() && copy.back() != '\n') __builtin_trap();
  if (CountOf(copy, '\n') != rows) __builtin_trap();
  if (CountOf(copy, '\t') != rows * CountOf(columns, ',')) __builtin_trap();
}

template <typename Read>
void Tolerate(Read&& read) {
  try {
    read();
  } catch (const std::exception&) {
    // The documented way a reader refuses what it cannot read.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const RedisReply flat = FlatReply(text);

  Tolerate([&] { (void)TaskFromFields(FieldsFromFlat(flat)); });
  Tolerate([&] {
    Fields f{{"spec", std::string(text)}, {"status", "pending"}, {"seq", "1"}};
    UnpackSpec(f);
    if (f.count("spec") != 0) __builtin_trap();  // unpacking always drops the packed value
    (void)TaskFromFields(f);
  });
  Tolerate([&] {
    Fields f{{"st", std::string(text)}};
    UnpackLive(f);
    if (f.count("st") != 0) __builtin_trap();  // nor does a state stay packed
    (void)TaskFromFields(f);
  });
  Tolerate([&] {
    const std::vector<Record> records = RecordsFromFlat(flat);
    const RecordBatch batch = BuildRecordBatch(records);
    // Whatever bytes the values hold, COPY gets whole rows of the right width: tabs and line
    // ends inside a value are escaped.
    CheckCopyRows(batch.tasks_copy, batch.tasks, PgTaskColumns());
    CheckCopyRows(batch.states_copy, batch.states, PgStateColumns());
    CheckCopyRows(batch.attempts_copy, batch.attempts, kPgAttemptRowColumns);
    if (batch.tasks + batch.states + batch.attempts + batch.events > records.size()) {
      __builtin_trap();
    }
  });
  return 0;
}
