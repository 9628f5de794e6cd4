#include "engine/engine_metrics.h"

namespace madeira::engine::metric {

void DescribeTaskMetrics(core::Metrics& m) {
  m.Describe(kSubmitted, "counter", "Tasks accepted, by queue and task_type.");
  m.Describe(kQueueDepth, "gauge", "Tasks by queue and state.");
  m.Describe(kDispatchLatency, "histogram", "Seconds from ready to leased.");
  m.Describe(kTaskDuration, "histogram", "Seconds from lease to ack or failure.");
  m.Describe(kOutcomes, "counter", "Finished attempts by task_type and outcome.");
  m.Describe(kRetries, "counter", "Retries by task_type and tier (fast or backoff).");
  m.Describe(kDeadLetters, "counter", "Tasks that went dead, by queue and task_type.");
  m.Describe(kWorkerLastSeen, "gauge", "Unix time of each worker's last heartbeat.");
}

}  // namespace madeira::engine::metric
