// Randomness is injected so jitter and ids are reproducible in tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <random>
#include <vector>

namespace madeira::core {

class Random {
 public:
  virtual ~Random() = default;
  virtual uint64_t Next64() = 0;
  // Uniform in [0, 1).
  double NextUnit() { return static_cast<double>(Next64() >> 11) * 0x1.0p-53; }
};

// Seeded from the OS; thread-safe.
class SystemRandom final : public Random {
 public:
  SystemRandom();
  uint64_t Next64() override;

 private:
  std::mutex mu_;
  std::mt19937_64 gen_;
};

// A fixed sequence source for tests: returns values in order, cycling.
class SequenceRandom final : public Random {
 public:
  explicit SequenceRandom(std::initializer_list<uint64_t> values) : values_(values) {}
  uint64_t Next64() override { return values_[next_++ % values_.size()]; }

 private:
  std::vector<uint64_t> values_;
  size_t next_ = 0;
};

}  // namespace madeira::core
