#include "store/redis_pg/own_entries.h"

namespace madeira::store::redis_pg {

void OwnEntries::Name(const std::vector<std::string>& entries, Verdict verdict) {
  for (const std::string& id : entries) {
    auto [it, added] = named_.insert_or_assign(id, verdict);
    if (added) order_.push_back(id);
  }
  while (order_.size() > kKept) {
    named_.erase(order_.front());
    order_.pop_front();
  }
}

OwnEntries::Verdict OwnEntries::Judge(const std::string& entry, Clock::time_point now) {
  if (auto it = named_.find(entry); it != named_.end()) {
    const Verdict verdict = it->second;
    named_.erase(it);
    unnamed_.erase(entry);
    return verdict;
  }
  auto [it, first] = unnamed_.try_emplace(entry, now);
  if (first || now - it->second < kUnnamedWait) return Verdict::kWait;
  unnamed_.erase(it);
  return Verdict::kCopy;
}

}  // namespace madeira::store::redis_pg
