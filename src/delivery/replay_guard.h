// Signed event requests already accepted, remembered for as long as their signature could
// pass the timestamp check, so the very same request sent again (a replay) is refused. A
// source that retries an event signs it anew and gets the event_id dedupe instead.
// In memory, per process: after a restart a replay is still only a duplicate (nothing stored).
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "core/clock.h"

namespace madeira::delivery {

class ReplayGuard {
 public:
  // `keep`: how long one request stays remembered (the whole ± window of the timestamp check).
  explicit ReplayGuard(core::Millis keep, size_t max_entries = 1'000'000)
      : keep_(keep), max_entries_(max_entries) {}

  bool Seen(const std::string& request_key, core::Millis now) {
    std::lock_guard lock(mu_);
    Prune(now);
    return seen_.contains(request_key);
  }

  void Remember(std::string request_key, core::Millis now) {
    std::lock_guard lock(mu_);
    Prune(now);
    if (!seen_.insert(request_key).second) return;
    order_.emplace_back(now + keep_, std::move(request_key));
    if (order_.size() > max_entries_) {  // bounded memory; the oldest go first
      seen_.erase(order_.front().second);
      order_.pop_front();
    }
  }

 private:
  void Prune(core::Millis now) {
    while (!order_.empty() && order_.front().first <= now) {
      seen_.erase(order_.front().second);
      order_.pop_front();
    }
  }

  core::Millis keep_;
  size_t max_entries_;
  std::mutex mu_;
  std::unordered_set<std::string> seen_;
  std::deque<std::pair<core::Millis, std::string>> order_;  // by expiry (insertion order)
};

}  // namespace madeira::delivery
