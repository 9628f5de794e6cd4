// No-op drain benchmark: preload N tasks with batched submits, drain them with a 64-slot worker,
// print "drained N tasks in S s = R tasks/s". The clock stops once Close has flushed every ack.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "madeira/client.h"
#include "madeira/worker.h"
#include "server.h"

int main(int argc, char** argv) {
  using namespace madeira::sdk;
  int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  testing::TestServer server;
  Client client(server.url());
  std::vector<Task> tasks;
  for (int i = 0; i < n; ++i) {
    Task t;
    t.task_type = "bench.noop";
    t.queue = "bench";
    t.payload_version = 1;
    tasks.push_back(std::move(t));
  }
  for (const auto& r : client.SubmitBatch(tasks)) {
    if (!r.ok()) {
      std::fprintf(stderr, "submit refused\n");
      return 1;
    }
  }
  std::atomic<int> done = 0;
  WorkerOptions options;
  options.queues = {"bench"};
  options.slots = 64;
  Worker worker(client, options);
  worker.Handle("bench.noop", {1}, [&](TaskContext&) -> boost::json::value {
    done.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  });
  auto start = std::chrono::steady_clock::now();
  worker.Start();
  auto give_up = start + std::chrono::seconds(300);
  while (done.load() < n && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  worker.Close(std::chrono::seconds(10));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (done.load() < n) {
    std::fprintf(stderr, "only %d of %d tasks drained\n", done.load(), n);
    return 1;
  }
  std::printf("drained %d tasks in %.2f s = %.0f tasks/s\n", n, secs, n / secs);
  return 0;
}
