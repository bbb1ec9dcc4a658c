// qgpu/host/lower/tests/huge_test.cpp — inputs at the front end's 4 MiB cap get an answer, not a
// crash or a run of minutes: a kernel that cannot fit the 32 x 16-op ROM is OverLimit (named by
// the early check, before the passes whose cost grows with the program), and one whose code is
// unreachable or dead lowers to a small program. The time bound itself is a hostile-input case
// (corpus/hostile/, max_seconds) and a benchmark (bench/pipeline_bench.cpp), not a timed test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/lower/lower.h"
#include "host/lower/tests/huge_ptx.h"
#include "host/ptx/parser.h"

namespace qgpu::lower {
namespace {

using testing::HugeShape;
using ::testing::HasSubstr;

constexpr size_t kCap = ptx::kMaxInputBytes;  // 4 MiB

Expected<machine::Program> lowerHuge(HugeShape shape, size_t bytes) {
  std::string text = testing::hugePtx(shape, bytes);
  EXPECT_LE(text.size(), bytes);
  EXPECT_GT(text.size(), bytes - 200);  // the generator filled the budget
  QGPU_TRY(module, ptx::parse(text, "huge.ptx"));
  LowerOptions options;
  options.params = {0};
  return lower(module, options);
}

TEST(LowerHuge, FourMegabyteStraightLineKernelIsOverLimitAtTheRomCheck) {
  auto p = lowerHuge(HugeShape::Straight, kCap);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::OverLimit) << p.error().str();
  EXPECT_THAT(p.error().message, HasSubstr("operations after cleanup; the program ROM holds 512"));
}

TEST(LowerHuge, MegabyteBranchyKernelsAreOverLimit) {  // 1 MB: the shapes, not the size, matter here
  for (HugeShape shape : {HugeShape::Branches, HugeShape::Diamonds, HugeShape::Stores}) {
    auto p = lowerHuge(shape, kCap / 4);
    ASSERT_FALSE(p.ok()) << static_cast<int>(shape);
    EXPECT_EQ(p.error().kind, ErrorKind::OverLimit) << p.error().str();
  }
}

TEST(LowerHuge, FourMegabyteKernelWithUnreachableBodyLowersToAnEmptyProgram) {
  auto p = lowerHuge(HugeShape::Unreachable, kCap);
  ASSERT_TRUE(p.ok()) << p.error().str();
  size_t ops = 0;
  for (const auto& b : p->blocks) ops += b.ops.size();
  EXPECT_EQ(ops, 0u);  // `ret` comes first: nothing runs
}

TEST(LowerHuge, FourMegabyteKernelsOfEmptyJumpsOrDeadCodeLowerToOneStore) {
  for (HugeShape shape : {HugeShape::EmptyJumps, HugeShape::DeadConsts}) {
    auto p = lowerHuge(shape, kCap);
    ASSERT_TRUE(p.ok()) << static_cast<int>(shape) << ": " << p.error().str();
    size_t stores = 0, blocks = p->blocks.size();
    for (const auto& b : p->blocks)
      for (const auto& op : b.ops) stores += op.op == machine::Op::St;
    EXPECT_EQ(stores, 1u) << static_cast<int>(shape);  // out[0] = tid
    EXPECT_EQ(blocks, 1u) << static_cast<int>(shape);
  }
}

// The early check's twin: just under the ROM, the same shape is not refused by it.
TEST(LowerHuge, StraightLineKernelThatFitsIsNotRefused) {
  auto p = lowerHuge(HugeShape::Straight, 2000);
  ASSERT_TRUE(p.ok()) << p.error().str();
}

}  // namespace
}  // namespace qgpu::lower
