// The operations console (SPEC §3, GET /ui/): static files from src/api/console, compiled into
// the binary at build time (cmake/embed_files.cmake), served with strict headers. They hold no
// data, so they need no token; every call the page makes goes through the API's own auth.
#pragma once

#include <span>
#include <string_view>

#include "api/http_types.h"

namespace madeira::api {

struct EmbeddedFile {
  std::string_view name;  // the file's name in src/api/console, e.g. "app.js"
  std::string_view bytes;
};

// Every embedded console file, sorted by name. Defined in the generated console_files.cc.
std::span<const EmbeddedFile> ConsoleFiles();

// The Content-Type a console file is served with, from its extension.
std::string_view ConsoleContentType(std::string_view name);

// The answer to GET /ui/<name>: the embedded file with no-cache, CSP and nosniff headers, or
// 404 not_found for a name that is not embedded (so no path reaches the file system).
Response ConsoleFileResponse(std::string_view name);

}  // namespace madeira::api
