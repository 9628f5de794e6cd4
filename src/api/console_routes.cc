// The console's routes: GET /ui redirects to /ui/, which is index.html; GET /ui/<file> is one
// embedded file. Public, like /metrics: the files hold no data.
#include "api/console.h"
#include "api/error_table.h"
#include "api/handlers.h"

namespace madeira::api {

namespace {

constexpr std::string_view kIndex = "index.html";

// Scripts, styles and fetches from this origin only: no inline script or style, no framing.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; "
    "object-src 'none'";

}  // namespace

std::string_view ConsoleContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

Response ConsoleFileResponse(std::string_view name) {
  for (const EmbeddedFile& file : ConsoleFiles()) {
    if (file.name != name) continue;
    Response r;
    r.content_type = ConsoleContentType(name);
    r.body = file.bytes;
    r.headers = {{"Cache-Control", "no-cache"},
                 {"Content-Security-Policy", std::string(kContentSecurityPolicy)},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Referrer-Policy", "no-referrer"}};
    return r;
  }
  return ErrorResponse(core::MakeError(core::ErrorCode::kNotFound, "no such console file"));
}

Awaitable HandleConsoleRedirect(RouteContext& ctx, const Request& req) {
  Response r;
  r.status = 301;
  r.content_type = "text/plain; charset=utf-8";
  r.headers.emplace_back("Location", "/ui/");
  co_return r;
}

Awaitable HandleConsoleIndex(RouteContext& ctx, const Request& req) {
  co_return ConsoleFileResponse(kIndex);
}

Awaitable HandleConsoleFile(RouteContext& ctx, const Request& req) {
  co_return ConsoleFileResponse(req.params[0]);
}

}  // namespace madeira::api
