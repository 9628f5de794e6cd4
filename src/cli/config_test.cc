#include "cli/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace madeira::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    // By process id: ctest runs each case in a process of its own, two at a time, and gtest's
    // random_seed() is 0 in all of them unless tests are shuffled (two cases then wrote and
    // removed the same file: NamespaceComesFromFlagEnvOrFile failed in CI).
    path_ = std::filesystem::temp_directory_path() /
            ("madeira_config_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter_++) + ".toml");
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

std::string ErrorOf(std::string_view toml) {
  auto r = ParseConfigText(toml, "test.toml");
  EXPECT_FALSE(r.has_value()) << "expected an error for:\n" << toml;
  return r.has_value() ? "" : r.error().message;
}

TEST(ConfigTest, DefaultsWithoutAnything) {
  auto cfg = LoadServeConfig({}, FakeEnv({}));
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->listen, "127.0.0.1:8080");
  EXPECT_EQ(cfg->data_dir, "./data");
  EXPECT_EQ(cfg->store, "sqlite");
  EXPECT_EQ(cfg->role, "all");
  EXPECT_FALSE(cfg->auth_enabled());
  EXPECT_EQ(cfg->limits.max_payload_bytes, 65536u);
  EXPECT_EQ(cfg->limits.max_depth, 5);
  EXPECT_EQ(cfg->idempotency_ttl, 24LL * 3600 * 1000);
  EXPECT_EQ(cfg->ended_claims_retention, 3600LL * 1000);
  EXPECT_EQ(cfg->webhook_retry.initial, 60'000);
}

TEST(ConfigTest, FullSpecExampleParses) {
  auto cfg = ParseConfigText(R"(
listen = "127.0.0.1:9090"
data_dir = "/tmp/x"
store = "sqlite"
redis_url = "redis://localhost"
database_url = "postgres://localhost/m"
role = "api"
ended_claims_retention = "6h"

[[auth.tokens]]
name = "orders-service"
token = "s3cret"
scopes = ["producer"]

[[auth.tokens]]
name = "ops"
token_sha256 = "ABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCD"
scopes = ["admin", "worker"]

[[sources]]
id = "billing"
secrets = ["k1", "k0"]

[limits]
max_payload_bytes = 1000
max_depth = 7
max_delay = "30d"
idempotency_ttl = "1h"

[retry.default]
fast_retries = 1
fast_retry_concurrency = 3
initial = "10s"
multiplier = 3
max = "5m"
jitter = 0.1

[retry."order.close_timeout"]
initial = "1s"

[retry."queue:orders"]
max = "1m"

[retry.webhook]
initial = "2m"
max = "1h"

[delivery]
allow_private_targets = true
)",
                             "full.toml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message;
  EXPECT_EQ(cfg->listen, "127.0.0.1:9090");
  EXPECT_EQ(cfg->role, "api");
  EXPECT_EQ(cfg->ended_claims_retention, 6LL * 3600 * 1000);
  ASSERT_EQ(cfg->tokens.size(), 2u);
  EXPECT_EQ(cfg->tokens[0].sha256_hex, Sha256Hex("s3cret"));
  EXPECT_EQ(cfg->tokens[0].scopes, std::vector<std::string>{"producer"});
  // A configured hash is kept in lower case so comparison with a computed one is exact.
  EXPECT_EQ(cfg->tokens[1].sha256_hex,
            "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd");
  ASSERT_EQ(cfg->sources.size(), 1u);
  EXPECT_EQ(cfg->sources[0].secrets.size(), 2u);
  EXPECT_EQ(cfg->limits.max_payload_bytes, 1000u);
  EXPECT_EQ(cfg->limits.max_depth, 7);
  EXPECT_EQ(cfg->limits.max_delay, 30LL * 24 * 3600 * 1000);
  EXPECT_EQ(cfg->idempotency_ttl, 3600LL * 1000);
  EXPECT_EQ(cfg->default_retry.fast_retries, 1);
  EXPECT_EQ(cfg->default_retry.fast_retry_concurrency, 3);
  EXPECT_EQ(cfg->default_retry.initial, 10'000);
  EXPECT_DOUBLE_EQ(cfg->default_retry.multiplier, 3.0);
  EXPECT_EQ(cfg->default_retry.max, 300'000);
  EXPECT_DOUBLE_EQ(cfg->default_retry.jitter, 0.1);
  // A per-type table inherits what it does not set from [retry.default].
  ASSERT_TRUE(cfg->retry_by_type.count("order.close_timeout"));
  EXPECT_EQ(cfg->retry_by_type["order.close_timeout"].initial, 1'000);
  EXPECT_EQ(cfg->retry_by_type["order.close_timeout"].fast_retries, 1);
  ASSERT_TRUE(cfg->retry_by_queue.count("orders"));
  EXPECT_EQ(cfg->retry_by_queue["orders"].max, 60'000);
  EXPECT_EQ(cfg->webhook_retry.initial, 120'000);
  EXPECT_TRUE(cfg->allow_private_targets);
}

TEST(ConfigTest, PrecedenceFlagOverEnvOverFileOverDefault) {
  TempFile file("listen = \"127.0.0.1:1111\"\ndata_dir = \"file-dir\"\nstore = \"redis-pg\"\n");
  auto env = FakeEnv({{"MADEIRA_CONFIG", file.path()},
                      {"MADEIRA_LISTEN", "127.0.0.1:2222"},
                      {"MADEIRA_DATA_DIR", "env-dir"}});
  ServeFlags flags;
  flags.listen = "127.0.0.1:3333";
  auto cfg = LoadServeConfig(flags, env);
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message;
  EXPECT_EQ(cfg->listen, "127.0.0.1:3333");  // flag wins
  EXPECT_EQ(cfg->data_dir, "env-dir");       // env beats file
  EXPECT_EQ(cfg->store, "redis-pg");         // file beats default
  EXPECT_EQ(cfg->config_file, file.path());
}

TEST(ConfigTest, ConfigFlagBeatsConfigEnv) {
  TempFile from_env("data_dir = \"from-env\"\n");
  TempFile from_flag("data_dir = \"from-flag\"\n");
  ServeFlags flags;
  flags.config_file = from_flag.path();
  auto cfg = LoadServeConfig(flags, FakeEnv({{"MADEIRA_CONFIG", from_env.path()}}));
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->data_dir, "from-flag");
}

TEST(ConfigTest, EnvironmentCoversEveryKey) {
  auto cfg = LoadServeConfig({}, FakeEnv({{"MADEIRA_STORE", "redis-pg"},
                                          {"MADEIRA_REDIS_URL", "redis://r"},
                                          {"MADEIRA_DATABASE_URL", "postgres://p"}}));
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->store, "redis-pg");
  EXPECT_EQ(cfg->redis_url, "redis://r");
  EXPECT_EQ(cfg->database_url, "postgres://p");
}

// A Redis without appendfsync always loses accepted tasks: only an explicit yes (file or flag)
// lets redis-pg run on one; the flag can only turn it on.
TEST(ConfigTest, VolatileRedisIsRefusedUnlessAllowed) {
  auto plain = LoadServeConfig({}, FakeEnv({}));
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->allow_volatile_redis);
  TempFile file("store = \"redis-pg\"\nallow_volatile_redis = true\n");
  ServeFlags from_file;
  from_file.config_file = file.path();
  auto cfg = LoadServeConfig(from_file, FakeEnv({}));
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message;
  EXPECT_TRUE(cfg->allow_volatile_redis);
  ServeFlags flag;
  flag.allow_volatile_redis = true;
  cfg = LoadServeConfig(flag, FakeEnv({}));
  ASSERT_TRUE(cfg.has_value());
  EXPECT_TRUE(cfg->allow_volatile_redis);
  TempFile wrong("allow_volatile_redis = \"yes\"\n");
  ServeFlags wrong_flags;
  wrong_flags.config_file = wrong.path();
  EXPECT_THAT(LoadServeConfig(wrong_flags, FakeEnv({})).error().message,
              HasSubstr("allow_volatile_redis"));
}

TEST(ConfigTest, NamespaceComesFromFlagEnvOrFile) {
  TempFile file("namespace = \"staging\"\n");
  ServeFlags flags;
  flags.config_file = file.path();
  auto cfg = LoadServeConfig(flags, FakeEnv({}));
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message;
  EXPECT_EQ(cfg->name_space, "staging");
  cfg = LoadServeConfig(flags, FakeEnv({{"MADEIRA_NAMESPACE", "from_env"}}));
  EXPECT_EQ(cfg->name_space, "from_env");
  flags.name_space = "from_flag";
  cfg = LoadServeConfig(flags, FakeEnv({{"MADEIRA_NAMESPACE", "from_env"}}));
  EXPECT_EQ(cfg->name_space, "from_flag");
}

TEST(ConfigTest, MissingConfigFileIsAnError) {
  ServeFlags flags;
  flags.config_file = "/nonexistent/madeira.toml";
  auto cfg = LoadServeConfig(flags, FakeEnv({}));
  ASSERT_FALSE(cfg.has_value());
  EXPECT_THAT(cfg.error().message, HasSubstr("/nonexistent/madeira.toml"));
}

TEST(ConfigTest, UnknownKeysAreNamed) {
  EXPECT_THAT(ErrorOf("lisen = \"x\""), HasSubstr("unknown key 'lisen'"));
  EXPECT_THAT(ErrorOf("[limits]\nmax_dept = 3"), HasSubstr("unknown key 'limits.max_dept'"));
  EXPECT_THAT(ErrorOf("[retry.default]\ninital = \"1s\""),
              HasSubstr("unknown key 'retry.default.inital'"));
  EXPECT_THAT(ErrorOf("[[auth.tokens]]\nname=\"a\"\ntoken=\"t\"\nscopes=[\"admin\"]\nrole=1"),
              HasSubstr("unknown key 'auth.tokens[0].role'"));
  EXPECT_THAT(ErrorOf("[delivery]\nallow_private = true"),
              HasSubstr("unknown key 'delivery.allow_private'"));
  EXPECT_THAT(ErrorOf("[auth]\nkeys = 1"), HasSubstr("unknown key 'auth.keys'"));
  auto r = ParseConfigText("lisen = \"x\"", "t.toml");
  EXPECT_EQ(r.error().code, core::ErrorCode::kUnknownField);
}

TEST(ConfigTest, WrongTypesAreNamed) {
  EXPECT_THAT(ErrorOf("listen = 8080"), HasSubstr("key 'listen' must be a string"));
  EXPECT_THAT(ErrorOf("[limits]\nmax_depth = \"5\""),
              HasSubstr("key 'limits.max_depth' must be an integer"));
  EXPECT_THAT(ErrorOf("[limits]\nmax_delay = 90"), HasSubstr("key 'limits.max_delay'"));
  EXPECT_THAT(ErrorOf("[limits]\nmax_delay = \"ninety days\""),
              HasSubstr("key 'limits.max_delay'"));
  EXPECT_THAT(ErrorOf("[retry.default]\nmultiplier = \"2\""),
              HasSubstr("key 'retry.default.multiplier' must be a number"));
  EXPECT_THAT(ErrorOf("[delivery]\nallow_private_targets = \"yes\""),
              HasSubstr("key 'delivery.allow_private_targets' must be true or false"));
  EXPECT_THAT(ErrorOf("limits = 3"), HasSubstr("key 'limits' must be a table"));
  EXPECT_THAT(ErrorOf("[retry]\ndefault = 3"), HasSubstr("key 'retry.default' must be a table"));
  EXPECT_THAT(ErrorOf("[[sources]]\nid = \"s\"\nsecrets = \"k\""),
              HasSubstr("key 'sources[0].secrets' must be an array of strings"));
  // The line number leads the way to the mistake.
  EXPECT_THAT(ErrorOf("\n\nlisten = 8080"), HasSubstr("test.toml:3:"));
}

TEST(ConfigTest, RangesAreChecked) {
  EXPECT_THAT(ErrorOf("[limits]\nmax_depth = 0"), HasSubstr("limits.max_depth"));
  EXPECT_THAT(ErrorOf("[limits]\nmax_payload_bytes = -1"), HasSubstr("limits.max_payload_bytes"));
  EXPECT_THAT(ErrorOf("[retry.default]\njitter = 1.5"), HasSubstr("retry.default.jitter"));
  EXPECT_THAT(ErrorOf("[retry.default]\nmultiplier = 0.5"), HasSubstr("retry.default.multiplier"));
  EXPECT_THAT(ErrorOf("[retry.default]\nfast_retries = -1"),
              HasSubstr("retry.default.fast_retries"));
  EXPECT_THAT(ErrorOf("[retry.default]\ninitial = \"10m\"\nmax = \"1m\""),
              HasSubstr("retry.default.max"));
  EXPECT_THAT(ErrorOf("[retry.\"Bad Name\"]\ninitial = \"1s\""), HasSubstr("Bad Name"));
  EXPECT_THAT(ErrorOf("ended_claims_retention = \"0s\""), HasSubstr("ended_claims_retention"));
}

TEST(ConfigTest, SyntaxErrorIsOneLineWithLocation) {
  std::string msg = ErrorOf("listen = \n");
  EXPECT_THAT(msg, HasSubstr("test.toml:1"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

// Debian's toml++ 3.3.0 reaches its TOML_UNREACHABLE for code points U+00A1..U+0499 and
// U+FBC6..U+FEFE where it looks for whitespace (upstream issues 190 and 295, fixed in its
// PR 305), found by fuzz/config_fuzz.cc. What this build does there is what a user must see:
// a one-line syntax error, not a crash or a config read wrongly.
TEST(ConfigTest, NonAsciiWhereWhitespaceGoesIsASyntaxError) {
  EXPECT_THAT(ErrorOf("a\xcd\x9a = 1\n"), HasSubstr("test.toml:1"));          // U+035A
  EXPECT_THAT(ErrorOf("listen\xc2\xa7= \"x\"\n"), HasSubstr("test.toml:1"));  // U+00A7
  EXPECT_THAT(ErrorOf("a = 1 \xef\xb9\x90\n"), HasSubstr("test.toml:1"));     // U+FE50
  // After a line-ending backslash in a multi-line string, the string is still read right.
  EXPECT_THAT(ErrorOf("s = \"\"\"\\\n\xc2\xa7\"\"\"\n"), HasSubstr("unknown key 's'"));
}

TEST(ConfigTest, TokenErrorsNeverShowTheToken) {
  const std::string secret = "hunter2-very-secret";
  std::vector<std::string> bad = {
      // both forms at once
      "[[auth.tokens]]\nname=\"a\"\ntoken=\"" + secret + "\"\ntoken_sha256=\"" + secret +
          "\"\nscopes=[\"admin\"]",
      // a malformed hash
      "[[auth.tokens]]\nname=\"a\"\ntoken_sha256=\"" + secret + "\"\nscopes=[\"admin\"]",
      // missing scopes
      "[[auth.tokens]]\nname=\"a\"\ntoken=\"" + secret + "\"",
      // unknown scope
      "[[auth.tokens]]\nname=\"a\"\ntoken=\"" + secret + "\"\nscopes=[\"root\"]",
      // missing name
      "[[auth.tokens]]\ntoken=\"" + secret + "\"\nscopes=[\"admin\"]",
      // wrong type of the token itself
      "[[auth.tokens]]\nname=\"a\"\ntoken=[\"" + secret + "\"]\nscopes=[\"admin\"]",
      // a syntax error on the token line
      "[[auth.tokens]]\nname=\"a\"\ntoken=\"" + secret + "\" x\nscopes=[\"admin\"]",
  };
  for (const std::string& text : bad) {
    std::string msg = ErrorOf(text);
    EXPECT_FALSE(msg.empty());
    EXPECT_THAT(msg, Not(HasSubstr(secret))) << text;
  }
}

TEST(ConfigTest, PlaintextTokenIsHashedAndDropped) {
  auto cfg = ParseConfigText("[[auth.tokens]]\nname=\"w\"\ntoken=\"s3cret\"\nscopes=[\"worker\"]",
                             "t.toml");
  ASSERT_TRUE(cfg.has_value());
  // sha256("s3cret"), computed independently.
  EXPECT_EQ(cfg->tokens[0].sha256_hex,
            "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0");
  EXPECT_TRUE(cfg->auth_enabled());
}

TEST(ConfigTest, InvalidMergedValues) {
  ServeFlags flags;
  flags.store = "mysql";
  EXPECT_THAT(LoadServeConfig(flags, FakeEnv({})).error().message, HasSubstr("store"));
  flags = {};
  flags.role = "boss";
  EXPECT_THAT(LoadServeConfig(flags, FakeEnv({})).error().message, HasSubstr("role"));
  flags = {};
  flags.role = "scheduler";  // an embedded store has one process: nobody else would deliver
  EXPECT_THAT(LoadServeConfig(flags, FakeEnv({})).error().message, HasSubstr("use role all"));
  flags.store = "redis-pg";
  flags.redis_url = "redis://127.0.0.1:6379";
  flags.database_url = "postgresql://127.0.0.1/m";
  auto split = LoadServeConfig(flags, FakeEnv({}));
  ASSERT_TRUE(split) << split.error().message;
  EXPECT_EQ(split->role, "scheduler");
  flags = {};
  flags.listen = "nonsense";
  EXPECT_THAT(LoadServeConfig(flags, FakeEnv({})).error().message, HasSubstr("listen"));
  EXPECT_FALSE(LoadServeConfig({}, FakeEnv({{"MADEIRA_LISTEN", "1.2.3.4:99999"}})).has_value());
}

TEST(ConfigTest, ParseHostPort) {
  auto v4 = ParseHostPort("127.0.0.1:0");
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 0);
  auto v6 = ParseHostPort("[::1]:8080");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8080);
  EXPECT_FALSE(ParseHostPort("::1:8080").has_value());
  EXPECT_FALSE(ParseHostPort("host").has_value());
  EXPECT_FALSE(ParseHostPort(":80").has_value());
  EXPECT_FALSE(ParseHostPort("h:").has_value());
  EXPECT_FALSE(ParseHostPort("h:8x").has_value());
}

TEST(ConfigTest, NoTokensMeansLoopbackOnly) {
  ServeConfig cfg;
  cfg.listen = "127.0.0.1:8080";
  EXPECT_TRUE(CheckListenAllowed(cfg).has_value());
  cfg.listen = "localhost:8080";
  EXPECT_TRUE(CheckListenAllowed(cfg).has_value());
  cfg.listen = "[::1]:8080";
  EXPECT_TRUE(CheckListenAllowed(cfg).has_value());
  cfg.listen = "0.0.0.0:8080";
  auto r = CheckListenAllowed(cfg);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("loopback"));
  cfg.listen = "10.0.0.1:8080";
  EXPECT_FALSE(CheckListenAllowed(cfg).has_value());
  cfg.tokens.push_back({"a", Sha256Hex("t"), {"admin"}});
  cfg.listen = "0.0.0.0:8080";
  EXPECT_TRUE(CheckListenAllowed(cfg).has_value());
}

}  // namespace
}  // namespace madeira::cli
