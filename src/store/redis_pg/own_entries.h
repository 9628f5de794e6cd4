// This process's submit entries in the outbox (their field "o" names the process), and what a
// flush of the outbox does with each. A submit's tasks are copied into PostgreSQL by the
// recorder from what the submit sent (Backend::CopyNewTasks), not read back from Redis first;
// the flush that later reads those entries only acknowledges them. But a flush can read an
// entry before the store has the reply naming it (the store pipelines its batches): such an
// entry is left pending, for a later flush, until the store says which it is.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace madeira::store::redis_pg {

class OwnEntries {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Verdict {
    kCopy,  // copy it as any entry: the store left it to the outbox (or never said, for long)
    kPass,  // acknowledge it only: its tasks are in PostgreSQL already
    kWait,  // leave it pending: the store has not said yet
  };

  // How long an entry the store never names waits before it is copied anyway (a reply lost
  // with its connection, a script that failed half-way).
  static constexpr std::chrono::seconds kUnnamedWait{2};
  // Entries named and not read back yet that are remembered; past this the oldest are forgotten
  // (another process may read some instead). A forgotten entry is only copied again.
  static constexpr size_t kKept = 1 << 16;

  // Their tasks were copied from what the submits sent.
  void Copied(const std::vector<std::string>& entries) { Name(entries, Verdict::kPass); }
  // Their batch waits for the outbox's copy.
  void LeftToOutbox(const std::vector<std::string>& entries) { Name(entries, Verdict::kCopy); }
  // What a flush does with an entry of this process that it read at `now`.
  Verdict Judge(const std::string& entry, Clock::time_point now);

 private:
  void Name(const std::vector<std::string>& entries, Verdict verdict);

  std::unordered_map<std::string, Verdict> named_;
  std::deque<std::string> order_;                               // of naming, to forget the oldest
  std::unordered_map<std::string, Clock::time_point> unnamed_;  // first read before named
};

}  // namespace madeira::store::redis_pg
