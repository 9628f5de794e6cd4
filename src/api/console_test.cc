#include "api/console.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>

namespace madeira::api {
namespace {

std::string Header(const Response& r, std::string_view name) {
  for (const auto& [key, value] : r.headers) {
    if (key == name) return value;
  }
  return {};
}

bool IsEmbedded(std::string_view name) {
  for (const EmbeddedFile& f : ConsoleFiles()) {
    if (f.name == name) return true;
  }
  return false;
}

TEST(ConsoleTest, ServesIndexWithStrictHeaders) {
  Response r = ConsoleFileResponse("index.html");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<title>Madeira console</title>"), std::string::npos);
  EXPECT_EQ(Header(r, "Cache-Control"), "no-cache");
  EXPECT_EQ(Header(r, "X-Content-Type-Options"), "nosniff");
  const std::string csp = Header(r, "Content-Security-Policy");
  EXPECT_TRUE(csp.starts_with("default-src 'self';")) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
}

TEST(ConsoleTest, EveryFileHasAKnownContentType) {
  ASSERT_FALSE(ConsoleFiles().empty());
  for (const EmbeddedFile& f : ConsoleFiles()) {
    EXPECT_NE(ConsoleContentType(f.name), "application/octet-stream") << f.name;
    EXPECT_FALSE(f.bytes.empty()) << f.name;
    EXPECT_EQ(ConsoleFileResponse(f.name).body, f.bytes) << f.name;
  }
  EXPECT_EQ(ConsoleContentType("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ConsoleContentType("style.css"), "text/css; charset=utf-8");
}

// A module or stylesheet renamed without its reference would leave a blank page.
TEST(ConsoleTest, EveryRelativeReferenceIsEmbedded) {
  int references = 0;
  for (const EmbeddedFile& f : ConsoleFiles()) {
    for (size_t pos = f.bytes.find("./"); pos != std::string_view::npos;
         pos = f.bytes.find("./", pos + 2)) {
      const char quote = pos > 0 ? f.bytes[pos - 1] : ' ';
      if (quote != '"' && quote != '\'') continue;
      const size_t end = f.bytes.find(quote, pos);
      ASSERT_NE(end, std::string_view::npos) << f.name;
      const std::string_view target = f.bytes.substr(pos + 2, end - pos - 2);
      EXPECT_TRUE(IsEmbedded(target)) << f.name << " refers to " << target;
      ++references;
    }
  }
  EXPECT_GE(references, 3) << "index.html's stylesheet and script, and app.js's imports";
}

TEST(ConsoleTest, UnknownNamesAre404JsonAndNeverTouchTheDisk) {
  for (std::string_view name :
       {"nope.js", "", "../madeira.db", "/etc/passwd", "index.html/", "INDEX.HTML", "index.htm"}) {
    Response r = ConsoleFileResponse(name);
    EXPECT_EQ(r.status, 404u) << name;
    EXPECT_EQ(r.content_type, "application/json") << name;
    boost::json::value body = boost::json::parse(r.body);
    EXPECT_EQ(body.at("error").at("code").as_string(), "not_found") << name;
  }
}

}  // namespace
}  // namespace madeira::api
