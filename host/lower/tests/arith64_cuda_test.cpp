// qgpu/host/lower/tests/arith64_cuda_test.cpp — `long long`, `short` and `char` arithmetic as
// clang-14 and nvcc compile it (label tools; a missing compiler skips its cases with the reason):
// neg, ordered compares, shifts by a variable amount, mul, the 128-bit product's high half, bit
// fields (bfe, nvcc's bfi; constant and variable position and length), __umul64hi/__mul64hi plus
// an addend (mad.hi.u64/s64), min/max/abs, 64-bit division, narrow conversions and 16-bit division,
// each signed and unsigned, on edge values (0, ±1, INT64_MIN/MAX, the 32-bit boundary, shift amounts
// 0/1/31/32/33/63). Every case is a kernel of one source for both compilers, lowered and run in
// the interpreter; the expected words come from a plain C++ evaluation of the same expression
// written here (C++20: conversions to signed types are modular), never from qgpu. Also 64-bit
// arrays and unsigned long long atomics (SixtyFourBitArraysAndAtomics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "host/cuda/compile.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

using U64 = unsigned long long;
using S64 = long long;

struct Case {
  const char* name;  // the extern "C" kernel is t_<name>
  const char* expr;  // CUDA over x, y (long long), ux, uy (unsigned long long), n (unsigned)
  std::function<U64(S64, S64, U64, U64, unsigned)> model;
  bool nonzeroY = false;  // the expression divides by y's low halfword: skip y with it 0
};

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      {"neg", "-(long long)ux", [](S64, S64, U64 ux, U64, unsigned) { return 0 - ux; }},
      {"lt_s", "x < y", [](S64 x, S64 y, U64, U64, unsigned) -> U64 { return x < y; }},
      {"le_s", "x <= y", [](S64 x, S64 y, U64, U64, unsigned) -> U64 { return x <= y; }},
      {"gt_s", "x > y", [](S64 x, S64 y, U64, U64, unsigned) -> U64 { return x > y; }},
      {"ge_s", "x >= y", [](S64 x, S64 y, U64, U64, unsigned) -> U64 { return x >= y; }},
      {"lt_u", "ux < uy", [](S64, S64, U64 a, U64 b, unsigned) -> U64 { return a < b; }},
      {"ge_u", "ux >= uy", [](S64, S64, U64 a, U64 b, unsigned) -> U64 { return a >= b; }},
      {"shl", "ux << (n & 63)", [](S64, S64, U64 a, U64, unsigned n) { return a << (n & 63); }},
      {"shr_s", "x >> (n & 63)", [](S64 x, S64, U64, U64, unsigned n) { return static_cast<U64>(x >> (n & 63)); }},
      {"shr_u", "ux >> (n & 63)", [](S64, S64, U64 a, U64, unsigned n) { return a >> (n & 63); }},
      {"mul", "ux * uy", [](S64, S64, U64 a, U64 b, unsigned) { return a * b; }},
      {"mulhi_u", "(unsigned long long)(((unsigned __int128)ux * uy) >> 64)",
       [](S64, S64, U64 a, U64 b, unsigned) { return static_cast<U64>((static_cast<unsigned __int128>(a) * b) >> 64); }},
      {"mulhi_s", "(long long)(((__int128)x * y) >> 64)",
       [](S64 x, S64 y, U64, U64, unsigned) { return static_cast<U64>((static_cast<__int128>(x) * y) >> 64); }},
      {"madhi_u", "__umul64hi(ux, uy) + ux",
       [](S64, S64, U64 a, U64 b, unsigned) { return static_cast<U64>((static_cast<unsigned __int128>(a) * b) >> 64) + a; }},
      {"madhi_s", "__mul64hi(x, y) + y",
       [](S64 x, S64 y, U64, U64 b, unsigned) { return static_cast<U64>((static_cast<__int128>(x) * y) >> 64) + b; }},
      // A field at a variable position and length (n's bytes 0 and 1).
      {"field_var_u", "(ux >> (n & 63)) & ((1ull << ((n >> 8) & 63)) - 1)",
       [](S64, S64, U64 a, U64, unsigned n) { return (a >> (n & 63)) & ((1ull << ((n >> 8) & 63)) - 1); }},
      {"field_var_s", "(long long)(ux << (n & 63)) >> ((n >> 8) & 63)",
       [](S64, S64, U64 a, U64, unsigned n) { return static_cast<U64>(static_cast<S64>(a << (n & 63)) >> ((n >> 8) & 63)); }},
      {"field_u", "(ux >> 7) & 0xfffff", [](S64, S64, U64 a, U64, unsigned) { return (a >> 7) & 0xfffff; }},
      {"field_s", "(long long)(ux << 20) >> 44", [](S64, S64, U64 a, U64, unsigned) { return static_cast<U64>(static_cast<S64>(a << 20) >> 44); }},
      {"insert", "(ux & ~0xffffff00ull) | ((uy << 8) & 0xffffff00ull)",
       [](S64, S64, U64 a, U64 b, unsigned) { return (a & ~0xffffff00ull) | ((b << 8) & 0xffffff00ull); }},
      {"insert_hi", "(ux & 0xffffffffull) | (uy << 32)", [](S64, S64, U64 a, U64 b, unsigned) { return (a & 0xffffffffull) | (b << 32); }},
      {"min_s", "x < y ? x : y", [](S64 x, S64 y, U64, U64, unsigned) { return static_cast<U64>(x < y ? x : y); }},
      {"max_u", "ux > uy ? ux : uy", [](S64, S64, U64 a, U64 b, unsigned) { return a > b ? a : b; }},
      {"abs", "x < 0 ? 0 - ux : ux", [](S64 x, S64, U64 a, U64, unsigned) { return x < 0 ? 0 - a : a; }},
      {"s8", "(long long)(signed char)ux", [](S64, S64, U64 a, U64, unsigned) { return static_cast<U64>(static_cast<S64>(static_cast<signed char>(a))); }},
      {"u8", "(unsigned char)(ux >> 4)", [](S64, S64, U64 a, U64, unsigned) -> U64 { return static_cast<unsigned char>(a >> 4); }},
      {"s16", "(long long)(short)(ux >> 8)", [](S64, S64, U64 a, U64, unsigned) { return static_cast<U64>(static_cast<S64>(static_cast<short>(a >> 8))); }},
      {"u16", "(unsigned short)ux", [](S64, S64, U64 a, U64, unsigned) -> U64 { return static_cast<unsigned short>(a); }},
      {"char_mix", "(long long)((signed char)ux * (unsigned char)uy + (short)(ux >> 16))",
       [](S64, S64, U64 a, U64 b, unsigned) {
         return static_cast<U64>(static_cast<S64>(static_cast<signed char>(a) * static_cast<unsigned char>(b) + static_cast<short>(a >> 16)));
       }},
      {"div_u64", "ux / (uy | 1)", [](S64, S64, U64 a, U64 b, unsigned) { return a / (b | 1); }},
      {"rem_u64", "ux % (uy | 1)", [](S64, S64, U64 a, U64 b, unsigned) { return a % (b | 1); }},
      // (y & ~1) | 2: even and not 0, so never -1 either: no INT64_MIN / -1 overflow in C.
      {"div_s64", "x / ((y & ~1ll) | 2)", [](S64 x, S64 y, U64, U64, unsigned) { return static_cast<U64>(x / ((y & ~1ll) | 2)); }},
      {"rem_s64", "x % ((y & ~1ll) | 2)", [](S64 x, S64 y, U64, U64, unsigned) { return static_cast<U64>(x % ((y & ~1ll) | 2)); }},
      {"div_s16", "(long long)(short)((short)ux / (short)uy)",
       [](S64, S64, U64 a, U64 b, unsigned) { return static_cast<U64>(static_cast<S64>(static_cast<short>(static_cast<short>(a) / static_cast<short>(b)))); },
       true},
      {"rem_s16", "(long long)(short)((short)ux % (short)uy)",
       [](S64, S64, U64 a, U64 b, unsigned) { return static_cast<U64>(static_cast<S64>(static_cast<short>(static_cast<short>(a) % static_cast<short>(b)))); },
       true},
      {"div_u16", "(unsigned short)((unsigned short)ux / (unsigned short)uy)",
       [](S64, S64, U64 a, U64 b, unsigned) -> U64 { return static_cast<unsigned short>(static_cast<unsigned short>(a) / static_cast<unsigned short>(b)); },
       true},
      {"rem_u16", "(unsigned short)((unsigned short)ux % (unsigned short)uy)",
       [](S64, S64, U64 a, U64 b, unsigned) -> U64 { return static_cast<unsigned short>(static_cast<unsigned short>(a) % static_cast<unsigned short>(b)); },
       true},
  };
  return k;
}

// The kernel `name(in, out)`: thread t reads x from in[4t..4t+1] and y from in[4t+2..4t+3] (low
// word first) and writes the words of `expr` to out[2t], out[2t+1].
std::string kernelSource(const std::string& name, const std::string& expr) {
  return "extern \"C\" __global__ void " + name + "(const unsigned* in, unsigned* out) {\n"
         "  unsigned t = threadIdx.x;\n"
         "  unsigned long long ux = in[4 * t] | (unsigned long long)in[4 * t + 1] << 32;\n"
         "  unsigned long long uy = in[4 * t + 2] | (unsigned long long)in[4 * t + 3] << 32;\n"
         "  long long x = (long long)ux, y = (long long)uy;\n"
         "  unsigned n = (unsigned)uy;\n"
         "  (void)x; (void)y; (void)n;\n"
         "  unsigned long long r = (unsigned long long)(" + expr + ");\n"
         "  out[2 * t] = (unsigned)r;\n  out[2 * t + 1] = (unsigned)(r >> 32);\n}\n";
}

// One translation unit with every case.
std::string source() {
  std::string s;
  for (const Case& c : cases()) s += kernelSource(std::string("t_") + c.name, c.expr);
  return s;
}

const std::vector<U64>& edges() {
  static const std::vector<U64> e = {0, 1, 31, 32, 33, 63, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000,
                                     0x123456789abcdef0, 0x7fffffffffffffff, 0x8000000000000000,
                                     0xffffffffffffffff, 0xffffffff00000000, 0xffffffffffff8000, 0x7fff, 0xff81};
  return e;
}

class Arith64Cuda : public testing::TestWithParam<host::Compiler> {
 protected:
  void SetUp() override {
    if (!host::toolAvailable(GetParam())) GTEST_SKIP() << host::compilerName(GetParam()) << " is not installed";
  }
};

TEST_P(Arith64Cuda, EveryCaseMatchesTheCxxEvaluationOnEdgeValues) {
  auto ptxText = host::compileToPtx(source(), GetParam());
  ASSERT_TRUE(ptxText.ok()) << ptxText.error().str();
  auto module = ptx::parse(*ptxText, "arith64.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    LowerOptions opt;
    opt.entry = std::string("t_") + c.name;  // prefixed: `abs` would clash with nvcc's own
    opt.params = {0, 64};
    auto program = lower(*module, opt);
    ASSERT_TRUE(program.ok()) << program.error().str();
    std::vector<std::pair<U64, U64>> in;
    for (U64 a : edges())
      for (U64 b : edges())
        if (!c.nonzeroY || static_cast<unsigned short>(b) != 0) in.push_back({a, b});
    int wrong = 0;
    for (size_t base = 0; base < in.size() && wrong < 4; base += 4) {
      machine::Launch launch;
      launch.blockX = static_cast<uint32_t>(std::min<size_t>(4, in.size() - base));
      for (uint32_t t = 0; t < launch.blockX; ++t) {
        auto [a, b] = in[base + t];
        launch.global[4 * t] = static_cast<uint32_t>(a);
        launch.global[4 * t + 1] = static_cast<uint32_t>(a >> 32);
        launch.global[4 * t + 2] = static_cast<uint32_t>(b);
        launch.global[4 * t + 3] = static_cast<uint32_t>(b >> 32);
      }
      auto r = oracle::run(*program, launch, oracle::RunOptions{100000, false});
      ASSERT_TRUE(r.ok()) << r.error().str();
      ASSERT_EQ(r->status, oracle::RunStatus::Finished) << r->fault.message;
      for (uint32_t t = 0; t < launch.blockX; ++t) {
        auto [a, b] = in[base + t];
        U64 got = r->global[16 + 2 * t] | static_cast<U64>(r->global[17 + 2 * t]) << 32;
        U64 want = c.model(static_cast<S64>(a), static_cast<S64>(b), a, b, static_cast<unsigned>(b));
        if (got != want && ++wrong <= 4)
          ADD_FAILURE() << std::hex << "x = 0x" << a << ", y = 0x" << b << ": got 0x" << got << ", want 0x" << want;
      }
    }
  }
}

// 64-bit arrays and atomics as public code writes them: `unsigned long long*` and `long long*`
// elements loaded, computed on and stored; atomicAdd/Or/Xor/And/Exch on unsigned long long. One
// warp (4 threads), so the lanes act in thread order, as on this machine (docs/machine.md §4):
// the old values atomicAdd and atomicExch return are those of the atomics done in thread order.
TEST_P(Arith64Cuda, SixtyFourBitArraysAndAtomics) {
  const std::string src =
      "extern \"C\" __global__ void w_mem(const unsigned long long* in, long long* sg, unsigned long long* out,\n"
      "                                   unsigned long long* acc) {\n"
      "  unsigned t = threadIdx.x;\n"
      "  unsigned long long v = in[t];\n"
      "  out[t] = v + (v >> 40) + 0x100000000ull;\n"
      "  sg[t] = (sg[t] >> 3) - 5;\n"
      "  out[4 + t] = atomicAdd(acc, v);\n"
      "  atomicOr(acc + 1, v);\n  atomicXor(acc + 2, v);\n  atomicAnd(acc + 3, v);\n"
      "  out[8 + t] = atomicExch(acc + 4, v + t);\n"
      "}\n";
  const U64 in[4] = {0x00000001ffffffffull, 0xffffffffffffffffull, 0x8000000000000000ull, 0x123456789abcdef0ull};
  const S64 sg[4] = {INT64_MIN, -1, 7, INT64_MAX};
  const U64 acc0[5] = {0xfffffffffffffffeull, 0, 0x0f0f0f0ff0f0f0f0ull, ~0ull, 0x55};
  // Byte addresses: in at 0 (words 0..7), sg at 32 (8..15), out at 64 (16..39), acc at 160 (40..49).
  machine::Launch launch;
  launch.blockX = 4;
  auto put = [&](size_t word, U64 v) {
    launch.global[word] = static_cast<uint32_t>(v);
    launch.global[word + 1] = static_cast<uint32_t>(v >> 32);
  };
  for (size_t t = 0; t < 4; ++t) put(2 * t, in[t]), put(8 + 2 * t, static_cast<U64>(sg[t]));
  for (size_t k = 0; k < 5; ++k) put(40 + 2 * k, acc0[k]);
  // The C++ evaluation, thread by thread in order.
  U64 out[12] = {}, acc[5];
  S64 sgOut[4];
  std::copy(std::begin(acc0), std::end(acc0), acc);
  for (size_t t = 0; t < 4; ++t) {
    U64 v = in[t];
    out[t] = v + (v >> 40) + 0x100000000ull;
    sgOut[t] = (sg[t] >> 3) - 5;
    out[4 + t] = acc[0];
    acc[0] += v;
    acc[1] |= v;
    acc[2] ^= v;
    acc[3] &= v;
    out[8 + t] = acc[4];
    acc[4] = v + t;
  }
  auto ptxText = host::compileToPtx(src, GetParam());
  ASSERT_TRUE(ptxText.ok()) << ptxText.error().str();
  auto module = ptx::parse(*ptxText, "wide.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions opt;
  opt.params = {0, 32, 64, 160};
  auto program = lower(*module, opt);
  ASSERT_TRUE(program.ok()) << program.error().str();
  auto r = oracle::run(*program, launch, oracle::RunOptions{100000, false});
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->status, oracle::RunStatus::Finished) << r->fault.message;
  auto get = [&](size_t word) { return r->global[word] | static_cast<U64>(r->global[word + 1]) << 32; };
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(get(8 + 2 * t), static_cast<U64>(sgOut[t])) << "sg[" << t << "]";
  for (size_t k = 0; k < 12; ++k) EXPECT_EQ(get(16 + 2 * k), out[k]) << "out[" << k << "]";
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(get(40 + 2 * k), acc[k]) << "acc[" << k << "]";
}

INSTANTIATE_TEST_SUITE_P(Compilers, Arith64Cuda, testing::Values(host::Compiler::Clang, host::Compiler::Nvcc),
                         [](const testing::TestParamInfo<host::Compiler>& p) {
                           return std::string(host::compilerName(p.param));
                         });

}  // namespace
}  // namespace qgpu::lower
