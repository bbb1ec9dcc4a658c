// qgpu/harness/report/markup.cpp — see markup.h.
#include "harness/report/markup.h"

#include <cstdint>
#include <cstdio>

namespace qgpu::report {

namespace {

// The length of the valid UTF-8 sequence of an XML Char at `s[i]` (>= 0x80), or 0.
size_t utf8Char(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b = byte(i);
  size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (len == 0 || b > 0xF4 || i + len > s.size()) return 0;
  uint32_t cp = b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF) return 0;        // overlong or out of range
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;             // a surrogate
  if (cp == 0xFFFE || cp == 0xFFFF) return 0;             // not an XML Char
  return len;
}

}  // namespace

std::string escapeMarkup(std::string_view text, MarkupContext where) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      case '\t': case '\n': case '\r':
        if (where == MarkupContext::Attribute) {
          out += "&#" + std::to_string(c) + ";";
        } else {
          out += static_cast<char>(c);
        }
        ++i;
        continue;
      default: break;
    }
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (size_t len = c >= 0x80 ? utf8Char(text, i) : 0) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", c);
    out += hex;
    ++i;
  }
  return out;
}

}  // namespace qgpu::report
