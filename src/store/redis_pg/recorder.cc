#include "store/redis_pg/recorder.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <stdexcept>

#include "core/log.h"

namespace madeira::store::redis_pg {

namespace {

// With nothing written here, how often the recorder still copies the outbox (other processes'
// entries left behind by a crash are claimed that way).
constexpr auto kIdleFlush = std::chrono::seconds(1);
// With only the entries of tasks copied from made_ to read (their tasks in PostgreSQL, their
// submits answered), how often the recorder reads them to acknowledge them: seldom enough that
// each read takes many, often enough that the stream is trimmed behind them.
constexpr auto kMadeRead = std::chrono::milliseconds(200);
// While PostgreSQL is away, how often the recorder tries whether it is back.
constexpr auto kProbeInterval = std::chrono::milliseconds(500);
// How long changes nobody waits for gather before the recorder copies them (see Loop). The
// longer, the more leases are copied together with their acks (one row update, not two) and the
// fewer commits: 100 ms against 25 drained ~7 % faster with ~19 % less PostgreSQL CPU
// (docs/benchmarks.md, twelfth round); reads served from PostgreSQL end the wait at once. 250 ms
// took ~8 % more off PostgreSQL's CPU but lets other processes' searches lag further behind
// (seventeenth round): kept at 100.
constexpr auto kGather = std::chrono::milliseconds(100);

// Leases' changes held for the record at most: beyond, the oldest go (PostgreSQL away for long,
// and leases going on meanwhile). ~0.5 kB each.
constexpr size_t kMaxLeased = 100'000;
// How long a lease's change whose task has no row yet (its record still on its way from another
// process) is tried again.
constexpr auto kLeasedRowWait = std::chrono::seconds(60);

// What AwaitCopied waits on.
class Signal final : public AwaitsRecord {
 public:
  explicit Signal(std::promise<void>& done) : done_(done) {}
  void Deliver() override { done_.set_value(); }

 private:
  std::promise<void>& done_;
};

}  // namespace

Recorder::Recorder(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {
  thread_ = std::thread([this] { Loop(); });
}

void Recorder::Written(std::vector<std::unique_ptr<AwaitsRecord>> waiting,
                       std::vector<std::string> submit_entries) {
  {
    std::lock_guard lock(mu_);
    WaitForOutbox(waiting, submit_entries);
  }
  cv_.notify_one();
}

void Recorder::WaitForOutbox(std::vector<std::unique_ptr<AwaitsRecord>>& waiting,
                             std::vector<std::string>& submit_entries) {
  ++written_;
  if (!gather_until_) gather_until_ = std::chrono::steady_clock::now() + kGather;
  for (auto& w : waiting) waiting_.emplace_back(written_, std::move(w));
  for (auto& e : submit_entries) left_to_outbox_.push_back(std::move(e));
}

void Recorder::Written(std::vector<std::unique_ptr<AwaitsRecord>> waiting, NewTasks made) {
  {
    std::lock_guard lock(mu_);
    if (ok_) {
      made_.push_back({std::move(made), std::move(waiting)});
      made_unread_ = true;
    } else {  // PostgreSQL away: the outbox's copy, once it is back
      WaitForOutbox(waiting, made.entries);
    }
  }
  cv_.notify_one();
}

void Recorder::Leased(std::vector<StateRecord> states) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  for (StateRecord& s : states) leased_.push_back({std::move(s), now});
  if (leased_.size() > kMaxLeased) {
    const size_t dropped = leased_.size() - kMaxLeased;
    leased_.erase(leased_.begin(), leased_.begin() + static_cast<std::ptrdiff_t>(dropped));
    if (!leased_dropped_) {  // once until a copy succeeds again
      leased_dropped_ = true;
      core::Log(core::LogLevel::kWarn,
                "redis-pg: leases' states wait too long for postgresql; the oldest are dropped",
                {{"held", std::to_string(kMaxLeased)}});
    }
  }
}

void Recorder::AwaitCopied() {
  std::promise<void> copied;
  {
    // Counted as a batch written: the calling batch's own writes are in Redis already, though
    // not yet passed on by Written (the store answers a batch once all of it has run).
    std::lock_guard lock(mu_);
    ++written_;
    waiting_.emplace_back(written_, std::make_unique<Signal>(copied));
  }
  cv_.notify_one();
  copied.get_future().wait();
}

std::string Recorder::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void Recorder::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

// After each copy that reached the end of the outbox it answers the new work written before
// the copy began. While PostgreSQL is away it tries again every kProbeInterval (new work is
// refused meanwhile: RedisPgStore::RefuseNewWorkWithoutRecord).
void Recorder::Loop() {
  for (;;) {
    uint64_t target = 0;
    bool stopping = false;
    std::vector<Made> made;
    std::vector<std::string> left;
    std::vector<HeldState> leased;
    {
      std::unique_lock lock(mu_);
      if (ok_) {
        cv_.wait_until(lock, ReadBy(),
                       [&] { return stop_ || !made_.empty() || written_ > recorded_; });
        // Nobody waits for the outbox's copy (leases and acks are answered already, new tasks
        // are copied from made_): let changes gather a moment, so that a task leased and acked
        // meanwhile costs PostgreSQL one row update, not two. New work ends the wait at once.
        if (!stop_ && made_.empty() && waiting_.empty() && written_ > recorded_ && gather_until_) {
          cv_.wait_until(lock, std::min(*gather_until_, ReadBy()),
                         [&] { return stop_ || !made_.empty() || !waiting_.empty(); });
        }
      } else {
        cv_.wait_for(lock, kProbeInterval, [&] { return stop_; });
      }
      made.swap(made_);
    }
    // New tasks first: their submits wait for nothing else.
    if (!made.empty()) CopyMade(std::move(made));
    {
      std::lock_guard lock(mu_);
      stopping = stop_;
      // The outbox's copy is due when work waits for it, when changes have gathered long
      // enough (or the last copy stopped short of the end), and by ReadBy; else the loop waits
      // again.
      const auto now = std::chrono::steady_clock::now();
      const bool gathered = written_ > recorded_ && (!gather_until_ || now >= *gather_until_);
      if (ok_ && !stopping && waiting_.empty() && !gathered && now < ReadBy()) continue;
      target = written_;
      gather_until_.reset();
      left.swap(left_to_outbox_);
      leased.swap(leased_);
      last_read_ = now;
      made_unread_ = false;
    }
    // Before the copy: the batches up to `target` wait for it, their entries with them.
    backend_->LeftToOutbox(left);
    bool drained = false;
    std::string error;
    // A connection dropped while idle (a Redis or PostgreSQL restart, an idle timeout on the
    // way) fails only the call that finds it: the next one connects again. So a healthy
    // recorder tries once more at once, rather than refuse new work until its next try.
    const int tries = ok_ ? 2 : 1;
    for (int attempt = 1; attempt <= tries; ++attempt) {
      try {
        if (!ok_) {  // an empty outbox would not touch PostgreSQL: ask it
          if (auto ping = backend_->Ping(); !ping) throw std::runtime_error(ping.error().message);
        }
        // New work written before this copy began is answered as soon as its rows are committed.
        drained = backend_->FlushOutbox([&] { AnswerUpTo(target); }, &leased);
        error.clear();
        break;
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    if (error.empty() && !ok_) {
      core::Log(core::LogLevel::kInfo, "redis-pg: the record is written again");
    } else if (!error.empty() && ok_) {
      // The record lags; the outbox keeps what was not copied, and a later flush does it.
      core::Log(core::LogLevel::kWarn, "redis-pg: cannot copy the outbox into postgresql",
                {{"error", error}});
    }
    {
      std::lock_guard lock(mu_);
      error_ = error;
      ok_ = error.empty();
      // Not copied (PostgreSQL away, or no row yet): ahead of the ones held since, for the next
      // copy; a change still without a row after kLeasedRowWait goes.
      if (error.empty()) {
        leased_dropped_ = false;
        const auto now = std::chrono::steady_clock::now();
        std::erase_if(leased, [&](const HeldState& h) { return now - h.since > kLeasedRowWait; });
      }
      if (!leased.empty()) {
        leased.insert(leased.end(), std::make_move_iterator(leased_.begin()),
                      std::make_move_iterator(leased_.end()));
        leased_.swap(leased);
      }
    }
    // Work Redis accepted is answered as accepted even when its copy failed: it is durable in
    // Redis and the outbox copies it later (refusing it now would invite a duplicate).
    if (drained || !error.empty() || stopping) AnswerUpTo(target);
    // Other processes' flushes wait for our acknowledgement of entries we read before theirs
    // (Backend::AwaitOthersCopies): when no copy follows at once to carry it, send it now.
    if (error.empty() && !stopping && backend_->SharesOutbox()) {
      bool idle = false;
      {
        std::lock_guard lock(mu_);
        idle = written_ == target && waiting_.empty();
      }
      if (idle) {
        try {
          backend_->SendDeferredAck();
        } catch (const std::exception&) {  // Redis away: the next flush sends it, or retries
        }
      }
    }
    if (stopping) {
      std::lock_guard lock(mu_);
      if (waiting_.empty() && made_.empty()) {
        try {
          backend_->SendDeferredAck();
        } catch (const std::exception&) {  // Redis away: another process copies them again
        }
        return;
      }
    }
  }
}

std::chrono::steady_clock::time_point Recorder::ReadBy() const {
  return last_read_ + (made_unread_ ? std::chrono::steady_clock::duration(kMadeRead)
                                    : std::chrono::steady_clock::duration(kIdleFlush));
}

void Recorder::CopyMade(std::vector<Made> made) {
  NewTasks all;
  for (Made& m : made) {
    for (auto& s : m.tasks.submits) all.submits.push_back(std::move(s));
    for (auto& e : m.tasks.entries) all.entries.push_back(std::move(e));
  }
  bool copied = false;
  try {
    backend_->CopyNewTasks(all);
    copied = true;
  } catch (const std::exception&) {
    // PostgreSQL away, or a record it refuses: the outbox's copy handles both (it sets such a
    // record aside, and reports PostgreSQL's absence).
  }
  if (copied) {
    for (Made& m : made) {
      for (auto& w : m.waiting) w->Deliver();
    }
    return;
  }
  std::lock_guard lock(mu_);
  for (Made& m : made) {
    for (auto& w : m.waiting) waiting_.emplace_back(written_, std::move(w));
  }
}

void Recorder::AnswerUpTo(uint64_t upto) {
  std::vector<std::unique_ptr<AwaitsRecord>> answered;
  {
    std::lock_guard lock(mu_);
    recorded_ = std::max(recorded_, upto);
    while (!waiting_.empty() && waiting_.front().first <= upto) {
      answered.push_back(std::move(waiting_.front().second));
      waiting_.pop_front();
    }
  }
  for (auto& w : answered) w->Deliver();
}

}  // namespace madeira::store::redis_pg
