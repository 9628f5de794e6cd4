#include "core/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace madeira::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Metrics, CounterWithLabels) {
  Metrics m;
  m.Describe("madeira_tasks_submitted_total", "counter", "Tasks accepted by submit.");
  m.Inc("madeira_tasks_submitted_total", {{"queue", "orders"}, {"task_type", "a.b"}});
  m.Inc("madeira_tasks_submitted_total", {{"queue", "orders"}, {"task_type", "a.b"}}, 2);
  EXPECT_EQ(m.RenderPrometheus(),
            "# HELP madeira_tasks_submitted_total Tasks accepted by submit.\n"
            "# TYPE madeira_tasks_submitted_total counter\n"
            "madeira_tasks_submitted_total{queue=\"orders\",task_type=\"a.b\"} 3\n");
}

TEST(Metrics, DescribedFamilyRendersBeforeFirstSample) {
  Metrics m;
  m.Describe("madeira_dead_letters_total", "counter", "Tasks that went dead.");
  EXPECT_EQ(m.RenderPrometheus(),
            "# HELP madeira_dead_letters_total Tasks that went dead.\n"
            "# TYPE madeira_dead_letters_total counter\n");
}

TEST(Metrics, GaugeSetReplaces) {
  Metrics m;
  m.Set("madeira_queue_depth", {{"queue", "q"}, {"state", "pending"}}, 5);
  m.Set("madeira_queue_depth", {{"queue", "q"}, {"state", "pending"}}, 2);
  m.Set("madeira_worker_last_seen_timestamp_seconds", {}, 1757565900.25);
  const std::string text = m.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("# TYPE madeira_queue_depth gauge\n"));
  EXPECT_THAT(text, HasSubstr("madeira_queue_depth{queue=\"q\",state=\"pending\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("madeira_worker_last_seen_timestamp_seconds 1757565900.25\n"));
}

TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m;
  m.Inc("errors_total", {{"msg", "a\\b \"q\"\nz"}});
  EXPECT_THAT(m.RenderPrometheus(), HasSubstr("errors_total{msg=\"a\\\\b \\\"q\\\"\\nz\"} 1\n"));
}

TEST(Metrics, HelpTextIsEscaped) {
  Metrics m;
  m.Describe("x_total", "counter", "line one\nback\\slash \"quotes stay\"");
  EXPECT_THAT(m.RenderPrometheus(),
              HasSubstr("# HELP x_total line one\\nback\\\\slash \"quotes stay\"\n"));
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Metrics m;
  m.Describe("madeira_dispatch_latency_seconds", "histogram", "Ready to leased.");
  const Labels none;
  m.Observe("madeira_dispatch_latency_seconds", none, 0.0005);  // on a bound: le is inclusive
  m.Observe("madeira_dispatch_latency_seconds", none, 0.003);
  m.Observe("madeira_dispatch_latency_seconds", none, 0.2);
  m.Observe("madeira_dispatch_latency_seconds", none, 120);  // above the last bucket
  const std::string text = m.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("# TYPE madeira_dispatch_latency_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"0.0005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"0.0025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"0.005\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"0.25\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"60\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_bucket{le=\"+Inf\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_sum 120.2035\n"));
  EXPECT_THAT(text, HasSubstr("madeira_dispatch_latency_seconds_count 4\n"));
}

TEST(Metrics, HistogramKeepsOtherLabelsBeforeLe) {
  Metrics m;
  m.Observe("madeira_task_duration_seconds", {{"task_type", "t"}, {"outcome", "failed"}}, 2);
  EXPECT_THAT(m.RenderPrometheus(),
              HasSubstr("madeira_task_duration_seconds_bucket{task_type=\"t\",outcome=\"failed\","
                        "le=\"2.5\"} 1\n"));
}

TEST(Metrics, EveryBucketIsRendered) {
  Metrics m;
  m.Observe("h", {}, 1);
  const std::string text = m.RenderPrometheus();
  size_t buckets = 0;
  for (size_t pos = 0; (pos = text.find("h_bucket{", pos)) != std::string::npos; ++pos) ++buckets;
  EXPECT_EQ(buckets, Metrics::kLatencyBuckets.size() + 1);
  EXPECT_THAT(text, Not(HasSubstr("e-")));  // no exponent notation in le values
}

TEST(Metrics, ConcurrentIncrementsAreNotLost) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m] {
      for (int i = 0; i < 1000; ++i) {
        m.Inc("c_total", {{"k", "v"}});
        m.Observe("h", {}, 0.01);
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string text = m.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("c_total{k=\"v\"} 4000\n"));
  EXPECT_THAT(text, HasSubstr("h_count 4000\n"));
}

}  // namespace
}  // namespace madeira::core
