// qgpu/fuzz/fuzz_ptx.cpp — libFuzzer target for the PTX front end (host/ptx/parser.h).
//
// Any input: parse() must return (no crash, hang, sanitizer report). When it parses, the module
// must survive print() + parse() unchanged (compare.h); a mismatch traps so libFuzzer saves the
// input. A failed parse must carry a line number within the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "host/ptx/compare.h"
#include "host/ptx/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = qgpu::ptx::parse(text, "fuzz.ptx");
  if (!m.ok()) {
    uint32_t lines = 1;
    for (char c : text) lines += c == '\n';
    if (m.error().loc.line == 0 || m.error().loc.line > lines) __builtin_trap();
    return 0;
  }
  auto again = qgpu::ptx::parse(qgpu::ptx::print(*m), "printed.ptx");
  if (!again.ok()) __builtin_trap();
  if (qgpu::ptx::firstDifference(*m, *again)) __builtin_trap();
  return 0;
}
