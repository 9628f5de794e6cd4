#include "rfc3339.h"

#include <cstdio>

namespace madeira::sdk::internal {
namespace {

// Reads exactly n digits at s[pos]; -1 when they are not all digits.
int Digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<std::string> FormatTime(Time t) {
  using namespace std::chrono;
  auto day = floor<days>(t);
  year_month_day ymd(day);
  int y = static_cast<int>(ymd.year());
  if (y < 0 || y > 9999) return std::nullopt;
  hh_mm_ss hms(t - day);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y,
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()),
                static_cast<int>(hms.subseconds().count()));
  return std::string(buf);
}

std::optional<Time> ParseTime(std::string_view s) {
  using namespace std::chrono;
  int y = Digits(s, 0, 4), mo = Digits(s, 5, 2), d = Digits(s, 8, 2);
  int h = Digits(s, 11, 2), mi = Digits(s, 14, 2), sec = Digits(s, 17, 2);
  if (s.size() < 20 || y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || sec < 0 || s[4] != '-' ||
      s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  year_month_day ymd{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  size_t pos = 19;
  int millis = 0;
  if (s[pos] == '.') {
    size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (pos - start < 3) millis = millis * 10 + (s[pos] - '0');
      ++pos;
    }
    if (pos == start) return std::nullopt;
    for (size_t n = pos - start; n < 3; ++n) millis *= 10;
  }
  if (pos >= s.size()) return std::nullopt;  // no zone: a naive time
  minutes offset{0};
  if ((s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
  } else if ((s[pos] == '+' || s[pos] == '-') && pos + 6 == s.size() && s[pos + 3] == ':') {
    int oh = Digits(s, pos + 1, 2), om = Digits(s, pos + 4, 2);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return std::nullopt;
    offset = hours(oh) + minutes(om);
    if (s[pos] == '-') offset = -offset;
  } else {
    return std::nullopt;
  }
  return sys_days(ymd) + hours(h) + minutes(mi) + seconds(sec) + milliseconds(millis) - offset;
}

}  // namespace madeira::sdk::internal
