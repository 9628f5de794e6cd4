// The recorder: copies the outbox (what the scripts changed, P outbox) into PostgreSQL on a
// thread and connections of its own, so that the store thread's Redis round trips never wait
// for a PostgreSQL commit, and answers the new work (submits, events) waiting for its record.
// A batch of submits that made all their tasks is copied from what the submits sent, ahead of
// the outbox and without reading it (Written with NewTasks); the outbox's copy then passes over
// their entries. It is the only one to copy this process's outbox: reads served from PostgreSQL
// wait for it (AwaitCopied) rather than flush themselves, so one consumer's flushes never run at
// once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/redis_pg/backend.h"

namespace madeira::store::redis_pg {

// New work waiting for its record: answered (Deliver) once PostgreSQL has it.
class AwaitsRecord {
 public:
  virtual ~AwaitsRecord() = default;
  virtual void Deliver() = 0;
};

class Recorder {
 public:
  // `backend` must read as the store's consumer (ShareConsumerWith) and rotate the id claims
  // (RotateEndedClaims).
  explicit Recorder(std::unique_ptr<Backend> backend);
  ~Recorder() { Stop(); }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // A store batch wrote to Redis; `waiting` is answered once the outbox up to it is copied.
  // `submit_entries`: the outbox entries its submits wrote (see OwnEntries).
  void Written(std::vector<std::unique_ptr<AwaitsRecord>> waiting,
               std::vector<std::string> submit_entries = {});
  // A store batch made `made` and nothing else waits for its record: `waiting` is answered as
  // soon as those tasks are copied (Backend::CopyNewTasks), without reading the outbox first,
  // or, should that copy fail, once the outbox up to it is copied. The outbox is read within
  // kMadeRead to acknowledge the batch's entries.
  void Written(std::vector<std::unique_ptr<AwaitsRecord>> waiting, NewTasks made);
  // Leases' changes, which the lease script leaves out of the outbox: copied with the next copy
  // of the outbox (so before any AwaitCopied called after this returns is answered), together
  // with what it holds. They are this process's only copy: should it die first, PostgreSQL shows
  // those tasks as they were before their lease until their next change (an ack, a failure, the
  // lease's expiry), which the outbox carries.
  void Leased(std::vector<StateRecord> states);
  // Blocks until everything in the outbox at the call is copied (or its copy failed).
  void AwaitCopied();
  // Whether the last copy succeeded; if not, why (for the 503s of new work meanwhile).
  bool ok() const { return ok_.load(); }
  std::string error() const;
  // Copies what is left, answers everything waiting and ends the thread. Idempotent.
  void Stop();

 private:
  // New tasks with the work waiting for them (Written with NewTasks).
  struct Made {
    NewTasks tasks;
    std::vector<std::unique_ptr<AwaitsRecord>> waiting;
  };

  void Loop();
  // A batch's work waits for the outbox's copy, its submits' entries to be copied by it (with
  // mu_ held).
  void WaitForOutbox(std::vector<std::unique_ptr<AwaitsRecord>>& waiting,
                     std::vector<std::string>& submit_entries);
  // When the outbox is read next at the latest (with mu_ held).
  std::chrono::steady_clock::time_point ReadBy() const;
  // Copies `made` and answers its work; should the copy fail, the work waits for the outbox's.
  void CopyMade(std::vector<Made> made);
  void AnswerUpTo(uint64_t upto);  // the work written up to batch `upto`

  std::unique_ptr<Backend> backend_;  // the recorder thread's

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t written_ = 0;   // store batches that wrote to Redis
  uint64_t recorded_ = 0;  // ... of which the outbox copy is done
  std::deque<std::pair<uint64_t, std::unique_ptr<AwaitsRecord>>> waiting_;
  std::vector<Made> made_;                   // copied before the outbox, their work answered then
  std::vector<std::string> left_to_outbox_;  // submit entries for the next outbox copy
  std::vector<HeldState> leased_;            // Leased's, for the next outbox copy
  bool leased_dropped_ = false;              // some dropped (kMaxLeased) since the last copy
  std::chrono::steady_clock::time_point last_read_ = std::chrono::steady_clock::now();
  bool made_unread_ = false;  // made_ has had tasks since the outbox was last read
  // Until when the outbox copy waits for more changes nobody waits for (leases, acks, and the
  // entries of tasks copied from made_): set by the first write after a copy began.
  std::optional<std::chrono::steady_clock::time_point> gather_until_;
  bool stop_ = false;
  std::atomic<bool> ok_{true};
  std::string error_;

  std::thread thread_;  // last: started after everything it uses
};

}  // namespace madeira::store::redis_pg
