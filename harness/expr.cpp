// qgpu/harness/expr.cpp — recursive-descent parser with shape inference for the expression language.
#include "harness/expr.h"

#include <cctype>
#include <limits>

namespace qgpu::harness {

namespace {

// Nesting deeper than this is refused: the parser recurses once per level.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<std::unique_ptr<Expr>> parseAll() {
    auto result = parseSum(0);
    if (!result.ok()) return result;
    skipSpace();
    if (pos_ != text_.size()) return error("unexpected '" + std::string(1, text_[pos_]) + "'");
    return result;
  }

 private:
  Diag error(const std::string& message) const { return errorAt(message, pos_); }
  Diag errorAt(const std::string& message, size_t at) const {
    return makeDiag(ErrorKind::Usage, message, SourceLoc{"<expr>", 1, static_cast<uint32_t>(at + 1)});
  }

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

  Expected<std::unique_ptr<Expr>> parseSum(int depth) {
    QGPU_TRY(lhs, parseProduct(depth));
    for (;;) {
      skipSpace();
      size_t at = pos_;
      ExprKind kind;
      if (accept('+')) kind = ExprKind::Add;
      else if (accept('-')) kind = ExprKind::Sub;
      else return lhs;
      QGPU_TRY(rhs, parseProduct(depth));
      if (!lhs->isVectorShape() || !rhs->isVectorShape() || lhs->cols != rhs->cols)
        return errorAt(std::string(kind == ExprKind::Add ? "'+'" : "'-'") +
                           " needs two vectors of the same length, got " + shapeName(*lhs) +
                           " and " + shapeName(*rhs),
                       at);
      uint32_t n = lhs->cols;
      lhs = combine(kind, std::move(lhs), std::move(rhs), 0, n, at);
    }
  }

  Expected<std::unique_ptr<Expr>> parseProduct(int depth) {
    QGPU_TRY(lhs, parseFactor(depth));
    for (;;) {
      skipSpace();
      size_t at = pos_;
      if (accept('@')) {
        QGPU_TRY(rhs, parseFactor(depth));
        QGPU_TRY(node, matmulLike(std::move(lhs), std::move(rhs), at));
        lhs = std::move(node);
      } else if (accept('*')) {
        QGPU_TRY(rhs, parseFactor(depth));
        if (lhs->isScalarShape() && rhs->isVectorShape()) {
          uint32_t n = rhs->cols;
          lhs = combine(ExprKind::Scale, std::move(lhs), std::move(rhs), 0, n, at);
        } else if (lhs->isVectorShape() && rhs->isScalarShape()) {
          uint32_t n = lhs->cols;
          lhs = combine(ExprKind::Scale, std::move(rhs), std::move(lhs), 0, n, at);
        } else {
          return errorAt("'*' scales a vector by an integer, got " + shapeName(*lhs) + " and " +
                             shapeName(*rhs) + " (use '@' for products of vectors and matrices)",
                         at);
        }
      } else {
        return lhs;
      }
    }
  }

  Expected<std::unique_ptr<Expr>> matmulLike(std::unique_ptr<Expr> lhs, std::unique_ptr<Expr> rhs,
                                             size_t at) {
    if (lhs->isVectorShape() && rhs->isVectorShape() && lhs->cols == rhs->cols)
      return combine(ExprKind::Dot, std::move(lhs), std::move(rhs), 0, 0, at);
    if (lhs->rows > 0 && rhs->rows > 0 && lhs->cols == rhs->rows && lhs->rows == lhs->cols &&
        rhs->rows == rhs->cols) {
      uint32_t n = lhs->rows;
      return combine(ExprKind::MatMul, std::move(lhs), std::move(rhs), n, n, at);
    }
    if (lhs->rows > 0 && rhs->isVectorShape() && lhs->cols == rhs->cols) {
      uint32_t n = lhs->rows;
      return combine(ExprKind::MatVec, std::move(lhs), std::move(rhs), 0, n, at);
    }
    return errorAt("'@' needs vectors of equal length, square matrices of equal size, or a matrix "
                   "and a vector of matching size; got " +
                       shapeName(*lhs) + " and " + shapeName(*rhs),
                   at);
  }

  Expected<std::unique_ptr<Expr>> parseFactor(int depth) {
    if (depth > kMaxDepth) return error("expression nested too deeply");
    skipSpace();
    if (pos_ >= text_.size()) return error("expected a value but the expression ended");
    size_t at = pos_;
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      QGPU_TRY(inner, parseSum(depth + 1));
      QGPU_CHECK(expect(')'));
      return inner;
    }
    if (c == '|') {
      ++pos_;
      QGPU_TRY(inner, parseSum(depth + 1));
      QGPU_CHECK(expect('|'));
      QGPU_CHECK(expect('^'));
      QGPU_CHECK(expect('2'));
      if (!inner->isVectorShape()) return errorAt("|v|^2 needs a vector, got " + shapeName(*inner), at);
      return single(ExprKind::SqLen, std::move(inner), at);
    }
    if (c == '[') return parseBracket();
    if (std::isalpha(static_cast<unsigned char>(c))) return parseCall(depth, at);
    return parseScalar();
  }

  Expected<std::unique_ptr<Expr>> parseCall(int depth, size_t at) {
    size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (name != "dot" && name != "sqlen") return errorAt("unknown function '" + name + "'", at);
    QGPU_CHECK(expect('('));
    QGPU_TRY(first, parseSum(depth + 1));
    if (name == "sqlen") {
      QGPU_CHECK(expect(')'));
      if (!first->isVectorShape()) return errorAt("sqlen needs a vector, got " + shapeName(*first), at);
      return single(ExprKind::SqLen, std::move(first), at);
    }
    QGPU_CHECK(expect(','));
    QGPU_TRY(second, parseSum(depth + 1));
    QGPU_CHECK(expect(')'));
    if (!first->isVectorShape() || !second->isVectorShape() || first->cols != second->cols)
      return errorAt("dot needs two vectors of the same length, got " + shapeName(*first) + " and " +
                         shapeName(*second),
                     at);
    return combine(ExprKind::Dot, std::move(first), std::move(second), 0, 0, at);
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

  Expected<std::unique_ptr<Expr>> parseScalar() {
    size_t at = pos_;
    QGPU_TRY(value, parseInt());
    auto node = std::make_unique<Expr>();
    node->literal.data = {value};
    node->column = static_cast<uint32_t>(at + 1);
    return node;
  }

  // '[' starts a vector or a matrix; the first element decides which.
  Expected<std::unique_ptr<Expr>> parseBracket() {
    size_t at = pos_;
    ++pos_;  // '['
    skipSpace();
    auto node = std::make_unique<Expr>();
    node->column = static_cast<uint32_t>(at + 1);
    Value& v = node->literal;
    if (pos_ < text_.size() && text_[pos_] == '[') {
      for (;;) {
        skipSpace();
        size_t rowAt = pos_;
        QGPU_CHECK(expect('['));
        std::vector<int32_t> row;
        QGPU_CHECK(parseIntList(row));
        if (v.rows > 0 && row.size() != v.cols)
          return errorAt("matrix rows must have equal length (" + std::to_string(v.cols) + ")", rowAt);
        v.cols = static_cast<uint32_t>(row.size());
        v.data.insert(v.data.end(), row.begin(), row.end());
        ++v.rows;
        if (accept(']')) break;
        QGPU_CHECK(expect(','));
      }
    } else {
      QGPU_CHECK(parseIntList(v.data));
      v.cols = static_cast<uint32_t>(v.data.size());
    }
    node->rows = v.rows;
    node->cols = v.cols;
    return node;
  }

  // INT (',' INT)* ']' — the opening bracket is already consumed.
  Status parseIntList(std::vector<int32_t>& out) {
    for (;;) {
      QGPU_TRY(value, parseInt());
      out.push_back(value);
      if (accept(']')) return Ok{};
      QGPU_CHECK(expect(','));
    }
  }

  static std::unique_ptr<Expr> combine(ExprKind kind, std::unique_ptr<Expr> a,
                                       std::unique_ptr<Expr> b, uint32_t rows, uint32_t cols,
                                       size_t at) {
    auto node = std::make_unique<Expr>();
    node->kind = kind;
    node->args.push_back(std::move(a));
    node->args.push_back(std::move(b));
    node->rows = rows;
    node->cols = cols;
    node->column = static_cast<uint32_t>(at + 1);
    return node;
  }

  static std::unique_ptr<Expr> single(ExprKind kind, std::unique_ptr<Expr> a, size_t at) {
    auto node = std::make_unique<Expr>();
    node->kind = kind;
    node->args.push_back(std::move(a));
    node->column = static_cast<uint32_t>(at + 1);
    return node;
  }

  static std::string shapeName(const Expr& e) {
    if (e.rows > 0) return std::to_string(e.rows) + "x" + std::to_string(e.cols) + " matrix";
    if (e.cols > 0) return "vector of " + std::to_string(e.cols);
    return "integer";
  }

  std::string_view text_;
  size_t pos_ = 0;
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

Expected<std::unique_ptr<Expr>> parseExpr(std::string_view text) {
  if (text.size() > 65536) return makeDiag(ErrorKind::Usage, "expression longer than 64 KiB");
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
