// The endpoints this process knows, by id: read on every event (routing) and every delivery,
// written on the rare change. Thread-safe; entries are immutable snapshots, replaced whole.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "delivery/endpoint.h"

namespace madeira::delivery {

class EndpointDirectory {
 public:
  using Snapshot = std::shared_ptr<const Endpoint>;
  // Told about every Put (the new snapshot) and Remove (nullptr), after the change.
  using Listener = std::function<void(const std::string& id, Snapshot endpoint)>;

  void Put(Endpoint endpoint) {
    auto snap = std::make_shared<const Endpoint>(std::move(endpoint));
    Listener listener;
    {
      std::lock_guard lock(mu_);
      endpoints_[snap->id] = snap;
      listener = listener_;
    }
    if (listener) listener(snap->id, snap);
  }

  void Remove(const std::string& id) {
    Listener listener;
    {
      std::lock_guard lock(mu_);
      endpoints_.erase(id);
      listener = listener_;
    }
    if (listener) listener(id, nullptr);
  }

  Snapshot Get(const std::string& id) const {
    std::lock_guard lock(mu_);
    auto it = endpoints_.find(id);
    return it == endpoints_.end() ? nullptr : it->second;
  }

  // Every endpoint, oldest first.
  std::vector<Snapshot> All() const {
    std::vector<Snapshot> out;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, ep] : endpoints_) out.push_back(ep);
    }
    std::stable_sort(out.begin(), out.end(), [](const Snapshot& a, const Snapshot& b) {
      return a->created_at < b->created_at;
    });
    return out;
  }

  // One listener (the deliverer); set before the first Put it should see.
  void SetListener(Listener listener) {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, Snapshot> endpoints_;
  Listener listener_;
};

}  // namespace madeira::delivery
