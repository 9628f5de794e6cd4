#include "api/error_table.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace madeira::api {
namespace {

using core::ErrorCode;

TEST(ErrorTableTest, MapsEveryCodeToItsStatus) {
  const std::pair<ErrorCode, unsigned> cases[] = {
      {ErrorCode::kInvalidJson, 400},
      {ErrorCode::kUnknownField, 400},
      {ErrorCode::kMissingField, 400},
      {ErrorCode::kInvalidField, 400},
      {ErrorCode::kInvalidScheduleTime, 400},
      {ErrorCode::kScheduleTooFar, 400},
      {ErrorCode::kPayloadTooLarge, 400},
      {ErrorCode::kPayloadTooDeep, 400},
      {ErrorCode::kSchemaViolation, 400},
      {ErrorCode::kInvalidSchema, 400},
      {ErrorCode::kBatchTooLarge, 400},
      {ErrorCode::kTaskIdConflict, 409},
      {ErrorCode::kTaskRunning, 409},
      {ErrorCode::kTaskTerminal, 409},
      {ErrorCode::kTaskNotDead, 409},
      {ErrorCode::kLeaseLost, 409},
      {ErrorCode::kNotFound, 404},
      {ErrorCode::kMethodNotAllowed, 405},
      {ErrorCode::kUnauthorized, 401},
      {ErrorCode::kBadSignature, 401},
      {ErrorCode::kForbidden, 403},
      {ErrorCode::kRequestTooLarge, 413},
      {ErrorCode::kHeadersTooLarge, 431},
      {ErrorCode::kUnavailable, 503},
      {ErrorCode::kInternal, 500},
  };
  for (const auto& [code, status] : cases) {
    EXPECT_EQ(HttpStatusFor(code), status) << core::ErrorCodeName(code);
  }
}

TEST(ErrorTableTest, BodyCarriesCodeMessageAndField) {
  Response r = ErrorResponse(core::MakeError(ErrorCode::kInvalidField, "bad limit", "limit"));
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.content_type, "application/json");
  boost::json::value body = boost::json::parse(r.body);
  EXPECT_EQ(body.at("error").at("code"), "invalid_field");
  EXPECT_EQ(body.at("error").at("message"), "bad limit");
  EXPECT_EQ(body.at("error").at("field"), "limit");
}

TEST(ErrorTableTest, FieldIsOmittedWhenNoFieldIsToBlame) {
  boost::json::object o = ErrorObject(core::MakeError(ErrorCode::kNotFound, "no such task"));
  EXPECT_FALSE(o.contains("field"));
}

TEST(ErrorTableTest, InternalErrorsHideTheirDetail) {
  Response r = ErrorResponse(core::MakeError(ErrorCode::kInternal, "sqlite: disk I/O at row 7"));
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.body.find("sqlite"), std::string::npos);
  EXPECT_EQ(r.log_detail, "sqlite: disk I/O at row 7");
}

TEST(ErrorTableTest, UnavailableAsksToRetry) {
  Response r = ErrorResponse(core::MakeError(ErrorCode::kUnavailable, "store down"));
  EXPECT_EQ(r.status, 503u);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Retry-After");
  EXPECT_EQ(r.headers[0].second, "1");
}

}  // namespace
}  // namespace madeira::api
