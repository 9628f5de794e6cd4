// Long-polling lease requests parked until a task they can take becomes ready, or time is up.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace madeira::engine {

class LeaseWaiters {
 public:
  // resume(true): woken because work may be ready; resume(false): wait_ms passed or stopping.
  using Resume = std::function<void(bool woken)>;

  explicit LeaseWaiters(boost::asio::any_io_executor executor) : executor_(executor) {}

  // Read before asking the store for work; Park refuses if a wake-up happened since, so a task
  // that became ready between the store's answer and the parking is never missed.
  uint64_t Generation() const;

  // Parks unless the generation moved (returns false: the caller asks the store again now).
  // `filtered` waiters (type/version restricted) are woken but not counted against the ready
  // tasks, since they may not be able to take them.
  bool Park(uint64_t seen_generation, std::vector<std::string> queues, bool filtered, int max_tasks,
            std::chrono::steady_clock::duration wait, Resume resume);

  // Wakes, oldest first, enough waiters on these queues to take `count` new tasks each.
  void Wake(const std::map<std::string, int>& ready_by_queue);
  // Answers every parked waiter with resume(false) and refuses new ones.
  void Stop();
  size_t parked() const;

 private:
  struct Waiter;
  void Finish(const std::shared_ptr<Waiter>& waiter, bool woken);

  boost::asio::any_io_executor executor_;
  mutable std::mutex mu_;
  uint64_t generation_ = 0;
  bool stopped_ = false;
  std::list<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace madeira::engine
