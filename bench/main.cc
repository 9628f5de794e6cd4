// madeira_bench: starts the real server per scenario, loads it over loopback, prints medians.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "report.h"
#include "scenarios.h"

namespace {

using madeira::bench::AllScenarios;
using madeira::bench::Failure;
using madeira::bench::Measurement;
using madeira::bench::Report;
using madeira::bench::ScenarioEnv;

constexpr std::string_view kUsage =
    "usage: madeira_bench [--madeira PATH] [--runs N] [--only a,b,c,d,e,f,w] [--scale X] "
    "[--json FILE]\n"
    "  --madeira  server binary (default build-bench/madeira)\n"
    "  --runs     runs per scenario, each on a fresh server; medians are reported (default 3)\n"
    "  --only     scenarios to run, by letter or name (webhooks = w); default all\n"
    "  --scale    multiplies task counts, e.g. 0.1 for a quick check (default 1)\n"
    "  --json     also write the results as JSON to FILE\n";

struct Flags {
  std::string madeira = "build-bench/madeira";
  int runs = 3;
  std::string only = "abcdefw";
  double scale = 1;
  std::string json;
};

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
      } else {
        Usage(2);
      }
    } catch (const std::exception&) {
      Usage(2);
    }
  }
  if (f.runs < 1 || f.scale <= 0) Usage(2);
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
  Report report;
  report.machine = madeira::bench::ReadMachineInfo();
  report.runs = flags.runs;
  report.scale = flags.scale;
  std::printf("machine: %u CPUs, %s, %s\n", report.machine.cpus, report.machine.cpu_model.c_str(),
              report.machine.kernel.c_str());
  std::printf("server: %s; %d run(s) per scenario, scale %g; client: 1 thread\n\n",
              flags.madeira.c_str(), flags.runs, flags.scale);

  ScenarioEnv env{flags.madeira, flags.scale};
  for (const auto& scenario : AllScenarios()) {
    std::string wanted = Wanted(scenario, flags.only);
    if (wanted.empty()) continue;
    for (int run = 1; run <= flags.runs; ++run) {
      std::printf("[%s] %s, run %d/%d ...\n", scenario.letters.c_str(), scenario.title.c_str(), run,
                  flags.runs);
      std::fflush(stdout);
      try {
        std::vector<Measurement> measured = scenario.run(env);
        std::vector<Measurement> kept;
        for (const Measurement& m : measured) {
          if (wanted.find(m.id[0]) == std::string::npos) continue;
          std::printf("    %-10s %12.2f %s\n", m.id.c_str(), m.value, m.unit.c_str());
          kept.push_back(m);
        }
        report.Add(kept);
      } catch (const std::exception& e) {
        std::printf("    FAILED: %s\n", e.what());
        report.failures.push_back(Failure{scenario.letters, run, e.what()});
      }
      std::fflush(stdout);
    }
  }
  report.Finish();
  std::printf("\n%s", report.Table().c_str());
  if (!flags.json.empty()) {
    std::ofstream out(flags.json);
    out << report.Json();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", flags.json.c_str());
      return 1;
    }
  }
  return report.failures.empty() ? 0 : 1;
}
