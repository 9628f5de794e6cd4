// `madeira serve`: wires clock, randomness, metrics, the store, the engine and the HTTP server
// together, runs them until SIGTERM/SIGINT, then shuts down in order and flushes.
#pragma once

#include "cli/config.h"

namespace madeira::cli {

// Exit codes of serve.
inline constexpr int kServeOk = 0;
inline constexpr int kServeFailed = 1;  // could not open the store or bind
inline constexpr int kServeBadConfig = 2;

// Runs until a stop signal; returns the process exit code.
int RunServe(const ServeFlags& flags);

}  // namespace madeira::cli
