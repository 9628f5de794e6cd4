#include "api/http_types.h"

#include <boost/json/serialize.hpp>

namespace madeira::api {

Response JsonResponse(unsigned status, const boost::json::value& body) {
  Response r;
  r.status = status;
  r.body = boost::json::serialize(body);
  return r;
}

}  // namespace madeira::api
