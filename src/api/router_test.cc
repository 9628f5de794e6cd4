#include "api/router.h"

#include <gtest/gtest.h>

namespace madeira::api {
namespace {

class RouterTest : public ::testing::Test {
 protected:
  RouteMatch Match(std::string_view method, std::string_view path) {
    QueryParams query;
    auto segments = ParseTarget(path, query);
    EXPECT_TRUE(segments) << path;
    return router_.Match(method, segments ? *segments : std::vector<std::string>{});
  }
  Router router_{AllRoutes()};
};

TEST_F(RouterTest, MatchesLiteralRoutes) {
  RouteMatch m = Match("POST", "/v1/tasks");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.route->id, RouteId::kSubmit);
  EXPECT_EQ(Match("GET", "/v1/tasks").route->id, RouteId::kSearchTasks);
  EXPECT_EQ(Match("GET", "/healthz").route->id, RouteId::kHealthz);
}

TEST_F(RouterTest, CapturesParameters) {
  RouteMatch m = Match("GET", "/v1/tasks/order-1/attempts");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.route->id, RouteId::kTaskAttempts);
  EXPECT_EQ(m.route->pattern, "/v1/tasks/{id}/attempts");
  EXPECT_EQ(m.params, std::vector<std::string>{"order-1"});

  m = Match("PUT", "/v1/schemas/order.close/2");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.params, (std::vector<std::string>{"order.close", "2"}));
}

TEST_F(RouterTest, LiteralSegmentWinsOverParameter) {
  EXPECT_EQ(Match("POST", "/v1/tasks/batch").route->id, RouteId::kSubmitBatch);
  EXPECT_EQ(Match("POST", "/v1/leases/ack").route->id, RouteId::kAckBatch);
  EXPECT_EQ(Match("POST", "/v1/leases/abc/ack").route->id, RouteId::kAck);
  // A task may be called "batch": GET still reaches it.
  EXPECT_EQ(Match("GET", "/v1/tasks/batch").route->id, RouteId::kGetTask);
}

TEST(ParseTargetTest, DecodesSegmentsAndQueryParameters) {
  QueryParams query;
  auto segments = ParseTarget("/v1/tasks/order%2F1?status=dead&trace_id=a%20b&limit=5", query);
  ASSERT_TRUE(segments);
  EXPECT_EQ(*segments, (std::vector<std::string>{"v1", "tasks", "order/1"}));
  EXPECT_EQ(query, (QueryParams{{"status", "dead"}, {"trace_id", "a b"}, {"limit", "5"}}));
}

TEST(ParseTargetTest, MalformedTargetIsInvalid) {
  for (std::string_view target : {"v1/tasks", "/v1/tasks%zz", "http://x/v1/tasks", "/v1 /x"}) {
    QueryParams query;
    auto segments = ParseTarget(target, query);
    ASSERT_FALSE(segments) << target;
    EXPECT_EQ(segments.error().code, core::ErrorCode::kInvalidField);
    EXPECT_EQ(segments.error().field, "target");
  }
}

TEST_F(RouterTest, UnknownPathIsNotFound) {
  EXPECT_EQ(Match("GET", "/v1/nope").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(Match("GET", "/v1/tasks/a/b/c").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(Match("GET", "/v1/tasks/").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(Match("GET", "/").kind, RouteMatch::Kind::kNotFound);
}

TEST_F(RouterTest, KnownPathWithWrongMethodListsAllowedMethods) {
  RouteMatch m = Match("DELETE", "/v1/tasks");
  EXPECT_EQ(m.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "POST, GET");

  m = Match("POST", "/v1/tasks/abc");
  EXPECT_EQ(m.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "GET");

  m = Match("DELETE", "/v1/schemas/t/1");
  EXPECT_EQ(m.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "PUT, GET");
}

TEST_F(RouterTest, ConsoleRoutes) {
  EXPECT_EQ(Match("GET", "/ui").route->id, RouteId::kConsoleRedirect);
  EXPECT_EQ(Match("GET", "/ui/").route->id, RouteId::kConsoleIndex);
  RouteMatch m = Match("GET", "/ui/app.js");
  ASSERT_EQ(m.kind, RouteMatch::Kind::kFound);
  EXPECT_EQ(m.route->id, RouteId::kConsoleFile);
  EXPECT_EQ(m.params, std::vector<std::string>{"app.js"});
  // An encoded slash stays inside the one segment, which names no embedded file.
  EXPECT_EQ(Match("GET", "/ui/..%2Fmadeira.db").params, std::vector<std::string>{"../madeira.db"});
  EXPECT_EQ(Match("GET", "/ui/a/b.js").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(Match("GET", "/ui/../v1/dead").kind, RouteMatch::Kind::kNotFound);
  EXPECT_EQ(Match("POST", "/ui/").kind, RouteMatch::Kind::kMethodNotAllowed);
  for (std::string_view path : {"/ui", "/ui/", "/ui/style.css"}) {
    EXPECT_EQ(Match("GET", path).route->scopes, kPublic) << path;
  }
}

TEST_F(RouterTest, ScopesFollowTheSpec) {
  EXPECT_EQ(Match("POST", "/v1/tasks").route->scopes, kProducerOnly);
  EXPECT_EQ(Match("POST", "/v1/leases").route->scopes, kWorkerOnly);
  EXPECT_EQ(Match("POST", "/v1/dead/replay").route->scopes, kAdminOnly);
  EXPECT_EQ(Match("PUT", "/v1/schemas/t/1").route->scopes, kAdminOnly);
  EXPECT_EQ(Match("GET", "/v1/schemas/t/1").route->scopes, kProducerOnly | kWorkerOnly);
  EXPECT_EQ(Match("GET", "/metrics").route->scopes, kPublic);
  EXPECT_EQ(Match("GET", "/readyz").route->scopes, kPublic);
}

}  // namespace
}  // namespace madeira::api
