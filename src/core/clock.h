// Time is injected everywhere it decides behaviour, so tests move it instead of sleeping.
#pragma once

#include <atomic>
#include <cstdint>

namespace madeira::core {

// Milliseconds since the Unix epoch, UTC. The one time unit inside Madeira.
using Millis = int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Millis Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Millis Now() const override;
};

// A clock tests set and advance by hand.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Millis start = 1'700'000'000'000) : now_(start) {}
  Millis Now() const override { return now_.load(); }
  void Set(Millis t) { now_.store(t); }
  void Advance(Millis d) { now_.fetch_add(d); }

 private:
  std::atomic<Millis> now_;
};

}  // namespace madeira::core
