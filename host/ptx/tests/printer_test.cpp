// qgpu/host/ptx/tests/printer_test.cpp — print() is canonical and parse(print(m)) == m.
#include <gtest/gtest.h>

#include "host/ptx/compare.h"
#include "host/ptx/parser.h"
#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

using testing::allSamples;

TEST(PtxPrinter, RoundTripsEverySample) {
  for (const auto& s : allSamples()) {
    auto m = parse(s.text, s.name);
    ASSERT_TRUE(m.ok()) << s.name << ": " << m.error().str();
    std::string printed = print(*m);
    auto again = parse(printed, s.name + ".printed");
    ASSERT_TRUE(again.ok()) << s.name << ": " << again.error().str() << "\n" << printed;
    auto diff = firstDifference(*m, *again);
    EXPECT_FALSE(diff.has_value()) << s.name << ": " << *diff << "\n" << printed;
    // Printing is a fixed point after one round.
    EXPECT_EQ(print(*again), printed) << s.name;
  }
}

}  // namespace
}  // namespace qgpu::ptx
