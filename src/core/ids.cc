#include "core/ids.h"

#include <array>

namespace madeira::core {

namespace {

constexpr std::array<char, 16> kHexDigits = {'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

void AppendHex(std::string& out, uint64_t value, int nibbles) {
  for (int shift = (nibbles - 1) * 4; shift >= 0; shift -= 4) {
    out.push_back(kHexDigits[(value >> shift) & 0xf]);
  }
}

}  // namespace

std::string MakeUuidV7(Millis now, Random& random) {
  // Layout (RFC 9562 §5.7): unix_ts_ms(48) ver(4)=7 rand_a(12) var(2)=0b10 rand_b(62).
  const uint64_t ts = static_cast<uint64_t>(now) & 0xffff'ffff'ffffULL;
  const uint64_t rand_a = random.Next64() & 0xfff;
  const uint64_t rand_b = random.Next64() & 0x3fff'ffff'ffff'ffffULL;
  const uint64_t high = (ts << 16) | (uint64_t{7} << 12) | rand_a;
  const uint64_t low = (uint64_t{0b10} << 62) | rand_b;

  std::string out;
  out.reserve(36);
  AppendHex(out, high >> 32, 8);
  out.push_back('-');
  AppendHex(out, high >> 16, 4);
  out.push_back('-');
  AppendHex(out, high, 4);
  out.push_back('-');
  AppendHex(out, low >> 48, 4);
  out.push_back('-');
  AppendHex(out, low, 12);
  return out;
}

std::string MakeToken(Random& random) {
  std::string out;
  out.reserve(32);
  AppendHex(out, random.Next64(), 16);
  AppendHex(out, random.Next64(), 16);
  return out;
}

std::string MakeOrderedToken(Millis now, Random& random) {
  std::string out;
  out.reserve(32);
  AppendHex(out, static_cast<uint64_t>(now) & 0xffff'ffff'ffffULL, 12);
  AppendHex(out, random.Next64(), 16);
  AppendHex(out, random.Next64(), 4);
  return out;
}

}  // namespace madeira::core
