// qgpu/gpu/json.h — a small strict JSON reader and string escaper, so that gpu/ needs no JSON
// library (the GPU machine has none of our Debian libraries; docs/gpu.md).
//
// Contract: `parseJson` accepts RFC 8259 JSON (objects, arrays, strings with \uXXXX escapes
// including surrogate pairs, numbers, true/false/null) and nothing else: trailing text, trailing
// commas, comments, control characters in strings and duplicate object keys are errors. Nesting is
// limited to 64 levels so that hostile input cannot exhaust the stack. Errors are
// ErrorKind::Io with "line:column" of the offending character. Numbers keep their text; `asU32`
// and `asInt` accept only plain non-negative / signed decimal integers that fit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/diag.h"

namespace qgpu::gpu::json {

struct Value {
  enum class Kind : uint8_t {
    Null,    // null
    Bool,    // true / false
    Number,  // text kept in `text`
    String,  // decoded UTF-8 in `text`
    Array,   // `items`
    Object,  // `fields` (key order is not kept: the writer's order is fixed anyway)
  };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;
  std::vector<Value> items;
  std::map<std::string, Value> fields;

  const Value* get(const std::string& key) const;  // nullptr when absent or not an object
  std::optional<uint32_t> asU32() const;
  std::optional<int64_t> asInt() const;
};

const char* kindName(Value::Kind kind);  // "string", "array", ... for error messages

// `file` only labels error locations.
Expected<Value> parseJson(const std::string& text, const std::string& file);

// `s` as a JSON string literal, quotes included.
std::string quote(const std::string& s);

}  // namespace qgpu::gpu::json
