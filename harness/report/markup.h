// qgpu/harness/report/markup.h — text made safe for XML and HTML, once for both reports.
//
// Contract: `escapeMarkup(text)` is valid in an XML 1.0 / HTML attribute value or element
// content: & < > " ' as entities; tab, newline and carriage return as character references in
// attributes (so an attribute keeps its line breaks) and as they are in content; valid UTF-8
// sequences of characters XML allows kept as they are; every other byte (C0 controls, DEL,
// invalid or overlong UTF-8, surrogates, U+FFFE/U+FFFF) as the visible text "\xNN", which XML 1.0
// could not carry even as a character reference.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qgpu::report {

enum class MarkupContext : uint8_t {
  Attribute,  // inside "..."
  Content,    // between tags
};

std::string escapeMarkup(std::string_view text, MarkupContext where = MarkupContext::Content);

// Shorthand for an attribute value (the HTML and JUnit writers).
inline std::string escapeAttribute(std::string_view text) {
  return escapeMarkup(text, MarkupContext::Attribute);
}

}  // namespace qgpu::report
