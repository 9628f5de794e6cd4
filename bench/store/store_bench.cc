// store_bench: the SQLite store's throughput without HTTP in the way, so store changes can be
// measured alone. Built only with -DMADEIRA_BENCH=ON (target store_bench).
//
//   store_bench [--tasks N] [--runs R] [--workers W] [--dir PATH]
//
// Each run opens a fresh store in a temporary directory, submits N tasks in batches of 1000
// (several batches in flight, as concurrent HTTP submitters would have), then drains them with
// W threads, each looping Lease(max 100) -> 100 Acks issued at once -> wait for all. Prints
// tasks/s for both phases per run and the median over the runs.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace madeira::store {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSubmitBatch = 1000;
constexpr int kSubmitInFlight = 8;
constexpr int kLeaseMax = 100;
constexpr Millis kNow = 1'700'000'000'000;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "store_bench: %s\n", what.c_str());
  std::exit(1);
}

// Counts finished async operations so a thread can wait for a group of them.
class Pending {
 public:
  void Add(int n) {
    std::lock_guard lock(mu_);
    count_ += n;
  }
  void Done() {
    std::lock_guard lock(mu_);
    if (--count_ == 0) cv_.notify_all();
  }
  void WaitBelow(int limit) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return count_ < limit; });
  }
  void WaitZero() { WaitBelow(1); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

// About 300 bytes of JSON, like the HTTP benchmark's tasks.
std::string Payload(int i) {
  std::string p = R"({"order_id":)" + std::to_string(i) +
                  R"(,"customer":"c-0000000000","items":[{"sku":"ABC-123","qty":2,"price":1999},)"
                  R"({"sku":"XYZ-987","qty":1,"price":4999}],"note":")";
  p.append(300 - std::min<size_t>(p.size(), 290), 'x');
  p += "\"}";
  return p;
}

core::TaskSpec Spec(int i) {
  core::TaskSpec s;
  s.task_id = "bench-" + std::to_string(i);
  s.task_type = "bench.noop";
  s.queue = "bench";
  s.payload = Payload(i);
  s.schedule_time = kNow;
  s.trace_id = "trace-" + std::to_string(i);
  s.content_hash = "h" + std::to_string(i);
  return s;
}

struct RunResult {
  double submit_per_s;
  double drain_per_s;
  double submit_cpu_us;  // process CPU time per task: steadier than wall time on a busy box
  double drain_cpu_us;
};

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

RunResult RunOnce(const std::filesystem::path& dir, int tasks, int workers) {
  std::filesystem::remove_all(dir);
  auto opened = OpenSqliteStore(dir.string());
  if (!opened) Die("open: " + opened.error().message);
  std::unique_ptr<Store> store = std::move(*opened);

  // Specs are built before the clock starts: the store's cost is what is measured.
  std::vector<std::vector<core::TaskSpec>> batches;
  for (int i = 0; i < tasks; i += kSubmitBatch) {
    std::vector<core::TaskSpec> batch;
    for (int j = i; j < std::min(tasks, i + kSubmitBatch); ++j) batch.push_back(Spec(j));
    batches.push_back(std::move(batch));
  }

  std::atomic<int64_t> created{0};
  std::atomic<bool> failed{false};
  Pending pending;
  double cpu = CpuSeconds();
  auto start = Clock::now();
  for (auto& batch : batches) {
    pending.WaitBelow(kSubmitInFlight);
    pending.Add(1);
    store->Submit(std::move(batch), kNow, [&](Result<std::vector<SubmitOutcome>> r) {
      if (!r) {
        failed = true;
      } else {
        for (const auto& o : *r) created += o.kind == SubmitKind::kCreated ? 1 : 0;
      }
      pending.Done();
    });
  }
  pending.WaitZero();
  double submit_s = Seconds(start);
  double submit_cpu = CpuSeconds() - cpu;
  if (failed || created != tasks) Die("submit failed or created " + std::to_string(created));

  std::atomic<int64_t> acked{0};
  cpu = CpuSeconds();
  start = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      Pending acks;
      for (;;) {
        LeaseRequest req;
        req.worker_id = "w" + std::to_string(w);
        req.queues = {"bench"};
        req.max_tasks = kLeaseMax;
        req.now = kNow + 1;
        std::mutex mu;
        std::condition_variable cv;
        std::optional<Result<LeaseBatch>> got;
        store->Lease(std::move(req), [&](Result<LeaseBatch> r) {
          std::lock_guard lock(mu);
          got.emplace(std::move(r));
          cv.notify_one();
        });
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return got.has_value(); });
        }
        if (!*got) Die("lease: " + got->error().message);
        const LeaseBatch& batch = **got;
        if (batch.leases.empty()) return;
        acks.Add(static_cast<int>(batch.leases.size()));
        for (const auto& lease : batch.leases) {
          AckRequest ack;
          ack.lease_id = lease.lease_id;
          ack.result = R"({"ok":true})";
          ack.now = kNow + 2;
          store->Ack(std::move(ack), [&](Result<AttemptReport> r) {
            if (r) {
              ++acked;
            } else {
              failed = true;
            }
            acks.Done();
          });
        }
        acks.WaitZero();
      }
    });
  }
  for (auto& t : threads) t.join();
  double drain_s = Seconds(start);
  double drain_cpu = CpuSeconds() - cpu;
  if (failed || acked != tasks) Die("drain failed or acked " + std::to_string(acked));
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir);
  return {tasks / submit_s, tasks / drain_s, submit_cpu * 1e6 / tasks, drain_cpu * 1e6 / tasks};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  int tasks = 200'000;
  int runs = 3;
  int workers = 4;
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("madeira_store_bench_" + std::to_string(::getpid()));
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--tasks") {
      tasks = std::stoi(next());
    } else if (arg == "--runs") {
      runs = std::stoi(next());
    } else if (arg == "--workers") {
      workers = std::stoi(next());
    } else if (arg == "--dir") {
      dir = next();
    } else {
      Die("usage: store_bench [--tasks N] [--runs R] [--workers W] [--dir PATH]");
    }
  }
  std::vector<double> submit;
  std::vector<double> drain;
  std::vector<double> submit_cpu;
  std::vector<double> drain_cpu;
  for (int r = 0; r < runs; ++r) {
    RunResult res = RunOnce(dir, tasks, workers);
    std::printf(
        "run %d: submit %.0f tasks/s (%.1f us CPU/task), drain %.0f tasks/s (%.1f us CPU/task)\n",
        r + 1, res.submit_per_s, res.submit_cpu_us, res.drain_per_s, res.drain_cpu_us);
    std::fflush(stdout);
    submit.push_back(res.submit_per_s);
    drain.push_back(res.drain_per_s);
    submit_cpu.push_back(res.submit_cpu_us);
    drain_cpu.push_back(res.drain_cpu_us);
  }
  std::printf(
      "median of %d (%d tasks, %d workers): submit %.0f tasks/s (%.1f us CPU/task), "
      "drain %.0f tasks/s (%.1f us CPU/task)\n",
      runs, tasks, workers, Median(submit), Median(submit_cpu), Median(drain), Median(drain_cpu));
  return 0;
}

}  // namespace
}  // namespace madeira::store

int main(int argc, char** argv) { return madeira::store::Main(argc, argv); }
