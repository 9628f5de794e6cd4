#include "delivery/outcome.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace madeira::delivery {
namespace {

constexpr core::Millis kNow = 1'700'000'000'000;  // 2023-11-14T22:13:20Z

HttpResponse Status(int status, std::string body = "", std::optional<std::string> ra = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.retry_after = std::move(ra);
  return r;
}

HttpResponse Failed(TransportError e) {
  HttpResponse r;
  r.error = e;
  return r;
}

OutcomeKind KindOf(const HttpResponse& r, const std::optional<SuccessCheck>& check = {}) {
  return Classify(r, check, kNow).kind;
}

TEST(OutcomeTest, FollowsTheSpecTable) {
  for (int s : {200, 201, 204, 299}) EXPECT_EQ(KindOf(Status(s)), OutcomeKind::kSuccess) << s;
  for (int s : {500, 502, 503, 504, 599, 408, 429}) {
    EXPECT_EQ(KindOf(Status(s)), OutcomeKind::kRetryable) << s;
  }
  for (int s : {400, 401, 403, 404, 409, 410, 422, 499}) {
    EXPECT_EQ(KindOf(Status(s)), OutcomeKind::kPermanent) << s;
  }
  for (int s : {100, 101, 301, 302, 304, 307, 308}) {
    EXPECT_EQ(KindOf(Status(s)), OutcomeKind::kUnknown) << s;
  }
}

TEST(OutcomeTest, TransportFailures) {
  for (TransportError e : {TransportError::kTimeout, TransportError::kConnectionRefused,
                           TransportError::kConnectionReset, TransportError::kDns,
                           TransportError::kOther, TransportError::kAborted}) {
    EXPECT_EQ(KindOf(Failed(e)), OutcomeKind::kRetryable) << TransportErrorName(e);
  }
  Outcome refused = Classify(Failed(TransportError::kRefusedByGuard), std::nullopt, kNow);
  EXPECT_EQ(refused.kind, OutcomeKind::kPermanent);
  EXPECT_EQ(refused.reason, "target address refused");
  EXPECT_EQ(KindOf(Failed(TransportError::kInvalidRequest)), OutcomeKind::kPermanent);
}

TEST(OutcomeTest, SuccessCheck) {
  SuccessCheck check{"/success", true};
  EXPECT_EQ(KindOf(Status(200, R"({"success":true})"), check), OutcomeKind::kSuccess);
  EXPECT_EQ(KindOf(Status(200, R"({"success":false})"), check), OutcomeKind::kUnknown);
  EXPECT_EQ(KindOf(Status(200, R"({"other":1})"), check), OutcomeKind::kUnknown);
  EXPECT_EQ(KindOf(Status(200, "OK"), check), OutcomeKind::kUnknown);
  EXPECT_EQ(KindOf(Status(200, ""), check), OutcomeKind::kUnknown);
  EXPECT_EQ(KindOf(Status(500, R"({"success":true})"), check), OutcomeKind::kRetryable);
  EXPECT_EQ(KindOf(Status(200, "not json")), OutcomeKind::kSuccess);  // no check, no parsing

  HttpResponse truncated = Status(200, R"({"success":true})");
  truncated.body_truncated = true;
  EXPECT_EQ(KindOf(truncated, check), OutcomeKind::kUnknown);

  SuccessCheck status_ok{"/status", "ok"};
  EXPECT_EQ(KindOf(Status(202, R"({"status":"ok"})"), status_ok), OutcomeKind::kSuccess);
  EXPECT_EQ(KindOf(Status(202, R"({"status":"OK"})"), status_ok), OutcomeKind::kUnknown);
}

TEST(OutcomeTest, RetryAfterOnlyFor429And503) {
  EXPECT_EQ(Classify(Status(429, "", "7"), std::nullopt, kNow).retry_after, 7000);
  EXPECT_EQ(Classify(Status(503, "", "120"), std::nullopt, kNow).retry_after, 120'000);
  EXPECT_FALSE(Classify(Status(500, "", "7"), std::nullopt, kNow).retry_after.has_value());
  EXPECT_FALSE(Classify(Status(429, "", "soon"), std::nullopt, kNow).retry_after.has_value());
}

TEST(OutcomeTest, ParseRetryAfterForms) {
  EXPECT_EQ(ParseRetryAfter("0", kNow), 0);
  EXPECT_EQ(ParseRetryAfter(" 30 ", kNow), 30'000);
  EXPECT_EQ(ParseRetryAfter("99999999999999999999", kNow), kMaxRetryAfterMs);
  EXPECT_EQ(ParseRetryAfter("Tue, 14 Nov 2023 22:14:20 GMT", kNow), 60'000);     // IMF-fixdate
  EXPECT_EQ(ParseRetryAfter("Tuesday, 14-Nov-23 22:15:20 GMT", kNow), 120'000);  // RFC 850
  EXPECT_EQ(ParseRetryAfter("Tue Nov 14 22:13:50 2023", kNow), 30'000);          // asctime
  EXPECT_EQ(ParseRetryAfter("Tue, 14 Nov 2023 22:00:00 GMT", kNow), 0);          // past: no wait
  // Dates so far ahead that their milliseconds overflow 64 bits wait the longest, not none.
  EXPECT_EQ(ParseRetryAfter("Tue, 14 Nov 999999999 22:14:20 GMT", kNow), kMaxRetryAfterMs);
  EXPECT_EQ(ParseRetryAfter("Tue, 14 Nov 1121093 22:14:20 GMT", kNow), kMaxRetryAfterMs);
  EXPECT_EQ(ParseRetryAfter("Wed, 15 Nov 2023 22:13:20 GMT", kNow), kMaxRetryAfterMs);  // 1 day
  EXPECT_EQ(ParseRetryAfter("Wed, 15 Nov 2023 22:13:19 GMT", kNow), kMaxRetryAfterMs - 1000);
  EXPECT_FALSE(ParseRetryAfter("", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("-5", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("later", kNow).has_value());
}

TEST(OutcomeTest, ExcerptKeepsTheFirstKibibyteOnACharacterBoundary) {
  std::string big(3000, 'x');
  Outcome o = Classify(Status(404, big), std::nullopt, kNow);
  EXPECT_EQ(o.excerpt.size(), kExcerptBytes);
  EXPECT_EQ(o.http_status, 404);
  std::string utf8 = std::string(1023, 'a') + "\xc3\xa9" + "tail";  // é straddles byte 1024
  EXPECT_EQ(Excerpt(utf8), std::string(1023, 'a'));
  EXPECT_EQ(Excerpt("short"), "short");
}

TEST(OutcomeTest, ExcerptShowsBytesThatAreNotTextAsReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(Excerpt(std::string("a\0b", 3)), "a" + fffd + "b");
  EXPECT_EQ(Excerpt("\xff\xfe ok"), fffd + fffd + " ok");
  EXPECT_EQ(Excerpt("\xc3(\xc0\xaf"), fffd + "(" + fffd + fffd);      // cut, overlong
  EXPECT_EQ(Excerpt("\xed\xa0\x80!"), fffd + fffd + fffd + "!");      // a surrogate
  EXPECT_EQ(Excerpt("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
  EXPECT_EQ(Excerpt("é € 𝄞 \x7f"), "é € 𝄞 \x7f");                     // text stays
  // Replacements count against the limit, and the cut stays on a character boundary.
  std::string bad(2000, '\xff');
  std::string shown = Excerpt(bad);
  EXPECT_LE(shown.size(), kExcerptBytes);
  EXPECT_EQ(shown.size() % 3, 0u);
  EXPECT_EQ(shown.substr(0, 3), fffd);
}

TEST(OutcomeTest, ToFailureTellsTheEngineWhatToDo) {
  core::Failure permanent = ToFailure(Classify(Status(404), std::nullopt, kNow));
  EXPECT_EQ(permanent.mode, core::RetryMode::kNever);
  EXPECT_EQ(boost::json::parse(permanent.error),
            boost::json::parse(R"({"type":"webhook.permanent","message":"HTTP 404",
                                   "http_status":404})"));
  core::Failure busy = ToFailure(Classify(Status(503, "", "9"), std::nullopt, kNow));
  EXPECT_EQ(busy.mode, core::RetryMode::kBackoff);
  EXPECT_EQ(busy.retry_after, 9000);
  EXPECT_TRUE(busy.retry_after_is_floor);
  core::Failure timeout = ToFailure(Classify(Failed(TransportError::kTimeout), std::nullopt, kNow));
  EXPECT_EQ(timeout.mode, core::RetryMode::kBackoff);
  EXPECT_FALSE(timeout.retry_after.has_value());
}

}  // namespace
}  // namespace madeira::delivery
