// qgpu/host/ptx/tests/parser_test.cpp — the parser on real compiler output.
#include "host/ptx/parser.h"

#include <gtest/gtest.h>

#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

using testing::allSamples;

TEST(PtxParser, ParsesEverySample) {
  auto samples = allSamples();
  ASSERT_GE(samples.size(), 24u);
  for (const auto& s : samples) {
    auto m = parse(s.text, s.name);
    EXPECT_TRUE(m.ok()) << s.name << ": " << (m.ok() ? "" : m.error().str());
  }
}

}  // namespace
}  // namespace qgpu::ptx
