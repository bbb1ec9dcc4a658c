// The content digest against the published FNV-1a 64 test vectors (not values computed here).
#include "common/digest.h"

#include <gtest/gtest.h>

namespace qgpu {
namespace {

TEST(Digest, MatchesPublishedFnv1a64Vectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Digest, ChainsAcrossPieces) {
  EXPECT_EQ(fnv1a64("bar", fnv1a64("foo")), fnv1a64("foobar"));
}

TEST(Digest, PrintsWithItsAlgorithmName) {
  EXPECT_EQ(digestString(0xaf63dc4c8601ec8cull), "fnv1a64:af63dc4c8601ec8c");
}

}  // namespace
}  // namespace qgpu
