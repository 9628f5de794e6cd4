// Blocking helpers for tests: run one asynchronous store operation and wait for its callback.
#pragma once

#include <functional>
#include <future>
#include <memory>

#include "store/store.h"

namespace madeira::store::testing {

// Starts the operation with a callback that fulfils a promise, and waits for it. Never call it
// from a store callback (the store thread would wait for itself).
template <typename T>
core::Result<T> Await(const std::function<void(Callback<T>)>& start) {
  auto promise = std::make_shared<std::promise<core::Result<T>>>();
  auto future = promise->get_future();
  start([promise](core::Result<T> result) { promise->set_value(std::move(result)); });
  return future.get();
}

}  // namespace madeira::store::testing
