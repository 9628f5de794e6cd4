// Adapts the engine's callbacks, which run on store threads, to coroutines: the completion
// is posted back to the awaiting coroutine's executor so handlers never run on store threads.
#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "store/store.h"

namespace madeira::api {

template <class T>
using StartFn = std::function<void(store::Callback<T>)>;

// Runs `start` with a callback and suspends until that callback is called.
//
// Nothing in the co_await expression below may own a resource: gcc 12 can destroy
// temporaries of a co_await full-expression twice. An initiation lambda that captured the
// executor released the connection's strand twice that way (heap-use-after-free under ASan).
// So the lambda captures nothing, `start` is taken by reference (no owning std::function
// temporary in the caller's co_await) and passed on by pointer, and the executor is taken
// from the handler inside. Callers pass lambdas that capture by reference only.
template <class T, class Start>
boost::asio::awaitable<core::Result<T>> Await(Start&& start) {
  StartFn<T> start_fn(std::ref(start));
  core::Result<T> result =
      co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                           void(core::Result<T>)>(
          [](auto handler, StartFn<T>* start_op) {
            auto executor = boost::asio::get_associated_executor(handler);
            // The completion handler is move-only; std::function needs a copyable callable.
            auto shared = std::make_shared<decltype(handler)>(std::move(handler));
            (*start_op)([shared, executor](core::Result<T> r) {
              boost::asio::post(executor, [shared, r = std::move(r)]() mutable {
                // Move the handler out and run it here: it owns the coroutine's stack, which must
                // live and die on this thread, not wherever the last copy of `shared` is dropped
                // (the store thread still holds one).
                auto h = std::move(*shared);
                std::move(h)(std::move(r));
              });
            });
          },
          boost::asio::use_awaitable, &start_fn);
  co_return result;
}

// Starts n operations with one call, `start(callbacks)` (callbacks[i] answers operation i), and
// suspends until all have answered; results come back in order.
template <class T>
boost::asio::awaitable<std::vector<core::Result<T>>> AwaitEach(
    size_t n, std::function<void(std::vector<store::Callback<T>>)> start) {
  using All = std::vector<core::Result<T>>;
  auto gather = [n, &start](store::Callback<All> done) {
    struct Gather {
      std::mutex mu;
      All results;
      size_t left;
      store::Callback<All> done;
    };
    auto g = std::make_shared<Gather>();
    g->results.assign(n, core::Result<T>(core::MakeError(core::ErrorCode::kInternal, "no answer")));
    g->left = n;
    g->done = std::move(done);
    if (n == 0) return g->done(All());
    std::vector<store::Callback<T>> callbacks;
    callbacks.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      callbacks.push_back([g, i](core::Result<T> r) {
        std::unique_lock lock(g->mu);
        g->results[i] = std::move(r);
        if (--g->left != 0) return;
        lock.unlock();
        g->done(std::move(g->results));
      });
    }
    start(std::move(callbacks));
  };
  core::Result<All> all = co_await Await<All>(gather);
  co_return std::move(*all);
}

}  // namespace madeira::api
