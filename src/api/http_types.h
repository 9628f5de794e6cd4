// The request and response as the routes see them: plain values, no Beast types, so route
// files and tests stay cheap to compile.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <utility>
#include <vector>

namespace madeira::api {

using QueryParams = std::vector<std::pair<std::string, std::string>>;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Who sent a request, once its token is checked.
struct Caller {
  std::string name;      // the token's name ([[auth.tokens]] name); "" with auth off
  bool sees_all = true;  // false for a token without the admin scope: it reads and cancels
                         // only the tasks submitted under its name (SPEC §3 "read own")
};

struct Request {
  std::string method;         // "GET", "POST", ...
  std::string target;         // raw request target, e.g. "/v1/tasks?limit=5"
  std::string authorization;  // the Authorization header, empty if absent
  Headers madeira_headers;    // the X-Madeira-* headers (event signatures), names lower-case
  std::string body;
  std::vector<std::string> params;  // {id} segments of the matched pattern, in order
  QueryParams query;                // decoded query parameters, in order
  Caller caller;                    // set by the dispatcher once the token is checked
};

struct Response {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  Headers headers;         // extra headers: Allow, Retry-After
  std::string log_detail;  // why a 5xx happened; logged, never sent
};

// The value of an X-Madeira-* header, asked for by its lower-case name; empty when absent.
std::string_view MadeiraHeader(const Request& req, std::string_view lower_case_name);

// A JSON response with the value serialised compactly.
Response JsonResponse(unsigned status, const boost::json::value& body);

}  // namespace madeira::api
