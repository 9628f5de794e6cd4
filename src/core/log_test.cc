#include "core/log.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace madeira::core {
namespace {

namespace json = boost::json;

std::string CaptureLog(LogLevel level, std::string_view msg, const LogFields& fields,
                       std::string_view trace_id = {}) {
  testing::internal::CaptureStderr();
  Log(level, msg, fields, trace_id);
  return testing::internal::GetCapturedStderr();
}

TEST(Log, WritesOneJsonObjectPerLine) {
  const std::string line = CaptureLog(LogLevel::kWarn, "lease \"expired\"\n",
                                      {{"task_id", "t1"}, {"worker", "w\\1"}}, "trace-7a8b9c");
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // the message's newline is escaped
  const json::object obj = json::parse(line).as_object();
  EXPECT_EQ(obj.at("level"), "warn");
  EXPECT_EQ(obj.at("msg"), "lease \"expired\"\n");
  EXPECT_EQ(obj.at("trace_id"), "trace-7a8b9c");
  EXPECT_EQ(obj.at("task_id"), "t1");
  EXPECT_EQ(obj.at("worker"), "w\\1");
  EXPECT_EQ(obj.at("ts").as_string().size(), 24u);  // 2025-09-11T04:45:00.000Z
  EXPECT_EQ(obj.begin()->key(), "ts");
}

TEST(Log, OmitsEmptyTraceIdAndKeepsCoreFields) {
  const json::object obj =
      json::parse(CaptureLog(LogLevel::kInfo, "hello", {{"msg", "overwritten?"}})).as_object();
  EXPECT_FALSE(obj.contains("trace_id"));
  EXPECT_EQ(obj.at("msg"), "hello");
}

TEST(Log, DropsLinesBelowTheLevel) {
  SetLogLevel(LogLevel::kWarn);
  EXPECT_EQ(CaptureLog(LogLevel::kInfo, "quiet", {}), "");
  EXPECT_NE(CaptureLog(LogLevel::kError, "loud", {}), "");
  SetLogLevel(LogLevel::kInfo);
}

}  // namespace
}  // namespace madeira::core
