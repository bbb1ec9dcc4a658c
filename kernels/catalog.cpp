// qgpu/kernels/catalog.cpp — parsing, validation and layout of catalog kernel files.
#include "kernels/catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "common/file.h"
#include "kernels/signature.h"

namespace qgpu::kernels {
namespace {

namespace fs = std::filesystem;

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::vector<std::string> splitWords(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && isBlank(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !isBlank(text[i])) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool isTagWord(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// Parses "-12", "42", "0x1F" into int64; nullopt if it is not exactly one such number.
std::optional<int64_t> parseInteger(std::string_view text) {
  bool negative = false;
  if (!text.empty() && text[0] == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if (negative) return std::nullopt;  // hex is a bit pattern: no sign
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty() || text.size() > 12) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return negative ? -value : value;
}

// The word for a value of `type`, or nullopt when out of range. Hex literals are bit patterns for
// either type; decimal i32 must fit [-2^31, 2^31), decimal u32 [0, 2^32).
std::optional<uint32_t> toWord(int64_t value, bool hex, ElemType type) {
  if (hex || type == ElemType::U32) {
    if (value < 0 || value > 0xffffffffLL) return std::nullopt;
    return static_cast<uint32_t>(value);
  }
  if (value < INT32_MIN || value > INT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(static_cast<int32_t>(value));
}

struct HeaderLine {
  uint32_t line;
  std::string key;
  std::string value;
};

class Parser {
 public:
  Parser(std::string_view text, std::string fileName, bool requireExpect)
      : text_(text), file_(std::move(fileName)), requireExpect_(requireExpect) {}

  Expected<KernelSpec> run();

 private:
  Diag error(uint32_t line, const std::string& message) const {
    return makeDiag(ErrorKind::KernelFile, message, {file_, line, 0});
  }
  Expected<std::vector<uint32_t>> parseValues(const std::vector<std::string>& words, size_t from,
                                              ElemType type, uint32_t line) const;
  Status parseParam(const HeaderLine& h);
  Status parseExpect(const HeaderLine& h);
  Status parseLaunch(const HeaderLine& h);
  Status parseCompare(const HeaderLine& h);
  Status checkSignature();

  std::string_view text_;
  std::string file_;
  bool requireExpect_;
  KernelSpec spec_;
  std::string templateHeader_;  // the `template:` value, if any
  uint32_t templateLine_ = 0;
  std::vector<std::string> lines_;
  uint32_t headerLines_ = 0;
};

Expected<std::vector<uint32_t>> Parser::parseValues(const std::vector<std::string>& words,
                                                    size_t from, ElemType type,
                                                    uint32_t line) const {
  std::vector<uint32_t> values;
  for (size_t i = from; i < words.size(); ++i) {
    auto number = parseInteger(words[i]);
    if (!number) return error(line, "bad number '" + words[i] + "'");
    bool hex = words[i].find('x') != std::string::npos || words[i].find('X') != std::string::npos;
    auto word = toWord(*number, hex, type);
    if (!word) {
      return error(line, "value " + words[i] + " out of range for " + elemTypeName(type));
    }
    values.push_back(*word);
  }
  return values;
}

// NAME DIR TYPE[N] [= v ...]   |   NAME scalar TYPE = v
Status Parser::parseParam(const HeaderLine& h) {
  std::vector<std::string> w = splitWords(h.value);
  if (w.size() < 3) {
    return error(h.line, "param needs `NAME in|out|inout TYPE[N] [= values]` or "
                         "`NAME scalar TYPE = value`");
  }
  ParamSpec p;
  p.line = h.line;
  p.name = w[0];
  if (!isIdentifier(p.name)) return error(h.line, "bad parameter name '" + p.name + "'");
  if (spec_.find(p.name) != nullptr) return error(h.line, "duplicate param '" + p.name + "'");
  if (w[1] == "in") {
    p.kind = ParamKind::In;
  } else if (w[1] == "out") {
    p.kind = ParamKind::Out;
  } else if (w[1] == "inout") {
    p.kind = ParamKind::InOut;
  } else if (w[1] == "scalar") {
    p.kind = ParamKind::Scalar;
  } else {
    return error(h.line, "unknown param direction '" + w[1] + "' (in, out, inout, scalar)");
  }
  std::string type = w[2];
  uint32_t count = 1;
  if (p.isArray()) {
    size_t open = type.find('[');
    if (open == std::string::npos || type.back() != ']') {
      return error(h.line, "array param '" + p.name + "' needs a size: " + type + "[N]");
    }
    auto size = parseInteger(std::string_view(type).substr(open + 1, type.size() - open - 2));
    if (!size || *size < 1 || *size > kGlobalWords) {
      return error(h.line, "bad array size in '" + type + "' (1.." +
                               std::to_string(kGlobalWords) + ")");
    }
    count = static_cast<uint32_t>(*size);
    type = type.substr(0, open);
  } else if (type.find('[') != std::string::npos) {
    return error(h.line, "scalar param '" + p.name + "' cannot have a size");
  }
  if (type == "i32") {
    p.type = ElemType::I32;
  } else if (type == "u32") {
    p.type = ElemType::U32;
  } else {
    return error(h.line, "unknown type '" + type + "' (i32, u32)");
  }
  if (w.size() > 3) {
    if (w[3] != "=") return error(h.line, "expected '=' before the values, found '" + w[3] + "'");
    if (w.size() == 4) return error(h.line, "'=' without values");
    QGPU_TRY(values, parseValues(w, 4, p.type, h.line));
    if (values.size() != count) {
      return error(h.line, "array size mismatch: '" + p.name + "' has size " +
                               std::to_string(count) + " but " + std::to_string(values.size()) +
                               " values");
    }
    p.init = std::move(values);
  } else if (p.kind == ParamKind::In || p.kind == ParamKind::Scalar) {
    return error(h.line, std::string(paramKindName(p.kind)) + " param '" + p.name +
                             "' needs values (`= ...`)");
  } else {
    p.init.assign(count, 0);
  }
  spec_.params.push_back(std::move(p));
  return Ok{};
}

// NAME = v ...
Status Parser::parseExpect(const HeaderLine& h) {
  std::vector<std::string> w = splitWords(h.value);
  if (w.size() < 3 || w[1] != "=") return error(h.line, "expect needs `NAME = values`");
  ParamSpec* p = spec_.find(w[0]);
  if (p == nullptr) return error(h.line, "expect for unknown param '" + w[0] + "'");
  if (!p->isOutput()) {
    return error(h.line, "expect for a non-output param '" + w[0] + "' (" +
                             paramKindName(p->kind) + ")");
  }
  if (p->hasExpect) return error(h.line, "duplicate expect for '" + w[0] + "'");
  QGPU_TRY(values, parseValues(w, 2, p->type, h.line));
  if (values.size() != p->init.size()) {
    return error(h.line, "expect size mismatch: '" + w[0] + "' has size " +
                             std::to_string(p->init.size()) + " but " +
                             std::to_string(values.size()) + " values");
  }
  p->hasExpect = true;
  p->expect = std::move(values);
  return Ok{};
}

// grid=G block=B [shared=W]
Status Parser::parseLaunch(const HeaderLine& h) {
  std::vector<std::string> w = splitWords(h.value);
  std::optional<uint32_t> grid, block, shared;
  for (const std::string& word : w) {
    size_t eq = word.find('=');
    std::string key = word.substr(0, eq);
    if (eq == std::string::npos || (key != "grid" && key != "block" && key != "shared")) {
      return error(h.line, "launch needs `grid=G block=B [shared=W]`, found '" + word + "'");
    }
    auto& slot = key == "grid" ? grid : key == "block" ? block : shared;
    if (slot) return error(h.line, "launch gives '" + key + "' twice");
    auto n = parseInteger(std::string_view(word).substr(eq + 1));
    if (!n) return error(h.line, "bad number '" + word.substr(eq + 1) + "'");
    uint32_t low = key == "shared" ? 0 : 1;
    uint32_t limit = key == "grid" ? kMaxGrid : key == "block" ? kMaxBlockThreads : kSharedWords;
    if (*n < low || *n > limit) {
      return error(h.line, key + " " + std::to_string(*n) + " out of range " +
                               std::to_string(low) + ".." + std::to_string(limit) +
                               (key == "shared" ? " (words of dynamic shared memory)" : ""));
    }
    slot = static_cast<uint32_t>(*n);
  }
  if (!grid || !block) return error(h.line, "launch needs both grid= and block=");
  spec_.gridX = *grid;
  spec_.blockX = *block;
  spec_.dynamicSharedWords = shared.value_or(0);
  return Ok{};
}

// exact | multiset NAME ...
Status Parser::parseCompare(const HeaderLine& h) {
  std::vector<std::string> w = splitWords(h.value);
  if (w.size() == 1 && w[0] == "exact") return Ok{};
  if (w.size() >= 2 && w[0] == "multiset") {
    for (size_t i = 1; i < w.size(); ++i) {
      const ParamSpec* p = spec_.find(w[i]);
      if (p == nullptr || !p->isOutput()) {
        return error(h.line, "compare multiset names '" + w[i] + "', which is not an output param");
      }
      if (spec_.isMultiset(w[i])) return error(h.line, "compare names '" + w[i] + "' twice");
      spec_.multiset.push_back(w[i]);
    }
    return Ok{};
  }
  return error(h.line, "compare must be `exact` or `multiset NAME...`");
}

// The __global__ function named like the kernel (kernels/signature.h reads it): its parameters
// must match the param lines 1:1 (name, pointer vs scalar, signed vs unsigned 32-bit word).
Status Parser::checkSignature() {
  QGPU_TRY(sig, readSignature(spec_.source, file_, spec_.name, templateHeader_, templateLine_,
                              headerLines_ + 1));
  if (sig.params.size() != spec_.params.size()) {
    return error(sig.line, "the kernel has " + std::to_string(sig.params.size()) +
                               " parameters but " + std::to_string(spec_.params.size()) +
                               " param lines");
  }
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const ParamSpec& p = spec_.params[i];
    const SignatureParam& d = sig.params[i];
    if (d.name != p.name) {
      return error(p.line, "param " + std::to_string(i + 1) + " is '" + p.name +
                               "' but the kernel's parameter " + std::to_string(i + 1) + " is '" +
                               d.name + "'");
    }
    if (d.pointer != p.isArray()) {
      return error(p.line, "param '" + p.name + "' is " + (p.isArray() ? "an array" : "a scalar") +
                               " but the kernel declares it " +
                               (d.pointer ? "a pointer" : "by value"));
    }
    if (d.ctype == nullptr) {
      return error(p.line, "the kernel's parameter '" + p.name + "' has an unsupported type '" +
                               d.type + "' (a 32-bit integer: int, unsigned, uint32_t, ...; "
                               "pointer or value)");
    }
    if (d.ctype->cls == CTypeClass::Vector && d.pointer) {
      // A vector array is an array of its components (kernels/README.md), aligned to the
      // vector's size as cudaMalloc'd memory and vector_types.h guarantee: 32-bit components are
      // i32/u32 elements, 8/16-bit ones word-packed u32 words.
      const uint32_t vecBytes = d.ctype->bytes();
      const bool packed = d.ctype->bits < 32;
      ElemType want = packed || !d.ctype->isSigned ? ElemType::U32 : ElemType::I32;
      if (p.type != want) {
        return error(p.line, "param '" + p.name + "' is " + elemTypeName(p.type) + " but the kernel's '" +
                                 d.type + "' array is " +
                                 (packed ? "word-packed " + std::to_string(d.ctype->bits) + "-bit components: write it as u32 words"
                                         : std::string("an array of ") + elemTypeName(want) + " components: write it as " +
                                               elemTypeName(want)));
      }
      const size_t bytes = 4 * spec_.params[i].init.size();
      if (bytes % vecBytes != 0) {
        return error(p.line, "param '" + p.name + "' has " + std::to_string(bytes / 4) + " words but a '" + d.type +
                                 "' array needs a multiple of " + std::to_string(std::max<uint32_t>(vecBytes / 4, 1)) +
                                 " (" + std::to_string(vecBytes) + "-byte vectors)");
      }
      spec_.params[i].alignWords = std::max<uint32_t>(vecBytes / 4, 1);
      continue;
    }
    if (d.ctype->cls == CTypeClass::SubWord && !d.pointer) {
      // An 8/16-bit value parameter: the header gives its value (range-checked for the C type);
      // the kernel's ld.param.u8/s8/u16/s16 reads its low bits (host/lower/translate_memory.cpp).
      ElemType want = d.ctype->isSigned ? ElemType::I32 : ElemType::U32;
      if (p.type != want) {
        return error(p.line, "param '" + p.name + "' is " + elemTypeName(p.type) + " but the kernel declares " +
                                 elemTypeName(want) + " ('" + d.type + "')");
      }
      const bool isBool = d.type == "bool";
      const int64_t v = want == ElemType::I32 ? int64_t{static_cast<int32_t>(p.init[0])} : int64_t{p.init[0]};
      const int64_t lo = d.ctype->isSigned ? -(int64_t{1} << (d.ctype->bits - 1)) : 0;
      const int64_t hi = isBool ? 1 : d.ctype->isSigned ? (int64_t{1} << (d.ctype->bits - 1)) - 1
                                                        : (int64_t{1} << d.ctype->bits) - 1;
      if (v < lo || v > hi) {
        return error(p.line, "scalar '" + p.name + "' = " + std::to_string(v) + " does not fit the kernel's '" + d.type +
                                 "' (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
      }
      continue;
    }
    if (d.ctype->cls == CTypeClass::SubWord && d.pointer) {
      // A bool/char/short array is word-packed memory (kernels/README.md): the header gives its
      // words as u32 bit patterns, element i at byte (or halfword) i mod 4 (2) of word i / 4 (2).
      if (p.type != ElemType::U32) {
        return error(p.line, "param '" + p.name + "' is " + elemTypeName(p.type) + " but the kernel's '" +
                                 d.type + "' array is word-packed " + std::to_string(d.ctype->bits) +
                                 "-bit elements: write it as u32 words");
      }
      continue;
    }
    if (d.ctype->cls == CTypeClass::Wide && d.pointer) {
      // A long long / uint64_t array is word-packed memory (kernels/README.md): element i is words
      // 2i (low) and 2i + 1 (high), little-endian as on a GPU, given as u32 bit patterns, and the
      // array starts at a multiple of 8 bytes (cudaMalloc'd memory, and the alignment the 8-byte
      // loads and stores check).
      if (p.type != ElemType::U32) {
        return error(p.line, "param '" + p.name + "' is " + elemTypeName(p.type) + " but the kernel's '" + d.type +
                                 "' array is word-packed 64-bit elements: write it as u32 words, low word first");
      }
      if (p.init.size() % 2 != 0) {
        return error(p.line, "param '" + p.name + "' has " + std::to_string(p.init.size()) + " words but a '" +
                                 d.type + "' array needs an even number (two words per element)");
      }
      spec_.params[i].alignWords = 2;
      continue;
    }
    if (d.ctype->cls != CTypeClass::Word) {
      // Known C types the lowering cannot run yet: a construct refusal (inconclusive), not a
      // malformed file. Reported at the kernel's source line.
      const char* why = d.ctype->cls == CTypeClass::Vector
                            ? "is a vector passed by value; only pointers to vectors are supported"
                            : "is 64-bit by value; scalar parameters are 32-bit words (64-bit arrays are supported)";
      return makeDiag(ErrorKind::PtxUnsupported,
                      std::string("unsupported construct: ") +
                          (d.pointer ? "array parameter '" : "parameter '") + p.name +
                          "' of type '" + d.type + "' (" + std::to_string(d.ctype->bits) +
                          "-bit " + (d.ctype->cls == CTypeClass::Vector ? "vector " : "") +
                          "elements) " + why,
                      {file_, d.line, 0});
    }
    ElemType type = d.ctype->isSigned ? ElemType::I32 : ElemType::U32;
    if (type != p.type) {
      return error(p.line, "param '" + p.name + "' is " + elemTypeName(p.type) +
                               " but the kernel declares " + elemTypeName(type) + " ('" + d.type +
                               "')");
    }
  }
  spec_.instantiation = sig.instantiation;
  spec_.source += sig.appendInstantiation;
  return Ok{};
}

Expected<KernelSpec> Parser::run() {
  spec_.path = file_;
  spec_.source = std::string(text_);
  {
    std::string current;
    for (char c : text_) {
      if (c == '\n') {
        lines_.push_back(current);
        current.clear();
      } else {
        current += c;
      }
    }
    if (!current.empty()) lines_.push_back(current);
  }
  std::vector<HeaderLine> header;
  for (const std::string& raw : lines_) {
    if (raw.rfind("//", 0) != 0) break;
    uint32_t line = ++headerLines_;
    std::string text = raw;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text == "//") continue;  // separator
    size_t colon = text.find(':');
    if (text.rfind("// ", 0) != 0 || colon == std::string::npos || colon <= 3) {
      return error(line, "header lines must be `// key: value`");
    }
    std::string key = text.substr(3, colon - 3);
    std::string value = text.substr(colon + 1);
    if (!value.empty() && value[0] != ' ') return error(line, "expected a space after '" + key + ":'");
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first);
    if (value.empty()) return error(line, "empty value for '" + key + "'");
    header.push_back({line, key, value});
  }
  if (header.empty() || header[0].line != 1 || header[0].key != "qgpu-kernel") {
    return error(1, "the first line must be `// qgpu-kernel: NAME`");
  }

  std::map<std::string, uint32_t> seenOnce;  // keys that may appear once -> line
  for (const HeaderLine& h : header) {
    bool once = h.key == "qgpu-kernel" || h.key == "summary" || h.key == "launch" ||
                h.key == "tags" || h.key == "compare" || h.key == "template";
    if (once) {
      if (auto it = seenOnce.find(h.key); it != seenOnce.end()) {
        return error(h.line, "duplicate key '" + h.key + "' (first on line " +
                                 std::to_string(it->second) + ")");
      }
      seenOnce[h.key] = h.line;
    }
    if (h.key == "qgpu-kernel") {
      if (!isIdentifier(h.value)) return error(h.line, "bad kernel name '" + h.value + "'");
      spec_.name = h.value;
    } else if (h.key == "summary") {
      spec_.summary = h.value;
    } else if (h.key == "launch") {
      QGPU_CHECK(parseLaunch(h));
    } else if (h.key == "param") {
      QGPU_CHECK(parseParam(h));
    } else if (h.key == "tags") {
      for (const std::string& tag : splitWords(h.value)) {
        if (!isTagWord(tag)) return error(h.line, "bad tag '" + tag + "' ([a-z0-9_-]+)");
        spec_.tags.push_back(tag);
      }
    } else if (h.key == "note") {
      spec_.notes.push_back(h.value);
    } else if (h.key == "template") {
      templateHeader_ = h.value;
      templateLine_ = h.line;
    } else if (h.key != "expect" && h.key != "compare") {
      return error(h.line, "unknown key '" + h.key + "'");
    }
  }
  // expect and compare refer to params, which may be declared after them.
  for (const HeaderLine& h : header) {
    if (h.key == "expect") QGPU_CHECK(parseExpect(h));
    if (h.key == "compare") QGPU_CHECK(parseCompare(h));
  }
  if (!seenOnce.count("summary")) return error(headerLines_, "missing `summary:`");
  if (!seenOnce.count("launch")) return error(headerLines_, "missing `launch:`");
  if (spec_.params.empty()) return error(headerLines_, "no `param:` lines");
  for (const ParamSpec& p : spec_.params) {
    if (p.isOutput() && !p.hasExpect && requireExpect_) {
      return error(p.line, "output param '" + p.name + "' has no `expect:` line");
    }
  }
  QGPU_CHECK(checkSignature());
  return std::move(spec_);
}

}  // namespace

const char* paramKindName(ParamKind kind) {
  switch (kind) {
    case ParamKind::In: return "in";
    case ParamKind::Out: return "out";
    case ParamKind::InOut: return "inout";
    case ParamKind::Scalar: return "scalar";
  }
  return "?";
}

const char* elemTypeName(ElemType type) { return type == ElemType::I32 ? "i32" : "u32"; }

const ParamSpec* KernelSpec::find(std::string_view paramName) const {
  for (const ParamSpec& p : params) {
    if (p.name == paramName) return &p;
  }
  return nullptr;
}

ParamSpec* KernelSpec::find(std::string_view paramName) {
  return const_cast<ParamSpec*>(static_cast<const KernelSpec*>(this)->find(paramName));
}

bool KernelSpec::hasTag(std::string_view tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

bool KernelSpec::isMultiset(std::string_view paramName) const {
  return std::find(multiset.begin(), multiset.end(), paramName) != multiset.end();
}

Expected<KernelSpec> parseKernelText(std::string_view text, const std::string& fileName) {
  return Parser(text, fileName, /*requireExpect=*/true).run();
}

Expected<KernelSpec> parseKernelTextWithoutExpect(std::string_view text,
                                                  const std::string& fileName) {
  return Parser(text, fileName, /*requireExpect=*/false).run();
}

Expected<KernelSpec> parseKernelFile(const std::string& path) {
  QGPU_TRY(text, readInputFile(path, kMaxKernelFileBytes, "kernel file"));
  QGPU_TRY(spec, parseKernelText(text, path));
  std::string stem = fs::path(path).stem().string();
  if (stem != spec.name) {
    return makeDiag(ErrorKind::KernelFile,
                    "kernel '" + spec.name + "' must live in " + spec.name + ".cu", {path, 1, 0});
  }
  return spec;
}

Expected<std::vector<KernelSpec>> loadCatalog(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return makeDiag(ErrorKind::Io, "not a directory: " + dir);
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".cu") {
      paths.push_back(entry.path().string());
    }
  }
  if (ec) return makeDiag(ErrorKind::Io, "cannot list " + dir + ": " + ec.message());
  std::vector<KernelSpec> specs;
  for (const std::string& path : paths) {
    QGPU_TRY(spec, parseKernelFile(path));
    specs.push_back(std::move(spec));
  }
  std::sort(specs.begin(), specs.end(),
            [](const KernelSpec& a, const KernelSpec& b) { return a.name < b.name; });
  for (size_t i = 1; i < specs.size(); ++i) {
    if (specs[i].name == specs[i - 1].name) {
      return makeDiag(ErrorKind::KernelFile, "duplicate kernel name '" + specs[i].name + "'",
                      {specs[i].path, 1, 0});
    }
  }
  return specs;
}

std::string defaultCatalogDir() { return std::string(QGPU_SOURCE_DIR) + "/kernels/catalog"; }

machine::Launch LaunchImage::toMachineLaunch() const {
  machine::Launch launch;
  launch.gridX = gridX;
  launch.blockX = blockX;
  launch.global = global;
  return launch;
}

Expected<LaunchImage> layout(const KernelSpec& spec) {
  LaunchImage image;
  image.gridX = spec.gridX;
  image.blockX = spec.blockX;
  image.dynamicSharedWords = spec.dynamicSharedWords;
  uint32_t next = 0;
  for (size_t i = 0; i < spec.params.size(); ++i) {
    const ParamSpec& p = spec.params[i];
    if (!p.isArray()) {
      if (p.init.size() != 1) {
        return makeDiag(ErrorKind::Usage, "scalar '" + p.name + "' needs exactly one value");
      }
      image.params.push_back(p.init[0]);
      continue;
    }
    const uint32_t words = static_cast<uint32_t>(p.init.size());
    if (p.alignWords > 1) next = (next + p.alignWords - 1) / p.alignWords * p.alignWords;
    if (words == 0 || next + words > kGlobalWords) {
      return makeDiag(ErrorKind::OverLimit,
                      "arrays of kernel '" + spec.name + "' need " +
                          std::to_string(next + words) + "+ words of global memory; the machine has " +
                          std::to_string(kGlobalWords),
                      {spec.path, p.line, 0});
    }
    std::copy(p.init.begin(), p.init.end(), image.global.begin() + next);
    image.arrays.push_back({i, next, words});
    image.params.push_back(4 * next);
    next += words;
  }
  image.usedWords = next;
  return image;
}

Expected<std::vector<std::string>> checkOutputs(const KernelSpec& spec, const LaunchImage& image,
                                                std::span<const uint32_t> finalGlobal) {
  if (finalGlobal.size() < image.usedWords) {
    return makeDiag(ErrorKind::Usage, "final memory has " + std::to_string(finalGlobal.size()) +
                                          " words, the layout needs " +
                                          std::to_string(image.usedWords));
  }
  std::vector<std::string> diffs;
  for (const ArrayRange& range : image.arrays) {
    const ParamSpec& p = spec.params[range.param];
    std::vector<uint32_t> got(finalGlobal.begin() + range.firstWord,
                              finalGlobal.begin() + range.firstWord + range.words);
    if (!p.isOutput()) {
      for (uint32_t k = 0; k < range.words; ++k) {
        if (got[k] != p.init[k]) {
          diffs.push_back("input " + p.name + "[" + std::to_string(k) + "] changed: " +
                          formatValue(p.init[k], p.type) + " -> " + formatValue(got[k], p.type));
        }
      }
      continue;
    }
    if (!p.hasExpect) {
      return makeDiag(ErrorKind::Usage, "output '" + p.name + "' has no expectation");
    }
    if (spec.isMultiset(p.name)) {
      std::vector<uint32_t> a = got, b = p.expect;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) {
        diffs.push_back(p.name + " as a multiset: expected {" + formatValues(p.expect, p.type) +
                        "}, got {" + formatValues(got, p.type) + "}");
      }
      continue;
    }
    for (uint32_t k = 0; k < range.words; ++k) {
      if (got[k] != p.expect[k]) {
        diffs.push_back(p.name + "[" + std::to_string(k) + "]: expected " +
                        formatValue(p.expect[k], p.type) + ", got " + formatValue(got[k], p.type));
      }
    }
  }
  return diffs;
}

Status setInput(KernelSpec& spec, std::string_view paramName, const std::vector<int64_t>& values) {
  ParamSpec* p = spec.find(paramName);
  if (p == nullptr) {
    return makeDiag(ErrorKind::Usage, "kernel '" + spec.name + "' has no parameter '" +
                                          std::string(paramName) + "'");
  }
  if (p->kind == ParamKind::Out) {
    return makeDiag(ErrorKind::Usage, "'" + p->name + "' is an output; use setOutputSize");
  }
  if (p->kind == ParamKind::Scalar ? values.size() != 1
                                   : values.empty() || values.size() > kGlobalWords) {
    return makeDiag(ErrorKind::Usage, "'" + p->name + "' cannot take " +
                                          std::to_string(values.size()) + " values");
  }
  std::vector<uint32_t> words;
  for (int64_t v : values) {
    auto word = toWord(v, false, p->type);
    if (!word) {
      return makeDiag(ErrorKind::Usage, "value " + std::to_string(v) + " out of range for " +
                                            elemTypeName(p->type) + " '" + p->name + "'");
    }
    words.push_back(*word);
  }
  p->init = std::move(words);
  for (ParamSpec& q : spec.params) {
    q.hasExpect = false;
    q.expect.clear();
  }
  return Ok{};
}

Status setOutputSize(KernelSpec& spec, std::string_view paramName, uint32_t count) {
  ParamSpec* p = spec.find(paramName);
  if (p == nullptr || p->kind != ParamKind::Out) {
    return makeDiag(ErrorKind::Usage, "kernel '" + spec.name + "' has no output parameter '" +
                                          std::string(paramName) + "'");
  }
  if (count == 0 || count > kGlobalWords) {
    return makeDiag(ErrorKind::Usage, "bad size " + std::to_string(count) + " for '" + p->name + "'");
  }
  p->init.assign(count, 0);
  for (ParamSpec& q : spec.params) {
    q.hasExpect = false;
    q.expect.clear();
  }
  return Ok{};
}

std::string formatValue(uint32_t word, ElemType type) {
  return type == ElemType::I32 ? std::to_string(static_cast<int32_t>(word)) : std::to_string(word);
}

std::string formatValues(const std::vector<uint32_t>& words, ElemType type) {
  std::string out;
  for (uint32_t w : words) out += (out.empty() ? "" : " ") + formatValue(w, type);
  return out;
}

}  // namespace qgpu::kernels
