// echo() and hexWord() (common/text.h): the escaping and truncation of user input in messages, and
// words in hex, by hand-written expectations.
#include "common/text.h"

#include <gtest/gtest.h>

#include <string>

namespace qgpu {
namespace {

TEST(Echo, KeepsPrintableAscii) { EXPECT_EQ(echo("dot --tag x_1"), "dot --tag x_1"); }

TEST(Echo, EscapesControlBytesDelBackslashAndNonAscii) {
  EXPECT_EQ(echo(std::string("a\x1b[31mb", 7)), "a\\x1b[31mb");
  EXPECT_EQ(echo(std::string("\0\n\x7f", 3)), "\\x00\\x0a\\x7f");
  EXPECT_EQ(echo("a\\b"), "a\\x5cb");  // an escape in the input cannot pose as one of ours
  EXPECT_EQ(echo("\xc3\xa9\xff"), "\\xc3\\xa9\\xff");
}

TEST(Echo, TruncatesLongInputAndNamesItsSize) {
  std::string big(10'000'000, 'x');
  EXPECT_EQ(echo(big), std::string(80, 'x') + "\xe2\x80\xa6(10000000 bytes)");
  EXPECT_EQ(echo("abcdef", 3), "abc\xe2\x80\xa6(6 bytes)");
}

TEST(Echo, DoesNotTruncateInputOfExactlyTheLimit) {
  EXPECT_EQ(echo(std::string(80, 'y')), std::string(80, 'y'));
  EXPECT_EQ(echo(""), "");
}

TEST(HexWord, PrintsEightLowerCaseDigits) {
  EXPECT_EQ(hexWord(0), "0x00000000");
  EXPECT_EQ(hexWord(0xdeadbeef), "0xdeadbeef");
  EXPECT_EQ(hexWord(0x80000000u), "0x80000000");
}

}  // namespace
}  // namespace qgpu
