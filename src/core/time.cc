#include "core/time.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>

namespace madeira::core {

namespace {

constexpr Millis kMsPerSecond = 1000;
constexpr Millis kMsPerMinute = 60 * kMsPerSecond;
constexpr Millis kMsPerHour = 60 * kMsPerMinute;
constexpr Millis kMsPerDay = 24 * kMsPerHour;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `width` digits at text[pos]; false when any is not a digit.
bool ReadFixed(std::string_view text, size_t pos, size_t width, int& out) {
  if (pos + width > text.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (!IsDigit(text[i])) return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

Error TimeError(std::string_view field, std::string_view why) {
  return MakeError(ErrorCode::kInvalidScheduleTime,
                   std::string(field) + " must be RFC 3339 with a zone offset: " + std::string(why),
                   std::string(field));
}

}  // namespace

Result<Millis> ParseRfc3339(std::string_view text, std::string_view field) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  int year, month, day, hour, minute, second;
  if (!ReadFixed(text, 0, 4, year) || text.size() < 19 || text[4] != '-' ||
      !ReadFixed(text, 5, 2, month) || text[7] != '-' || !ReadFixed(text, 8, 2, day)) {
    return TimeError(field, "bad date");
  }
  if (text[10] != 'T' && text[10] != 't') return TimeError(field, "expected 'T' after the date");
  if (!ReadFixed(text, 11, 2, hour) || text[13] != ':' || !ReadFixed(text, 14, 2, minute) ||
      text[16] != ':' || !ReadFixed(text, 17, 2, second)) {
    return TimeError(field, "bad time of day");
  }
  size_t pos = 19;
  Millis fraction_ms = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const size_t start = pos;
    Millis scale = 100;
    for (; pos < text.size() && IsDigit(text[pos]); ++pos) {
      fraction_ms += (text[pos] - '0') * scale;  // digits past the third are truncated
      scale /= 10;
    }
    if (pos == start) return TimeError(field, "empty fraction");
  }
  if (pos >= text.size()) return TimeError(field, "missing zone offset");
  Millis offset_ms = 0;
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    int off_hour, off_minute;
    if (!ReadFixed(text, pos + 1, 2, off_hour) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !ReadFixed(text, pos + 4, 2, off_minute)) {
      return TimeError(field, "bad zone offset");
    }
    if (off_hour > 23 || off_minute > 59) return TimeError(field, "zone offset out of range");
    offset_ms = off_hour * kMsPerHour + off_minute * kMsPerMinute;
    if (text[pos] == '-') offset_ms = -offset_ms;
    pos += 6;
  } else {
    return TimeError(field, "missing zone offset");
  }
  if (pos != text.size()) return TimeError(field, "trailing characters");

  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok()) return TimeError(field, "no such date");
  // Leap second 60 is rejected: Unix time has no slot for it, and folding it into :59 or the
  // next minute would silently move a schedule; producers practically never send it.
  if (hour > 23 || minute > 59 || second > 59) return TimeError(field, "time of day out of range");

  const Millis days = std::chrono::sys_days{date}.time_since_epoch().count();
  return days * kMsPerDay + hour * kMsPerHour + minute * kMsPerMinute + second * kMsPerSecond +
         fraction_ms - offset_ms;
}

std::string FormatRfc3339(Millis t) {
  using namespace std::chrono;
  const sys_time<milliseconds> tp{milliseconds{t}};
  const sys_days day_point = floor<days>(tp);
  const year_month_day date{day_point};
  const hh_mm_ss<milliseconds> tod{tp - day_point};
  const int year = static_cast<int>(date.year());
  if (year >= 0 && year <= 9999) {
    // Digit by digit: snprintf showed in the lease answer's profile (two times per lease).
    std::string out = "0000-00-00T00:00:00.000Z";
    auto put = [&out](size_t at, int digits, int64_t v) {
      for (int i = digits - 1; i >= 0; --i, v /= 10) out[at + i] = static_cast<char>('0' + v % 10);
    };
    put(0, 4, year);
    put(5, 2, static_cast<unsigned>(date.month()));
    put(8, 2, static_cast<unsigned>(date.day()));
    put(11, 2, tod.hours().count());
    put(14, 2, tod.minutes().count());
    put(17, 2, tod.seconds().count());
    put(20, 3, tod.subseconds().count());
    return out;
  }
  char buf[64];
  const int n = std::snprintf(
      buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", year,
      static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
      static_cast<int>(tod.hours().count()), static_cast<int>(tod.minutes().count()),
      static_cast<int>(tod.seconds().count()), static_cast<int>(tod.subseconds().count()));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

Result<Millis> ParseDuration(std::string_view text, std::string_view field) {
  auto fail = [&](std::string_view why) {
    return MakeError(ErrorCode::kInvalidField,
                     std::string(field) + " must be a positive integer with a unit " +
                         "(ms, s, m, h, d), e.g. \"30s\": " + std::string(why),
                     std::string(field));
  };
  size_t digits = 0;
  while (digits < text.size() && IsDigit(text[digits])) ++digits;
  if (digits == 0) return fail("no number");
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) return fail("number out of range");
  if (value <= 0) return fail("not positive");

  const std::string_view unit = text.substr(digits);
  Millis factor;
  if (unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = kMsPerSecond;
  } else if (unit == "m") {
    factor = kMsPerMinute;
  } else if (unit == "h") {
    factor = kMsPerHour;
  } else if (unit == "d") {
    factor = kMsPerDay;
  } else {
    return fail("unknown unit");
  }
  if (value > std::numeric_limits<Millis>::max() / factor) return fail("too long");
  return value * factor;
}

}  // namespace madeira::core
