#!/bin/sh
# Builds and runs the C++ SDK's tests (validation and signature vectors, the conformance
# scenario against a real server). Needs cmake, ninja, g++, libcurl, Boost.JSON, OpenSSL and
# GoogleTest from the system; MADEIRA_BIN may point at the server binary to test against.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
cmake -S . -B build-sdkcpp -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-sdkcpp -j2 --target sdk_cpp_test madeira
exec ./build-sdkcpp/sdk_cpp_test
