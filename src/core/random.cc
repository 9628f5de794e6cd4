#include "core/random.h"

namespace madeira::core {

SystemRandom::SystemRandom() {
  std::random_device rd;
  std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
  gen_.seed(seq);
}

uint64_t SystemRandom::Next64() {
  std::lock_guard lock(mu_);
  return gen_();
}

}  // namespace madeira::core
