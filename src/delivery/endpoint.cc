#include "delivery/endpoint.h"

#include <fnmatch.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <cmath>

#include "core/envelope.h"
#include "core/field_reader.h"
#include "core/time.h"
#include "delivery/payload_template.h"
#include "delivery/standard_webhooks.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;
using core::ErrorCode;
using core::FieldReader;
using core::MakeError;
using core::Presence;

constexpr size_t kMaxGlobs = 100;
constexpr size_t kMaxHeaders = 50;
constexpr size_t kMaxUrlBytes = 2048;
constexpr double kMaxPerSecond = 100'000;

// Headers the deliverer sets itself; an endpoint cannot replace them.
bool IsReservedHeader(std::string_view name) {
  static constexpr std::string_view kReserved[] = {
      "webhook-id", "webhook-timestamp", "webhook-signature", "content-type",      "content-length",
      "host",       "user-agent",        "x-trace-id",        "transfer-encoding", "connection",
      "expect"};
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(std::begin(kReserved), std::end(kReserved), lower) != std::end(kReserved);
}

// RFC 9110 token characters.
bool IsHeaderName(std::string_view s) {
  if (s.empty() || s.size() > 100) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

bool IsHeaderValue(std::string_view s) {
  return s.size() <= 4096 && std::none_of(s.begin(), s.end(), [](unsigned char c) {
           return c == '\r' || c == '\n' || c == '\0';
         });
}

bool IsHttpUrl(std::string_view text) {
  if (text.size() > kMaxUrlBytes) return false;
  auto url = boost::urls::parse_absolute_uri(text);
  if (!url) return false;
  if (url->scheme() != "http" && url->scheme() != "https") return false;
  return url->has_authority() && !url->encoded_host().empty() && !url->has_userinfo();
}

std::vector<std::string> Strings(FieldReader& r, std::string_view name, const json::array* a,
                                 size_t max_items) {
  std::vector<std::string> out;
  if (a == nullptr) return out;
  if (a->size() > max_items) {
    r.Fail(ErrorCode::kInvalidField, "at most " + std::to_string(max_items) + " items", name);
    return out;
  }
  for (const json::value& v : *a) {
    if (!v.is_string() || v.get_string().empty() || v.get_string().size() > 200) {
      r.Fail(ErrorCode::kInvalidField, "items must be non-empty strings of at most 200 chars",
             name);
      return out;
    }
    out.emplace_back(v.get_string());
  }
  return out;
}

std::optional<double> AsNumber(const json::value& v) {
  if (v.is_double()) return v.get_double();
  if (auto i = core::AsInt(v)) return static_cast<double>(*i);
  return std::nullopt;
}

void ReadRateLimit(FieldReader& r, const json::object& o, Endpoint& ep) {
  FieldReader rr(o, "rate_limit.");
  rr.AllowOnly({"per_second", "burst"});
  const json::value* ps = rr.Value("per_second", Presence::kRequired);
  RateLimit rate;
  if (ps != nullptr) {
    auto n = AsNumber(*ps);
    if (!n || !(*n > 0) || *n > kMaxPerSecond) {
      rr.Fail(ErrorCode::kInvalidField, "must be a number above 0 and at most 100000",
              "per_second");
    } else {
      rate.per_second = *n;
    }
  }
  auto burst = rr.Int("burst", 1, 100'000, Presence::kOptional);
  rate.burst =
      burst ? static_cast<int>(*burst) : std::max(1, static_cast<int>(std::ceil(rate.per_second)));
  if (!rr.ok()) return r.Fail(rr.error()->code, rr.error()->message, rr.error()->field);
  ep.rate_limit = rate;
}

void ReadSuccess(FieldReader& r, const json::object& o, Endpoint& ep) {
  FieldReader sr(o, "success.");
  sr.AllowOnly({"json_pointer", "equals"});
  auto pointer = sr.String("json_pointer", Presence::kRequired);
  const json::value* equals = sr.Value("equals", Presence::kRequired);
  if (pointer && !pointer->empty() && pointer->front() != '/') {
    sr.Fail(ErrorCode::kInvalidField, "must be a JSON pointer such as /success", "json_pointer");
  }
  if (!sr.ok()) return r.Fail(sr.error()->code, sr.error()->message, sr.error()->field);
  ep.success = SuccessCheck{*pointer, *equals};
}

void ReadRetry(FieldReader& r, const json::object& o, Endpoint& ep) {
  FieldReader rr(o, "retry.");
  rr.AllowOnly({"max_retries", "fast_retries", "initial_ms", "multiplier", "max_ms", "jitter"});
  EndpointRetry retry = ep.retry.value_or(EndpointRetry{});
  if (auto v = rr.Int("max_retries", 0, 100, Presence::kOptional)) {
    retry.max_retries = static_cast<int>(*v);
  }
  if (auto v = rr.Int("fast_retries", 0, 10, Presence::kOptional)) {
    retry.policy.fast_retries = static_cast<int>(*v);
  }
  if (auto v = rr.Int("initial_ms", 1, 86'400'000, Presence::kOptional)) retry.policy.initial = *v;
  if (auto v = rr.Int("max_ms", 1, 7 * 86'400'000LL, Presence::kOptional)) retry.policy.max = *v;
  if (const json::value* m = rr.Value("multiplier", Presence::kOptional)) {
    auto n = AsNumber(*m);
    if (!n || *n < 1 || *n > 10) {
      rr.Fail(ErrorCode::kInvalidField, "must be a number from 1 to 10", "multiplier");
    } else {
      retry.policy.multiplier = *n;
    }
  }
  if (const json::value* j = rr.Value("jitter", Presence::kOptional)) {
    auto n = AsNumber(*j);
    if (!n || *n < 0 || *n > 1) {
      rr.Fail(ErrorCode::kInvalidField, "must be a number from 0 to 1", "jitter");
    } else {
      retry.policy.jitter = *n;
    }
  }
  if (retry.policy.max < retry.policy.initial) {
    rr.Fail(ErrorCode::kInvalidField, "must not be below initial_ms", "max_ms");
  }
  if (!rr.ok()) return r.Fail(rr.error()->code, rr.error()->message, rr.error()->field);
  ep.retry = retry;
}

void ReadHeaders(FieldReader& r, const json::object& o, Endpoint& ep) {
  if (o.size() > kMaxHeaders) {
    return r.Fail(ErrorCode::kInvalidField, "at most 50 headers", "headers");
  }
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& kv : o) {
    const std::string name(kv.key());
    if (!IsHeaderName(name)) {
      return r.Fail(ErrorCode::kInvalidField, "not a valid header name", "headers." + name);
    }
    if (IsReservedHeader(name)) {
      return r.Fail(ErrorCode::kInvalidField, "set by Madeira; cannot be replaced",
                    "headers." + name);
    }
    if (!kv.value().is_string() || !IsHeaderValue(kv.value().get_string())) {
      return r.Fail(ErrorCode::kInvalidField, "must be a string without line breaks",
                    "headers." + name);
    }
    headers.emplace_back(name, std::string(kv.value().get_string()));
  }
  ep.headers = std::move(headers);
}

}  // namespace

core::Result<Endpoint> DecodeEndpoint(const json::value& body, Endpoint base, bool is_create,
                                      core::Random& secret_random) {
  const json::object* o = body.if_object();
  if (o == nullptr) return MakeError(ErrorCode::kInvalidJson, "the body must be a JSON object");
  FieldReader r(*o);
  r.AllowOnly({"url", "secrets", "event_types", "sources", "rate_limit", "max_in_flight",
               "timeout_ms", "headers", "success", "template", "retry", "enabled"});
  Endpoint ep = std::move(base);
  const Presence required = is_create ? Presence::kRequired : Presence::kOptional;

  if (auto url = r.String("url", required)) {
    if (!IsHttpUrl(*url)) {
      r.Fail(ErrorCode::kInvalidField, "must be an absolute http:// or https:// URL", "url");
    }
    ep.url = *url;
  }
  if (const json::array* a = r.Array("secrets", Presence::kOptional)) {
    auto secrets = Strings(r, "secrets", a, kMaxEndpointSecrets);
    if (r.ok() && secrets.empty()) r.Fail(ErrorCode::kInvalidField, "at least one", "secrets");
    for (const std::string& s : secrets) {
      if (!r.ok()) break;
      if (!DecodeSecret(s)) {
        r.Fail(ErrorCode::kInvalidField, "each secret is whsec_ followed by base64", "secrets");
      }
    }
    ep.secrets = std::move(secrets);
  }
  if (const json::array* a = r.Array("event_types", required)) {
    ep.event_types = Strings(r, "event_types", a, kMaxGlobs);
    if (r.ok() && ep.event_types.empty()) {
      r.Fail(ErrorCode::kInvalidField, "at least one event type or glob", "event_types");
    }
  }
  if (const json::array* a = r.Array("sources", Presence::kOptional)) {
    ep.sources = Strings(r, "sources", a, kMaxGlobs);
  } else if (o->contains("sources")) {
    ep.sources.clear();  // null: every source
  }
  if (const json::object* rl = r.Object("rate_limit", Presence::kOptional)) {
    ReadRateLimit(r, *rl, ep);
  } else if (o->contains("rate_limit")) {
    ep.rate_limit.reset();
  }
  if (auto v = r.Int("max_in_flight", 1, 10'000, Presence::kOptional)) {
    ep.max_in_flight = static_cast<int>(*v);
  }
  if (auto v = r.Int("timeout_ms", 1, kMaxEndpointTimeoutMs, Presence::kOptional)) {
    ep.timeout_ms = *v;
  }
  if (const json::object* h = r.Object("headers", Presence::kOptional)) ReadHeaders(r, *h, ep);
  if (const json::object* s = r.Object("success", Presence::kOptional)) {
    ReadSuccess(r, *s, ep);
  } else if (o->contains("success")) {
    ep.success.reset();
  }
  if (const json::value* t = r.Value("template", Presence::kOptional)) {
    if (auto valid = ValidateTemplate(*t); !valid) {
      r.Fail(ErrorCode::kInvalidField, valid.error().message, "template");
    }
    ep.body_template = *t;
  } else if (o->contains("template")) {
    ep.body_template.reset();
  }
  if (const json::object* rt = r.Object("retry", Presence::kOptional)) {
    ReadRetry(r, *rt, ep);
  } else if (o->contains("retry")) {
    ep.retry.reset();
  }
  if (const json::value* en = r.Value("enabled", Presence::kOptional)) {
    if (!en->is_bool()) {
      r.Fail(ErrorCode::kInvalidField, "must be true or false", "enabled");
    } else {
      ep.enabled = en->get_bool();
      if (ep.enabled) {  // enabled by hand: the server's reason and failure streak are over
        ep.disabled_reason.clear();
        ep.failing_since.reset();
      }
    }
  }
  if (!r.ok()) return *r.error();
  if (ep.secrets.empty()) ep.secrets.push_back(GenerateSecret(secret_random));
  return ep;
}

json::object EncodeEndpoint(const Endpoint& ep, SecretView view) {
  json::object o;
  o["id"] = ep.id;
  o["url"] = ep.url;
  json::array secrets;
  for (const std::string& s : ep.secrets) {
    secrets.emplace_back(view == SecretView::kWhole ? s : SecretPrefix(s));
  }
  o["secrets"] = std::move(secrets);
  o["event_types"] = json::array(ep.event_types.begin(), ep.event_types.end());
  o["sources"] = json::array(ep.sources.begin(), ep.sources.end());
  if (ep.rate_limit) {
    o["rate_limit"] = {{"per_second", ep.rate_limit->per_second}, {"burst", ep.rate_limit->burst}};
  } else {
    o["rate_limit"] = nullptr;
  }
  o["max_in_flight"] = ep.max_in_flight;
  o["timeout_ms"] = ep.timeout_ms;
  json::object headers;
  for (const auto& [k, v] : ep.headers) headers[k] = v;
  o["headers"] = std::move(headers);
  if (ep.success) {
    o["success"] = {{"json_pointer", ep.success->json_pointer}, {"equals", ep.success->equals}};
  } else {
    o["success"] = nullptr;
  }
  o["template"] = ep.body_template ? *ep.body_template : json::value(nullptr);
  if (ep.retry) {
    const core::RetryPolicy& p = ep.retry->policy;
    o["retry"] = {{"max_retries", ep.retry->max_retries},
                  {"fast_retries", p.fast_retries},
                  {"initial_ms", p.initial},
                  {"multiplier", p.multiplier},
                  {"max_ms", p.max},
                  {"jitter", p.jitter}};
  } else {
    o["retry"] = nullptr;
  }
  o["enabled"] = ep.enabled;
  o["disabled_reason"] =
      ep.disabled_reason.empty() ? json::value(nullptr) : json::value(ep.disabled_reason);
  o["failing_since"] =
      ep.failing_since ? json::value(core::FormatRfc3339(*ep.failing_since)) : json::value();
  o["created_at"] = core::FormatRfc3339(ep.created_at);
  o["updated_at"] = core::FormatRfc3339(ep.updated_at);
  return o;
}

store::EndpointRecord ToRecord(const Endpoint& ep) {
  json::object o = EncodeEndpoint(ep, SecretView::kWhole);
  // Times as integers in the store: exact, and no parsing on load.
  o["failing_since"] = ep.failing_since ? json::value(*ep.failing_since) : json::value();
  o.erase("created_at");
  o.erase("updated_at");
  return store::EndpointRecord{ep.id, json::serialize(o), ep.created_at, ep.updated_at};
}

core::Result<Endpoint> FromRecord(const store::EndpointRecord& record) {
  auto parsed = core::ParseJson(record.config);
  if (!parsed || !parsed->is_object()) {
    return MakeError(ErrorCode::kInternal,
                     "stored endpoint " + record.endpoint_id + " is not a JSON object");
  }
  json::object o = parsed->as_object();
  Endpoint base;
  base.id = record.endpoint_id;
  base.created_at = record.created_at;
  base.updated_at = record.updated_at;
  if (const json::value* r = o.if_contains("disabled_reason"); r && r->is_string()) {
    base.disabled_reason = std::string(r->get_string());
  }
  if (const json::value* f = o.if_contains("failing_since")) {
    if (auto ms = core::AsInt(*f)) base.failing_since = *ms;
  }
  const bool enabled = o.contains("enabled") && o["enabled"].is_bool() && o["enabled"].get_bool();
  for (const char* server_kept : {"id", "disabled_reason", "failing_since", "enabled"}) {
    o.erase(server_kept);
  }
  // The stored form is the API form, so the API's decoder reads it back.
  core::SequenceRandom unused({0});
  auto ep = DecodeEndpoint(o, std::move(base), /*is_create=*/true, unused);
  if (!ep) {
    return MakeError(ErrorCode::kInternal, "stored endpoint " + record.endpoint_id +
                                               " no longer decodes: " + ep.error().message);
  }
  ep->enabled = enabled;
  return ep;
}

bool Subscribes(const Endpoint& ep, std::string_view event_type, std::string_view source) {
  if (!ep.sources.empty() &&
      std::find(ep.sources.begin(), ep.sources.end(), source) == ep.sources.end()) {
    return false;
  }
  const std::string type(event_type);
  return std::any_of(ep.event_types.begin(), ep.event_types.end(), [&](const std::string& glob) {
    return fnmatch(glob.c_str(), type.c_str(), FNM_NOESCAPE) == 0;  // POSIX glob, from libc
  });
}

std::string SecretPrefix(std::string_view secret) {
  const size_t keep = std::min<size_t>(secret.size(), kSecretPrefix.size() + 4);
  return std::string(secret.substr(0, keep)) + "…";
}

}  // namespace madeira::delivery
