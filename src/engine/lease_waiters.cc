#include "engine/lease_waiters.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace madeira::engine {

struct LeaseWaiters::Waiter {
  std::vector<std::string> queues;
  bool filtered = false;
  int max_tasks = 1;
  Resume resume;
  std::unique_ptr<boost::asio::steady_timer> timer;
  std::atomic<bool> finished{false};
};

uint64_t LeaseWaiters::Generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

size_t LeaseWaiters::parked() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

bool LeaseWaiters::Park(uint64_t seen_generation, std::vector<std::string> queues, bool filtered,
                        int max_tasks, std::chrono::steady_clock::duration wait, Resume resume) {
  auto waiter = std::make_shared<Waiter>();
  waiter->queues = std::move(queues);
  waiter->filtered = filtered;
  waiter->max_tasks = max_tasks;
  waiter->resume = std::move(resume);
  waiter->timer = std::make_unique<boost::asio::steady_timer>(executor_);
  {
    std::lock_guard lock(mu_);
    if (stopped_ || generation_ != seen_generation) return false;
    waiters_.push_back(waiter);
  }
  // Timer operations stay on the executor: steady_timer is not safe to touch from two threads.
  boost::asio::post(executor_, [this, waiter, wait] {
    if (waiter->finished.load()) return;
    waiter->timer->expires_after(wait);
    waiter->timer->async_wait([this, waiter](boost::system::error_code ec) {
      if (ec) return;  // cancelled: someone else finished it
      Finish(waiter, false);
    });
  });
  return true;
}

void LeaseWaiters::Finish(const std::shared_ptr<Waiter>& waiter, bool woken) {
  if (waiter->finished.exchange(true)) return;
  {
    std::lock_guard lock(mu_);
    waiters_.remove(waiter);
  }
  boost::asio::post(executor_, [waiter] { waiter->timer->cancel(); });
  waiter->resume(woken);
}

void LeaseWaiters::Wake(const std::map<std::string, int>& ready_by_queue) {
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(mu_);
    ++generation_;
    std::map<std::string, int> left = ready_by_queue;
    for (const auto& w : waiters_) {
      if (w->finished.load()) continue;
      bool take = false;
      for (const auto& q : w->queues) {
        auto it = left.find(q);
        if (it == left.end() || it->second <= 0) continue;
        take = true;
        if (!w->filtered) it->second -= w->max_tasks;
        break;
      }
      if (take) woken.push_back(w);
      if (std::all_of(left.begin(), left.end(), [](const auto& kv) { return kv.second <= 0; })) {
        break;
      }
    }
  }
  for (const auto& w : woken) Finish(w, true);
}

void LeaseWaiters::Stop() {
  std::vector<std::shared_ptr<Waiter>> all;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    ++generation_;
    all.assign(waiters_.begin(), waiters_.end());
  }
  for (const auto& w : all) Finish(w, false);
}

}  // namespace madeira::engine
