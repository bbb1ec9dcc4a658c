// qgpu/host/lower/tests/arith64_test.cpp — integer arithmetic at the widths compilers emit, lowered
// with register pairs and run in the reference interpreter (label cpu): neg.s64, ordered 64-bit
// setp, 64-bit shifts by a register (PTX clamps amounts above 64 to 64), mul.hi.u64/.s64,
// div/rem.u64/.s64 (a loop, guarded too),
// mad.hi.u64/.s64, min/max/abs on 64 bits, bfe.u64/.s64 (constant and register position and
// length), bfi.b32/.b64, popc/clz/brev.b64, bfind.s64/.s32, the narrow cvts (8 and 16 bits,
// destinations wider than the type), div/rem.u16/.s16 with their edge values, mad.hi.u16/.s16,
// ld.param of 8/16-bit entry parameters and of narrow or widened callee arguments; the
// refusals name the load and its line.
//
// Each op has a table of edge cases whose expected words are worked out by hand in the comments,
// and a seeded sweep (edge-heavy random operands) against a plain C++ evaluation of the PTX
// definition written here: no expected value comes from qgpu.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"

namespace qgpu::lower {
namespace {

// k(.param .u64 in, .param .u64 out): thread t reads x = in[4t] | in[4t+1] << 32 into %rd4 (its
// words in %r2, %r3) and y = in[4t+2] | in[4t+3] << 32 into %rd6 (words %r4, %r5); the body
// leaves a 64-bit result in %rd9, stored to out[2t], out[2t+1]. Every operand comes from memory,
// so no bound narrows it: both halves are computed.
std::string kernel(const std::string& body) {
  return ".version 7.0\n.target sm_75\n.address_size 64\n"
         ".visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
         ".reg .pred %p<8>;\n.reg .b16 %rs<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n"
         "ld.param.u64 %rd1, [in];\nld.param.u64 %rd2, [out];\n"
         "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd3, %r1, 16;\nadd.s64 %rd3, %rd1, %rd3;\n"
         "ld.global.u32 %r2, [%rd3];\nld.global.u32 %r3, [%rd3+4];\n"
         "ld.global.u32 %r4, [%rd3+8];\nld.global.u32 %r5, [%rd3+12];\n"
         "cvt.u64.u32 %rd4, %r3;\nshl.b64 %rd4, %rd4, 32;\ncvt.u64.u32 %rd5, %r2;\nor.b64 %rd4, %rd4, %rd5;\n"
         "cvt.u64.u32 %rd6, %r5;\nshl.b64 %rd6, %rd6, 32;\ncvt.u64.u32 %rd7, %r4;\nor.b64 %rd6, %rd6, %rd7;\n" +
         body +
         "mul.wide.u32 %rd8, %r1, 8;\nadd.s64 %rd8, %rd2, %rd8;\n"
         "cvt.u32.u64 %r14, %rd9;\nshr.u64 %rd10, %rd9, 32;\ncvt.u32.u64 %r15, %rd10;\n"
         "st.global.u32 [%rd8], %r14;\nst.global.u32 [%rd8+4], %r15;\nret;\n}\n";
}

struct XY {
  uint64_t x, y;
};

// Lowers `body` once and runs it on the operands, four threads per launch.
class Op64 {
 public:
  explicit Op64(const std::string& body) {
    auto module = ptx::parse(kernel(body), "t.ptx");
    if (!module.ok()) {
      error_ = module.error().str();
      return;
    }
    LowerOptions options;
    options.params = {0, 64};
    auto program = lower(*module, options);
    if (!program.ok()) {
      error_ = program.error().str();
      return;
    }
    program_ = std::move(*program);
  }
  const std::string& error() const { return error_; }
  std::vector<uint64_t> run(const std::vector<XY>& in) const {
    std::vector<uint64_t> out;
    for (size_t base = 0; base < in.size(); base += 4) {
      machine::Launch launch;
      launch.blockX = static_cast<uint32_t>(std::min<size_t>(4, in.size() - base));
      for (uint32_t t = 0; t < launch.blockX; ++t) {
        const XY& v = in[base + t];
        launch.global[4 * t] = static_cast<uint32_t>(v.x);
        launch.global[4 * t + 1] = static_cast<uint32_t>(v.x >> 32);
        launch.global[4 * t + 2] = static_cast<uint32_t>(v.y);
        launch.global[4 * t + 3] = static_cast<uint32_t>(v.y >> 32);
      }
      auto r = oracle::run(program_, launch, oracle::RunOptions{100000, false});
      EXPECT_TRUE(r.ok()) << r.error().str();
      if (!r.ok()) return out;
      EXPECT_EQ(r->status, oracle::RunStatus::Finished) << r->fault.message;
      for (uint32_t t = 0; t < launch.blockX; ++t)
        out.push_back(r->global[16 + 2 * t] | static_cast<uint64_t>(r->global[17 + 2 * t]) << 32);
    }
    return out;
  }

 private:
  machine::Program program_;
  std::string error_;
};

struct Row {
  uint64_t x, y, want;
};

void expectTable(const std::string& body, const std::vector<Row>& rows) {
  Op64 op(body);
  ASSERT_EQ(op.error(), "") << body;
  std::vector<XY> in;
  for (const Row& r : rows) in.push_back({r.x, r.y});
  auto got = op.run(in);
  ASSERT_EQ(got.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(got[i], rows[i].want) << body << "x = " << std::hex << rows[i].x << ", y = " << rows[i].y;
}

// Edge-heavy operands: 0, ±1, the 32-bit and 64-bit boundaries, small shift amounts, or random.
uint64_t edgeValue(std::mt19937_64& rng) {
  static const uint64_t kEdges[] = {0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 0x7fffffff, 0x80000000, 0xffffffff,
                                    0x100000000, 0x100000001, 0x7fffffffffffffff, 0x8000000000000000,
                                    0xffffffffffffffff, 0xfffffffffffffffe, 0xffffffff00000000,
                                    0x7fff, 0x8000, 0xffff, 0x80, 0xff, 0x17f};
  switch (rng() % 4) {
    case 0: return kEdges[rng() % std::size(kEdges)];
    case 1: return rng() & 0xff;  // small, in the low word
    default: return rng();
  }
}

// The seeded property: `cases` operand pairs against `model`, a plain C++ evaluation.
void expectModel(const std::string& body, const std::function<uint64_t(uint64_t, uint64_t)>& model, int cases = 160) {
  Op64 op(body);
  ASSERT_EQ(op.error(), "") << body;
  std::mt19937_64 rng(20261201);
  std::vector<XY> in;
  for (int i = 0; i < cases; ++i) in.push_back({edgeValue(rng), edgeValue(rng)});
  auto got = op.run(in);
  ASSERT_EQ(got.size(), in.size());
  int wrong = 0;
  for (size_t i = 0; i < in.size() && wrong < 5; ++i)
    if (got[i] != model(in[i].x, in[i].y)) {
      ++wrong;
      ADD_FAILURE() << body << std::hex << "x = " << in[i].x << ", y = " << in[i].y << ": got " << got[i]
                    << ", want " << model(in[i].x, in[i].y);
    }
}

constexpr uint64_t kMin = 0x8000000000000000, kMax = 0x7fffffffffffffff, kAll = ~uint64_t{0};
int64_t s64(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t bit(bool b) { return b ? 1 : 0; }

TEST(Lower64, NegIsTwosComplementAcrossTheWords) {
  expectTable("neg.s64 %rd9, %rd4;\n",
              {{0, 0, 0},
               {1, 0, kAll},
               {0x100000000, 0, 0xffffffff00000000},  // the low word 0: the borrow does not reach
               {0xffffffff, 0, 0xffffffff00000001},
               {kMin, 0, kMin},  // -INT64_MIN wraps to itself
               {kMax, 0, 0x8000000000000001}});
  expectModel("neg.s64 %rd9, %rd4;\n", [](uint64_t x, uint64_t) { return 0 - x; });
}

TEST(Lower64, OrderedSetpComparesHighWordsThenLowUnsigned) {
  const char* lts = "setp.lt.s64 %p1, %rd4, %rd6;\nselp.u64 %rd9, 1, 0, %p1;\n";
  const char* ltu = "setp.lt.u64 %p1, %rd4, %rd6;\nselp.u64 %rd9, 1, 0, %p1;\n";
  // 2^32 vs 2^32 - 1 crosses the word boundary; -2^32 vs -2^32 - 1 has equal-sign high words.
  expectTable(lts, {{0, 1, 1}, {kAll, 0, 1}, {0x100000000, 0xffffffff, 0}, {kMin, kMax, 1},
                    {5, 5, 0}, {0xffffffff00000000, 0xfffffffeffffffff, 0}, {0x80000000, 0x7fffffff, 0}});
  expectTable(ltu, {{0, 1, 1}, {kAll, 0, 0}, {0x100000000, 0xffffffff, 0}, {kMin, kMax, 0},
                    {5, 5, 0}, {0xfffffffeffffffff, 0xffffffff00000000, 1}, {0x7fffffff, 0x80000000, 1}});
  struct Cmp {
    const char* name;
    std::function<bool(uint64_t, uint64_t)> f;
  };
  const Cmp cmps[] = {
      {"lt.s64", [](uint64_t a, uint64_t b) { return s64(a) < s64(b); }},
      {"le.s64", [](uint64_t a, uint64_t b) { return s64(a) <= s64(b); }},
      {"gt.s64", [](uint64_t a, uint64_t b) { return s64(a) > s64(b); }},
      {"ge.s64", [](uint64_t a, uint64_t b) { return s64(a) >= s64(b); }},
      {"lt.u64", [](uint64_t a, uint64_t b) { return a < b; }},
      {"le.u64", [](uint64_t a, uint64_t b) { return a <= b; }},
      {"gt.u64", [](uint64_t a, uint64_t b) { return a > b; }},
      {"ge.u64", [](uint64_t a, uint64_t b) { return a >= b; }},
      {"lo.u64", [](uint64_t a, uint64_t b) { return a < b; }},
      {"hs.u64", [](uint64_t a, uint64_t b) { return a >= b; }},
  };
  for (const Cmp& c : cmps) {
    std::string body = std::string("setp.") + c.name + " %p1, %rd4, %rd6;\nselp.u64 %rd9, 1, 0, %p1;\n";
    expectModel(body, [&](uint64_t x, uint64_t y) { return bit(c.f(x, y)); });
    // Ties: x against itself.
    expectModel(std::string("setp.") + c.name + " %p1, %rd4, %rd4;\nselp.u64 %rd9, 1, 0, %p1;\n",
                [&](uint64_t x, uint64_t) { return bit(c.f(x, x)); }, 16);
  }
}

TEST(Lower64, ShiftsByARegisterClampAt64) {
  // x = 0x80000001_80000001 shifted by the amount in y's low word (%r4).
  const uint64_t x = 0x8000000180000001;
  expectTable("shl.b64 %rd9, %rd4, %r4;\n",
              {{x, 0, x}, {x, 1, 0x0000000300000002}, {x, 31, 0xc000000080000000}, {x, 32, 0x8000000100000000},
               {x, 33, 0x0000000200000000}, {x, 63, 0x8000000000000000}, {x, 64, 0}, {x, 100, 0},
               {x, 0xffffffff, 0}, {x, 0x100000000, x}});  // the amount is the low word only
  expectTable("shr.s64 %rd9, %rd4, %r4;\n",
              {{x, 0, x}, {x, 1, 0xc0000000c0000000}, {x, 31, 0xffffffff00000003}, {x, 32, 0xffffffff80000001},
               {x, 33, 0xffffffffc0000000}, {x, 63, kAll}, {x, 64, kAll}, {x, 100, kAll},
               {0x4000000000000000, 62, 1}, {0x4000000000000000, 64, 0}});
  expectTable("shr.u64 %rd9, %rd4, %r4;\n",
              {{x, 0, x}, {x, 1, 0x40000000c0000000}, {x, 31, 0x0000000100000003}, {x, 32, 0x0000000080000001},
               {x, 33, 0x0000000040000000}, {x, 63, 1}, {x, 64, 0}, {x, 100, 0}});
  expectTable("shr.b64 %rd9, %rd4, %r4;\n", {{x, 1, 0x40000000c0000000}, {x, 64, 0}});
  auto amount = [](uint64_t y) { return static_cast<uint32_t>(y); };
  expectModel("shl.b64 %rd9, %rd4, %r4;\n",
              [&](uint64_t a, uint64_t y) { return amount(y) >= 64 ? 0 : a << amount(y); });
  expectModel("shr.u64 %rd9, %rd4, %r4;\n",
              [&](uint64_t a, uint64_t y) { return amount(y) >= 64 ? 0 : a >> amount(y); });
  expectModel("shr.s64 %rd9, %rd4, %r4;\n", [&](uint64_t a, uint64_t y) {
    return static_cast<uint64_t>(s64(a) >> std::min<uint32_t>(amount(y), 63));
  });
  // The destination is the shifted register itself.
  expectModel("mov.b64 %rd9, %rd4;\nshr.s64 %rd9, %rd9, %r4;\n", [&](uint64_t a, uint64_t y) {
    return static_cast<uint64_t>(s64(a) >> std::min<uint32_t>(amount(y), 63));
  });
}

TEST(Lower64, MulHiIsTheUpperHalfOfThe128BitProduct) {
  // (2^64-1)^2 = 2^128 - 2^65 + 1; (2^32+1)^2 = 2^64 + 2^33 + 1; 2^63 * 2 = 2^64.
  expectTable("mul.hi.u64 %rd9, %rd4, %rd6;\n",
              {{kAll, kAll, 0xfffffffffffffffe}, {0x100000000, 0x100000000, 1}, {0x100000001, 0x100000001, 1},
               {kMin, 2, 1}, {kAll, 1, 0}, {0, kAll, 0}});
  // Signed: -1 * -1 = 1; -1 * 1 = -1; (-2^63)^2 = 2^126; -2^63 * -1 = 2^63; -2^63 * 2 = -2^64;
  // (2^63-1)^2 = 2^126 - 2^64 + 1.
  expectTable("mul.hi.s64 %rd9, %rd4, %rd6;\n",
              {{kAll, kAll, 0}, {kAll, 1, kAll}, {kMin, kMin, 0x4000000000000000}, {kMin, kAll, 0},
               {kMin, 2, kAll}, {kMax, kMax, 0x3fffffffffffffff}});
  expectModel("mul.hi.u64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
  });
  expectModel("mul.hi.s64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) {
    return static_cast<uint64_t>((static_cast<__int128>(s64(a)) * s64(b)) >> 64);
  });
  expectModel("mul.lo.s64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return a * b; });
}

TEST(Lower64, MadHiAddsToTheUpperHalfOfTheProduct) {
  // c = x. (2^64-1)^2: hi 0xffffffff_fffffffe, + (2^64-1) = 0xffffffff_fffffffd; 2^32 * 2^32: hi 1;
  // 2^63 * 2: hi 1; (2^64-1) * 2^32: hi 0x00000000_ffffffff, + (2^64-1): the low words carry,
  // 0x00000000_fffffffe.
  expectTable("mad.hi.u64 %rd9, %rd4, %rd6, %rd4;\n",
              {{kAll, kAll, 0xfffffffffffffffd}, {0x100000000, 0x100000000, 0x100000001},
               {kMin, 2, 0x8000000000000001}, {kAll, 0x100000000, 0xfffffffe}, {0xffffffff, 0xffffffff, 0xffffffff}});
  // Signed: -1 * -1 = 1: hi 0, + -1; (-2^63)^2 = 2^126: hi 2^62, + -2^63 = 0xc000...; -1 * 1: hi -1, + -1.
  expectTable("mad.hi.s64 %rd9, %rd4, %rd6, %rd4;\n",
              {{kAll, kAll, kAll}, {kMin, kMin, 0xc000000000000000}, {kAll, 1, 0xfffffffffffffffe}});
  expectModel("mad.hi.u64 %rd9, %rd4, %rd6, %rd6;\n", [](uint64_t a, uint64_t b) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64) + b;
  });
  expectModel("mad.hi.s64 %rd9, %rd4, %rd6, %rd4;\n", [](uint64_t a, uint64_t b) {
    return static_cast<uint64_t>((static_cast<__int128>(s64(a)) * s64(b)) >> 64) + a;
  });
  // The destination is a source; only the low half read afterwards.
  expectModel("mad.hi.u64 %rd4, %rd4, %rd6, %rd4;\nmov.b64 %rd9, %rd4;\n", [](uint64_t a, uint64_t b) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64) + a;
  });
  expectModel("mad.hi.s64 %rd5, %rd4, %rd6, %rd4;\ncvt.u32.u64 %r6, %rd5;\ncvt.u64.u32 %rd9, %r6;\n",
              [](uint64_t a, uint64_t b) {
                return static_cast<uint64_t>(static_cast<uint32_t>(
                    static_cast<uint64_t>((static_cast<__int128>(s64(a)) * s64(b)) >> 64) + a));
              });
}

TEST(Lower64, MinMaxAbs) {
  expectTable("min.s64 %rd9, %rd4, %rd6;\n", {{kMin, kMax, kMin}, {kAll, 0, kAll}, {0x100000000, 0xffffffff, 0xffffffff}});
  expectTable("max.u64 %rd9, %rd4, %rd6;\n", {{kMin, kMax, kMin}, {kAll, 0, kAll}, {0x100000000, 0xffffffff, 0x100000000}});
  expectTable("abs.s64 %rd9, %rd4;\n", {{kAll, 0, 1}, {kMin, 0, kMin}, {0xffffffff00000000, 0, 0x100000000}, {5, 0, 5}});
  expectModel("min.s64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return s64(a) < s64(b) ? a : b; });
  expectModel("max.s64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return s64(a) < s64(b) ? b : a; });
  expectModel("min.u64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return std::min(a, b); });
  expectModel("max.u64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return std::max(a, b); });
  expectModel("abs.s64 %rd9, %rd4;\n", [](uint64_t a, uint64_t) { return s64(a) < 0 ? 0 - a : a; });
}

// PTX bfe on w bits, bit by bit (the ISA's definition).
uint64_t bfeModel(uint64_t a, uint32_t pos, uint32_t len, bool sgn, int w) {
  pos &= 0xff;
  len &= 0xff;
  const uint32_t msb = static_cast<uint32_t>(w - 1);
  uint64_t sbit = sgn && len != 0 ? (a >> std::min(pos + len - 1, msb)) & 1 : 0;
  uint64_t r = 0;
  for (uint32_t i = 0; i <= msb; ++i) r |= ((i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit) << i;
  return r;
}

TEST(Lower64, BfeWithConstantPositionAndLength) {
  // 0x8765432112345678: bits 28..43 are 0x3211 (hex digits 7..10 from the right); a field
  // crossing the word boundary, its sign bit (bit 43) 0.
  expectTable("bfe.u64 %rd9, %rd4, 28, 16;\n", {{0x8765432112345678, 0, 0x3211}});
  expectTable("bfe.s64 %rd9, %rd4, 28, 16;\n", {{0x8765432112345678, 0, 0x3211}, {0x8765c32112345678, 0, 0x3211}});
  // bits 40..63 = 0x876543, sign bit 63 set; pos + len = 80 > 64 uses bit 63.
  expectTable("bfe.s64 %rd9, %rd4, 40, 40;\n", {{0x8765432112345678, 0, 0xffffffffff876543}});
  expectTable("bfe.u64 %rd9, %rd4, 40, 40;\n", {{0x8765432112345678, 0, 0x876543}});
  expectTable("bfe.u64 %rd9, %rd4, 3, 0;\n", {{kAll, 0, 0}});
  expectTable("bfe.s64 %rd9, %rd4, 70, 3;\n", {{kMin, 0, kAll}, {kMax, 0, 0}});
  const std::pair<uint32_t, uint32_t> fields[] = {{0, 1}, {0, 31}, {0, 32}, {0, 33}, {7, 12}, {20, 12},
                                                  {31, 2}, {32, 32}, {33, 31}, {0, 64}, {1, 64}, {63, 1},
                                                  {63, 5}, {64, 3}, {5, 0}, {200, 200}, {0x105, 0x103}};
  for (auto [pos, len] : fields)
    for (bool sgn : {false, true}) {
      std::string body = std::string("bfe.") + (sgn ? "s64" : "u64") + " %rd9, %rd4, " + std::to_string(pos) +
                         ", " + std::to_string(len) + ";\n";
      expectModel(body, [&](uint64_t a, uint64_t) { return bfeModel(a, pos, len, sgn, 64); }, 24);
    }
}

TEST(Lower64, BfeWithRegisterPositionAndLength) {
  // pos = y's low word (%r4), len = y's high word (%r5), each taken & 0xff.
  const char* u = "bfe.u64 %rd9, %rd4, %r4, %r5;\n";
  const char* sg = "bfe.s64 %rd9, %rd4, %r4, %r5;\n";
  // Bits 28..43 of 0x8765432112345678 are 0x3211 (sign bit 43 clear); of 0x87654c2112345678
  // 0xc211 (bit 43 set: .s64 fills with ones). Bits 40..79 (len 40 past bit 63): 0x876543, bit
  // 63 fills. pos 0x105 -> 5, len 0x103 -> 3: bits 5..7 of 0xe0 = 7, sign bit 7 set. len 0: 0.
  // pos 70 / 255: every bit is a[63] (.s64) or 0 (.u64).
  expectTable(u, {{0x8765432112345678, 0x000000100000001c, 0x3211}, {0x87654c2112345678, 0x000000100000001c, 0xc211},
                  {0x8765432112345678, 0x0000002800000028, 0x876543}, {0xe0, 0x0000010300000105, 7},
                  {kAll, 3, 0}, {kAll, 0x000000ff000000ff, 0}, {kAll, 0x0000004000000000, kAll}});
  expectTable(sg, {{0x8765432112345678, 0x000000100000001c, 0x3211},
                   {0x87654c2112345678, 0x000000100000001c, 0xffffffffffffc211},
                   {0x8765432112345678, 0x0000002800000028, 0xffffffffff876543},
                   {0xe0, 0x0000010300000105, kAll}, {kAll, 3, 0}, {kMin, 0x0000000300000046, kAll},
                   {kMax, 0x0000000300000046, 0}, {kMin, 0x000000ff000000ff, kAll}, {kMax, 0x0000004000000000, kMax}});
  // Every field of the constant test's list, through registers, against the bit-by-bit model.
  const std::pair<uint32_t, uint32_t> fields[] = {{0, 1}, {0, 31}, {0, 32}, {0, 33}, {7, 12}, {20, 12},
                                                  {31, 2}, {32, 32}, {33, 31}, {0, 64}, {1, 64}, {63, 1},
                                                  {63, 5}, {64, 3}, {5, 0}, {200, 200}, {0x105, 0x103}};
  for (auto [pos, len] : fields)
    for (bool sgn : {false, true}) {
      std::string body = "mov.u32 %r10, " + std::to_string(pos) + ";\nmov.u32 %r11, " + std::to_string(len) +
                         ";\nbfe." + (sgn ? "s64" : "u64") + " %rd9, %rd4, %r10, %r11;\n";
      expectModel(body, [&](uint64_t a, uint64_t) { return bfeModel(a, pos, len, sgn, 64); }, 24);
    }
  // Random positions and lengths (y's words) and a destination that is the source.
  expectModel(u, [](uint64_t a, uint64_t y) { return bfeModel(a, static_cast<uint32_t>(y), static_cast<uint32_t>(y >> 32), false, 64); });
  expectModel(sg, [](uint64_t a, uint64_t y) { return bfeModel(a, static_cast<uint32_t>(y), static_cast<uint32_t>(y >> 32), true, 64); });
  expectModel("bfe.s64 %rd4, %rd4, %r4, %r5;\nmov.b64 %rd9, %rd4;\n", [](uint64_t a, uint64_t y) {
    return bfeModel(a, static_cast<uint32_t>(y), static_cast<uint32_t>(y >> 32), true, 64);
  });
}

// PTX bfi on w bits: b with bits pos + i (i < len, pos + i < w) taken from f's bit i.
uint64_t bfiModel(uint64_t f, uint64_t b, uint32_t pos, uint32_t len, int w) {
  pos &= 0xff;
  len &= 0xff;
  for (uint32_t i = 0; i < len && pos + i < static_cast<uint32_t>(w); ++i)
    b = (b & ~(uint64_t{1} << (pos + i))) | (((f >> i) & 1) << (pos + i));
  return b;
}

TEST(Lower64, BfiInsertsAField) {
  // 32 bits: f = 0xabcd into b = 0xffffffff at 8, 16 bits: 0xffabcdff.
  expectTable("bfi.b32 %r6, %r2, %r4, 8, 16;\ncvt.u64.u32 %rd9, %r6;\n",
              {{0xabcd, 0xffffffff, 0xffabcdff}, {0xffffffff, 0, 0x00ffff00}});
  // Registers: pos from x's high word, len from y's high word.
  expectTable("bfi.b32 %r6, %r2, %r4, %r3, %r5;\ncvt.u64.u32 %rd9, %r6;\n",
              {{0x000000ff00000005, 0x0000001000000000, 0x00000000},  // pos 255: nothing inserted
               {0x0000001c00000005, 0x0000002000000000, 0x50000000},  // pos 28, len 32: bits 28..31
               {0x0000010400000003, 0x0000010200000000, 0x00000030}});  // pos 0x104 & 0xff = 4, len 2
  // 64 bits, the field crossing the words: f = 0xffff at 24, 16 bits into 0.
  expectTable("bfi.b64 %rd9, %rd4, %rd6, 24, 16;\n", {{0xffff, 0, 0xffff000000}, {0, kAll, 0xffffff0000ffffff}});
  expectModel("bfi.b32 %r6, %r2, %r4, %r3, %r5;\ncvt.u64.u32 %rd9, %r6;\n", [](uint64_t x, uint64_t y) {
    return bfiModel(x & 0xffffffff, y & 0xffffffff, static_cast<uint32_t>(x >> 32), static_cast<uint32_t>(y >> 32), 32);
  });
  expectModel("bfi.b64 %rd9, %rd4, %rd6, %r3, %r5;\n", [](uint64_t x, uint64_t y) {
    return bfiModel(x, y, static_cast<uint32_t>(x >> 32), static_cast<uint32_t>(y >> 32), 64);
  });
  for (auto [pos, len] : std::vector<std::pair<uint32_t, uint32_t>>{{0, 32}, {32, 32}, {20, 30}, {60, 10}, {0, 64}, {64, 1}}) {
    std::string body = "bfi.b64 %rd9, %rd4, %rd6, " + std::to_string(pos) + ", " + std::to_string(len) + ";\n";
    expectModel(body, [&](uint64_t x, uint64_t y) { return bfiModel(x, y, pos, len, 64); }, 24);
  }
}

TEST(Lower64, PopcClzBrevBfind) {
  expectTable("popc.b64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n", {{kAll, 0, 64}, {0x100000001, 0, 2}});
  expectTable("clz.b64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n", {{0, 0, 64}, {1, 0, 63}, {0x100000000, 0, 31}, {kMin, 0, 0}});
  expectTable("brev.b64 %rd9, %rd4;\n", {{1, 0, kMin}, {0x00000000ffff0000, 0, 0x0000ffff00000000}});
  expectTable("bfind.u64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n", {{0, 0, 0xffffffff}, {1, 0, 0}, {0x100000000, 0, 32}});
  expectModel("popc.b64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n",
              [](uint64_t a, uint64_t) { return static_cast<uint64_t>(__builtin_popcountll(a)); });
  expectModel("clz.b64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n",
              [](uint64_t a, uint64_t) { return a == 0 ? 64 : static_cast<uint64_t>(__builtin_clzll(a)); });
}

// PTX bfind: the highest bit unlike the sign (.s) or the highest 1 (.u), 0xffffffff if none.
uint64_t bfindModel(uint64_t a, bool sgn, bool shiftamt, int w) {
  const uint64_t top = uint64_t{1} << (w - 1);
  const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  a &= mask;
  if (sgn && (a & top)) a = ~a & mask;
  for (int i = w - 1; i >= 0; --i)
    if ((a >> i) & 1) return shiftamt ? static_cast<uint64_t>(w - 1 - i) : static_cast<uint64_t>(i);
  return 0xffffffff;
}

TEST(Lower64, BfindSignedFindsTheHighestBitUnlikeTheSign) {
  // 0 and -1: none; 1 and -2 (~ = 1): bit 0; INT64_MAX and INT64_MIN (~ = INT64_MAX): bit 62;
  // 0xffffffff_00000000 (~ = 0x00000000_ffffffff): 31; 2^32 and 0xfffffffe_ffffffff: 32.
  expectTable("bfind.s64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n",
              {{0, 0, 0xffffffff}, {kAll, 0, 0xffffffff}, {1, 0, 0}, {0xfffffffffffffffe, 0, 0}, {kMax, 0, 62},
               {kMin, 0, 62}, {0xffffffff00000000, 0, 31}, {0x100000000, 0, 32}, {0xfffffffeffffffff, 0, 32}});
  expectTable("bfind.shiftamt.s64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n",
              {{1, 0, 63}, {kMin, 0, 1}, {0, 0, 0xffffffff}, {kAll, 0, 0xffffffff}, {0x100000000, 0, 31}});
  // 32 bits: -2: 0; 0x7fffffff and 0x80000000 (~ = 0x7fffffff): 30; 0 and -1: none; 2^16: 16.
  expectTable("bfind.s32 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n",
              {{0xfffffffe, 0, 0}, {0x7fffffff, 0, 30}, {0x80000000, 0, 30}, {0, 0, 0xffffffff}, {0xffffffff, 0, 0xffffffff},
               {0x10000, 0, 16}});
  expectTable("bfind.shiftamt.s32 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n",
              {{0x10000, 0, 15}, {0x80000000, 0, 1}, {0xffffffff, 0, 0xffffffff}});
  for (bool shiftamt : {false, true}) {
    const std::string mod = shiftamt ? ".shiftamt" : "";
    expectModel("bfind" + mod + ".s64 %r6, %rd4;\ncvt.u64.u32 %rd9, %r6;\n",
                [&](uint64_t a, uint64_t) { return bfindModel(a, true, shiftamt, 64); });
    expectModel("bfind" + mod + ".s32 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n",
                [&](uint64_t a, uint64_t) { return bfindModel(a, true, shiftamt, 32); });
  }
}

TEST(Lower64, DivisionIsAShiftAndSubtractLoop) {
  // By 0: the machine's conventions (div.u all ones, div.s a < 0 ? 1 : -1, rem a);
  // INT64_MIN / -1 = INT64_MIN, % -1 = 0; operands across the 32-bit boundary.
  expectTable("div.u64 %rd9, %rd4, %rd6;\n",
              {{kAll, 1, kAll}, {kAll, 0x100000000, 0xffffffff}, {0x123456789abcdef0, 0x10, 0x0123456789abcdef},
               {5, 0, kAll}, {kMin, kAll, 0}, {kAll, kMin, 1}, {0x100000000, 3, 0x55555555}});
  expectTable("rem.u64 %rd9, %rd4, %rd6;\n",
              {{kAll, 0x100000000, 0xffffffff}, {5, 0, 5}, {0x100000000, 3, 1}, {kAll, kMin, kMax}});
  expectTable("div.s64 %rd9, %rd4, %rd6;\n",
              {{kMin, kAll, kMin}, {0xfffffffffffffff9, 2, 0xfffffffffffffffd}, {7, 0xfffffffffffffffe, 0xfffffffffffffffd},
               {5, 0, kAll}, {0xfffffffffffffffb, 0, 1}, {kMin, 0x100000000, 0xffffffff80000000}});
  expectTable("rem.s64 %rd9, %rd4, %rd6;\n",
              {{kMin, kAll, 0}, {0xfffffffffffffff9, 2, kAll}, {7, 0xfffffffffffffffe, 1}, {0xfffffffffffffffb, 0, 0xfffffffffffffffb}});
  expectModel("div.u64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return b == 0 ? kAll : a / b; }, 60);
  expectModel("rem.u64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }, 60);
  expectModel("div.s64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) -> uint64_t {
    if (b == 0) return s64(a) < 0 ? 1 : kAll;
    if (a == kMin && b == kAll) return kMin;
    return static_cast<uint64_t>(s64(a) / s64(b));
  }, 60);
  expectModel("rem.s64 %rd9, %rd4, %rd6;\n", [](uint64_t a, uint64_t b) -> uint64_t {
    if (b == 0) return a;
    if (a == kMin && b == kAll) return 0;
    return static_cast<uint64_t>(s64(a) % s64(b));
  }, 60);
  // Guarded: only the lanes whose guard (x < 0) holds divide; lanes 1 and 3 keep %rd9 = 7.
  expectTable("mov.u64 %rd9, 7;\nsetp.lt.s64 %p1, %rd4, 0;\n@%p1 div.s64 %rd9, %rd4, %rd6;\n",
              {{kAll, 1, kAll}, {5, 1, 7}, {0xfffffffffffffff0, 4, 0xfffffffffffffffc}, {9, 2, 7}});
}

// ---- Narrow widths ----

TEST(LowerNarrow, ConvertsFromAndToEightAndSixteenBits) {
  // Sources: x's low word (%r2); results widened to 64 bits with a cvt of their signedness.
  expectTable("cvt.s32.s8 %r6, %r2;\ncvt.s64.s32 %rd9, %r6;\n",
              {{0x80, 0, 0xffffffffffffff80}, {0x7f, 0, 0x7f}, {0x1ff, 0, kAll}, {0x12345601, 0, 1}});
  expectTable("cvt.u32.u8 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n", {{0x1ff, 0, 0xff}, {0x80, 0, 0x80}});
  expectTable("cvt.s32.s16 %r6, %r2;\ncvt.s64.s32 %rd9, %r6;\n", {{0x8000, 0, 0xffffffffffff8000}, {0x17fff, 0, 0x7fff}});
  expectTable("cvt.u32.u16 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n", {{0x18000, 0, 0x8000}});
  // A destination wider than the type: the value is extended per the destination type.
  expectTable("cvt.s8.s32 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n", {{0x180, 0, 0xffffff80}, {0x17f, 0, 0x7f}});
  expectTable("cvt.u8.u32 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n", {{0x180, 0, 0x80}});
  expectTable("cvt.s16.s32 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n", {{0x18000, 0, 0xffff8000}});
  // In 16-bit registers: s8 -> s16 sign-extends the byte within the halfword.
  expectTable("cvt.u16.u32 %rs2, %r2;\ncvt.s16.s8 %rs1, %rs2;\ncvt.u64.u16 %rd9, %rs1;\n",
              {{0x80, 0, 0xff80}, {0x17f, 0, 0x7f}});
  expectTable("cvt.u16.u32 %rs2, %r2;\ncvt.u16.s8 %rs1, %rs2;\ncvt.u64.u16 %rd9, %rs1;\n", {{0x80, 0, 0xff80}});
  expectTable("cvt.u16.u32 %rs2, %r2;\ncvt.s8.s16 %rs1, %rs2;\ncvt.u64.u16 %rd9, %rs1;\n", {{0x1280, 0, 0xff80}});
  // Straight to 64 bits from 8.
  expectTable("cvt.s64.s8 %rd9, %r2;\n", {{0x80, 0, 0xffffffffffffff80}});
  expectTable("cvt.u64.s8 %rd9, %r2;\n", {{0x80, 0, 0xffffffffffffff80}});
  expectTable("cvt.s64.u8 %rd9, %r2;\n", {{0x180, 0, 0x80}});
  // From 64 bits to 8.
  expectTable("cvt.s8.s64 %r6, %rd4;\ncvt.s64.s32 %rd9, %r6;\n", {{0x12345678000000ff, 0, kAll}});
  auto sext = [](uint64_t v, int bits) {
    uint64_t m = (uint64_t{1} << bits) - 1;
    v &= m;
    return (v >> (bits - 1)) ? v | ~m : v;
  };
  expectModel("cvt.s32.s8 %r6, %r2;\ncvt.s64.s32 %rd9, %r6;\n", [&](uint64_t x, uint64_t) { return sext(x, 8); });
  expectModel("cvt.s64.s16 %rd9, %r2;\n", [&](uint64_t x, uint64_t) { return sext(x, 16); });
  expectModel("cvt.u32.u8 %r6, %r2;\ncvt.u64.u32 %rd9, %r6;\n", [](uint64_t x, uint64_t) { return x & 0xff; });
}

TEST(LowerNarrow, SixteenBitDivisionAtSixteenBits) {
  // x's and y's low halfwords; results sign- (.s16) or zero-extended (.u16) to 64 bits.
  const char* divs = "cvt.u16.u32 %rs1, %r2;\ncvt.u16.u32 %rs2, %r4;\ndiv.s16 %rs3, %rs1, %rs2;\ncvt.s64.s16 %rd9, %rs3;\n";
  const char* rems = "cvt.u16.u32 %rs1, %r2;\ncvt.u16.u32 %rs2, %r4;\nrem.s16 %rs3, %rs1, %rs2;\ncvt.s64.s16 %rd9, %rs3;\n";
  const char* divu = "cvt.u16.u32 %rs1, %r2;\ncvt.u16.u32 %rs2, %r4;\ndiv.u16 %rs3, %rs1, %rs2;\ncvt.u64.u16 %rd9, %rs3;\n";
  const char* remu = "cvt.u16.u32 %rs1, %r2;\ncvt.u16.u32 %rs2, %r4;\nrem.u16 %rs3, %rs1, %rs2;\ncvt.u64.u16 %rd9, %rs3;\n";
  // INT16_MIN / -1 = INT16_MIN (the dividend), % -1 = 0; by 0: a < 0 ? 1 : -1, and the
  // remainder is the dividend (the machine's values at 16 bits, docs/machine.md).
  expectTable(divs, {{0x8000, 0xffff, 0xffffffffffff8000}, {7, 0xfffe, 0xfffffffffffffffd},
                     {0xfff9, 2, 0xfffffffffffffffd}, {5, 0, kAll}, {0xfffb, 0, 1}, {0x7fff, 0x7fff, 1}});
  expectTable(rems, {{0x8000, 0xffff, 0}, {7, 0xfffe, 1}, {0xfff9, 2, kAll}, {5, 0, 5}, {0xfffb, 0, 0xfffffffffffffffb}});
  expectTable(divu, {{0xffff, 1, 0xffff}, {0xffff, 0x100, 0xff}, {5, 0, 0xffff}, {0x8000, 3, 0x2aaa}, {0x12345, 0x10002, 0x11a2}});
  expectTable(remu, {{0xffff, 0x100, 0xff}, {5, 0, 5}, {0x8000, 3, 2}});
  auto s16 = [](uint64_t v) { return static_cast<int16_t>(static_cast<uint16_t>(v)); };
  expectModel(divs, [&](uint64_t x, uint64_t y) -> uint64_t {
    int32_t a = s16(x), b = s16(y);
    if (b == 0) return a < 0 ? 1 : kAll;
    return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(a / b)));  // -32768 / -1 wraps
  });
  expectModel(remu, [](uint64_t x, uint64_t y) -> uint64_t {
    uint16_t a = static_cast<uint16_t>(x), b = static_cast<uint16_t>(y);
    return b == 0 ? a : a % b;
  });
}

TEST(LowerNarrow, SixteenBitMad) {
  expectTable("cvt.u16.u32 %rs1, %r2;\ncvt.u16.u32 %rs2, %r4;\nmad.lo.s16 %rs3, %rs1, %rs2, 7;\ncvt.u64.u16 %rd9, %rs3;\n",
              {{0x100, 0x100, 7}, {0xffff, 2, 5}});
  expectTable("cvt.u16.u32 %rs1, %r2;\nmad.wide.s16 %r6, %rs1, 3, %r4;\ncvt.u64.u32 %rd9, %r6;\n",
              {{0xffff, 10, 7}, {0x7fff, 0, 0x17ffd}});
}

TEST(LowerNarrow, SixteenBitMadHi) {
  // (a*b)[31:16] + c on 16 bits, c = a. Unsigned: 0xffff^2 = 0xfffe0001: 0xfffe + 0xffff = 0x1fffd
  // -> 0xfffd; 0x8000 * 0x7fff = 0x3fff8000: 0x3fff + 0x8000 = 0xbfff; 0x8000^2 = 0x40000000:
  // 0x4000 + 0x8000. Signed: (-1)^2 = 1: 0 + 0xffff; -32768 * 32767 = 0xc0008000: 0xc000 + 0x8000
  // = 0x14000 -> 0x4000; 1 * -1 = 0xffffffff: 0xffff + 1 -> 0.
  const std::string load = "cvt.u16.u32 %rs1, %r2;\ncvt.u16.u32 %rs2, %r4;\n";
  const std::string store = "cvt.u64.u16 %rd9, %rs3;\n";
  expectTable(load + "mad.hi.u16 %rs3, %rs1, %rs2, %rs1;\n" + store,
              {{0xffff, 0xffff, 0xfffd}, {0x8000, 0x7fff, 0xbfff}, {0x8000, 0x8000, 0xc000}, {1, 1, 1}});
  expectTable(load + "mad.hi.s16 %rs3, %rs1, %rs2, %rs1;\n" + store,
              {{0xffff, 0xffff, 0xffff}, {0x8000, 0x7fff, 0x4000}, {0x8000, 0x8000, 0xc000}, {1, 0xffff, 0}});
  expectModel(load + "mad.hi.u16 %rs3, %rs1, %rs2, %rs2;\n" + store, [](uint64_t x, uint64_t y) {
    uint32_t a = static_cast<uint16_t>(x), b = static_cast<uint16_t>(y);
    return uint64_t{static_cast<uint16_t>((a * b >> 16) + b)};
  });
  expectModel(load + "mad.hi.s16 %rs3, %rs1, %rs2, %rs2;\n" + store, [](uint64_t x, uint64_t y) {
    int32_t a = static_cast<int16_t>(x), b = static_cast<int16_t>(y);
    return uint64_t{static_cast<uint16_t>((a * b >> 16) + b)};
  });
}

// ---- Parameters ----

Expected<std::vector<uint32_t>> runModule(const std::string& text, std::vector<uint32_t> params, uint32_t words) {
  QGPU_TRY(module, ptx::parse(text, "p.ptx"));
  LowerOptions options;
  options.params = std::move(params);
  QGPU_TRY(program, lower(module, options));
  machine::Launch launch;
  launch.blockX = 1;
  QGPU_TRY(result, oracle::run(program, launch, oracle::RunOptions{100000, false}));
  if (result.status != oracle::RunStatus::Finished) return result.fault;
  return std::vector<uint32_t>(result.global.begin(), result.global.begin() + words);
}

TEST(LowerParams, EightAndSixteenBitEntryScalarsAreExtendedPerTheLoad) {
  // k(char c, short s, int* out) as clang writes it: .u8/.u16 params read with ld.param.s8/.s16.
  const std::string text =
      ".version 7.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u8 c, .param .u16 s, .param .u64 out)\n{\n"
      ".reg .b16 %rs<3>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<3>;\n"
      "ld.param.s8 %rs1, [c];\nld.param.s16 %r1, [s];\nld.param.u8 %rs2, [c];\nld.param.u64 %rd1, [out];\n"
      "cvt.s32.s16 %r2, %rs1;\ncvt.u32.u16 %r3, %rs2;\nld.param.u16 %r4, [s];\n"
      "st.global.u32 [%rd1], %r2;\nst.global.u32 [%rd1+4], %r1;\nst.global.u32 [%rd1+8], %r3;\n"
      "st.global.u32 [%rd1+12], %r4;\nret;\n}\n";
  // c = 0x1f0 holds 0xf0 (-16); s = 0x18001 holds 0x8001 (-32767).
  auto got = runModule(text, {0x1f0, 0x18001, 0}, 4);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(*got, (std::vector<uint32_t>{0xfffffff0, 0xffff8001, 0xf0, 0x8001}));
  // Twin: non-negative values read the same signed and unsigned.
  got = runModule(text, {0x70, 0x7001, 0}, 4);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(*got, (std::vector<uint32_t>{0x70, 0x7001, 0x70, 0x7001}));
}

TEST(LowerParams, ByteOffsetsReadTheParametersBytes) {
  // nvcc reads (k >> 8) & 0xff of an unsigned k as ld.param.u8 [k+1]; k = 0x8899aabb: byte 1 is
  // 0xaa, byte 3 read signed is 0x88 = -120, halfword 1 is 0x8899.
  const std::string text =
      ".version 7.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u32 k, .param .u64 out)\n{\n"
      ".reg .b16 %rs<3>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<3>;\n"
      "ld.param.u8 %r1, [k+1];\nld.param.s8 %r2, [k+3];\nld.param.u16 %r3, [k+2];\nld.param.u64 %rd1, [out];\n"
      "st.global.u32 [%rd1], %r1;\nst.global.u32 [%rd1+4], %r2;\nst.global.u32 [%rd1+8], %r3;\nret;\n}\n";
  auto got = runModule(text, {0x8899aabb, 0}, 3);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(*got, (std::vector<uint32_t>{0xaa, 0xffffff88, 0x8899}));
  // Twin: a halfword at byte 3 reads past the 4-byte parameter.
  std::string past = text;
  past.replace(past.find("[k+2]"), 5, "[k+3]");
  got = runModule(past, {0x8899aabb, 0}, 3);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("ld.param of 16 bits at byte offset 3 from a 32-bit parameter"), std::string::npos)
      << got.error().str();
}

TEST(LowerParams, RefusesALoadWiderThanTheParameter) {
  const std::string text =
      ".version 7.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u16 s, .param .u64 out)\n{\n"
      ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
      "ld.param.u32 %r1, [s];\nld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], %r1;\nret;\n}\n";
  auto got = runModule(text, {5, 0}, 1);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(got.error().message.find("`ld.param.u32 %r1, [s];`: ld.param of 32 bits from a 16-bit parameter"),
            std::string::npos) << got.error().str();
  EXPECT_EQ(got.error().loc.line, 8);
}

// A __noinline__ callee as clang-14 writes it: .b32 argument slots read with ld.param.s8,
// ld.param.u8, ld.param.s16 into a 32-bit register, and ld.param.s32 / .u32 into 64-bit registers.
constexpr const char* kCallee =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".func (.param .b32 r) f(.param .b32 p0, .param .b32 p1, .param .b32 p2)\n{\n"
    ".reg .b16 %rs<3>;\n.reg .b32 %r<6>;\n"
    "ld.param.s8 %rs1, [p0];\nld.param.u8 %rs2, [p1];\nld.param.s16 %r1, [p2];\n"
    "cvt.s32.s16 %r2, %rs1;\ncvt.u32.u16 %r3, %rs2;\nmad.lo.s32 %r4, %r3, 256, %r2;\n"
    "add.s32 %r5, %r4, %r1;\nst.param.b32 [r+0], %r5;\nret;\n}\n"
    ".func (.param .b64 r) g(.param .b32 p0, .param .b32 p1)\n{\n"
    ".reg .b64 %rd<4>;\n"
    "ld.param.u32 %rd1, [p0];\nld.param.s32 %rd2, [p1];\nshl.b64 %rd1, %rd1, 20;\nadd.s64 %rd3, %rd1, %rd2;\n"
    "st.param.b64 [r+0], %rd3;\nret;\n}\n"
    ".visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
    ".reg .b32 %r<12>;\n.reg .b64 %rd<8>;\n"
    "ld.param.u64 %rd1, [in];\nld.param.u64 %rd2, [out];\n"
    "ld.global.u32 %r1, [%rd1];\nld.global.u32 %r2, [%rd1+4];\nld.global.u32 %r3, [%rd1+8];\n"
    "{\n.param .b32 a0;\nst.param.b32 [a0+0], %r1;\n.param .b32 a1;\nst.param.b32 [a1+0], %r2;\n"
    ".param .b32 a2;\nst.param.b32 [a2+0], %r3;\n.param .b32 ret0;\n"
    "call.uni (ret0), f, (a0, a1, a2);\nld.param.b32 %r4, [ret0+0];\n}\n"
    "{\n.param .b32 b0;\nst.param.b32 [b0+0], %r1;\n.param .b32 b1;\nst.param.b32 [b1+0], %r3;\n"
    ".param .b64 ret1;\ncall.uni (ret1), g, (b0, b1);\nld.param.b64 %rd3, [ret1+0];\n}\n"
    "cvt.u32.u64 %r5, %rd3;\nshr.u64 %rd4, %rd3, 32;\ncvt.u32.u64 %r6, %rd4;\n"
    "st.global.u32 [%rd2], %r4;\nst.global.u32 [%rd2+4], %r5;\nst.global.u32 [%rd2+8], %r6;\nret;\n}\n";

TEST(LowerParams, CalleeArgumentsAreNarrowedAndWidenedPerTheLoad) {
  // in = {0xfffff3f0, 0x1234ab81, 0xffff8000}: f gets (signed char)0xf0 = -16, (unsigned char)0x81
  // = 129, (short)0x8000 = -32768: 129 * 256 - 16 - 32768 = 240; g gets x = 0xfffff3f0 as
  // unsigned (zero-extended) and y = -32768: (0xfffff3f0 << 20) - 32768 = 0xfffff3f0_00000 - 0x8000
  // = 0x0ffff_f3eff_f8000: low word 0x3eff8000, high word 0xfffff.
  auto module = ptx::parse(kCallee, "c.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions options;
  options.params = {0, 16};
  auto program = lower(*module, options);
  ASSERT_TRUE(program.ok()) << program.error().str();
  machine::Launch launch;
  launch.blockX = 1;
  launch.global[0] = 0xfffff3f0;
  launch.global[1] = 0x1234ab81;
  launch.global[2] = 0xffff8000;
  auto r = oracle::run(*program, launch, oracle::RunOptions{100000, false});
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->status, oracle::RunStatus::Finished) << r->fault.message;
  EXPECT_EQ(r->global[4], 240u);
  EXPECT_EQ(r->global[5], 0x3eff8000u);
  EXPECT_EQ(r->global[6], 0xfffffu);
}

TEST(LowerParams, CalleeByteOffsetsReadTheArgumentsBytes) {
  // f's third argument 0xffff8000 read as ld.param.u8 [p2+1] (0x80 = 128) instead of .s16:
  // 129 * 256 - 16 + 128 = 33136.
  std::string text = kCallee;
  text.replace(text.find("ld.param.s16 %r1, [p2];"), 23, "ld.param.u8 %r1, [p2+1];");
  auto module = ptx::parse(text, "c.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions options;
  options.params = {0, 16};
  auto program = lower(*module, options);
  ASSERT_TRUE(program.ok()) << program.error().str();
  machine::Launch launch;
  launch.blockX = 1;
  launch.global[0] = 0xfffff3f0;
  launch.global[1] = 0x1234ab81;
  launch.global[2] = 0xffff8000;
  auto r = oracle::run(*program, launch, oracle::RunOptions{100000, false});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->global[4], 33136u);
  // Twin: byte 4 of a 32-bit argument does not exist.
  text.replace(text.find("[p2+1]"), 6, "[p2+4]");
  module = ptx::parse(text, "c.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  auto refused = lower(*module, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("ld.param at byte offset 4 of a 32-bit argument"), std::string::npos)
      << refused.error().str();
}

TEST(LowerParams, RefusesACalleeLoadWiderThanItsArgument) {
  std::string text = kCallee;
  text.replace(text.find("ld.param.s16 %r1, [p2];"), 23, "ld.param.u64 %rd9, [p2];");
  text.replace(text.find(".reg .b32 %r<6>;"), 16, ".reg .b32 %r<6>;\n.reg .b64 %rd<10>;\nmov.u32 %r1, 0;");
  auto module = ptx::parse(text, "c.ptx");
  ASSERT_TRUE(module.ok()) << module.error().str();
  LowerOptions options;
  options.params = {0, 16};
  auto program = lower(*module, options);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error().kind, ErrorKind::PtxUnsupported);
  EXPECT_NE(program.error().message.find("`ld.param.u64 %rd9, [p2];`: ld.param of 64 bits from a 32-bit argument"),
            std::string::npos) << program.error().str();
}

}  // namespace
}  // namespace qgpu::lower
