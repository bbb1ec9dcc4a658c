// The host's two evaluations of an expression (harness/evaluate.h): int32 wrap-around
// (`hostValue`, the conformance check) and exact (`exactValue`, which says when int32 wrapped).
// Expected values are worked by hand in the comments, not by the code under test.
#include "harness/evaluate.h"

#include <gtest/gtest.h>

namespace qgpu::harness {
namespace {

ExprTree parsed(std::string_view text) {
  auto tree = parseExpr(text);
  EXPECT_TRUE(tree.ok()) << (tree.ok() ? "" : tree.error().str());
  return tree.ok() ? std::move(tree).value() : ExprTree{};
}

TEST(ExactValue, DotThatWrapsInInt32) {
  // 2147483647 x 2 = 4294967294 = 2^32 - 2, which int32 reads as -2.
  ExprTree t = parsed("[2147483647] @ [2]");
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "-2");
  ExactValue exact = exactValue(t);
  EXPECT_TRUE(exact.representable);
  EXPECT_TRUE(exact.wrapped());
  EXPECT_EQ(exact.str(), "4294967294");
}

TEST(ExactValue, DotJustInsideInt32DoesNotWrap) {
  // 1073741823 x 2 = 2147483646 = INT32_MAX - 1.
  ExprTree t = parsed("[1073741823] @ [2]");
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "2147483646");
  EXPECT_FALSE(exactValue(t).wrapped());
  EXPECT_EQ(exactValue(t).str(), "2147483646");
}

TEST(ExactValue, SubtractionBelowInt32MinWraps) {
  // -2147483648 - 1 = -2147483649; int32 gives 2147483647.
  ExprTree t = parsed("[-2147483648, 5] - [1, 1]");
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "[2147483647, 4]");
  EXPECT_TRUE(exactValue(t).wrapped());
  EXPECT_EQ(exactValue(t).str(), "[-2147483649, 4]");
}

TEST(ExactValue, LargeNegativeProductPrintsExactly) {
  // -2^31 x (2^31 - 1) = -(2^62 - 2^31) = -4611686016279904256; int32 keeps 2^31 -> -2147483648.
  ExprTree t = parsed("[-2147483648] @ [2147483647]");
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "-2147483648");
  EXPECT_EQ(exactValue(t).str(), "-4611686016279904256");
  EXPECT_TRUE(exactValue(t).wrapped());
}

TEST(ExactValue, ResultBackInRangeIsNotAWrapEvenIfAnIntermediateWas) {
  // (2147483647 + 1) - 1 = 2147483647 exactly: the int32 answer is the true one.
  ExprTree t = parsed("([2147483647] + [1]) - [1]");
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "[2147483647]");
  EXPECT_FALSE(exactValue(t).wrapped());
}

TEST(ExactValue, BeyondOneHundredTwentyEightBitsIsUnknownAndCountsAsWrapped) {
  // k = (2^31 - 1)^2 ~ 2^62, k x [2^31 - 1] ~ 2^93, and the dot of that with itself ~ 2^186.
  ExprTree t = parsed(
      "dot(([2147483647] @ [2147483647]) * [2147483647], "
      "([2147483647] @ [2147483647]) * [2147483647])");
  ASSERT_FALSE(t.nodes.empty());
  ExactValue exact = exactValue(t);
  EXPECT_FALSE(exact.representable);
  EXPECT_TRUE(exact.wrapped());
  EXPECT_EQ(exact.str(), "?");
}

TEST(ExactValue, MatrixProductKeepsItsShape) {
  // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
  ExprTree t = parsed("[[1, 2], [3, 4]] @ [[5, 6], [7, 8]]");
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "[[19, 22], [43, 50]]");
  EXPECT_EQ(exactValue(t).str(), "[[19, 22], [43, 50]]");
  EXPECT_FALSE(exactValue(t).wrapped());
}

TEST(HostValue, ThousandTermChainWithoutRecursion) {
  // 1025 terms of [1, -1]: [1025, -1025].
  std::string text = "[1, -1]";
  for (int i = 1; i < 1025; ++i) text += " + [1, -1]";
  ExprTree t = parsed(text);
  ASSERT_FALSE(t.nodes.empty());
  EXPECT_EQ(hostValue(t).str(), "[1025, -1025]");
  EXPECT_EQ(exactValue(t).str(), "[1025, -1025]");
}

}  // namespace
}  // namespace qgpu::harness
