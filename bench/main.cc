// madeira_bench: starts the real server per scenario, loads it over loopback, prints medians.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "report.h"
#include "scenarios.h"
#include "server_process.h"

namespace {

using madeira::bench::AllScenarios;
using madeira::bench::Failure;
using madeira::bench::Measurement;
using madeira::bench::Report;
using madeira::bench::ScenarioEnv;
using madeira::bench::StoreSetup;

constexpr std::string_view kUsage =
    "usage: madeira_bench [--madeira PATH] [--runs N] [--only a,b,c,d,e,f,w,p] [--scale X] "
    "[--json FILE]\n"
    "                     [--store sqlite|redis-pg|sqlite,redis-pg] [--services-script PATH]\n"
    "                     [--task-ids made|given]\n"
    "  --madeira  server binary (default build-bench/madeira)\n"
    "  --runs     runs per scenario, each on a fresh server; medians are reported (default 3)\n"
    "  --only     scenarios to run, by letter or name (webhooks = w, peers = p); default\n"
    "             all but p (c at 2k/s and 10k delayed tasks, as bench/peers runs the peers)\n"
    "  --scale    multiplies task counts, e.g. 0.1 for a quick check (default 1)\n"
    "  --json     also write the results as JSON to FILE (rows carry their \"store\")\n"
    "  --store    the store(s) to measure (default sqlite); with several, each run of a\n"
    "             scenario goes through them in turn and a side-by-side table ends the output.\n"
    "             redis-pg runs the scenarios a, b, c, f, p (ids \"rp.a.batch\" in tables) on\n"
    "             MADEIRA_TEST_REDIS_URL + MADEIRA_TEST_DATABASE_URL when both are set, else\n"
    "             on a private Redis + PostgreSQL it starts and stops itself\n"
    "  --services-script  what starts those (default scripts/test-services.sh)\n"
    "  --task-ids made: a's envelopes leave task_id to the server (default); given: each\n"
    "             names a unique one, as producers that set their own ids do\n";

struct Flags {
  std::string madeira = "build-bench/madeira";
  int runs = 3;
  std::string only = "abcdefw";
  double scale = 1;
  std::string json;
  std::vector<std::string> stores = {"sqlite"};
  std::string services_script = "scripts/test-services.sh";
  bool given_ids = false;
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// Private services outlive an interrupted run (they are daemons): SIGINT/SIGTERM stop them
// first. The handler only makes raw system calls: glibc's fork() would take the malloc locks
// another frame of this thread may hold; the argv is built beforehand.
std::vector<std::string> g_stop_args;
std::vector<char*> g_stop_argv;

extern "C" void StopServicesAndExit(int sig) {
  if (!g_stop_argv.empty()) {
    long pid = syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr);
    if (pid == 0) {
      execve("/bin/bash", g_stop_argv.data(), environ);
      _exit(127);
    }
    if (pid > 0) {
      int status;
      while (waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  _exit(128 + sig);
}

void StopServicesOnSignal(const std::string& script, const std::string& dir) {
  g_stop_args = {"bash", "-c", "bash \"$0\" stop \"$1\"; rm -rf \"$1\"", script, dir};
  for (std::string& a : g_stop_args) g_stop_argv.push_back(a.data());
  g_stop_argv.push_back(nullptr);
  std::signal(SIGINT, StopServicesAndExit);
  std::signal(SIGTERM, StopServicesAndExit);
}

[[noreturn]] void Usage(int code) {
  (code == 0 ? std::cout : std::cerr) << kUsage;
  std::exit(code);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") Usage(0);
    if (i + 1 >= argc) Usage(2);
    std::string value = argv[++i];
    try {
      if (arg == "--madeira") {
        f.madeira = value;
      } else if (arg == "--runs") {
        f.runs = std::stoi(value);
      } else if (arg == "--only") {
        f.only = value;
      } else if (arg == "--scale") {
        f.scale = std::stod(value);
      } else if (arg == "--json") {
        f.json = value;
      } else if (arg == "--store") {
        f.stores = SplitList(value);
      } else if (arg == "--services-script") {
        f.services_script = value;
      } else if (arg == "--task-ids") {
        if (value != "made" && value != "given") Usage(2);
        f.given_ids = value == "given";
      } else {
        Usage(2);
      }
    } catch (const std::exception&) {
      Usage(2);
    }
  }
  if (f.runs < 1 || f.scale <= 0 || f.stores.empty()) Usage(2);
  for (size_t i = 0; i < f.stores.size(); ++i) {
    const std::string& s = f.stores[i];
    if (s != "sqlite" && s != "redis-pg") Usage(2);
    if (std::find(f.stores.begin(), f.stores.begin() + static_cast<long>(i), s) !=
        f.stores.begin() + static_cast<long>(i)) {
      Usage(2);
    }
  }
  return f;
}

// The letters of `scenario` that --only asked for: a comma-separated list whose items are
// letters ("a,c" or "ac") or a scenario's name ("webhooks").
std::string Wanted(const madeira::bench::Scenario& scenario, const std::string& only) {
  std::string letters_asked;
  size_t begin = 0;
  while (begin <= only.size()) {
    size_t end = std::min(only.find(',', begin), only.size());
    std::string item = only.substr(begin, end - begin);
    begin = end + 1;
    if (!scenario.name.empty() && item == scenario.name) return scenario.letters;
    bool is_name = std::any_of(AllScenarios().begin(), AllScenarios().end(),
                               [&](const auto& s) { return !s.name.empty() && s.name == item; });
    if (!is_name) letters_asked += item;
  }
  std::string out;
  for (char c : scenario.letters) {
    if (letters_asked.find(c) != std::string::npos) out.push_back(c);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  const madeira::bench::MachineInfo machine = madeira::bench::ReadMachineInfo();
  std::printf("machine: %u CPUs, %s, %s\n", machine.cpus, machine.cpu_model.c_str(),
              machine.kernel.c_str());
  std::printf("server: %s; %d run(s) per scenario, scale %g; client: 1 thread; task ids %s\n",
              flags.madeira.c_str(), flags.runs, flags.scale, flags.given_ids ? "given" : "made");

  // One report and environment per store, in the order asked; redis-pg only when one of the
  // scenarios asked for runs on it (its services take a few seconds to start).
  bool any_redis_pg = false;
  for (const auto& scenario : AllScenarios()) {
    any_redis_pg = any_redis_pg || (scenario.redis_pg && !Wanted(scenario, flags.only).empty());
  }
  std::unique_ptr<madeira::bench::TestServices> services;
  std::vector<Report> reports;
  std::vector<ScenarioEnv> envs;
  for (const std::string& name : flags.stores) {
    StoreSetup store;
    store.name = name;
    if (store.redis_pg() && !any_redis_pg) {
      std::printf("store redis-pg: skipped, it runs only the scenarios a, b, c, f, p\n");
      continue;
    }
    if (store.redis_pg()) {
      const char* redis = std::getenv("MADEIRA_TEST_REDIS_URL");
      const char* database = std::getenv("MADEIRA_TEST_DATABASE_URL");
      if (redis != nullptr && *redis != 0 && database != nullptr && *database != 0) {
        store.redis_url = redis;
        store.database_url = database;
      } else {
        try {
          services = std::make_unique<madeira::bench::TestServices>(flags.services_script);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "madeira_bench: redis-pg: %s\n", e.what());
          return 1;
        }
        StopServicesOnSignal(flags.services_script, services->dir().string());
        store.redis_url = services->redis_url();
        store.database_url = services->database_url();
        store.private_services = true;
      }
      std::printf(
          "store redis-pg: %s, %s (%s)\n", store.redis_url.c_str(), store.database_url.c_str(),
          store.private_services ? "private, started for this run" : "from the environment");
    }
    Report report;
    report.machine = machine;
    report.runs = flags.runs;
    report.scale = flags.scale;
    report.store = name;
    report.id_prefix = store.IdPrefix();
    report.loadavg_start = madeira::bench::LoadAverage();
    reports.push_back(std::move(report));
    envs.push_back(ScenarioEnv{flags.madeira, flags.scale, store, flags.given_ids});
  }
  std::printf("load average: %s\n\n", madeira::bench::LoadAverage().c_str());

  for (const auto& scenario : AllScenarios()) {
    std::string wanted = Wanted(scenario, flags.only);
    if (wanted.empty()) continue;
    for (int run = 1; run <= flags.runs; ++run) {
      for (size_t s = 0; s < envs.size(); ++s) {
        const ScenarioEnv& env = envs[s];
        Report& report = reports[s];
        if (env.store.redis_pg() && !scenario.redis_pg) continue;
        std::printf("[%s%s] %s on %s, run %d/%d (load %s) ...\n", report.id_prefix.c_str(),
                    scenario.letters.c_str(), scenario.title.c_str(), env.store.name.c_str(), run,
                    flags.runs, madeira::bench::LoadAverage().c_str());
        std::fflush(stdout);
        try {
          std::vector<Measurement> measured = scenario.run(env);
          std::vector<Measurement> kept;
          for (Measurement& m : measured) {
            if (wanted.find(m.id[0]) == std::string::npos) continue;
            madeira::bench::ApplyStoreTarget(env.store, m);
            std::printf("    %-12s %12.2f %s\n", (report.id_prefix + m.id).c_str(), m.value,
                        m.unit.c_str());
            kept.push_back(m);
          }
          report.Add(kept);
        } catch (const std::exception& e) {
          std::printf("    FAILED: %s\n", e.what());
          report.failures.push_back(Failure{env.store.name, scenario.letters, run, e.what()});
        }
        std::fflush(stdout);
      }
    }
  }
  bool failed = false;
  for (Report& report : reports) {
    report.loadavg_end = madeira::bench::LoadAverage();
    report.Finish();
    std::printf("\n== store %s (load average at the start %s, at the end %s)\n%s",
                report.store.c_str(), report.loadavg_start.c_str(), report.loadavg_end.c_str(),
                report.Table().c_str());
    failed = failed || !report.failures.empty();
  }
  if (reports.size() > 1) {
    std::printf("\n== side by side (median over %d run(s), min-max; target and met? per store)\n%s",
                flags.runs, madeira::bench::SideBySide(reports).c_str());
  }
  if (!flags.json.empty()) {
    std::ofstream out(flags.json);
    out << madeira::bench::JsonAll(reports);
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", flags.json.c_str());
      return 1;
    }
  }
  return failed ? 1 : 0;
}
