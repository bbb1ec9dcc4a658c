// qgpu/host/ptx/parser.cpp — recursive-descent-free PTX parser (contract in parser.h).
//
// The grammar is flat enough to parse with loops: a module is a list of directives, a function
// body a list of statements, and `{ }` scopes are tracked on an explicit stack, so no input can
// drive the parser's own stack depth. Registers are resolved to ids while parsing (innermost
// visible declaration wins); labels and callees are checked afterwards by verify().
#include "host/ptx/parser.h"

#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "host/ptx/lexer.h"
#include "host/ptx/names.h"

namespace qgpu::ptx {
namespace {

// Special registers the front end names (lowering decides which it supports).
bool isSpecialRegister(std::string_view name) {
  static constexpr std::string_view kVec[] = {"%tid", "%ntid", "%ctaid", "%nctaid"};
  for (auto base : kVec) {
    if (name.size() == base.size() + 2 && name.substr(0, base.size()) == base &&
        name[base.size()] == '.' &&
        (name.back() == 'x' || name.back() == 'y' || name.back() == 'z'))
      return true;
  }
  static constexpr std::string_view kScalar[] = {
      "%laneid",      "%warpid",      "%nwarpid",     "%smid",        "%nsmid",
      "%gridid",      "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge",
      "%lanemask_gt", "%clock",       "%clock64"};
  for (auto s : kScalar)
    if (name == s) return true;
  return false;
}

bool isIdentifier(std::string_view w) {
  // A name usable for a function, label or variable: not a directive, not a register.
  return !w.empty() && w[0] != '.' && w[0] != '%' && w.find('.') == std::string_view::npos;
}

// The statement's tokens joined with canonical spacing, for Instruction::text.
std::string joinTokens(const std::vector<Token>& t, size_t from, size_t to) {
  std::string out;
  bool inBrackets = false;
  for (size_t i = from; i < to; ++i) {
    const Token& cur = t[i];
    if (i > from) {
      const Token& prev = t[i - 1];
      bool prevWordish = prev.kind != Tok::Punct || prev.is(',') || prev.is(')') || prev.is(']');
      bool curCloses = cur.is(',') || cur.is(';') || cur.is(')') || cur.is(']') || cur.is('|') ||
                       cur.is('+') || cur.is('<') || cur.is('>') || cur.is(':');
      bool curMinusInAddr = inBrackets && cur.is('-');
      if (prevWordish && !curCloses && !curMinusInAddr) out += ' ';
    }
    if (cur.is('[')) inBrackets = true;
    if (cur.is(']')) inBrackets = false;
    out += cur.text;
  }
  return out;
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, std::string file) : t_(tokens), file_(std::move(file)) {}

  Expected<Module> run() {
    module_.file = file_;
    QGPU_CHECK(header());
    while (peek().kind != Tok::End) QGPU_CHECK(topLevel());
    for (const auto& [name, line] : prototypes_) {
      if (!defined_.count(name))
        return makeDiag(ErrorKind::PtxUnsupported,
                        "function '" + name + "' is declared but not defined (external functions "
                        "are not supported)",
                        SourceLoc{file_, line, 1});
    }
    return std::move(module_);
  }

 private:
  const std::vector<Token>& t_;
  size_t pos_ = 0;
  std::string file_;
  Module module_;
  std::map<std::string, uint32_t> prototypes_;  // declared-only functions -> line
  std::set<std::string> defined_;                // functions with a body
  uint32_t moduleRegisters_ = 0;

  // Per-function state.
  Function* fn_ = nullptr;
  struct OpenScope {
    uint32_t id;
    std::unordered_map<std::string, uint32_t> regs;
    bool hasCode = false;    // an instruction, label or nested scope was seen
    bool hasNested = false;  // a nested scope was seen
    uint32_t line;
  };
  std::vector<OpenScope> scopes_;
  bool vectorOperands_ = false;  // the current instruction is ld/st.v2/.v4: `{...}` is its list
  std::map<std::string, uint32_t> labelLines_;

  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < t_.size() ? t_[i] : t_.back();
  }
  const Token& next() {
    const Token& tok = peek();
    if (pos_ < t_.size() - 1) ++pos_;
    return tok;
  }
  SourceLoc loc(const Token& tok) const { return SourceLoc{file_, tok.line, tok.column}; }
  static std::string show(const Token& tok) {
    return tok.kind == Tok::End ? "end of file" : "'" + describe(tok.text) + "'";
  }
  Diag err(ErrorKind kind, const Token& tok, std::string message) const {
    return makeDiag(kind, std::move(message), loc(tok));
  }
  Diag syntax(const Token& tok, const std::string& expected) const {
    return err(ErrorKind::PtxSyntax, tok, "expected " + expected + ", found " + show(tok));
  }
  Status expect(char c, const std::string& context) {
    if (!peek().is(c)) return syntax(peek(), std::string("'") + c + "' " + context);
    next();
    return Ok{};
  }
  bool accept(char c) {
    if (!peek().is(c)) return false;
    next();
    return true;
  }
  bool isWord(std::string_view w) const { return peek().kind == Tok::Word && peek().text == w; }

  // ---- literals ----
  // Decodes an unsigned literal; sets `bitPattern` for hex/octal/binary (may exceed int64).
  Expected<uint64_t> unsignedLiteral(const Token& tok, bool& bitPattern) const {
    std::string_view s = tok.text;
    if (s.find('.') != std::string_view::npos ||
        (s.size() > 1 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')))
      return err(ErrorKind::PtxUnsupported, tok,
                 "floating-point immediate '" + describe(s) + "' at line " +
                     std::to_string(tok.line) + " (only integer PTX is supported)");
    if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
    unsigned base = 10;
    bitPattern = false;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16, s.remove_prefix(2), bitPattern = true;
    } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
      base = 2, s.remove_prefix(2), bitPattern = true;
    } else if (s.size() > 1 && s[0] == '0') {
      base = 8, s.remove_prefix(1), bitPattern = true;
    }
    if (s.empty()) return err(ErrorKind::PtxSyntax, tok, "malformed immediate '" + describe(tok.text) + "'");
    uint64_t value = 0;
    for (char c : s) {
      unsigned d;
      if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
      else d = 99;
      if (d >= base)
        return err(ErrorKind::PtxSyntax, tok, "malformed immediate '" + describe(tok.text) + "'");
      if (value > (std::numeric_limits<uint64_t>::max() - d) / base)
        return err(ErrorKind::PtxSyntax, tok,
                   "immediate '" + describe(tok.text) + "' is out of the 64-bit range");
      value = value * base + d;
    }
    return value;
  }

  // A possibly negated integer immediate; `minus` is the '-' token when present.
  Expected<int64_t> immediate(const Token* minus, const Token& tok) const {
    bool bitPattern = false;
    QGPU_TRY(magnitude, unsignedLiteral(tok, bitPattern));
    const Token& where = minus ? *minus : tok;
    constexpr uint64_t kMaxPos = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (minus) {
      if (magnitude > kMaxPos + 1)
        return err(ErrorKind::PtxSyntax, where,
                   "immediate '-" + describe(tok.text) + "' is out of the int64 range");
      return magnitude == kMaxPos + 1 ? std::numeric_limits<int64_t>::min()
                                      : -static_cast<int64_t>(magnitude);
    }
    if (magnitude > kMaxPos && !bitPattern)
      return err(ErrorKind::PtxSyntax, where,
                 "immediate '" + describe(tok.text) + "' is out of the int64 range");
    return static_cast<int64_t>(magnitude);  // two's complement for 64-bit bit patterns
  }

  Expected<uint32_t> smallNumber(const std::string& what, uint64_t max) {
    const Token& tok = peek();
    if (tok.kind != Tok::Number) return syntax(tok, what);
    next();
    bool bitPattern = false;
    QGPU_TRY(v, unsignedLiteral(tok, bitPattern));
    if (v > max)
      return err(ErrorKind::PtxUnsupported, tok,
                 what + " " + describe(tok.text) + " exceeds the limit " + std::to_string(max));
    return static_cast<uint32_t>(v);
  }

  // `.u32` etc. Float types are PtxUnsupported naming the type.
  Expected<Type> type(const std::string& context) {
    const Token& tok = peek();
    if (tok.kind != Tok::Word || tok.text.size() < 2 || tok.text[0] != '.')
      return syntax(tok, "a type " + context);
    std::string_view name = tok.text.substr(1);
    if (isFloatTypeName(name))
      return err(ErrorKind::PtxUnsupported, tok,
                 "float type '" + std::string(tok.text) + "' at line " + std::to_string(tok.line) +
                     " (only integer PTX is supported)");
    auto ty = typeFromName(name);
    if (!ty) {
      if (name.size() > 1 && name[0] == 'v' && name[1] >= '0' && name[1] <= '9')
        return err(ErrorKind::PtxUnsupported, tok,
                   "vector type '" + std::string(tok.text) + "' at line " + std::to_string(tok.line));
      return syntax(tok, "a type " + context);
    }
    next();
    return *ty;
  }

  // ---- module level ----
  Status header() {
    if (peek().kind == Tok::End)
      return err(ErrorKind::PtxSyntax, peek(), "empty PTX input: expected '.version'");
    if (!isWord(".version")) return syntax(peek(), "'.version' at the start of the module");
    next();
    const Token& v = peek();
    if (v.kind != Tok::Number || v.text.find('.') == std::string_view::npos ||
        v.text.find_first_not_of("0123456789.") != std::string_view::npos)
      return syntax(v, "a version number like 6.4");
    module_.version = std::string(next().text);
    if (!isWord(".target")) return syntax(peek(), "'.target' after '.version'");
    next();
    if (peek().kind != Tok::Word || !isIdentifier(peek().text)) return syntax(peek(), "a target name");
    module_.target = std::string(next().text);
    while (accept(',')) {  // `.target sm_75, debug` and similar: extra target options are dropped
      if (peek().kind != Tok::Word || !isIdentifier(peek().text))
        return syntax(peek(), "a target option");
      next();
    }
    module_.addressSize = 32;  // the PTX default when `.address_size` is omitted
    if (isWord(".address_size")) {
      next();
      const Token& a = peek();
      QGPU_TRY(size, smallNumber("an address size", 64));
      if (size != 32 && size != 64) return syntax(a, "address size 32 or 64");
      module_.addressSize = static_cast<int>(size);
    }
    return Ok{};
  }

  // Skips the rest of the current line (for `.loc` / `.file`, which end without ';').
  void skipLine() {
    uint32_t line = peek().line;
    while (peek().kind != Tok::End && peek().line == line) next();
  }

  Status topLevel() {
    const Token& tok = peek();
    if (tok.kind != Tok::Word) return syntax(tok, "a directive ('.entry', '.func', ...)");
    std::string_view w = tok.text;
    // Module-scope shared memory: `[.visible|.weak|.extern] .shared [.align A] .TYPE name[N];`
    // (clang's form of a module `__shared__` array and of the SharedMemory<T> helper) and
    // `.extern .shared ... name[];`, an `extern __shared__` array sized by the launch.
    if ((w == ".visible" || w == ".weak" || w == ".extern") && peek(1).kind == Tok::Word &&
        peek(1).text == ".shared") {
      next();
      return moduleShared(tok, std::string(w));
    }
    if (w == ".shared") return moduleShared(tok, "");
    if ((w == ".visible" || w == ".weak" || w == ".extern") && peek(1).kind == Tok::Word &&
        (peek(1).text == ".global" || peek(1).text == ".const")) {
      next();
      return moduleGlobal(tok, std::string(w) + " ");
    }
    if (w == ".global" || w == ".const") return moduleGlobal(tok, "");
    if (w == ".visible") {
      next();
      return function(true);
    }
    if (w == ".entry" || w == ".func") return function(false);
    if (w == ".pragma") return pragma();
    if (w == ".loc" || w == ".file") {
      next();
      skipLine();
      return Ok{};
    }
    if (w == ".local")
      return err(ErrorKind::PtxUnsupported, tok,
                 "module-level '" + std::string(w) + "' variable at line " +
                     std::to_string(tok.line) + " (kernels get memory through parameters)");
    if (w == ".extern" || w == ".weak" || w == ".common")
      return err(ErrorKind::PtxUnsupported, tok,
                 "'" + std::string(w) + "' linkage at line " + std::to_string(tok.line) +
                     " (only .visible and internal definitions are supported)");
    if (!w.empty() && w[0] == '.')
      return err(ErrorKind::PtxUnsupported, tok,
                 "directive '" + describe(w) + "' at line " + std::to_string(tok.line));
    return syntax(tok, "a directive ('.entry', '.func', ...)");
  }

  Status moduleShared(const Token& start, std::string linkage) {
    next();  // .shared
    QGPU_TRY(v, variable(start, /*allowUnsized=*/linkage == ".extern"));
    v.linkage = std::move(linkage);
    if (v.linkage == ".extern" && !v.external)
      return err(ErrorKind::PtxUnsupported, start,
                 "'.extern .shared' variable '" + v.name + "' with a size at line " +
                     std::to_string(start.line) + " (only the unsized dynamic form `name[]`)");
    for (const Variable& w : module_.shared)
      if (w.name == v.name)
        return err(ErrorKind::PtxInvalid, start, "shared variable '" + v.name + "' is declared twice");
    module_.shared.push_back(std::move(v));
    return expect(';', "after a variable declaration");
  }

  // `[.visible|.weak|.extern] (.global|.const) [.align A] .TYPE name[N]... [= initializer];`:
  // recorded (Module::globals) and otherwise ignored; the initializer, up to the ';', is skipped.
  Status moduleGlobal(const Token& start, std::string linkage) {
    const std::string space(next().text);  // .global or .const
    QGPU_TRY(v, variable(start, /*allowUnsized=*/linkage == ".extern ", /*allowInitializer=*/true));
    v.linkage = linkage + space;
    for (const Variable& w : module_.globals)
      if (w.name == v.name)
        return err(ErrorKind::PtxInvalid, start, "module variable '" + v.name + "' is declared twice");
    module_.globals.push_back(std::move(v));
    if (accept('=')) {
      while (peek().kind != Tok::End && !peek().is(';')) next();
    }
    return expect(';', "after a variable declaration");
  }

  Status pragma() {
    next();  // .pragma
    if (peek().kind != Tok::String) return syntax(peek(), "a string after '.pragma'");
    next();
    while (accept(',')) {
      if (peek().kind != Tok::String) return syntax(peek(), "a string in '.pragma'");
      next();
    }
    return expect(';', "after '.pragma'");
  }

  // `.param .u64 name`, `.param .align 4 .b8 name[8]`, `.param .u64 .ptr .global .align 4 name`.
  Expected<Variable> paramDecl() {
    const Token& start = peek();
    if (!isWord(".param")) {
      if (isWord(".reg"))
        return err(ErrorKind::PtxUnsupported, start,
                   "'.reg' parameter at line " + std::to_string(start.line));
      return syntax(start, "'.param'");
    }
    next();
    return variable(start);
  }

  // The part of a variable declaration after its state space, up to (not including) ';' / ','.
  // `allowInitializer`: stop before an `= ...` (module .global/.const data, skipped by the caller).
  Expected<Variable> variable(const Token& start, bool allowUnsized = false,
                              bool allowInitializer = false) {
    Variable v;
    v.loc = loc(start);
    if (isWord(".align")) {
      next();
      QGPU_TRY(a, smallNumber("an alignment", 1u << 16));
      v.align = a;
    }
    QGPU_TRY(ty, type("in a variable declaration"));
    v.type = ty;
    if (ty == Type::Pred)
      return err(ErrorKind::PtxUnsupported, start, "'.pred' variable at line " + std::to_string(start.line));
    if (isWord(".ptr")) {  // kernel pointer attributes carry no meaning for this machine
      next();
      if (peek().kind == Tok::Word && spaceFromName(peek().text.substr(peek().text.empty() ? 0 : 1)))
        next();
      if (isWord(".align")) {
        next();
        QGPU_TRY(a, smallNumber("an alignment", 1u << 16));
        (void)a;
      }
    }
    if (isWord(".align")) {
      next();
      QGPU_TRY(a, smallNumber("an alignment", 1u << 16));
      v.align = a;
    }
    if (v.align != 0 && (v.align & (v.align - 1)) != 0)
      return err(ErrorKind::PtxSyntax, start, "alignment " + std::to_string(v.align) + " is not a power of two");
    const Token& name = peek();
    if (name.kind != Tok::Word || !isIdentifier(name.text)) return syntax(name, "a variable name");
    v.name = std::string(next().text);
    uint64_t bytes = static_cast<uint64_t>(bits(ty) / 8);
    while (peek().is('[')) {
      const Token& open = next();
      if (peek().is(']')) {
        if (!allowUnsized || v.external)
          return err(ErrorKind::PtxUnsupported, open,
                     "unsized array '" + v.name + "[]' at line " + std::to_string(open.line));
        next();
        v.external = true;
        bytes = 0;
        continue;
      }
      QGPU_TRY(count, smallNumber("an array size", 1u << 24));
      bytes *= count;
      if (bytes > (1u << 24))
        return err(ErrorKind::PtxUnsupported, open, "variable '" + v.name + "' is larger than 16 MiB");
      QGPU_CHECK(expect(']', "after an array size"));
    }
    if (peek().is('=') && !allowInitializer)
      return err(ErrorKind::PtxUnsupported, peek(),
                 "initialised variable '" + v.name + "' at line " + std::to_string(peek().line));
    v.bytes = static_cast<uint32_t>(bytes);
    return v;
  }

  Status function(bool visible) {
    const Token& kw = peek();
    if (!isWord(".entry") && !isWord(".func")) return syntax(kw, "'.entry' or '.func'");
    next();
    Function f;
    f.isEntry = kw.text == ".entry";
    f.visible = visible;
    f.loc = loc(kw);
    if (!f.isEntry && peek().is('(')) {
      next();
      while (!peek().is(')')) {
        QGPU_TRY(v, paramDecl());
        f.returns.push_back(std::move(v));
        if (!accept(',')) break;
      }
      QGPU_CHECK(expect(')', "to close the return parameters"));
    }
    const Token& name = peek();
    if (name.kind != Tok::Word || !isIdentifier(name.text)) return syntax(name, "a function name");
    f.name = std::string(next().text);
    if (accept('(')) {
      while (!peek().is(')')) {
        QGPU_TRY(v, paramDecl());
        f.params.push_back(std::move(v));
        if (!accept(',')) break;
      }
      QGPU_CHECK(expect(')', "to close the parameter list of '" + f.name + "'"));
    }
    // Performance-tuning directives: accepted and ignored.
    while (peek().kind == Tok::Word) {
      std::string_view w = peek().text;
      if (w == ".noreturn") {
        next();
        continue;
      }
      if (w != ".maxntid" && w != ".reqntid" && w != ".minnctapersm" && w != ".maxnreg" &&
          w != ".maxnctapersm" && w != ".maxclusterrank" && w != ".reqnctapercluster")
        break;
      next();
      QGPU_TRY(n0, smallNumber("a directive argument", 1u << 30));
      (void)n0;
      while (accept(',')) {
        QGPU_TRY(n, smallNumber("a directive argument", 1u << 30));
        (void)n;
      }
    }
    if (accept(';')) {  // a prototype; the definition must follow somewhere in the module
      prototypes_.emplace(f.name, kw.line);
      return Ok{};
    }
    if (!peek().is('{')) return syntax(peek(), "'{' to open the body of '" + f.name + "'");
    if (!defined_.insert(f.name).second)
      return err(ErrorKind::PtxInvalid, name, "function '" + f.name + "' is defined twice");
    module_.functions.push_back(std::move(f));
    fn_ = &module_.functions.back();
    Status s = body();
    fn_ = nullptr;
    scopes_.clear();
    labelLines_.clear();
    return s;
  }

  // ---- function body ----
  Status openScope(const Token& brace) {
    if (!scopes_.empty()) {
      if (scopes_.size() > kMaxScopeDepth)
        return err(ErrorKind::PtxUnsupported, brace,
                   "'{' scopes nested deeper than " + std::to_string(kMaxScopeDepth) + " at line " +
                       std::to_string(brace.line));
      scopes_.back().hasCode = true;
      scopes_.back().hasNested = true;
    }
    Scope s;
    s.parent = scopes_.empty() ? 0 : scopes_.back().id;
    s.depth = static_cast<uint32_t>(scopes_.size());
    s.begin = s.end = static_cast<uint32_t>(fn_->body.size());
    fn_->scopes.push_back(s);
    scopes_.push_back(OpenScope{static_cast<uint32_t>(fn_->scopes.size() - 1), {}, false, false, brace.line});
    return Ok{};
  }

  Status body() {
    QGPU_CHECK(openScope(next()));  // the body's own '{'
    while (!scopes_.empty()) {
      const Token& tok = peek();
      if (tok.kind == Tok::End)
        return err(ErrorKind::PtxSyntax, tok,
                   "unexpected end of file: '{' opened at line " +
                       std::to_string(scopes_.back().line) + " is not closed");
      if (tok.is('{')) {
        next();
        QGPU_CHECK(openScope(tok));
        continue;
      }
      if (tok.is('}')) {
        next();
        fn_->scopes[scopes_.back().id].end = static_cast<uint32_t>(fn_->body.size());
        scopes_.pop_back();
        continue;
      }
      if (tok.kind == Tok::Word && !tok.text.empty() && tok.text[0] == '.') {
        QGPU_CHECK(declaration());
        continue;
      }
      if (tok.kind == Tok::Word && peek(1).is(':')) {
        QGPU_CHECK(label());
        continue;
      }
      QGPU_CHECK(instruction());
    }
    return Ok{};
  }

  Status declaration() {
    const Token& tok = peek();
    std::string_view w = tok.text;
    if (w == ".reg") return regDecl();
    if (w == ".pragma") return pragma();
    if (w == ".loc" || w == ".file") {
      next();
      skipLine();
      return Ok{};
    }
    if (w == ".shared" || w == ".param" || w == ".local") {
      // Variables print at the top of their scope, before its nested scopes (as both compilers
      // write them); one declared after a nested scope would not survive print() + parse().
      if (scopes_.back().hasNested)
        return err(ErrorKind::PtxUnsupported, tok,
                   "'" + std::string(w) + "' declaration after a nested '{ }' scope at line " +
                       std::to_string(tok.line));
      next();
      QGPU_TRY(v, variable(tok));
      v.scope = scopes_.back().id;
      (w == ".shared" ? fn_->shared : w == ".local" ? fn_->locals : fn_->callParams).push_back(std::move(v));
      return expect(';', "after a variable declaration");
    }
    if (w == ".global" || w == ".const")
      return err(ErrorKind::PtxUnsupported, tok,
                 "'" + std::string(w) + "' variable at line " + std::to_string(tok.line));
    return err(ErrorKind::PtxUnsupported, tok,
               "directive '" + describe(w) + "' at line " + std::to_string(tok.line));
  }

  Status regDecl() {
    const Token& kw = next();
    if (scopes_.back().hasCode)
      return err(ErrorKind::PtxUnsupported, kw,
                 "'.reg' declaration after instructions in the same scope at line " +
                     std::to_string(kw.line) + " (declare registers at the top of a scope)");
    QGPU_TRY(ty, type("after '.reg'"));
    do {
      const Token& name = peek();
      if (name.kind != Tok::Word || name.text[0] == '.' || name.text.find('.') != std::string_view::npos)
        return syntax(name, "a register name");
      next();
      std::string base(name.text);
      if (accept('<')) {
        QGPU_TRY(count, smallNumber("a register range", kMaxRegisters));
        QGPU_CHECK(expect('>', "to close a register range"));
        for (uint32_t i = 0; i < count; ++i) QGPU_CHECK(declareRegister(name, base + std::to_string(i), ty));
      } else {
        QGPU_CHECK(declareRegister(name, base, ty));
      }
    } while (accept(','));
    return expect(';', "after a '.reg' declaration");
  }

  Status declareRegister(const Token& at, std::string name, Type ty) {
    if (fn_->regs.size() >= kMaxRegisters || moduleRegisters_ >= kMaxModuleRegisters)
      return err(ErrorKind::PtxUnsupported, at,
                 "more than " + std::to_string(kMaxRegisters) + " registers in '" + fn_->name +
                     "' (or " + std::to_string(kMaxModuleRegisters) + " in the module)");
    auto& visible = scopes_.back().regs;
    auto id = static_cast<uint32_t>(fn_->regs.size());
    if (!visible.emplace(name, id).second)
      return err(ErrorKind::PtxInvalid, at,
                 "register '" + name + "' is declared twice in the same scope");
    RegInfo r;
    r.name = std::move(name);
    r.type = ty;
    r.scopeDepth = static_cast<uint32_t>(scopes_.size() - 1);
    r.scope = scopes_.back().id;
    fn_->regs.push_back(std::move(r));
    ++moduleRegisters_;
    return Ok{};
  }

  Status label() {
    const Token& name = next();
    next();  // ':'
    if (!isIdentifier(name.text))
      return syntax(name, "a label name");
    auto [it, fresh] = labelLines_.emplace(std::string(name.text), name.line);
    if (!fresh)
      return err(ErrorKind::PtxInvalid, name,
                 "duplicate label '" + std::string(name.text) + "' (first defined at line " +
                     std::to_string(it->second) + ")");
    fn_->labels[std::string(name.text)] = static_cast<uint32_t>(fn_->body.size());
    scopes_.back().hasCode = true;
    return Ok{};
  }

  std::optional<uint32_t> lookup(std::string_view name) const {
    std::string key(name);
    for (size_t i = scopes_.size(); i-- > 0;) {
      auto it = scopes_[i].regs.find(key);
      if (it != scopes_[i].regs.end()) return it->second;
    }
    return std::nullopt;
  }

  Expected<uint32_t> registerRef(const Token& tok) const {
    if (auto id = lookup(tok.text)) return *id;
    return err(ErrorKind::PtxInvalid, tok,
               "undeclared register '" + describe(tok.text) + "' at line " + std::to_string(tok.line));
  }

  // One operand: register, special register, symbol, immediate, address or list.
  Expected<Operand> operand(bool allowList) {
    const Token& tok = peek();
    Operand o;
    o.loc = loc(tok);
    if (tok.is('(') && allowList) {
      next();
      o.kind = OperandKind::List;
      while (!peek().is(')')) {
        QGPU_TRY(item, operand(false));  // depth 1 at most: lists do not nest
        o.items.push_back(std::move(item));
        if (!accept(',')) break;
      }
      QGPU_CHECK(expect(')', "to close an operand list"));
      return o;
    }
    if (tok.is('[')) {
      next();
      o.kind = OperandKind::Address;
      const Token& base = peek();
      if (base.kind == Tok::Number)
        return err(ErrorKind::PtxUnsupported, base,
                   "absolute address '[" + describe(base.text) + "]' at line " + std::to_string(base.line));
      if (base.kind != Tok::Word || base.text[0] == '.') return syntax(base, "a register or symbol in '[ ]'");
      next();
      if (base.text[0] == '%') {
        QGPU_TRY(id, registerRef(base));
        o.addrIsReg = true;
        o.reg = id;
      } else if (auto id = lookup(base.text)) {
        o.addrIsReg = true;
        o.reg = *id;
      } else {
        o.name = std::string(base.text);
      }
      if (peek().is('+') || peek().is('-')) {
        const Token* minus = nullptr;
        const Token& sign = next();
        if (sign.is('-')) minus = &sign;
        else if (peek().is('-')) minus = &next();
        const Token& num = peek();
        if (num.kind != Tok::Number) return syntax(num, "an offset in '[ ]'");
        next();
        QGPU_TRY(off, immediate(minus, num));
        o.imm = off;
      }
      QGPU_CHECK(expect(']', "to close an address"));
      return o;
    }
    if (tok.is('-') || tok.kind == Tok::Number) {
      const Token* minus = tok.is('-') ? &next() : nullptr;
      const Token& num = peek();
      if (num.kind != Tok::Number) return syntax(num, "a number after '-'");
      next();
      o.kind = OperandKind::Imm;
      QGPU_TRY(v, immediate(minus, num));
      o.imm = v;
      return o;
    }
    if (tok.is('!'))
      return err(ErrorKind::PtxUnsupported, tok,
                 "negated predicate operand at line " + std::to_string(tok.line));
    if (tok.is('{') && allowList && vectorOperands_) {  // ld/st.v2/.v4: `{a, b, ...}`
      next();
      o.kind = OperandKind::List;
      while (!peek().is('}')) {
        QGPU_TRY(item, operand(false));
        o.items.push_back(std::move(item));
        if (!accept(',')) break;
      }
      QGPU_CHECK(expect('}', "to close a vector operand"));
      return o;
    }
    if (tok.is('{'))
      return err(ErrorKind::PtxUnsupported, tok,
                 "vector operand '{...}' at line " + std::to_string(tok.line) +
                     " (only as the value list of ld/st.v2/.v4)");
    if (tok.kind != Tok::Word || tok.text[0] == '.') return syntax(tok, "an operand");
    next();
    if (isSpecialRegister(tok.text) || tok.text == "WARP_SZ") {
      o.kind = OperandKind::Special;
      o.name = std::string(tok.text);
      return o;
    }
    if (tok.text[0] == '%') {
      QGPU_TRY(id, registerRef(tok));
      o.kind = OperandKind::Reg;
      o.reg = id;
      return o;
    }
    if (auto id = lookup(tok.text)) {  // e.g. `.reg .b32 temp_param_reg;`
      o.kind = OperandKind::Reg;
      o.reg = *id;
      return o;
    }
    if (!isIdentifier(tok.text)) return syntax(tok, "an operand");
    o.kind = OperandKind::Symbol;
    o.name = std::string(tok.text);
    return o;
  }

  // Decodes `ld.global.nc.u32` into opcode, modifiers and types.
  Status opcode(const Token& tok, Instruction& in) {
    std::string_view w = tok.text;
    size_t dot = w.find('.');
    std::string_view base = w.substr(0, dot);
    auto op = opcodeFromSpelling(base);
    if (!op)
      return err(ErrorKind::PtxUnsupported, tok,
                 "unsupported PTX opcode '" + describe(base) + "' at line " + std::to_string(tok.line));
    in.op = *op;
    Modifiers& m = in.mods;
    std::string_view rest = dot == std::string_view::npos ? std::string_view{} : w.substr(dot + 1);
    while (!rest.empty() || dot != std::string_view::npos) {
      size_t d = rest.find('.');
      std::string_view piece = rest.substr(0, d);
      dot = d;
      rest = d == std::string_view::npos ? std::string_view{} : rest.substr(d + 1);
      auto unsupported = [&](const char* why) {
        return err(ErrorKind::PtxUnsupported, tok,
                   std::string(why) + " '." + describe(piece) + "' on '" + describe(base) +
                       "' in '" + describe(w) + "' at line " + std::to_string(tok.line));
      };
      if (piece.empty()) return syntax(tok, "a modifier after '.' in '" + describe(w) + "'");
      if (isFloatTypeName(piece))
        return err(ErrorKind::PtxUnsupported, tok,
                   "float type '." + describe(piece) + "' in '" + describe(w) + "' at line " +
                       std::to_string(tok.line) + " (only integer PTX is supported)");
      if (auto ty = typeFromName(piece)) {
        in.types.push_back(*ty);
        continue;
      }
      bool ok = decodeModifier(in.op, piece, m);
      if (!ok) return unsupported("unsupported modifier");
    }
    return Ok{};
  }

  static bool setSub(Modifiers& m, std::string_view s) {
    if (!m.sub.empty()) return false;
    m.sub = std::string(s);
    return true;
  }

  // One modifier of one opcode; false if the modifier is unknown for it (or repeated).
  static bool decodeModifier(Opcode op, std::string_view p, Modifiers& m) {
    auto flag = [](bool& f) {
      if (f) return false;
      f = true;
      return true;
    };
    switch (op) {
      case Opcode::Ld:
      case Opcode::St:
      case Opcode::Atom:
      case Opcode::Cvta:
        if (auto s = spaceFromName(p)) {
          if (m.space != StateSpace::None) return false;
          m.space = *s;
          return true;
        }
        if (op == Opcode::Ld && p == "nc") return flag(m.nc);
        if ((op == Opcode::Ld || op == Opcode::St) && p == "volatile") return flag(m.isVolatile);
        if ((op == Opcode::Ld || op == Opcode::St) && (p == "v2" || p == "v4")) {
          if (m.vec != 0) return false;
          m.vec = p == "v2" ? 2 : 4;
          return true;
        }
        if (op == Opcode::Cvta && p == "to") return flag(m.toSpace);
        if (op == Opcode::Atom) {
          if (auto a = atomOpFromName(p)) {
            m.atom = *a;
            return setSub(m, p);
          }
        }
        return false;
      case Opcode::Membar:  // membar.{cta,gl,sys}
        if (p == "cta" || p == "gl" || p == "sys") return setSub(m, p);
        return false;
      case Opcode::Fence:  // fence.{sc,acq_rel}.{cta,gpu,sys}
        if (m.sub.empty()) return (p == "sc" || p == "acq_rel") && setSub(m, p);
        if (m.sub.find('.') == std::string::npos && (p == "cta" || p == "gpu" || p == "sys")) {
          m.sub += ".";
          m.sub += p;
          return true;
        }
        return false;
      case Opcode::Mul:
      case Opcode::Mad:
      case Opcode::Mul24:
        if (op == Opcode::Mul24 && p == "wide") return false;
        if (p == "lo") return !m.hi && !m.wide && flag(m.lo);
        if (p == "hi") return !m.lo && !m.wide && flag(m.hi);
        if (p == "wide") return !m.lo && !m.hi && flag(m.wide);
        return false;
      case Opcode::Setp:
        if (auto c = cmpFromName(p)) {
          if (m.cmp != CmpOp::None) return false;
          m.cmp = *c;
          return true;
        }
        return false;
      case Opcode::Bra:
      case Opcode::Call:
      case Opcode::Ret:
        return p == "uni" && flag(m.uni);
      case Opcode::Shfl:
        if (p == "sync") return flag(m.sync);
        if (auto mode = shflModeFromName(p)) {
          m.shfl = *mode;
          return setSub(m, p);
        }
        return false;
      case Opcode::Vote:
        if (p == "sync") return flag(m.sync);
        if (auto mode = voteModeFromName(p)) {
          m.vote = *mode;
          return setSub(m, p);
        }
        return false;
      case Opcode::Bar:
      case Opcode::Barrier:
        if (p == "sync") return flag(m.sync);
        if (p == "aligned" && op == Opcode::Barrier) return flag(m.aligned);
        if (p == "red") return setSub(m, "red");
        if (m.sub == "red" && (p == "popc" || p == "and" || p == "or")) {
          m.sub += ".";
          m.sub += p;
          m.barrier = p == "popc" ? BarrierKind::RedPopc : p == "and" ? BarrierKind::RedAnd : BarrierKind::RedOr;
          return true;
        }
        if (p == "warp" && op == Opcode::Bar) {
          m.barrier = BarrierKind::Warp;
          return setSub(m, p);
        }
        return false;
      case Opcode::Shf:
        if (p == "l") return !m.right && flag(m.left);
        if (p == "r") return !m.left && flag(m.right);
        if (p == "wrap") return !m.clamp && flag(m.wrap);
        if (p == "clamp") return !m.wrap && flag(m.clamp);
        return false;
      case Opcode::Bfind:
        return p == "shiftamt" && flag(m.shiftamt);
      default:
        return false;
    }
  }

  Status instruction() {
    size_t startPos = pos_;
    const Token& first = peek();
    Instruction in;
    in.loc = loc(first);
    if (accept('@')) {
      in.guarded = true;
      in.guardNegated = accept('!');
      const Token& p = peek();
      if (p.kind != Tok::Word || p.text[0] == '.') return syntax(p, "a predicate register after '@'");
      next();
      QGPU_TRY(id, registerRef(p));
      in.guardReg = id;
    }
    const Token& op = peek();
    if (op.kind != Tok::Word || op.text[0] == '%' || op.text[0] == '.' || op.text[0] == '$')
      return syntax(op, "an instruction");
    next();
    if (Status st = opcode(op, in); !st.ok()) {
      // A refused opcode or modifier: the message quotes the whole statement, up to its ';'
      // (bounded, so a missing ';' cannot make it long).
      size_t end = startPos;
      while (end < t_.size() && end - startPos < 64 && t_[end].kind != Tok::End && !t_[end].is(';')) ++end;
      Diag d = st.error();
      d.message += " in `" + joinTokens(t_, startPos, end < t_.size() && t_[end].is(';') ? end + 1 : end) + "`";
      return d;
    }
    scopes_.back().hasCode = true;
    vectorOperands_ = in.mods.vec != 0;

    std::vector<std::vector<Operand>> groups;  // operands; a group holds `a|b`
    if (!peek().is(';')) {
      do {
        std::vector<Operand> group;
        QGPU_TRY(o, operand(true));
        group.push_back(std::move(o));
        if (peek().is('|')) {
          const Token& bar = next();
          if (!groups.empty()) return syntax(bar, "',' (only a destination may be 'a|b')");
          QGPU_TRY(o2, operand(false));
          group.push_back(std::move(o2));
        }
        groups.push_back(std::move(group));
      } while (accept(','));
    }
    if (!peek().is(';')) {
      return err(ErrorKind::PtxSyntax, peek(),
                 "expected ';' to end '" + joinTokens(t_, startPos, pos_) + "', found " + show(peek()));
    }
    next();
    in.text = joinTokens(t_, startPos, pos_);

    size_t ndst = 1;
    switch (in.op) {
      case Opcode::St: case Opcode::Bra: case Opcode::Ret: case Opcode::Exit: ndst = 0; break;
      case Opcode::Call:
        ndst = !groups.empty() && groups[0][0].kind == OperandKind::List && groups.size() > 1 ? 1 : 0;
        break;
      case Opcode::Bar: case Opcode::Barrier:
        ndst = in.mods.sub.rfind("red", 0) == 0 ? 1 : 0;
        break;
      default: break;
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      if (i < ndst) {
        for (auto& o : groups[i]) in.dsts.push_back(std::move(o));
      } else {
        if (groups[i].size() > 1)
          return err(ErrorKind::PtxSyntax, first, "'a|b' is only allowed as a destination");
        in.srcs.push_back(std::move(groups[i][0]));
      }
    }
    if (in.op == Opcode::Call) {  // srcs = {callee, args}, args always present as a List
      if (in.srcs.size() == 1) {
        Operand args;
        args.kind = OperandKind::List;
        args.loc = in.srcs[0].loc;
        in.srcs.push_back(std::move(args));
      }
    }
    if (in.mods.vec != 0) return splitVector(std::move(in), first);
    fn_->body.push_back(std::move(in));
    return Ok{};
  }

  // ld/st.v2/.v4 {x, y, ...}, [a]: one scalar access per element, element k at [a + k * size],
  // in element order, each keeping the statement's text and location for messages. Exact on this
  // machine (docs/lowering.md, "Memory"): no other warp runs between them and a vector access
  // equals its element accesses in order. A load whose element before the last is its own
  // address register would change the address of the later elements: refused. The first element
  // carries the vector's size (mods.vecBytes): lowering faults there when the address is not a
  // multiple of it, as a GPU faults on a misaligned vector access before any element moves.
  Status splitVector(Instruction in, const Token& first) {
    const bool isLoad = in.op == Opcode::Ld;
    const size_t n = in.mods.vec;
    auto refuse = [&](const std::string& why) {
      return err(ErrorKind::PtxUnsupported, first,
                 why + " in '" + in.text + "' at line " + std::to_string(first.line));
    };
    if (in.types.size() != 1) return refuse("a vector access needs one element type");
    if (in.srcs.empty() || in.srcs[0].kind != OperandKind::Address || (isLoad ? in.dsts.size() : in.srcs.size()) != (isLoad ? 1u : 2u))
      return err(ErrorKind::PtxSyntax, first, "ld/st.v" + std::to_string(n) + " needs '{...}' and an address in '" + in.text + "'");
    Operand list = isLoad ? in.dsts[0] : in.srcs[1];
    if (list.kind != OperandKind::List || list.items.size() != n)
      return err(ErrorKind::PtxSyntax, first, "ld/st.v" + std::to_string(n) + " needs a list of " + std::to_string(n) +
                                                  " values in '" + in.text + "'");
    const Operand& addr = in.srcs[0];
    for (size_t k = 0; k < n; ++k) {
      const Operand& item = list.items[k];
      if (isLoad && item.kind != OperandKind::Reg)
        return err(ErrorKind::PtxSyntax, first, "a vector load needs registers in its list in '" + in.text + "'");
      if (isLoad && k + 1 < n && addr.addrIsReg && item.reg == addr.reg)
        return refuse("a vector load into its own address register");
      // ptxas takes no element register wider than 32 bits in a list of 8/16/32-bit elements
      // (the scalar access it splits into would accept one).
      if (item.kind == OperandKind::Reg && item.reg < fn_->regs.size() && ptx::bits(in.types[0]) <= 32 &&
          ptx::bits(fn_->regs[item.reg].type) > 32)
        return err(ErrorKind::PtxInvalid, first,
                   "vector element register '" + fn_->regs[item.reg].name + "' is " +
                       std::to_string(ptx::bits(fn_->regs[item.reg].type)) + "-bit in a list of ." +
                       ptx::typeName(in.types[0]) + " elements in '" + in.text + "' at line " +
                       std::to_string(first.line));
    }
    const int64_t size = ptx::bits(in.types[0]) / 8;
    for (size_t k = 0; k < n; ++k) {
      Instruction e = in;
      e.mods.vec = 0;
      e.mods.vecBytes = k == 0 ? static_cast<uint8_t>(static_cast<int64_t>(n) * size) : 0;  // checked once, first
      e.srcs[0].imm = addr.imm + static_cast<int64_t>(k) * size;
      if (isLoad) e.dsts = {list.items[k]};
      else e.srcs[1] = list.items[k];
      fn_->body.push_back(std::move(e));
    }
    return Ok{};
  }
};

}  // namespace

Expected<Module> parse(std::string_view text, std::string file) {
  if (text.size() > kMaxInputBytes)
    return makeDiag(ErrorKind::PtxUnsupported,
                    "PTX input is " + std::to_string(text.size()) + " bytes; the front end reads at most " +
                        std::to_string(kMaxInputBytes),
                    SourceLoc{file, 1, 1});
  QGPU_TRY(tokens, lex(text, file));
  Parser parser(tokens, file);
  QGPU_TRY(module, parser.run());
  QGPU_CHECK(verify(module));
  return module;
}

}  // namespace qgpu::ptx
