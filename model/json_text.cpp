// qgpu/model/json_text.cpp — see json_text.h.
#include "model/json_text.h"

#include <set>
#include <vector>

namespace qgpu::model {

SourceLoc locateByte(std::string_view text, size_t offset, const std::string& file) {
  if (offset > text.size()) offset = text.size();
  SourceLoc loc{file, 1, 1};
  size_t lineStart = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++loc.line, lineStart = i + 1;
  loc.column = static_cast<uint32_t>(offset - lineStart + 1);
  return loc;
}

Expected<nlohmann::json> parseJsonText(std::string_view text, const std::string& file, ErrorKind kind,
                                       bool rejectDuplicateKeys) {
  using nlohmann::json;
  // One set of seen keys per open object; the first duplicate is remembered, not thrown, so the
  // parser never unwinds through our callback.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  json::parser_callback_t onEvent = [&](int, json::parse_event_t event, json& parsed) {
    if (!rejectDuplicateKeys) return true;
    if (event == json::parse_event_t::object_start) open.emplace_back();
    else if (event == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    else if (event == json::parse_event_t::key && !open.empty() && parsed.is_string()) {
      if (!open.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    json doc = json::parse(text.begin(), text.end(), onEvent);
    if (!duplicate.empty())
      return makeDiag(kind, "duplicate key '" + duplicate + "' in JSON object", SourceLoc{file});
    return doc;
  } catch (const json::parse_error& e) {
    // e.byte is 1-based: the position of the last character read, the one at fault.
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix:
    // the location is ours.
    if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    return makeDiag(kind, "invalid JSON: " + what, locateByte(text, at, file));
  } catch (const json::exception& e) {
    return makeDiag(kind, std::string("invalid JSON: ") + e.what(), SourceLoc{file});
  }
}

}  // namespace qgpu::model
