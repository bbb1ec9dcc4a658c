// qgpu/common/text.cpp — see text.h.
#include "common/text.h"

#include <cstdio>

namespace qgpu {

std::string echo(std::string_view input, size_t maxBytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  size_t shown = input.size() < maxBytes ? input.size() : maxBytes;
  for (size_t i = 0; i < shown; ++i) {
    auto c = static_cast<unsigned char>(input[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (shown < input.size()) out += "\xe2\x80\xa6(" + std::to_string(input.size()) + " bytes)";
  return out;
}

std::string hexWord(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace qgpu
