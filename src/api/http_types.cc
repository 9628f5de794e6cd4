#include "api/http_types.h"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/json/serialize.hpp>

namespace madeira::api {

std::string_view MadeiraHeader(const Request& req, std::string_view name) {
  for (const auto& [key, value] : req.madeira_headers) {
    if (boost::algorithm::iequals(key, name)) return value;
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
