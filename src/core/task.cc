#include "core/task.h"

#include <array>
#include <utility>

namespace madeira::core {

namespace {
constexpr std::array<std::pair<TaskStatus, std::string_view>, 7> kStatusNames{{
    {TaskStatus::kScheduled, "scheduled"},
    {TaskStatus::kPending, "pending"},
    {TaskStatus::kRunning, "running"},
    {TaskStatus::kRetrying, "retrying"},
    {TaskStatus::kSucceeded, "succeeded"},
    {TaskStatus::kDead, "dead"},
    {TaskStatus::kCancelled, "cancelled"},
}};
}  // namespace

std::string_view TaskStatusName(TaskStatus s) {
  for (const auto& [status, name] : kStatusNames) {
    if (status == s) return name;
  }
  return "unknown";
}

std::optional<TaskStatus> ParseTaskStatus(std::string_view name) {
  for (const auto& [status, n] : kStatusNames) {
    if (n == name) return status;
  }
  return std::nullopt;
}

std::string_view AttemptOutcomeName(AttemptOutcome o) {
  switch (o) {
    case AttemptOutcome::kSucceeded:
      return "succeeded";
    case AttemptOutcome::kFailed:
      return "failed";
    case AttemptOutcome::kLeaseExpired:
      return "lease_expired";
    case AttemptOutcome::kCancelled:
      return "cancelled";
  }
  return "failed";
}

}  // namespace madeira::core
