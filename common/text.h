// qgpu/common/text.h — echoing user input in messages, safely; words in hex.
//
// Contract: `echo(s)` is what every message that repeats user input (an argument, a token, a file
// name) puts in its place: printable ASCII as is, every other byte (control characters, DEL,
// bytes >= 0x80 such as UTF-8 or binary) and the backslash as \xNN, so that a message never
// carries raw terminal control sequences or invalid UTF-8; and at most `maxBytes` bytes of the
// input, followed by "…(N bytes)" naming the input's full size when it was longer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qgpu {

inline constexpr size_t kEchoBytes = 80;  // input bytes shown before "…(N bytes)"

std::string echo(std::string_view input, size_t maxBytes = kEchoBytes);

// A machine word as messages and reports print it: "0x" and 8 lower-case hex digits.
std::string hexWord(uint32_t v);

}  // namespace qgpu
