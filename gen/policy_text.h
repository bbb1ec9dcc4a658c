// qgpu/gen/policy_text.h — the text form of a generator's policy, one for the three generators
// (program_gen, ptx_gen, cuda_gen): "name=value name=value …", numbers as std::to_chars writes
// them and std::from_chars reads them back, so a case header's policy replays exactly.
#pragma once

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "common/diag.h"

namespace qgpu::gen {

template <typename T>
bool parsePolicyValue(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end;
}

template <typename T>
std::string formatPolicyValue(T value) {
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc{} ? std::string(buf, ptr) : std::string("?");
}

// Splits `text` at spaces into name=value items and hands each to `set(name, value)`, which
// returns std::nullopt for a name it does not know, false for a value it cannot read, true once
// the field is set. Errors (ErrorKind::Usage, prefixed by `what`, e.g. "PTX generator policy"):
// "'x' is not name=value", "no field 'n'", "bad value 'v' for n".
template <typename Set>
Status readPolicyItems(std::string_view text, std::string_view what, Set&& set) {
  const std::string prefix = std::string(what) + ": ";
  while (!text.empty()) {
    const size_t start = text.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    text.remove_prefix(start);
    const size_t end = std::min(text.find(' '), text.size());
    const std::string_view item = text.substr(0, end);
    text.remove_prefix(end);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return makeDiag(ErrorKind::Usage, prefix + "'" + std::string(item) + "' is not name=value");
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    const std::optional<bool> parsed = set(name, value);
    if (!parsed) return makeDiag(ErrorKind::Usage, prefix + "no field '" + std::string(name) + "'");
    if (!*parsed)
      return makeDiag(ErrorKind::Usage, prefix + "bad value '" + std::string(value) + "' for " +
                                            std::string(name));
  }
  return Ok{};
}

}  // namespace qgpu::gen
