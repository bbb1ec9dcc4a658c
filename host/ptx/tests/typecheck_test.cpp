// qgpu/host/ptx/tests/typecheck_test.cpp — verify()'s operand typing (kTypeRules): for each rule
// the statement ptxas accepts parses, and its twin that ptxas rejects is PtxInvalid at the line and
// column of the offending operand (or of the instruction, for a wrong type suffix).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/ptx/parser.h"
#include "host/ptx/tests/typecheck_cases.h"

namespace qgpu::ptx {
namespace {

using ::testing::HasSubstr;

TEST(PtxTypeCheck, AcceptsEachAcceptedTwin) {
  for (const auto& c : testing::typeCases()) {
    auto m = parse(testing::typeCaseModule(c.accepted), "t.ptx");
    EXPECT_TRUE(m.ok()) << c.rule << ": " << c.accepted << "\n" << (m.ok() ? "" : m.error().str());
  }
}

TEST(PtxTypeCheck, RejectsEachRejectedTwinAtItsOperand) {
  for (const auto& c : testing::typeCases()) {
    auto m = parse(testing::typeCaseModule(c.rejected), "t.ptx");
    ASSERT_FALSE(m.ok()) << c.rule << ": " << c.rejected;
    EXPECT_EQ(m.error().kind, ErrorKind::PtxInvalid) << c.rule << ": " << m.error().str();
    EXPECT_EQ(m.error().loc.line, testing::kTypeCaseLine) << c.rule << ": " << m.error().str();
    std::string text = c.rejected;
    ASSERT_NE(text.find(c.at), std::string::npos) << c.rule;
    EXPECT_EQ(m.error().loc.column, text.find(c.at) + 1) << c.rule << ": " << m.error().str();
    EXPECT_THAT(m.error().message, HasSubstr(c.mention)) << c.rule;
  }
}

TEST(PtxTypeCheck, SixteenBitAddressRegisterIsUnsupportedNotInvalid) {
  // ptxas accepts `ld.shared.u32 %r1, [%h1]`; the front end refuses it as outside its subset.
  auto m = parse(testing::typeCaseModule("ld.shared.u32 %r1, [%h1];"), "t.ptx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::PtxUnsupported) << m.error().str();
  EXPECT_TRUE(parse(testing::typeCaseModule("ld.shared.u32 %r1, [%r1];"), "t.ptx").ok());
}

}  // namespace
}  // namespace qgpu::ptx
