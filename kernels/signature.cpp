// qgpu/kernels/signature.cpp — the __global__ signature reader (see signature.h).
//
// Not a C++ parser: a token scan that knows the few shapes a kernel's declaration takes. It works
// on the source with comments blanked (same length, newlines kept, so positions are lines).
#include "kernels/signature.h"

#include <algorithm>
#include <cctype>

namespace qgpu::kernels {
namespace {

constexpr CTypeRow kCTypes[] = {
    // 32-bit words: what the machine loads, stores and passes.
    {"int", CTypeClass::Word, true, 32},
    {"signed", CTypeClass::Word, true, 32},
    {"signed int", CTypeClass::Word, true, 32},
    {"int32_t", CTypeClass::Word, true, 32},
    {"unsigned", CTypeClass::Word, false, 32},
    {"unsigned int", CTypeClass::Word, false, 32},
    {"uint", CTypeClass::Word, false, 32},
    {"uint32_t", CTypeClass::Word, false, 32},
    // Sub-word elements: byte and halfword memory (issue 11 item 2).
    {"bool", CTypeClass::SubWord, false, 8},
    {"char", CTypeClass::SubWord, true, 8},
    {"signed char", CTypeClass::SubWord, true, 8},
    {"unsigned char", CTypeClass::SubWord, false, 8},
    {"uchar", CTypeClass::SubWord, false, 8},
    {"int8_t", CTypeClass::SubWord, true, 8},
    {"uint8_t", CTypeClass::SubWord, false, 8},
    {"short", CTypeClass::SubWord, true, 16},
    {"short int", CTypeClass::SubWord, true, 16},
    {"signed short", CTypeClass::SubWord, true, 16},
    {"unsigned short", CTypeClass::SubWord, false, 16},
    {"unsigned short int", CTypeClass::SubWord, false, 16},
    {"ushort", CTypeClass::SubWord, false, 16},
    {"int16_t", CTypeClass::SubWord, true, 16},
    {"uint16_t", CTypeClass::SubWord, false, 16},
    // 64-bit integers (long is 64-bit on the LP64 hosts both compilers target).
    {"long", CTypeClass::Wide, true, 64},
    {"long int", CTypeClass::Wide, true, 64},
    {"unsigned long", CTypeClass::Wide, false, 64},
    {"long long", CTypeClass::Wide, true, 64},
    {"long long int", CTypeClass::Wide, true, 64},
    {"unsigned long long", CTypeClass::Wide, false, 64},
    {"unsigned long long int", CTypeClass::Wide, false, 64},
    {"int64_t", CTypeClass::Wide, true, 64},
    {"uint64_t", CTypeClass::Wide, false, 64},
    {"size_t", CTypeClass::Wide, false, 64},
    // CUDA's integer vector types (vector_types.h: aligned to their size).
    {"int2", CTypeClass::Vector, true, 32, 2},
    {"int4", CTypeClass::Vector, true, 32, 4},
    {"uint2", CTypeClass::Vector, false, 32, 2},
    {"uint4", CTypeClass::Vector, false, 32, 4},
    {"char2", CTypeClass::Vector, true, 8, 2},
    {"char4", CTypeClass::Vector, true, 8, 4},
    {"uchar2", CTypeClass::Vector, false, 8, 2},
    {"uchar4", CTypeClass::Vector, false, 8, 4},
    {"short2", CTypeClass::Vector, true, 16, 2},
    {"short4", CTypeClass::Vector, true, 16, 4},
    {"ushort2", CTypeClass::Vector, false, 16, 2},
    {"ushort4", CTypeClass::Vector, false, 16, 4},
};

struct Tok {
  std::string text;
  uint32_t line = 1;
};

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool startsLikeIdentifier(const std::string& s) {
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_' ||
                        s.rfind("::", 0) == 0);
}

// Comments become spaces (newlines kept); string and character literals are left alone.
std::string blankComments(std::string_view source) {
  std::string out(source);
  size_t i = 0;
  while (i < out.size()) {
    if (out[i] == '"' || out[i] == '\'') {
      char quote = out[i++];
      while (i < out.size() && out[i] != quote && out[i] != '\n') i += out[i] == '\\' ? 2 : 1;
      ++i;
    } else if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
    } else {
      ++i;
    }
  }
  return out;
}

// Identifiers (with `::` joined in: std::uint32_t is one token), numbers, one-char punctuation.
std::vector<Tok> tokenize(const std::string& code) {
  std::vector<Tok> toks;
  uint32_t line = 1;
  size_t i = 0;
  while (i < code.size()) {
    char c = code[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (isIdentChar(c) || (c == ':' && i + 2 < code.size() && code[i + 1] == ':' &&
                                  isIdentChar(code[i + 2]))) {
      size_t start = i;
      while (i < code.size() &&
             (isIdentChar(code[i]) ||
              (code[i] == ':' && i + 2 < code.size() && code[i + 1] == ':' && isIdentChar(code[i + 2]))))
        i += code[i] == ':' ? 2 : 1;
      toks.push_back({code.substr(start, i - start), line});
    } else if (c == '"' || c == '\'') {
      size_t start = i++;
      while (i < code.size() && code[i] != c && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
      ++i;
      toks.push_back({code.substr(start, std::min(i, code.size()) - start), line});
    } else {
      toks.push_back({std::string(1, c), line});
      ++i;
    }
  }
  return toks;
}

std::string joinTokens(const std::vector<Tok>& toks, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    bool glue = out.empty() || toks[i].text == "," || toks[i].text == ">" ||
                toks[i].text == "*" || toks[i].text == "[" || toks[i].text == "]" ||
                out.back() == '<' || out.back() == '[';
    if (!glue) out += ' ';
    if (toks[i].text == "," ) {
      out += ", ";
      continue;
    }
    out += toks[i].text;
  }
  // ", " followed by a glued token leaves a trailing space before it only after commas.
  std::string clean;
  for (size_t i = 0; i < out.size(); ++i)
    if (!(out[i] == ' ' && (i + 1 == out.size() || out[i + 1] == ' '))) clean += out[i];
  return clean;
}

std::string normaliseType(const std::vector<std::string>& words) {
  std::string out;
  for (std::string w : words) {
    if (w.rfind("::", 0) == 0) w = w.substr(2);
    if (w.rfind("std::", 0) == 0) w = w.substr(5);
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

// Index of the token that closes the bracket opened at `open` (same kind), or toks.size().
size_t matching(const std::vector<Tok>& toks, size_t open) {
  const std::string& o = toks[open].text;
  std::string c = o == "(" ? ")" : o == "<" ? ">" : o == "[" ? "]" : "}";
  int depth = 0;
  for (size_t i = open; i < toks.size(); ++i) {
    if (toks[i].text == o) ++depth;
    if (toks[i].text == c && --depth == 0) return i;
  }
  return toks.size();
}

// Splits toks[from, to) at top-level commas (parentheses, brackets, braces and angle brackets).
std::vector<std::pair<size_t, size_t>> splitCommas(const std::vector<Tok>& toks, size_t from,
                                                   size_t to) {
  std::vector<std::pair<size_t, size_t>> parts;
  int depth = 0;
  size_t start = from;
  for (size_t i = from; i < to; ++i) {
    const std::string& t = toks[i].text;
    if (t == "(" || t == "[" || t == "{" || t == "<") ++depth;
    if (t == ")" || t == "]" || t == "}" || t == ">") --depth;
    if (t == "," && depth == 0) {
      parts.push_back({start, i});
      start = i + 1;
    }
  }
  if (to > start) parts.push_back({start, to});
  return parts;
}

struct TemplateParam {
  std::string name;
  bool isType = false;
  std::vector<Tok> defaultValue;
};

class Reader {
 public:
  Reader(std::string_view source, std::string file, std::string_view templateHeader,
         uint32_t headerLine, uint32_t bodyLine)
      : toks_(tokenize(blankComments(source))),
        file_(std::move(file)),
        templateHeader_(templateHeader),
        headerLine_(headerLine),
        bodyLine_(bodyLine) {}

  Expected<KernelSignature> run(const std::string& name);

 private:
  Diag error(uint32_t line, const std::string& message, ErrorKind kind = ErrorKind::KernelFile) const {
    return makeDiag(kind, message, {file_, line, 0});
  }
  const std::string& at(size_t i) const {
    static const std::string end;
    return i < toks_.size() ? toks_[i].text : end;
  }
  // Skips `__launch_bounds__(...)` at i; returns the index after it (or i).
  size_t skipLaunchBounds(size_t i) const {
    while (at(i) == "__launch_bounds__" && at(i + 1) == "(") i = matching(toks_, i + 1) + 1;
    return i;
  }
  Status readTemplateParams(size_t globalAt);
  Expected<std::vector<std::vector<Tok>>> readArgs(size_t open, uint32_t line);
  Status readParams(size_t open, size_t close);

  std::vector<Tok> toks_;
  std::string file_;
  std::string templateHeader_;
  uint32_t headerLine_;
  uint32_t bodyLine_;
  std::vector<TemplateParam> tparams_;
  std::vector<std::vector<Tok>> targs_;  // one per template parameter, after defaults
  std::vector<std::string> paramDecls_;  // each parameter's type as written, name removed
  KernelSignature sig_;
};

Status Reader::readTemplateParams(size_t globalAt) {
  if (globalAt == 0 || at(globalAt - 1) != ">") return Ok{};
  int depth = 0;
  size_t open = globalAt - 1;
  for (size_t i = globalAt; i-- > 0;) {
    if (at(i) == ">") ++depth;
    if (at(i) == "<" && --depth == 0) {
      open = i;
      break;
    }
  }
  if (depth != 0 || open == 0 || at(open - 1) != "template") return Ok{};
  sig_.isTemplate = true;
  for (auto [from, to] : splitCommas(toks_, open + 1, globalAt - 1)) {
    TemplateParam p;
    size_t eq = to;
    for (size_t i = from; i < to; ++i)
      if (at(i) == "=") {
        eq = i;
        break;
      }
    if (eq == from || !startsLikeIdentifier(at(eq - 1))) {
      return error(toks_[from].line, "cannot read template parameter '" + joinTokens(toks_, from, to) + "'");
    }
    p.name = at(eq - 1);
    p.isType = at(from) == "class" || at(from) == "typename";
    if (eq < to) p.defaultValue.assign(toks_.begin() + static_cast<long>(eq + 1), toks_.begin() + static_cast<long>(to));
    tparams_.push_back(std::move(p));
  }
  return Ok{};
}

// Template arguments between toks_[open] == "<" and its match.
Expected<std::vector<std::vector<Tok>>> Reader::readArgs(size_t open, uint32_t line) {
  size_t close = matching(toks_, open);
  if (close >= toks_.size()) return error(line, "unbalanced '<' in the template arguments");
  std::vector<std::vector<Tok>> args;
  for (auto [from, to] : splitCommas(toks_, open + 1, close))
    args.emplace_back(toks_.begin() + static_cast<long>(from), toks_.begin() + static_cast<long>(to));
  return args;
}

Status Reader::readParams(size_t open, size_t close) {
  for (auto [from, to] : splitCommas(toks_, open + 1, close)) {
    SignatureParam p;
    p.line = toks_[from].line;
    size_t end = to;
    for (size_t i = from; i < to; ++i)
      if (at(i) == "=") {  // a default argument: the header gives the value
        end = i;
        break;
      }
    std::vector<std::string> typeWords;
    std::vector<size_t> nameCandidates;
    bool reference = false;
    std::string declared;  // the type as written, template arguments substituted, name removed
    for (size_t i = from; i < end; ++i) {
      const std::string& t = at(i);
      if (t == "*" || t == "[") p.pointer = true;
      if (t == "&") reference = true;
      if (startsLikeIdentifier(t) && t != "const" && t != "volatile" && t != "__restrict__" &&
          t != "__restrict")
        nameCandidates.push_back(i);
    }
    size_t nameAt = nameCandidates.empty() ? end : nameCandidates.back();
    if (nameCandidates.size() < 2) {
      return error(p.line, "cannot read the kernel's parameter '" + joinTokens(toks_, from, end) +
                               "' (a type and a name)");
    }
    p.name = at(nameAt);
    for (size_t i = from; i < end; ++i) {
      if (i == nameAt) continue;
      std::string t = at(i);
      auto tp = std::find_if(tparams_.begin(), tparams_.end(),
                             [&](const TemplateParam& q) { return q.name == t; });
      if (tp != tparams_.end()) {
        const auto& arg = targs_[static_cast<size_t>(tp - tparams_.begin())];
        std::string text = joinTokens(arg, 0, arg.size());
        declared += (declared.empty() ? "" : " ") + text;
        for (const Tok& a : arg)
          if (startsLikeIdentifier(a.text) && a.text != "const" && a.text != "volatile")
            typeWords.push_back(a.text);
        continue;
      }
      declared += (declared.empty() || t == "*" || t == "[" || t == "]" ? "" : " ") + t;
      if (startsLikeIdentifier(t) && t != "const" && t != "volatile" && t != "__restrict__" &&
          t != "__restrict")
        typeWords.push_back(t);
    }
    if (reference) {
      return error(p.line, "the kernel's parameter '" + p.name + "' is a reference; kernels take "
                           "pointers and values");
    }
    p.type = normaliseType(typeWords);
    p.ctype = findCType(p.type);
    paramDecls_.push_back(declared);
    sig_.params.push_back(std::move(p));
  }
  return Ok{};
}

Expected<KernelSignature> Reader::run(const std::string& name) {
  // Definitions and explicit instantiations.
  std::vector<size_t> definitions;
  std::vector<size_t> instantiations;  // index of the `template` token
  for (size_t i = 0; i < toks_.size(); ++i) {
    if (at(i) == "__global__" && !(i > 0 && at(i - 1) == "template")) definitions.push_back(i);
    if (at(i) == "template" && at(i + 1) != "<") {
      size_t j = i + 1;
      if (at(j) == "__global__") ++j;
      j = skipLaunchBounds(j);
      if (at(j) == "void" && at(skipLaunchBounds(j + 1)) == name) instantiations.push_back(i);
    }
  }
  if (definitions.empty()) return error(bodyLine_, "no __global__ function (one kernel per file)");
  if (definitions.size() > 1) {
    return error(toks_[definitions[1]].line,
                 "a kernel file holds exactly one __global__ function; another starts here");
  }
  const size_t g = definitions[0];
  sig_.line = toks_[g].line;
  QGPU_CHECK(readTemplateParams(g));
  size_t i = skipLaunchBounds(g + 1);
  bool shape = at(i) == "void";
  i = skipLaunchBounds(i + 1);
  shape = shape && at(i) == name;
  sig_.name = at(i);
  i = skipLaunchBounds(i + 1);
  if (!shape || at(i) != "(") {
    return error(sig_.line, "the __global__ function must be `__global__ void " + name + "(`");
  }
  const size_t open = i;
  const size_t close = matching(toks_, open);
  if (close >= toks_.size()) return error(sig_.line, "cannot read the __global__ function's parameter list");

  // The instantiation: the header's or the file's own, exactly one, only for a template.
  if (instantiations.size() > 1) {
    return error(toks_[instantiations[1]].line,
                 "a kernel file instantiates one kernel; another explicit instantiation starts here");
  }
  if (!sig_.isTemplate) {
    if (!templateHeader_.empty()) {
      return error(headerLine_, "`template:` given but '" + name + "' is not a template kernel");
    }
    if (!instantiations.empty()) {
      return error(toks_[instantiations[0]].line, "explicit instantiation of '" + name +
                                                      "', which is not a template kernel");
    }
  } else {
    std::vector<std::vector<Tok>> args;
    if (!templateHeader_.empty()) {
      if (!instantiations.empty()) {
        return error(headerLine_, "`template:` names the instantiation but the file has its own "
                                  "explicit instantiation (line " +
                                      std::to_string(toks_[instantiations[0]].line) + "); give one");
      }
      Reader header(templateHeader_, file_, "", 0, 0);
      if (header.toks_.size() < 3 || header.at(0) != name || header.at(1) != "<" ||
          matching(header.toks_, 1) + 1 != header.toks_.size()) {
        return error(headerLine_, "`template:` must be `" + name + "<ARGS>`, found '" +
                                      templateHeader_ + "'");
      }
      for (Tok& t : header.toks_) t.line = headerLine_;
      QGPU_TRY(headerArgs, header.readArgs(1, headerLine_));
      args = std::move(headerArgs);
    } else if (!instantiations.empty()) {
      size_t j = instantiations[0] + 1;
      if (at(j) == "__global__") ++j;
      j = skipLaunchBounds(skipLaunchBounds(j) + 1);
      ++j;  // the name
      if (at(j) != "<") {
        return error(toks_[instantiations[0]].line,
                     "the explicit instantiation must name its template arguments: `template "
                     "__global__ void " + name + "<ARGS>(...)`");
      }
      QGPU_TRY(fileArgs, readArgs(j, toks_[j].line));
      args = std::move(fileArgs);
    } else {
      return error(sig_.line, "template kernel '" + name + "' needs the instantiation to run: a "
                              "`// template: " + name + "<ARGS>` header line or an explicit "
                              "instantiation in the file");
    }
    uint32_t argLine = templateHeader_.empty() ? toks_[instantiations[0]].line : headerLine_;
    if (args.size() > tparams_.size()) {
      return error(argLine, "'" + name + "' has " + std::to_string(tparams_.size()) +
                                " template parameters but " + std::to_string(args.size()) +
                                " arguments are given");
    }
    for (size_t k = args.size(); k < tparams_.size(); ++k) {
      if (tparams_[k].defaultValue.empty()) {
        return error(argLine, "template parameter '" + tparams_[k].name + "' of '" + name +
                                  "' has no argument and no default");
      }
      args.push_back(tparams_[k].defaultValue);
    }
    targs_ = std::move(args);
    std::string list;
    for (const auto& a : targs_) list += (list.empty() ? "" : ", ") + joinTokens(a, 0, a.size());
    sig_.instantiation = name + "<" + list + ">";
  }
  QGPU_CHECK(readParams(open, close));
  if (sig_.isTemplate && !templateHeader_.empty()) {
    std::string types;
    for (const std::string& d : paramDecls_) types += (types.empty() ? "" : ", ") + d;
    sig_.appendInstantiation = "\n// qgpu: the instantiation named by `template:` (kernel file header)\n"
                               "template __global__ void " + sig_.instantiation + "(" + types + ");\n";
  }
  return std::move(sig_);
}

}  // namespace

std::span<const CTypeRow> cTypeTable() { return kCTypes; }

const CTypeRow* findCType(std::string_view spelling) {
  for (const CTypeRow& row : kCTypes)
    if (spelling == row.spelling) return &row;
  return nullptr;
}

Expected<KernelSignature> readSignature(std::string_view source, const std::string& file,
                                        const std::string& name, std::string_view templateHeader,
                                        uint32_t headerLine, uint32_t bodyLine) {
  return Reader(source, file, templateHeader, headerLine, bodyLine).run(name);
}

}  // namespace qgpu::kernels
