// qgpu/gpu/json.cpp — the strict JSON reader (see json.h).
#include "gpu/json.h"

#include <cstdio>
#include <cstdlib>

namespace qgpu::gpu::json {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  Expected<Value> document() {
    Value v;
    QGPU_CHECK(value(v, 0));
    skipSpace();
    if (i_ != s_.size()) return error("unexpected text after the JSON value");
    return v;
  }

 private:
  const std::string& s_;
  const std::string& file_;
  size_t i_ = 0;

  Diag error(const std::string& what) const {
    uint32_t line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return makeDiag(ErrorKind::Io, "invalid JSON: " + what, SourceLoc{file_, line, col});
  }

  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }

  bool literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }

  Status value(Value& out, int depth) {
    if (depth > kMaxDepth) return error("nesting deeper than 64 levels");
    skipSpace();
    if (i_ >= s_.size()) return error("unexpected end of input");
    char c = s_[i_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind = Value::Kind::String;
      return string(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    if (literal("true")) {
      out.kind = Value::Kind::Bool;
      out.boolean = true;
      return Ok{};
    }
    if (literal("false")) {
      out.kind = Value::Kind::Bool;
      return Ok{};
    }
    if (literal("null")) {
      out.kind = Value::Kind::Null;
      return Ok{};
    }
    return error(std::string("unexpected character '") + c + "'");
  }

  Status object(Value& out, int depth) {
    out.kind = Value::Kind::Object;
    ++i_;  // {
    skipSpace();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return Ok{};
    }
    for (;;) {
      skipSpace();
      if (i_ >= s_.size() || s_[i_] != '"') return error("expected a string key");
      std::string key;
      QGPU_CHECK(string(key));
      skipSpace();
      if (i_ >= s_.size() || s_[i_] != ':') return error("expected ':'");
      ++i_;
      Value v;
      QGPU_CHECK(value(v, depth + 1));
      if (!out.fields.emplace(key, std::move(v)).second) {
        return error("duplicate key \"" + key + "\"");
      }
      skipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return Ok{};
      }
      return error("expected ',' or '}'");
    }
  }

  Status array(Value& out, int depth) {
    out.kind = Value::Kind::Array;
    ++i_;  // [
    skipSpace();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return Ok{};
    }
    for (;;) {
      Value v;
      QGPU_CHECK(value(v, depth + 1));
      out.items.push_back(std::move(v));
      skipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return Ok{};
      }
      return error("expected ',' or ']'");
    }
  }

  Status number(Value& out) {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    auto digits = [&] {
      size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - from;
    };
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (digits() == 0) {
      return error("malformed number");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return error("malformed number");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return error("malformed number");
    }
    out.kind = Value::Kind::Number;
    out.text = s_.substr(start, i_ - start);
    return Ok{};
  }

  Status hex4(uint32_t& out) {
    out = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      if (i_ >= s_.size()) return error("truncated \\u escape");
      char c = s_[i_];
      uint32_t d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return error("bad hex digit in \\u escape");
      out = out * 16 + d;
    }
    return Ok{};
  }

  static void utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Status string(std::string& out) {
    ++i_;  // opening quote
    for (;;) {
      if (i_ >= s_.size()) return error("unterminated string");
      char c = s_[i_];
      if (c == '"') {
        ++i_;
        return Ok{};
      }
      if (static_cast<unsigned char>(c) < 0x20) return error("control character in string");
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      ++i_;
      if (i_ >= s_.size()) return error("unterminated escape");
      char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          QGPU_CHECK(hex4(cp));
          if (cp >= 0xD800 && cp < 0xDC00) {
            uint32_t lo = 0;
            if (!literal("\\u")) return error("unpaired high surrogate");
            QGPU_CHECK(hex4(lo));
            if (lo < 0xDC00 || lo >= 0xE000) return error("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return error("unpaired low surrogate");
          }
          utf8(cp, out);
          break;
        }
        default: return error(std::string("unknown escape '\\") + e + "'");
      }
    }
  }
};

}  // namespace

const Value* Value::get(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  auto it = fields.find(key);
  return it == fields.end() ? nullptr : &it->second;
}

std::optional<int64_t> Value::asInt() const {
  if (kind != Kind::Number || text.empty() || text.size() > 19) return std::nullopt;
  size_t k = text[0] == '-' ? 1 : 0;
  if (k == text.size()) return std::nullopt;
  int64_t v = 0;
  for (; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return std::nullopt;  // fractions and exponents
    v = v * 10 + (text[k] - '0');
  }
  return text[0] == '-' ? -v : v;
}

std::optional<uint32_t> Value::asU32() const {
  auto v = asInt();
  if (!v || *v < 0 || *v > 0xFFFFFFFFll) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

const char* kindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return "boolean";
    case Value::Kind::Number: return "number";
    case Value::Kind::String: return "string";
    case Value::Kind::Array: return "array";
    case Value::Kind::Object: return "object";
  }
  return "unknown";
}

Expected<Value> parseJson(const std::string& text, const std::string& file) {
  return Parser(text, file).document();
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace qgpu::gpu::json
