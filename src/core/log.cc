#include "core/log.h"

#include <atomic>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/clock.h"
#include "core/time.h"

namespace madeira::core {

namespace {

std::atomic<LogLevel> g_min_level{LogLevel::kInfo};
std::mutex g_write_mu;  // one line per write, never interleaved across threads

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

void SetLogLevel(LogLevel min_level) { g_min_level.store(min_level); }

void Log(LogLevel level, std::string_view msg, const LogFields& fields, std::string_view trace_id) {
  if (level < g_min_level.load()) return;
  boost::json::object line;
  line.emplace("ts", FormatRfc3339(SystemClock().Now()));
  line.emplace("level", LevelName(level));
  line.emplace("msg", msg);
  if (!trace_id.empty()) line.emplace("trace_id", trace_id);
  // emplace keeps the first value, so an extra field cannot overwrite ts/level/msg/trace_id.
  for (const auto& [key, value] : fields) line.emplace(key, value);
  std::string text = boost::json::serialize(line);
  text.push_back('\n');
  std::lock_guard lock(g_write_mu);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace madeira::core
