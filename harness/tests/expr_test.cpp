// Tests for the expression language parser: kinds, shapes, and located errors.
#include "harness/expr.h"

#include <gtest/gtest.h>

namespace qgpu::harness {
namespace {

// The parsed tree, or an empty one (root() must not be called then: tests ASSERT first).
ExprTree parseOk(std::string_view text) {
  auto result = parseExpr(text);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().str());
  return result.ok() ? std::move(result).value() : ExprTree{};
}

Diag parseFail(std::string_view text) {
  auto result = parseExpr(text);
  EXPECT_FALSE(result.ok()) << text;
  return result.ok() ? Diag{} : result.error();
}

TEST(ExprParser, DotOfTwoVectorsMapsToDotKernel) {
  ExprTree t = parseOk("[1, 2, 3] @ [4, 5, 6]");
  ASSERT_EQ(t.nodes.size(), 3u);
  const ExprNode& e = t.root();
  EXPECT_EQ(e.kind, ExprKind::Dot);
  EXPECT_STREQ(kernelFor(e.kind), "dot");
  EXPECT_TRUE(e.isScalarShape());
  EXPECT_EQ(t.arg(e, 0).literal.data, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(t.arg(e, 1).literal.data, (std::vector<int32_t>{4, 5, 6}));
}

TEST(ExprParser, MatrixProductKeepsShape) {
  ExprTree t = parseOk("[[1,2],[3,4]] @ [[5,6],[7,8]]");
  ASSERT_EQ(t.nodes.size(), 3u);
  const ExprNode& e = t.root();
  EXPECT_EQ(e.kind, ExprKind::MatMul);
  EXPECT_EQ(e.rows, 2u);
  EXPECT_EQ(e.cols, 2u);
  EXPECT_EQ(t.arg(e, 0).literal.data, (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(ExprParser, MatrixTimesVectorIsMatVec) {
  ExprTree t = parseOk("[[1,2,3],[4,5,6]] @ [1, 0, -1]");
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.root().kind, ExprKind::MatVec);
  EXPECT_EQ(t.root().cols, 2u);
}

TEST(ExprParser, ScaleAcceptsEitherOrderAndPutsScalarFirst) {
  ExprTree a = parseOk("3 * [1, 2]");
  ExprTree b = parseOk("[1, 2] * -3");
  ASSERT_EQ(a.nodes.size(), 3u);
  ASSERT_EQ(b.nodes.size(), 3u);
  EXPECT_EQ(a.root().kind, ExprKind::Scale);
  EXPECT_EQ(b.root().kind, ExprKind::Scale);
  EXPECT_EQ(b.arg(b.root(), 0).literal.data, (std::vector<int32_t>{-3}));
}

TEST(ExprParser, SquaredLengthTwoSpellings) {
  ExprTree bars = parseOk("|[3, 4]|^2");
  ExprTree call = parseOk("sqlen([3, 4])");
  ASSERT_EQ(bars.nodes.size(), 2u);
  ASSERT_EQ(call.nodes.size(), 2u);
  EXPECT_EQ(bars.root().kind, ExprKind::SqLen);
  EXPECT_EQ(call.root().kind, ExprKind::SqLen);
}

TEST(ExprParser, NestedOperationsBuildATree) {
  ExprTree t = parseOk("([1, 2] + [3, 4]) @ [1, 1]");
  ASSERT_EQ(t.nodes.size(), 5u);
  EXPECT_EQ(t.root().kind, ExprKind::Dot);
  EXPECT_EQ(t.arg(t.root(), 0).kind, ExprKind::Add);
}

TEST(ExprParser, ValuePrintsLikeItsInput) {
  ExprTree t = parseOk("[[1, 2], [3, 4]]");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.root().literal.str(), "[[1, 2], [3, 4]]");
}

TEST(ExprParser, RejectsDotOfDifferentLengthsAtTheOperator) {
  Diag d = parseFail("[1, 2] @ [1, 2, 3]");
  EXPECT_EQ(d.kind, ErrorKind::Usage);
  EXPECT_EQ(d.loc.column, 8u);
  EXPECT_NE(d.message.find("vector of 2"), std::string::npos) << d.message;
}

TEST(ExprParser, RejectsRaggedMatrix) {
  Diag d = parseFail("[[1, 2], [3]]");
  EXPECT_NE(d.message.find("equal length"), std::string::npos);
  EXPECT_EQ(d.loc.column, 10u);
}

TEST(ExprParser, RejectsOutOfRangeInteger) {
  EXPECT_NE(parseFail("[2147483648]").message.find("32-bit"), std::string::npos);
  EXPECT_TRUE(parseExpr("[-2147483648]").ok());
}

TEST(ExprParser, RejectsTrailingGarbageAndTruncation) {
  EXPECT_EQ(parseFail("[1, 2] @ [3, 4] x").loc.column, 17u);
  EXPECT_NE(parseFail("[1, 2").message.find("ended"), std::string::npos);
  EXPECT_NE(parseFail("").message.find("ended"), std::string::npos);
}

TEST(ExprParser, RejectsUnknownFunctionAndDeepNesting) {
  EXPECT_NE(parseFail("cross([1], [2])").message.find("unknown function"), std::string::npos);
  EXPECT_NE(parseFail(std::string(200, '(') + "1" + std::string(200, ')')).message.find("deeply"),
            std::string::npos);
}

TEST(ExprParser, RejectsScalingTwoVectors) {
  EXPECT_NE(parseFail("[1] * [2]").message.find("'*'"), std::string::npos);
}

// ---- Size limits (expr.h): each at the limit parses, one over it is a located Usage error ----

std::string chain(size_t terms) {  // "[1] + [1] + ...": the k-th '+' (1-based) is at column 6k - 1
  std::string text = "[1]";
  for (size_t i = 1; i < terms; ++i) text += " + [1]";
  return text;
}

TEST(ExprLimits, ChainOfMaxOperationsParsesFlat) {
  ExprTree t = parseOk(chain(kMaxExprOperations + 1));
  ASSERT_EQ(t.nodes.size(), 2 * kMaxExprOperations + 1);
  EXPECT_EQ(t.root().kind, ExprKind::Add);
  // Every operand comes before its operation: evaluation can walk the array in order.
  for (size_t i = 0; i < t.nodes.size(); ++i)
    for (uint32_t a : t.nodes[i].args) EXPECT_LT(a, i);
}

TEST(ExprLimits, OneOperationTooManyIsRefusedAtItsOperator) {
  Diag d = parseFail(chain(kMaxExprOperations + 2));
  EXPECT_EQ(d.kind, ErrorKind::Usage);
  EXPECT_EQ(d.loc.column, 6 * (kMaxExprOperations + 1) - 1);  // the 1025th '+'
  EXPECT_NE(d.message.find("more than 1024 operations"), std::string::npos) << d.message;
}

TEST(ExprLimits, TwoThousandTermChainIsRefusedNotCrashed) {
  EXPECT_EQ(parseFail(chain(2000)).kind, ErrorKind::Usage);
}

TEST(ExprLimits, NestingAtTheDepthLimitParses) {
  std::string text = std::string(kMaxExprDepth, '(') + "[1] + [2]" + std::string(kMaxExprDepth, ')');
  ExprTree t = parseOk(text);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.root().kind, ExprKind::Add);
}

TEST(ExprLimits, NestingOneLevelDeeperIsRefusedAtTheOpening) {
  std::string text =
      std::string(kMaxExprDepth + 1, '(') + "[1] + [2]" + std::string(kMaxExprDepth + 1, ')');
  Diag d = parseFail(text);
  EXPECT_EQ(d.kind, ErrorKind::Usage);
  EXPECT_EQ(d.loc.column, kMaxExprDepth + 1);  // the 65th '('
  EXPECT_NE(d.message.find("nested too deeply"), std::string::npos) << d.message;
}

TEST(ExprLimits, CallsAndBarsCountAsNesting) {
  std::string calls;
  for (uint32_t i = 0; i < kMaxExprDepth; ++i) calls += "sqlen(";
  // 64 calls nest 64 levels; the 65th call (at column 6 x 64 + 1) is one too many.
  Diag deep = parseFail(calls + "sqlen([1])" + std::string(kMaxExprDepth + 1, ')'));
  EXPECT_NE(deep.message.find("nested too deeply"), std::string::npos) << deep.message;
  EXPECT_EQ(deep.loc.column, 6 * kMaxExprDepth + 1);
  Diag bars = parseFail(std::string(kMaxExprDepth + 1, '|') + "[1]");
  EXPECT_NE(bars.message.find("nested too deeply"), std::string::npos) << bars.message;
  EXPECT_EQ(bars.loc.column, kMaxExprDepth + 1);
}

TEST(ExprLimits, DeeplyNestedOperationsWithinTheLimitBuildTheTree) {
  // (((([1] + [1]) + [1]) + [1]) ...) 64 levels deep: 64 additions.
  std::string text = std::string(kMaxExprDepth, '(') + "[1]";
  for (uint32_t i = 0; i < kMaxExprDepth; ++i) text += " + [1])";
  ExprTree t = parseOk(text);
  ASSERT_EQ(t.nodes.size(), 2 * kMaxExprDepth + 1);
  EXPECT_EQ(t.root().kind, ExprKind::Add);
}

std::string ones(size_t n) {  // "1, 1, ..., 1": the k-th 1 (1-based) at offset 3(k - 1)
  std::string text;
  for (size_t i = 0; i < n; ++i) text += i ? ", 1" : "1";
  return text;
}

TEST(ExprLimits, VectorOfMaxElementsParses) {
  ExprTree t = parseOk("[" + ones(kMaxLiteralElements) + "]");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.root().cols, kMaxLiteralElements);
}

TEST(ExprLimits, VectorOneElementLongerIsRefusedAtThatElement) {
  Diag d = parseFail("[" + ones(kMaxLiteralElements + 1) + "]");
  EXPECT_EQ(d.kind, ErrorKind::Usage);
  EXPECT_EQ(d.loc.column, 2 + 3 * kMaxLiteralElements);  // the 127th element
  EXPECT_NE(d.message.find("at most 126 integers"), std::string::npos) << d.message;
}

TEST(ExprLimits, MatrixElementsCountTogether) {
  std::string row = "[" + ones(14) + "]";
  std::string nine = row;
  for (int i = 1; i < 9; ++i) nine += ", " + row;  // 9 x 14 = 126 elements
  ExprTree t = parseOk("[" + nine + "]");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.root().rows, 9u);
  Diag d = parseFail("[" + nine + ", " + row + "]");  // a tenth row: 140
  EXPECT_NE(d.message.find("at most 126 integers"), std::string::npos) << d.message;
}

TEST(ExprLimits, TextAtTheByteLimitParsesAndOneByteMoreIsRefused) {
  std::string at = "[1]" + std::string(kMaxExprBytes - 3, ' ');
  ASSERT_EQ(at.size(), kMaxExprBytes);
  ExprTree t = parseOk(at);
  EXPECT_EQ(t.nodes.size(), 1u);
  Diag d = parseFail(at + " ");
  EXPECT_EQ(d.kind, ErrorKind::Usage);
  EXPECT_NE(d.message.find("longer than 65536 bytes"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace qgpu::harness
