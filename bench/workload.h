// The request bodies the scenarios send and the few answer fields they read back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace madeira::bench {

inline constexpr std::string_view kQueue = "bench";

// The ~300-byte JSON payload every scenario sends (tasks and webhook events alike).
const std::string& Payload();

// One task envelope with a ~300-byte payload, in queue `kQueue`. `task_id` empty lets the server
// make one; `schedule_time` is RFC 3339 with Z, empty for "now".
std::string Envelope(std::string_view task_id = {}, std::string_view schedule_time = {});

// {"tasks":[...]} of `count` envelopes; ids are `id_prefix` + (first_seq + i) when a prefix is
// given, and every task gets `schedule_time` when one is given.
std::string BatchBody(int count, std::string_view id_prefix = {}, int64_t first_seq = 0,
                      std::string_view schedule_time = {});

// POST /v1/leases body for no-op workers of `kQueue`.
std::string LeaseBody(std::string_view worker_id, int max_tasks, int wait_ms);

struct LeasedTask {
  std::string lease_id;
  std::string task_id;
};

// Reads {"leases":[{"lease_id", "task":{"task_id"}}]}; throws on a malformed answer.
std::vector<LeasedTask> ParseLeases(std::string_view body);

// {"acks":[{"lease_id":...},...]} for the given leases.
std::string AckBody(const std::vector<LeasedTask>& leases);

struct BatchCounts {
  int64_t ok = 0;
  int64_t failed = 0;
  std::string first_error;  // the first per-item error object, as JSON
};

// Counts the items of {"results":[...]} that carry no "error" (batch submit and batch ack).
BatchCounts CountResults(std::string_view body);

// Wall-clock milliseconds since the Unix epoch, the unit of schedule_time.
int64_t WallMillis();

}  // namespace madeira::bench
