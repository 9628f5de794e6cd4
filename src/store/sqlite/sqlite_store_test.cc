#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "store/conformance/store_conformance.h"
#include "store/conformance/sync.h"

namespace madeira::store {
namespace {

std::unique_ptr<Store> OpenForTest(const std::string& dir) {
  auto store = OpenSqliteStore(dir);
  if (!store) {
    ADD_FAILURE() << "open " << dir << ": " << store.error().message;
    return nullptr;
  }
  return std::move(*store);
}

}  // namespace

namespace testing {
INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
                         ::testing::Values(StoreFactory{"sqlite", OpenForTest}), StoreFactoryName);
}  // namespace testing

namespace {

TEST(SqliteStore, KeepsOneFileUnderTheDataDirInWalMode) {
  auto dir = std::filesystem::temp_directory_path() / "madeira_sqlite_layout" / "nested";
  std::filesystem::remove_all(dir.parent_path());
  auto store = OpenForTest(dir.string());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir / "madeira.db"));
  EXPECT_TRUE(std::filesystem::exists(dir / "madeira.db-wal"));
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir.parent_path());
}

TEST(SqliteStore, UnopenableDirIsUnavailable) {
  auto result = OpenSqliteStore("/proc/madeira-cannot-create");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, core::ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace madeira::store
