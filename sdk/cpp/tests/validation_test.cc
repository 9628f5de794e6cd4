#include <gtest/gtest.h>

#include "madeira/errors.h"
#include "madeira/task.h"
#include "testdata.h"

namespace madeira::sdk {
namespace {

using testing::ReadTestdata;

TEST(Validation, EveryValidVectorIsAccepted) {
  auto doc = ReadTestdata("envelopes.json");
  const auto& cases = doc.at("valid").as_array();
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.at("name").as_string()));
    std::string wire = boost::json::serialize(c.at("envelope"));
    Task t;
    EXPECT_NO_THROW(t = ParseTask(wire));
    // The struct form round-trips through local validation too.
    EXPECT_NO_THROW(t.Validate());
  }
}

TEST(Validation, EveryClientSideInvalidVectorIsRefusedNamingTheField) {
  auto doc = ReadTestdata("envelopes.json");
  int checked = 0;
  for (const auto& c : doc.at("invalid").as_array()) {
    const auto& o = c.as_object();
    SCOPED_TRACE(std::string(o.at("name").as_string()));
    std::string wire = boost::json::serialize(o.at("envelope"));
    if (o.at("server_only").as_bool()) {
      EXPECT_NO_THROW(ParseTask(wire));  // only the server can judge it
      continue;
    }
    ++checked;
    try {
      ParseTask(wire);
      ADD_FAILURE() << "accepted";
    } catch (const ValidationError& e) {
      EXPECT_EQ(e.field(), o.at("field").as_string());
      EXPECT_EQ(e.code(), o.at("code").as_string());
    }
  }
  EXPECT_GT(checked, 20);
}

Task Minimal() {
  Task t;
  t.task_type = "order.close";
  t.payload_version = 1;
  return t;
}

std::string FieldOf(const Task& t) {
  try {
    t.Validate();
  } catch (const ValidationError& e) {
    return e.field() + "/" + e.code();
  }
  return "";
}

TEST(Validation, ZoneAwareInstantIsSentInUtcWithMilliseconds) {
  Task t = Minimal();
  using namespace std::chrono;
  t.schedule_time = Time(sys_days(2025y / 9 / 11) + 4h + 45min + 123ms);
  EXPECT_EQ(t.ToWire().at("schedule_time").as_string(), "2025-09-11T04:45:00.123Z");
}

TEST(Validation, NaiveScheduleStringIsRefused) {
  for (const char* s : {"2025-09-11T12:45:00", "2025-09-11", "1757565900", "2025-09-11 12:45:00Z",
                        "2025-02-30T00:00:00Z"}) {
    SCOPED_TRACE(s);
    Task t = Minimal();
    t.schedule_time = ScheduleTime(std::string(s));
    EXPECT_EQ(FieldOf(t), "schedule_time/invalid_schedule_time");
  }
  Task t = Minimal();
  t.schedule_time = ScheduleTime(std::string("2025-09-11T12:45:00.5+08:00"));
  EXPECT_EQ(FieldOf(t), "");
}

TEST(Validation, StructFieldsAreCheckedBeforeSending) {
  Task t = Minimal();
  t.payload_version = 0;
  EXPECT_EQ(FieldOf(t), "payload_version/missing_field");
  t = Minimal();
  t.timeout = std::chrono::milliseconds(99);
  EXPECT_EQ(FieldOf(t), "timeout_ms/invalid_field");
  t = Minimal();
  t.priority = 1001;
  EXPECT_EQ(FieldOf(t), "priority/invalid_field");
  t = Minimal();
  t.trace_id = "has space";
  EXPECT_EQ(FieldOf(t), "trace_id/invalid_field");
  t = Minimal();
  t.payload = boost::json::parse(R"({"a":{"b":{"c":{"d":{"e":{}}}}}})").as_object();
  EXPECT_EQ(FieldOf(t), "payload/payload_too_deep");
  t = Minimal();
  t.payload["big"] = std::string(70000, 'x');
  EXPECT_EQ(FieldOf(t), "payload/payload_too_large");
}

TEST(Validation, AbsentOptionalsAreOmittedNeverNull) {
  auto wire = Minimal().ToWire();
  EXPECT_EQ(boost::json::serialize(wire),
            R"({"task_type":"order.close","payload_version":1,"payload":{}})");
}

}  // namespace
}  // namespace madeira::sdk
