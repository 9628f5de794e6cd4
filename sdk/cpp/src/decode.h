// Server answers to C++ values; unknown fields are ignored so newer servers stay readable.
#ifndef MADEIRA_SDK_SRC_DECODE_H_
#define MADEIRA_SDK_SRC_DECODE_H_

#include <boost/json.hpp>

#include "madeira/task.h"

namespace madeira::sdk::internal {

std::string Str(const boost::json::object& o, const char* key);
int64_t Int(const boost::json::object& o, const char* key);
std::optional<Time> TimeAt(const boost::json::object& o, const char* key);
TaskInfo DecodeTask(const boost::json::object& o);
std::optional<TaskError> DecodeError(const boost::json::value* v);

}  // namespace madeira::sdk::internal

#endif  // MADEIRA_SDK_SRC_DECODE_H_
