// The behaviour every Store backend must show, as one parameterised GoogleTest suite.
// A backend instantiates it from its own test file:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
//                            ::testing::Values(StoreFactory{"sqlite", OpenMySqliteStore}),
//                            StoreFactoryName);
//
// Times are explicit `now` values; nothing sleeps.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "store/store.h"

namespace madeira::store::testing {

struct StoreFactory {
  std::string name;
  // Opens the store kept under `dir`. Called again on the same dir after Close() for the
  // close-and-reopen durability cases, so a backend must find its data again there.
  std::function<std::unique_ptr<Store>(const std::string& dir)> open;
};

inline void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }
inline std::string StoreFactoryName(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

// The task ids of a lease batch, in lease order.
inline std::vector<std::string> LeasedIds(const LeaseBatch& batch) {
  std::vector<std::string> ids;
  for (const auto& l : batch.leases) ids.push_back(l.task.spec.task_id);
  return ids;
}

inline constexpr Millis kT0 = 1'700'000'000'000;

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Closes the store and opens it again on the same dir.
  void Reopen();
  Store& store() { return *store_; }

  // A filled-in spec: pending at kT0 in queue "q", type "t" v1, priority 100.
  static core::TaskSpec Spec(const std::string& id);
  SubmitOutcome SubmitOne(const core::TaskSpec& spec, Millis now = kT0);
  std::vector<SubmitOutcome> SubmitAll(const std::vector<core::TaskSpec>& specs, Millis now = kT0);
  LeaseBatch LeaseFrom(std::vector<std::string> queues, int max_tasks, Millis now = kT0,
                       std::map<std::string, std::vector<int>> task_types = {},
                       std::optional<Millis> lease_ms = std::nullopt,
                       const std::string& worker_id = "w1");
  // Leases exactly one task from "q" (fails the test otherwise).
  store::Lease LeaseOne(Millis now = kT0, std::optional<Millis> lease_ms = std::nullopt);
  Result<AttemptReport> Ack(const std::string& lease_id, Millis now = kT0,
                            Millis ttl = 24 * 3600 * 1000);
  Result<AttemptReport> Fail(const std::string& lease_id, core::RetryDecision decision,
                             Millis now = kT0);
  // Leases the task (it must be next in its queue) and fails it dead.
  void MakeDead(const std::string& task_id, Millis now = kT0);
  core::Task Get(const std::string& task_id);
  Result<core::Task> TryGet(const std::string& task_id);
  std::vector<core::Attempt> AttemptsOf(const std::string& task_id);
  std::vector<std::string> Promote(Millis now);
  // Depths() as a map, without its zero rows (DepthMap) or with them (DepthMapWithZeros).
  std::map<std::pair<std::string, core::TaskStatus>, int64_t> DepthMap();
  std::map<std::pair<std::string, core::TaskStatus>, int64_t> DepthMapWithZeros();

  static core::RetryDecision FastRetry(Millis due) {
    return {core::TaskStatus::kPending, due, true};
  }
  static core::RetryDecision Backoff(Millis due) {
    return {core::TaskStatus::kRetrying, due, false};
  }
  static core::RetryDecision Dead() { return {core::TaskStatus::kDead, 0, false}; }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

}  // namespace madeira::store::testing
