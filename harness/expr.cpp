// qgpu/harness/expr.cpp — recursive-descent parser (recursing only per nesting level) with shape inference for the expression language.
#include "harness/expr.h"

#include <cctype>
#include <limits>

namespace qgpu::harness {

namespace {

using NodeId = uint32_t;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<ExprTree> parseAll() {
    QGPU_TRY(root, parseSum(0));
    skipSpace();
    if (pos_ != text_.size()) return error("unexpected '" + std::string(1, text_[pos_]) + "'");
    (void)root;  // the root is the last node made
    return std::move(tree_);
  }

 private:
  Diag error(const std::string& message) const { return errorAt(message, pos_); }
  Diag errorAt(const std::string& message, size_t at) const {
    return makeDiag(ErrorKind::Usage, message, SourceLoc{"<expr>", 1, static_cast<uint32_t>(at + 1)});
  }

  const ExprNode& node(NodeId id) const { return tree_.nodes[id]; }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status expect(char c) {
    if (accept(c)) return Ok{};
    if (pos_ >= text_.size()) return error(std::string("expected '") + c + "' but the expression ended");
    return error(std::string("expected '") + c + "'");
  }

  // Loops, not recursion, along a chain: only a nesting level recurses (parseFactor).
  Expected<NodeId> parseSum(uint32_t depth) {
    QGPU_TRY(lhs, parseProduct(depth));
    for (;;) {
      skipSpace();
      size_t at = pos_;
      ExprKind kind;
      if (accept('+')) kind = ExprKind::Add;
      else if (accept('-')) kind = ExprKind::Sub;
      else return lhs;
      QGPU_CHECK(countOperation(at));
      QGPU_TRY(rhs, parseProduct(depth));
      if (!node(lhs).isVectorShape() || !node(rhs).isVectorShape() ||
          node(lhs).cols != node(rhs).cols)
        return errorAt(std::string(kind == ExprKind::Add ? "'+'" : "'-'") +
                           " needs two vectors of the same length, got " + shapeName(lhs) +
                           " and " + shapeName(rhs),
                       at);
      lhs = make(kind, {lhs, rhs}, 0, node(lhs).cols, at);
    }
  }

  Expected<NodeId> parseProduct(uint32_t depth) {
    QGPU_TRY(lhs, parseFactor(depth));
    for (;;) {
      skipSpace();
      size_t at = pos_;
      if (accept('@')) {
        QGPU_CHECK(countOperation(at));
        QGPU_TRY(rhs, parseFactor(depth));
        QGPU_TRY(product, matmulLike(lhs, rhs, at));
        lhs = product;
      } else if (accept('*')) {
        QGPU_CHECK(countOperation(at));
        QGPU_TRY(rhs, parseFactor(depth));
        if (node(lhs).isScalarShape() && node(rhs).isVectorShape()) {
          lhs = make(ExprKind::Scale, {lhs, rhs}, 0, node(rhs).cols, at);
        } else if (node(lhs).isVectorShape() && node(rhs).isScalarShape()) {
          lhs = make(ExprKind::Scale, {rhs, lhs}, 0, node(lhs).cols, at);
        } else {
          return errorAt("'*' scales a vector by an integer, got " + shapeName(lhs) + " and " +
                             shapeName(rhs) + " (use '@' for products of vectors and matrices)",
                         at);
        }
      } else {
        return lhs;
      }
    }
  }

  Expected<NodeId> matmulLike(NodeId lhs, NodeId rhs, size_t at) {
    const ExprNode& l = node(lhs);
    const ExprNode& r = node(rhs);
    if (l.isVectorShape() && r.isVectorShape() && l.cols == r.cols)
      return make(ExprKind::Dot, {lhs, rhs}, 0, 0, at);
    if (l.rows > 0 && r.rows > 0 && l.cols == r.rows && l.rows == l.cols && r.rows == r.cols) {
      uint32_t n = l.rows;
      return make(ExprKind::MatMul, {lhs, rhs}, n, n, at);
    }
    if (l.rows > 0 && r.isVectorShape() && l.cols == r.cols) {
      uint32_t n = l.rows;
      return make(ExprKind::MatVec, {lhs, rhs}, 0, n, at);
    }
    return errorAt("'@' needs vectors of equal length, square matrices of equal size, or a matrix "
                   "and a vector of matching size; got " +
                       shapeName(lhs) + " and " + shapeName(rhs),
                   at);
  }

  // `depth` is the number of '(', '|' and calls around this factor.
  Expected<NodeId> parseFactor(uint32_t depth) {
    skipSpace();
    if (pos_ >= text_.size()) return error("expected a value but the expression ended");
    size_t at = pos_;
    char c = text_[pos_];
    bool nests = c == '(' || c == '|' || std::isalpha(static_cast<unsigned char>(c));
    if (nests && depth + 1 > kMaxExprDepth)
      return error("expression nested too deeply (more than " + std::to_string(kMaxExprDepth) +
                   " levels of '(', '|' and calls)");
    if (c == '(') {
      ++pos_;
      QGPU_TRY(inner, parseSum(depth + 1));
      QGPU_CHECK(expect(')'));
      return inner;
    }
    if (c == '|') {
      ++pos_;
      QGPU_CHECK(countOperation(at));
      QGPU_TRY(inner, parseSum(depth + 1));
      QGPU_CHECK(expect('|'));
      QGPU_CHECK(expect('^'));
      QGPU_CHECK(expect('2'));
      if (!node(inner).isVectorShape())
        return errorAt("|v|^2 needs a vector, got " + shapeName(inner), at);
      return make(ExprKind::SqLen, {inner}, 0, 0, at);
    }
    if (c == '[') return parseBracket();
    if (std::isalpha(static_cast<unsigned char>(c))) return parseCall(depth, at);
    return parseScalar();
  }

  Expected<NodeId> parseCall(uint32_t depth, size_t at) {
    size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (name != "dot" && name != "sqlen") return errorAt("unknown function '" + name + "'", at);
    QGPU_CHECK(countOperation(at));
    QGPU_CHECK(expect('('));
    QGPU_TRY(first, parseSum(depth + 1));
    if (name == "sqlen") {
      QGPU_CHECK(expect(')'));
      if (!node(first).isVectorShape())
        return errorAt("sqlen needs a vector, got " + shapeName(first), at);
      return make(ExprKind::SqLen, {first}, 0, 0, at);
    }
    QGPU_CHECK(expect(','));
    QGPU_TRY(second, parseSum(depth + 1));
    QGPU_CHECK(expect(')'));
    const ExprNode& u = node(first);
    const ExprNode& v = node(second);
    if (!u.isVectorShape() || !v.isVectorShape() || u.cols != v.cols)
      return errorAt("dot needs two vectors of the same length, got " + shapeName(first) +
                         " and " + shapeName(second),
                     at);
    return make(ExprKind::Dot, {first, second}, 0, 0, at);
  }

  Expected<int32_t> parseInt() {
    skipSpace();
    size_t start = pos_;
    bool negative = false;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) {
      negative = text_[pos_] == '-';
      ++pos_;
    }
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      return errorAt("expected an integer", start);
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      value = value * 10 + (text_[pos_] - '0');
      if (value > int64_t{std::numeric_limits<int32_t>::max()} + 1)
        return errorAt("integer out of 32-bit range", start);
      ++pos_;
    }
    if (negative) value = -value;
    if (value > std::numeric_limits<int32_t>::max())
      return errorAt("integer out of 32-bit range", start);
    return static_cast<int32_t>(value);
  }

  Expected<NodeId> parseScalar() {
    size_t at = pos_;
    QGPU_TRY(value, parseInt());
    ExprNode scalar;
    scalar.literal.data = {value};
    scalar.column = static_cast<uint32_t>(at + 1);
    return push(std::move(scalar));
  }

  // '[' starts a vector or a matrix; the first element decides which.
  Expected<NodeId> parseBracket() {
    size_t at = pos_;
    ++pos_;  // '['
    skipSpace();
    ExprNode literal;
    literal.column = static_cast<uint32_t>(at + 1);
    Value& v = literal.literal;
    if (pos_ < text_.size() && text_[pos_] == '[') {
      for (;;) {
        skipSpace();
        size_t rowAt = pos_;
        QGPU_CHECK(expect('['));
        size_t rowStart = v.data.size();
        QGPU_CHECK(parseIntList(v.data));
        size_t rowLength = v.data.size() - rowStart;
        if (v.rows > 0 && rowLength != v.cols)
          return errorAt("matrix rows must have equal length (" + std::to_string(v.cols) + ")", rowAt);
        v.cols = static_cast<uint32_t>(rowLength);
        ++v.rows;
        if (accept(']')) break;
        QGPU_CHECK(expect(','));
      }
    } else {
      QGPU_CHECK(parseIntList(v.data));
      v.cols = static_cast<uint32_t>(v.data.size());
    }
    literal.rows = v.rows;
    literal.cols = v.cols;
    return push(std::move(literal));
  }

  // INT (',' INT)* ']' appended to `out` (the literal's elements so far) — the opening bracket is
  // already consumed.
  Status parseIntList(std::vector<int32_t>& out) {
    for (;;) {
      skipSpace();
      if (out.size() == kMaxLiteralElements)
        return error("a vector or matrix holds at most " + std::to_string(kMaxLiteralElements) +
                     " integers (the machine's global memory)");
      QGPU_TRY(value, parseInt());
      out.push_back(value);
      if (accept(']')) return Ok{};
      QGPU_CHECK(expect(','));
    }
  }

  // Called at each operator before its right operand is parsed, so a long chain stops at the
  // first operator over the limit.
  Status countOperation(size_t at) {
    if (operations_ == kMaxExprOperations)
      return errorAt("more than " + std::to_string(kMaxExprOperations) +
                         " operations (each runs one kernel)",
                     at);
    ++operations_;
    return Ok{};
  }

  NodeId push(ExprNode n) {
    tree_.nodes.push_back(std::move(n));
    return static_cast<NodeId>(tree_.nodes.size() - 1);
  }

  NodeId make(ExprKind kind, std::vector<NodeId> args, uint32_t rows, uint32_t cols, size_t at) {
    ExprNode n;
    n.kind = kind;
    n.args = std::move(args);
    n.rows = rows;
    n.cols = cols;
    n.column = static_cast<uint32_t>(at + 1);
    return push(std::move(n));
  }

  std::string shapeName(NodeId id) const {
    const ExprNode& e = node(id);
    if (e.rows > 0) return std::to_string(e.rows) + "x" + std::to_string(e.cols) + " matrix";
    if (e.cols > 0) return "vector of " + std::to_string(e.cols);
    return "integer";
  }

  std::string_view text_;
  size_t pos_ = 0;
  ExprTree tree_;
  uint32_t operations_ = 0;
};

}  // namespace

std::string Value::str() const {
  auto list = [&](size_t from, size_t count) {
    std::string out = "[";
    for (size_t i = 0; i < count; ++i) out += (i ? ", " : "") + std::to_string(data[from + i]);
    return out + "]";
  };
  if (isScalar()) return data.empty() ? "" : std::to_string(data[0]);
  if (isVector()) return list(0, cols);
  std::string out = "[";
  for (uint32_t r = 0; r < rows; ++r) out += (r ? ", " : "") + list(size_t{r} * cols, cols);
  return out + "]";
}

Expected<ExprTree> parseExpr(std::string_view text) {
  if (text.size() > kMaxExprBytes)
    return makeDiag(ErrorKind::Usage, "expression longer than " + std::to_string(kMaxExprBytes) +
                                          " bytes",
                    SourceLoc{"<expr>", 1, static_cast<uint32_t>(kMaxExprBytes + 1)});
  return Parser(text).parseAll();
}

const char* kernelFor(ExprKind kind) {
  switch (kind) {
    case ExprKind::Literal: return "";
    case ExprKind::Dot: return "dot";
    case ExprKind::MatMul: return "matmul";
    case ExprKind::MatVec: return "matvec";
    case ExprKind::Add: return "vadd";
    case ExprKind::Sub: return "vsub";
    case ExprKind::Scale: return "vscale";
    case ExprKind::SqLen: return "sqlen";
  }
  return "";
}

}  // namespace qgpu::harness
