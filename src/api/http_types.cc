#include "api/http_types.h"

#include <boost/json/serialize.hpp>

namespace madeira::api {

std::string_view MadeiraHeader(const Request& req, std::string_view lower_case_name) {
  for (const auto& [key, value] : req.madeira_headers) {
    if (key == lower_case_name) return value;  // stored lower-case by the HTTP layer
  }
  return {};
}

Response JsonResponse(unsigned status, const boost::json::value& body) {
  Response r;
  r.status = status;
  r.body = boost::json::serialize(body);
  return r;
}

}  // namespace madeira::api
