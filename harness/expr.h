// qgpu/harness/expr.h — the "normal mode" expression language: small integer linear algebra whose
// every operation runs as a catalog kernel on the machine.
//
// Grammar (integers are 32-bit, written in decimal, optionally negative):
//   expr    := term (('+' | '-') term)*
//   term    := factor (('@' | '*') factor)*
//   factor  := INT | vector | matrix | '(' expr ')' | NAME '(' expr (',' expr)* ')' | '|' expr '|' '^' '2'
//   vector  := '[' INT (',' INT)* ']'
//   matrix  := '[' vector (',' vector)* ']'           (rows of equal length)
// Functions: dot(u, v), sqlen(v). Every operation maps to one catalog kernel (kernels/README.md):
//   u @ v → dot (dot_atomic, one thread per element, when n ≤ 16), A @ B → matmul, A @ v → matvec, u + v → vadd, u - v → vsub, k * v → vscale,
//   |v|^2 and sqlen(v) → sqlen. Scalars combine only as operands of vector operations.
// Parsing is separate from evaluation: parseExpr builds a tree, planning turns it into kernel calls.
//
// Size limits (each refused with a Usage diag whose column points at the first thing over it):
// the text's length (kMaxExprBytes), the operations (kMaxExprOperations: each is one kernel
// launch), the nesting of '(', '|' and calls (kMaxExprDepth: the parser recurses once per level,
// nothing else does), and the elements of one vector or matrix literal (kMaxLiteralElements: the
// machine's global memory holds no more). The tree is a flat array in which every operand comes
// before its operation, so evaluating, copying and destroying it never recurses, however long a
// chain `a + b + c + ...` is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::harness {

inline constexpr size_t kMaxExprBytes = 65536;
inline constexpr uint32_t kMaxExprOperations = 1024;
inline constexpr uint32_t kMaxExprDepth = 64;
inline constexpr uint32_t kMaxLiteralElements = machine::kGlobalWords;  // 126

// A value: a scalar (rows = cols = 0), a vector (rows = 0, cols = n) or a matrix (rows × cols).
struct Value {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<int32_t> data;  // row-major

  bool isScalar() const { return rows == 0 && cols == 0; }
  bool isVector() const { return rows == 0 && cols > 0; }
  bool isMatrix() const { return rows > 0; }
  std::string str() const;  // "32", "[1, 2]", "[[1, 2], [3, 4]]"
  bool operator==(const Value&) const = default;
};

enum class ExprKind : uint8_t {
  Literal,  // a value written in the expression
  Dot,      // u @ v (vectors) or dot(u, v)
  MatMul,   // A @ B (matrices)
  MatVec,   // A @ v
  Add,      // u + v
  Sub,      // u - v
  Scale,    // k * v (either order)
  SqLen,    // |v|^2 or sqlen(v)
};

struct ExprNode {
  ExprKind kind = ExprKind::Literal;
  Value literal;                        // Literal only
  std::vector<uint32_t> args;           // operands: indexes into ExprTree::nodes, below this node's
  uint32_t rows = 0, cols = 0;          // the result's shape (as in Value), inferred while parsing
  uint32_t column = 0;                  // 1-based column of the operator, for messages

  bool isScalarShape() const { return rows == 0 && cols == 0; }
  bool isVectorShape() const { return rows == 0 && cols > 0; }
};

struct ExprTree {
  std::vector<ExprNode> nodes;  // every operand before its operation; the root is the last node

  const ExprNode& root() const { return nodes.back(); }
  const ExprNode& arg(const ExprNode& node, size_t i) const { return nodes[node.args[i]]; }
};

// Parses an expression and infers every node's shape; errors (syntax, shape mismatch, integer
// out of range, a size limit) are Usage diags whose location column points at the problem.
Expected<ExprTree> parseExpr(std::string_view text);

// The catalog kernel that computes `kind` ("dot", "matmul", ...); empty for Literal.
const char* kernelFor(ExprKind kind);

}  // namespace qgpu::harness
