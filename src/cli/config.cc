#include "cli/config.h"

#include <openssl/evp.h>
#include <toml++/toml.h>

#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "core/time.h"
#include "delivery/address_guard.h"
#include "delivery/standard_webhooks.h"

namespace madeira::cli {
namespace {

using core::ErrorCode;
using core::MakeError;

// Parsing a config file happens once at start-up, so a thrown error is the simplest way out
// of the nested readers; it never escapes ParseConfigText.
struct ConfigError {
  core::Error error;
};

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void Fail(const toml::node* node, ErrorCode code, const std::string& msg,
                         const std::string& key) const {
    std::string where(origin_);
    if (node != nullptr && node->source().begin.line > 0) {
      where += ":" + std::to_string(node->source().begin.line);
    }
    throw ConfigError{MakeError(code, where + ": " + msg, key)};
  }

  void CheckKeys(const toml::table& t, const std::string& path,
                 std::initializer_list<std::string_view> allowed) const {
    for (auto&& [k, v] : t) {
      bool known = false;
      for (std::string_view a : allowed) known = known || a == k.str();
      if (!known) {
        std::string key = Join(path, std::string(k.str()));
        Fail(&v, ErrorCode::kUnknownField, "unknown key '" + key + "'", key);
      }
    }
  }

  std::optional<std::string> String(const toml::table& t, const std::string& path,
                                    std::string_view name) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return std::nullopt;
    if (!n->is_string()) FailKey(n, path, name, "must be a string");
    return n->as_string()->get();
  }

  std::optional<int64_t> Int(const toml::table& t, const std::string& path, std::string_view name,
                             int64_t min, int64_t max) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return std::nullopt;
    if (!n->is_integer()) FailKey(n, path, name, "must be an integer");
    int64_t v = n->as_integer()->get();
    if (v < min || v > max) {
      FailKey(n, path, name,
              "must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    return v;
  }

  // Accepts an integer too: `multiplier = 2` is as natural to write as `2.0`.
  std::optional<double> Double(const toml::table& t, const std::string& path, std::string_view name,
                               double min, double max) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return std::nullopt;
    double v = 0;
    if (n->is_floating_point()) {
      v = n->as_floating_point()->get();
    } else if (n->is_integer()) {
      v = static_cast<double>(n->as_integer()->get());
    } else {
      FailKey(n, path, name, "must be a number");
    }
    if (!(v >= min && v <= max)) {
      std::ostringstream range;
      range << "must be between " << min << " and " << max;
      FailKey(n, path, name, range.str());
    }
    return v;
  }

  std::optional<bool> Bool(const toml::table& t, const std::string& path,
                           std::string_view name) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return std::nullopt;
    if (!n->is_boolean()) FailKey(n, path, name, "must be true or false");
    return n->as_boolean()->get();
  }

  std::optional<core::Millis> Duration(const toml::table& t, const std::string& path,
                                       std::string_view name) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return std::nullopt;
    if (!n->is_string()) FailKey(n, path, name, "must be a duration string such as \"30s\"");
    auto d = core::ParseDuration(n->as_string()->get(), Join(path, std::string(name)));
    if (!d || *d <= 0) {
      FailKey(n, path, name, "must be a positive duration such as \"250ms\", \"30s\" or \"90d\"");
    }
    return *d;
  }

  // `secret` keeps the values out of the message: the key alone says what is wrong.
  std::optional<std::vector<std::string>> StringArray(const toml::table& t, const std::string& path,
                                                      std::string_view name) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return std::nullopt;
    const toml::array* a = n->as_array();
    if (a == nullptr) FailKey(n, path, name, "must be an array of strings");
    std::vector<std::string> out;
    for (const toml::node& e : *a) {
      if (!e.is_string()) FailKey(&e, path, name, "must be an array of strings");
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  const toml::table* Table(const toml::table& t, const std::string& path,
                           std::string_view name) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) return nullptr;
    if (!n->is_table()) FailKey(n, path, name, "must be a table");
    return n->as_table();
  }

  // An array of tables, as written with [[name]].
  std::vector<const toml::table*> TableArray(const toml::table& t, const std::string& path,
                                             std::string_view name) const {
    std::vector<const toml::table*> out;
    const toml::node* n = t.get(name);
    if (n == nullptr) return out;
    const toml::array* a = n->as_array();
    if (a == nullptr)
      FailKey(n, path, name,
              "must be an array of tables ([[" + Join(path, std::string(name)) + "]])");
    for (const toml::node& e : *a) {
      if (!e.is_table()) FailKey(&e, path, name, "must be an array of tables");
      out.push_back(e.as_table());
    }
    return out;
  }

  static std::string Join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }

 private:
  [[noreturn]] void FailKey(const toml::node* n, const std::string& path, std::string_view name,
                            const std::string& what) const {
    std::string key = Join(path, std::string(name));
    Fail(n, ErrorCode::kInvalidField, "key '" + key + "' " + what, key);
  }

  std::string_view origin_;
};

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void ReadTokens(const Reader& r, const toml::table& auth, ServeConfig& cfg) {
  int i = 0;
  for (const toml::table* t : r.TableArray(auth, "auth", "tokens")) {
    const std::string path = "auth.tokens[" + std::to_string(i++) + "]";
    r.CheckKeys(*t, path, {"name", "token", "token_sha256", "scopes"});
    TokenConfig tok;
    auto name = r.String(*t, path, "name");
    if (!name || name->empty()) {
      r.Fail(t, ErrorCode::kMissingField, "key '" + path + ".name' is required", path + ".name");
    }
    tok.name = *name;
    auto plain = r.String(*t, path, "token");
    auto hashed = r.String(*t, path, "token_sha256");
    if (plain.has_value() == hashed.has_value()) {
      r.Fail(t, ErrorCode::kMissingField,
             "token '" + tok.name + "' needs exactly one of 'token' or 'token_sha256'",
             path + ".token");
    }
    if (plain) {
      if (plain->empty()) {
        r.Fail(t, ErrorCode::kInvalidField, "key '" + path + ".token' must not be empty",
               path + ".token");
      }
      tok.sha256_hex = Sha256Hex(*plain);
    } else {
      std::string h = Lower(*hashed);
      if (!IsHex64(h)) {
        r.Fail(t, ErrorCode::kInvalidField,
               "key '" + path + ".token_sha256' must be 64 hex characters", path + ".token_sha256");
      }
      tok.sha256_hex = h;
    }
    auto scopes = r.StringArray(*t, path, "scopes");
    if (!scopes || scopes->empty()) {
      r.Fail(t, ErrorCode::kMissingField, "key '" + path + ".scopes' is required",
             path + ".scopes");
    }
    for (const std::string& s : *scopes) {
      if (s != "producer" && s != "worker" && s != "admin") {
        r.Fail(t, ErrorCode::kInvalidField,
               "key '" + path + ".scopes' has '" + s + "'; expected producer, worker or admin",
               path + ".scopes");
      }
    }
    tok.scopes = *scopes;
    cfg.tokens.push_back(std::move(tok));
  }
}

void ReadSources(const Reader& r, const toml::table& root, ServeConfig& cfg) {
  int i = 0;
  for (const toml::table* t : r.TableArray(root, "", "sources")) {
    const std::string path = "sources[" + std::to_string(i++) + "]";
    r.CheckKeys(*t, path, {"id", "secrets", "allow_target_uri", "target_secrets"});
    SourceConfig src;
    auto id = r.String(*t, path, "id");
    if (!id || id->empty()) {
      r.Fail(t, ErrorCode::kMissingField, "key '" + path + ".id' is required", path + ".id");
    }
    src.id = *id;
    auto secrets = r.StringArray(*t, path, "secrets");
    if (!secrets || secrets->empty()) {
      r.Fail(t, ErrorCode::kMissingField, "key '" + path + ".secrets' is required",
             path + ".secrets");
    }
    src.secrets = *secrets;
    if (auto v = r.Bool(*t, path, "allow_target_uri")) src.allow_target_uri = *v;
    if (auto v = r.StringArray(*t, path, "target_secrets")) src.target_secrets = *v;
    if (src.allow_target_uri && src.target_secrets.empty()) {
      r.Fail(t, ErrorCode::kMissingField,
             "key '" + path + ".target_secrets' is required with allow_target_uri",
             path + ".target_secrets");
    }
    for (const std::string& s : src.target_secrets) {
      if (!delivery::DecodeSecret(s)) {
        r.Fail(t, ErrorCode::kInvalidField,
               "key '" + path + ".target_secrets' holds a value that is not whsec_ + base64",
               path + ".target_secrets");
      }
    }
    cfg.sources.push_back(std::move(src));
  }
}

void ReadLimits(const Reader& r, const toml::table& t, ServeConfig& cfg) {
  r.CheckKeys(t, "limits", {"max_payload_bytes", "max_depth", "max_delay", "idempotency_ttl"});
  // A payload must fit in a request body, which the HTTP layer caps at 1 MiB.
  if (auto v = r.Int(t, "limits", "max_payload_bytes", 2, 1 << 20)) {
    cfg.limits.max_payload_bytes = static_cast<size_t>(*v);
  }
  if (auto v = r.Int(t, "limits", "max_depth", 1, core::kMaxJsonDepth - 1)) {
    cfg.limits.max_depth = static_cast<int>(*v);
  }
  if (auto v = r.Duration(t, "limits", "max_delay")) cfg.limits.max_delay = *v;
  if (auto v = r.Duration(t, "limits", "idempotency_ttl")) cfg.idempotency_ttl = *v;
}

core::RetryPolicy ReadRetryTable(const Reader& r, const toml::table& t, const std::string& path,
                                 core::RetryPolicy p) {
  r.CheckKeys(t, path,
              {"fast_retries", "fast_retry_concurrency", "initial", "multiplier", "max", "jitter"});
  if (auto v = r.Int(t, path, "fast_retries", 0, 100)) p.fast_retries = static_cast<int>(*v);
  if (auto v = r.Int(t, path, "fast_retry_concurrency", 0, 1'000'000)) {
    p.fast_retry_concurrency = static_cast<int>(*v);
  }
  if (auto v = r.Duration(t, path, "initial")) p.initial = *v;
  if (auto v = r.Double(t, path, "multiplier", 1.0, 100.0)) p.multiplier = *v;
  if (auto v = r.Duration(t, path, "max")) p.max = *v;
  if (auto v = r.Double(t, path, "jitter", 0.0, 1.0)) p.jitter = *v;
  if (p.max < p.initial) {
    r.Fail(&t, ErrorCode::kInvalidField, "key '" + path + ".max' must be at least 'initial'",
           path + ".max");
  }
  return p;
}

void ReadRetry(const Reader& r, const toml::table& retry, ServeConfig& cfg) {
  // [retry.default] first: per-type and per-queue tables start from it, so an operator
  // writes only what differs.
  if (const toml::table* d = r.Table(retry, "retry", "default")) {
    cfg.default_retry = ReadRetryTable(r, *d, "retry.default", cfg.default_retry);
  }
  for (auto&& [k, v] : retry) {
    const std::string name(k.str());
    if (name == "default") continue;
    const std::string path = "retry.\"" + name + "\"";
    if (!v.is_table()) {
      r.Fail(&v, ErrorCode::kInvalidField, "key '" + path + "' must be a table", path);
    }
    const toml::table& t = *v.as_table();
    if (name == "webhook") {
      cfg.webhook_retry = ReadRetryTable(r, t, "retry.webhook", cfg.webhook_retry);
    } else if (name.rfind("queue:", 0) == 0 && core::IsValidName(name.substr(6))) {
      cfg.retry_by_queue[name.substr(6)] = ReadRetryTable(r, t, path, cfg.default_retry);
    } else if (core::IsValidName(name)) {
      cfg.retry_by_type[name] = ReadRetryTable(r, t, path, cfg.default_retry);
    } else {
      r.Fail(&v, ErrorCode::kInvalidField,
             "key '" + path + "' is neither a task_type, \"queue:NAME\", default nor webhook",
             path);
    }
  }
}

void ReadRoot(const Reader& r, const toml::table& root, ServeConfig& cfg) {
  r.CheckKeys(root, "",
              {"listen", "data_dir", "store", "redis_url", "database_url", "allow_volatile_redis",
               "namespace", "role", "ended_claims_retention", "auth", "sources", "limits", "retry",
               "delivery"});
  if (auto v = r.String(root, "", "listen")) cfg.listen = *v;
  if (auto v = r.String(root, "", "data_dir")) cfg.data_dir = *v;
  if (auto v = r.String(root, "", "store")) cfg.store = *v;
  if (auto v = r.String(root, "", "redis_url")) cfg.redis_url = *v;
  if (auto v = r.String(root, "", "database_url")) cfg.database_url = *v;
  if (auto v = r.Bool(root, "", "allow_volatile_redis")) cfg.allow_volatile_redis = *v;
  if (auto v = r.String(root, "", "namespace")) cfg.name_space = *v;
  if (auto v = r.String(root, "", "role")) cfg.role = *v;
  if (auto v = r.Duration(root, "", "ended_claims_retention")) cfg.ended_claims_retention = *v;
  if (const toml::table* auth = r.Table(root, "", "auth")) {
    r.CheckKeys(*auth, "auth", {"tokens"});
    ReadTokens(r, *auth, cfg);
  }
  ReadSources(r, root, cfg);
  if (const toml::table* t = r.Table(root, "", "limits")) ReadLimits(r, *t, cfg);
  if (const toml::table* t = r.Table(root, "", "retry")) ReadRetry(r, *t, cfg);
  if (const toml::table* t = r.Table(root, "", "delivery")) {
    r.CheckKeys(*t, "delivery",
                {"allow_private_targets", "allow_cidrs", "disable_after", "breaker_failures",
                 "breaker_cool_down", "max_retries"});
    if (auto v = r.Bool(*t, "delivery", "allow_private_targets")) cfg.allow_private_targets = *v;
    if (auto v = r.StringArray(*t, "delivery", "allow_cidrs")) {
      for (const std::string& cidr : *v) {
        if (!delivery::ParseCidr(cidr)) {
          r.Fail(t, ErrorCode::kInvalidField,
                 "key 'delivery.allow_cidrs' holds '" + cidr + "', which is not a CIDR",
                 "delivery.allow_cidrs");
        }
      }
      cfg.allow_cidrs = *v;
    }
    if (auto v = r.Duration(*t, "delivery", "disable_after")) cfg.disable_after = *v;
    if (auto v = r.Int(*t, "delivery", "breaker_failures", 1, 1000)) {
      cfg.breaker_failures = static_cast<int>(*v);
    }
    if (auto v = r.Duration(*t, "delivery", "breaker_cool_down")) cfg.breaker_cool_down = *v;
    if (auto v = r.Int(*t, "delivery", "max_retries", 0, 100)) {
      cfg.webhook_max_retries = static_cast<int>(*v);
    }
  }
}

core::Result<void> Validate(const ServeConfig& cfg) {
  if (auto hp = ParseHostPort(cfg.listen); !hp) return hp.error();
  if (cfg.store != "sqlite" && cfg.store != "redis-pg") {
    return MakeError(ErrorCode::kInvalidField,
                     "store must be sqlite or redis-pg, not '" + cfg.store + "'", "store");
  }
  if (cfg.role != "all" && cfg.role != "api" && cfg.role != "scheduler" &&
      cfg.role != "deliverer") {
    return MakeError(ErrorCode::kInvalidField,
                     "role must be all, api, scheduler or deliverer, not '" + cfg.role + "'",
                     "role");
  }
  if (cfg.role != "all" && cfg.store != "redis-pg") {
    // One process owns an embedded store: a role would leave its other duties undone.
    return MakeError(ErrorCode::kInvalidField,
                     "role " + cfg.role +
                         " splits duties between processes sharing a redis-pg "
                         "store; with " +
                         cfg.store + " use role all",
                     "role");
  }
  if (cfg.data_dir.empty()) {
    return MakeError(ErrorCode::kInvalidField, "data_dir must not be empty", "data_dir");
  }
  return {};
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

core::Result<ServeConfig> ParseConfigText(std::string_view text, std::string_view origin) {
  ServeConfig cfg;
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    // toml++ reports syntax errors without echoing the offending line's content.
    return MakeError(ErrorCode::kInvalidField, std::string(origin) + ":" +
                                                   std::to_string(e.source().begin.line) + ": " +
                                                   std::string(e.description()));
  }
  try {
    ReadRoot(Reader(origin), root, cfg);
  } catch (const ConfigError& e) {
    return e.error;
  }
  return cfg;
}

core::Result<ServeConfig> LoadServeConfig(const ServeFlags& flags, const EnvLookup& env) {
  ServeConfig cfg;
  std::optional<std::string> file = flags.config_file ? flags.config_file : env("MADEIRA_CONFIG");
  if (file) {
    std::ifstream in(*file, std::ios::binary);
    if (!in) {
      return MakeError(ErrorCode::kInvalidField, "cannot read config file '" + *file + "'",
                       "config");
    }
    std::stringstream buf;
    buf << in.rdbuf();
    auto parsed = ParseConfigText(buf.str(), *file);
    if (!parsed) return parsed.error();
    cfg = std::move(*parsed);
    cfg.config_file = *file;
  }
  auto apply = [&](std::string& field, const char* env_name, const std::optional<std::string>& f) {
    if (auto v = env(env_name)) field = *v;
    if (f) field = *f;
  };
  apply(cfg.listen, "MADEIRA_LISTEN", flags.listen);
  apply(cfg.data_dir, "MADEIRA_DATA_DIR", flags.data_dir);
  apply(cfg.store, "MADEIRA_STORE", flags.store);
  apply(cfg.redis_url, "MADEIRA_REDIS_URL", flags.redis_url);
  apply(cfg.database_url, "MADEIRA_DATABASE_URL", flags.database_url);
  if (flags.role) cfg.role = *flags.role;
  if (flags.allow_volatile_redis) cfg.allow_volatile_redis = true;
  apply(cfg.name_space, "MADEIRA_NAMESPACE", flags.name_space);
  if (auto ok = Validate(cfg); !ok) return ok.error();
  return cfg;
}

core::Result<HostPort> ParseHostPort(std::string_view text) {
  auto bad = [&] {
    return MakeError(
        ErrorCode::kInvalidField,
        "listen must be HOST:PORT (e.g. 127.0.0.1:8080), not '" + std::string(text) + "'",
        "listen");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad();  // a bare IPv6 address is ambiguous; it needs brackets
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) return bad();
  return HostPort{std::string(host), static_cast<uint16_t>(value)};
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(std::string(host), ec);
  return !ec && addr.is_loopback();
}

core::Result<void> CheckListenAllowed(const ServeConfig& cfg) {
  if (cfg.auth_enabled()) return {};
  auto hp = ParseHostPort(cfg.listen);
  if (!hp) return hp.error();
  if (!IsLoopbackHost(hp->host)) {
    return MakeError(ErrorCode::kInvalidField,
                     "no [[auth.tokens]] configured: auth is off, so serve listens only on a "
                     "loopback address (e.g. 127.0.0.1), not '" +
                         cfg.listen + "'",
                     "listen");
  }
  return {};
}

}  // namespace madeira::cli
