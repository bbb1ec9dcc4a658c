// Tests for the expression language parser: kinds, shapes, and located errors.
#include "harness/expr.h"

#include <gtest/gtest.h>

namespace qgpu::harness {
namespace {

std::unique_ptr<Expr> parseOk(std::string_view text) {
  auto result = parseExpr(text);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().str());
  return result.ok() ? std::move(result).value() : nullptr;
}

Diag parseFail(std::string_view text) {
  auto result = parseExpr(text);
  EXPECT_FALSE(result.ok()) << text;
  return result.ok() ? Diag{} : result.error();
}

TEST(ExprParser, DotOfTwoVectorsMapsToDotKernel) {
  auto e = parseOk("[1, 2, 3] @ [4, 5, 6]");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ExprKind::Dot);
  EXPECT_STREQ(kernelFor(e->kind), "dot");
  EXPECT_TRUE(e->isScalarShape());
  EXPECT_EQ(e->args[0]->literal.data, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(e->args[1]->literal.data, (std::vector<int32_t>{4, 5, 6}));
}

TEST(ExprParser, MatrixProductKeepsShape) {
  auto e = parseOk("[[1,2],[3,4]] @ [[5,6],[7,8]]");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ExprKind::MatMul);
  EXPECT_EQ(e->rows, 2u);
  EXPECT_EQ(e->cols, 2u);
  EXPECT_EQ(e->args[0]->literal.data, (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(ExprParser, MatrixTimesVectorIsMatVec) {
  auto e = parseOk("[[1,2,3],[4,5,6]] @ [1, 0, -1]");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ExprKind::MatVec);
  EXPECT_EQ(e->cols, 2u);
}

TEST(ExprParser, ScaleAcceptsEitherOrderAndPutsScalarFirst) {
  auto a = parseOk("3 * [1, 2]");
  auto b = parseOk("[1, 2] * -3");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->kind, ExprKind::Scale);
  EXPECT_EQ(b->kind, ExprKind::Scale);
  EXPECT_EQ(b->args[0]->literal.data, (std::vector<int32_t>{-3}));
}

TEST(ExprParser, SquaredLengthTwoSpellings) {
  EXPECT_EQ(parseOk("|[3, 4]|^2")->kind, ExprKind::SqLen);
  EXPECT_EQ(parseOk("sqlen([3, 4])")->kind, ExprKind::SqLen);
}

TEST(ExprParser, NestedOperationsBuildATree) {
  auto e = parseOk("([1, 2] + [3, 4]) @ [1, 1]");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ExprKind::Dot);
  EXPECT_EQ(e->args[0]->kind, ExprKind::Add);
}

TEST(ExprParser, ValuePrintsLikeItsInput) {
  auto e = parseOk("[[1, 2], [3, 4]]");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->literal.str(), "[[1, 2], [3, 4]]");
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

}  // namespace
}  // namespace qgpu::harness
