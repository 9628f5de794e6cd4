// The names of the task metrics of SPEC §3 Operations, declared once.
#pragma once

#include "core/metrics.h"

namespace madeira::engine::metric {

inline constexpr const char* kSubmitted = "madeira_tasks_submitted_total";
inline constexpr const char* kQueueDepth = "madeira_queue_depth";
inline constexpr const char* kDispatchLatency = "madeira_dispatch_latency_seconds";
inline constexpr const char* kTaskDuration = "madeira_task_duration_seconds";
inline constexpr const char* kOutcomes = "madeira_task_outcomes_total";
inline constexpr const char* kRetries = "madeira_retries_total";
inline constexpr const char* kDeadLetters = "madeira_dead_letters_total";
inline constexpr const char* kWorkerLastSeen = "madeira_worker_last_seen_timestamp_seconds";

void DescribeTaskMetrics(core::Metrics& metrics);

}  // namespace madeira::engine::metric
