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
template <class T>
boost::asio::awaitable<core::Result<T>> Await(StartFn<T> start) {
  auto executor = co_await boost::asio::this_coro::executor;
  co_return co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                 void(core::Result<T>)>(
      [executor](auto handler, StartFn<T> start_op) {
        // The completion handler is move-only; std::function needs a copyable callable.
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        start_op([shared, executor](core::Result<T> result) {
          boost::asio::post(executor, [shared, result = std::move(result)]() mutable {
            (*shared)(std::move(result));
          });
        });
      },
      boost::asio::use_awaitable, std::move(start));
}

// Starts n operations at once (so a batch shares the store's group commit) and suspends
// until all have answered; results come back in order.
template <class T>
boost::asio::awaitable<std::vector<core::Result<T>>> AwaitAll(
    size_t n, std::function<void(size_t, store::Callback<T>)> start) {
  using All = std::vector<core::Result<T>>;
  core::Result<All> all = co_await Await<All>([n, start](store::Callback<All> done) {
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
    for (size_t i = 0; i < n; ++i) {
      start(i, [g, i](core::Result<T> r) {
        std::unique_lock lock(g->mu);
        g->results[i] = std::move(r);
        if (--g->left != 0) return;
        lock.unlock();
        g->done(std::move(g->results));
      });
    }
  });
  co_return std::move(*all);
}

}  // namespace madeira::api
