// qgpu/gen/tests/cuda_gen_test.cpp — the random CUDA generator without compilers (label cpu):
// replay, the policy, every case a valid kernel file carrying the generator's expectations, the
// features the issue asks for, and the operators' meaning pinned by hand-worked values (never by
// the code under test). The compilers' side is cuda_gen_compilers_test.cpp (label tools).
#include <gtest/gtest.h>

#include <set>

#include "gen/cuda_gen.h"
#include "kernels/catalog.h"

namespace qgpu::gen {
namespace {

TEST(CudaGen, SameSeedAndPolicyGiveTheSameFile) {
  CudaPolicy p;
  for (uint64_t seed : {1u, 2u, 77u}) {
    auto a = generateCuda(p, seed), b = generateCuda(p, seed);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->text, b->text);
  }
}

TEST(CudaGen, DifferentSeedsGiveDifferentFiles) {  // the twin: the text does depend on the seed
  CudaPolicy p;
  std::set<std::string> bodies;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    auto c = generateCuda(p, seed, "k");
    ASSERT_TRUE(c);
    bodies.insert(c->text.substr(c->text.find("__")));
  }
  EXPECT_GT(bodies.size(), 45u);
}

TEST(CudaGen, FileNamesGeneratorVersionSeedAndPolicy) {
  CudaPolicy p;
  p.maxVars = 5;
  auto c = generateCuda(p, 12);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "rk12");
  EXPECT_NE(c->text.find("// note: qgpu-gen cuda v" + std::to_string(kCudaGeneratorVersion) + " seed=12 policy: "),
            std::string::npos);
  EXPECT_NE(c->text.find(" maxVars=5 "), std::string::npos);
}

TEST(CudaGen, PolicyRoundTripsThroughItsDescription) {
  CudaPolicy p;
  p.maxTopStmts = 7;
  p.leafProb = 0.125;
  p.wWarp = 9;
  std::string d = describeCuda(p, 3);
  auto back = parseCudaPolicy(d.substr(d.find("policy: ") + 8));
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(*back, p);
}

TEST(CudaGen, PolicyRejectsUnknownFieldsBadValuesAndOutOfRange) {
  EXPECT_EQ(parseCudaPolicy("noSuchField=1").error().kind, ErrorKind::Usage);
  EXPECT_EQ(parseCudaPolicy("maxVars=x").error().kind, ErrorKind::Usage);
  EXPECT_EQ(parseCudaPolicy("maxVars=0").error().kind, ErrorKind::Usage);
  EXPECT_EQ(parseCudaPolicy("maxGrid=16 maxBlockX=16 maxSlots=1").error().kind, ErrorKind::Usage);
  EXPECT_EQ(parseCudaPolicy("leafProb=1.5").error().kind, ErrorKind::Usage);
  EXPECT_TRUE(parseCudaPolicy("maxGrid=6 maxBlockX=16 maxSlots=1"));  // 96 out words fit
  EXPECT_EQ(generateCuda(CudaPolicy{}, 1, "9bad").error().kind, ErrorKind::Usage);
}

// The file is a kernel file (kernels/README.md) whose expectations are the generator's, so it
// runs through `qgpu run` and the catalog harness unchanged.
TEST(CudaGen, EveryCaseIsAKernelFileWithTheGeneratorsExpectations) {
  CudaPolicy p;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    auto c = generateCuda(p, seed);
    ASSERT_TRUE(c);
    auto spec = kernels::parseKernelText(c->text, c->name + ".cu");
    ASSERT_TRUE(spec) << spec.error().str() << "\n" << c->text;
    ASSERT_EQ(spec->params.size(), 4u);
    EXPECT_EQ(spec->params[1].expect, c->expectOut);
    EXPECT_EQ(spec->params[2].expect, std::vector<uint32_t>(c->expectAcc.begin(), c->expectAcc.end()));
    EXPECT_EQ(spec->gridX, c->gridX);
    EXPECT_EQ(spec->blockX, c->blockX);
    auto image = kernels::layout(*spec);
    ASSERT_TRUE(image);
    EXPECT_EQ(image->params, c->params());
    EXPECT_EQ(image->global, c->initialGlobal());
    EXPECT_LE(c->expectOut.size() + kCudaInWords + kCudaAccWords, 126u);
  }
}

// What issue 9 asks the generator to produce appears in a few hundred default cases; warp ops only
// in blocks of exactly 4 threads, and no collective after an early return.
TEST(CudaGen, DefaultPolicyProducesEveryFeature) {
  CudaPolicy p;
  int shared = 0, warp = 0, sync = 0, ret = 0, loop = 0, call = 0, atomic = 0, noinline = 0, multiCta = 0;
  std::set<std::string> spellings;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    auto c = generateCuda(p, seed);
    ASSERT_TRUE(c);
    shared += c->hasShared;
    sync += c->hasSyncReduce;
    ret += c->hasReturn;
    loop += c->hasLoop;
    call += c->hasCall;
    atomic += c->hasAtomic;
    multiCta += c->gridX > 1;
    noinline += c->text.find("__noinline__") != std::string::npos;
    if (c->hasWarp) {
      ++warp;
      EXPECT_EQ(c->blockX, 4u) << c->text;
    }
    for (const CudaOpInfo& op : cudaOpTable()) {
      std::string s = op.spelling;
      std::string head = s.substr(0, s.find('%'));
      if (head.size() > 3 && c->text.find(head) != std::string::npos) spellings.insert(op.name);
    }
  }
  for (int n : {shared, warp, sync, ret, loop, call, atomic, noinline, multiCta}) EXPECT_GT(n, 10);
  for (const char* builtin : {"MinU", "Abs", "Popc", "Clz", "Ffs", "BytePerm", "UMulHi", "MulHi", "UMul24", "Mul24",
                              "USad", "Sad", "DivS", "ShrS", "LtS"})
    EXPECT_TRUE(spellings.count(builtin)) << builtin << " never generated";
}

TEST(CudaGen, NoCollectiveAfterAnEarlyReturn) {
  CudaPolicy p;
  p.wReturn = 5;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    auto c = generateCuda(p, seed);
    ASSERT_TRUE(c);
    size_t ret = c->text.find("return;");
    if (ret == std::string::npos) continue;
    std::string after = c->text.substr(ret);
    for (const char* collective : {"__syncthreads", "_sync(0xfu"})
      EXPECT_EQ(after.find(collective), std::string::npos) << c->text;
  }
}

// ---- The operators, by hand-worked values ----
struct OpRow {
  CudaOp op;
  uint32_t a, b, c, want;
};
const OpRow kRows[] = {
    {CudaOp::Add, 0xffffffffu, 2, 0, 1},
    {CudaOp::Sub, 1, 2, 0, 0xffffffffu},
    {CudaOp::Mul, 0x10000u, 0x10000u, 0, 0},
    {CudaOp::And, 0xc, 0xa, 0, 0x8},
    {CudaOp::Or, 0xc, 0xa, 0, 0xe},
    {CudaOp::Xor, 0xc, 0xa, 0, 0x6},
    {CudaOp::Not, 0, 0, 0, 0xffffffffu},
    {CudaOp::Neg, 1, 0, 0, 0xffffffffu},
    {CudaOp::DivU, 7, 2, 0, 2},      // divisor 2 | 1 = 3
    {CudaOp::DivU, 7, 0, 0, 7},      // divisor 0 | 1 = 1
    {CudaOp::RemU, 7, 2, 0, 1},      // 7 % 3
    {CudaOp::DivS, 0xfffffff9u, 0x102, 0, 0xfffffffeu},  // -7 / ((0x102 & 255) | 1 = 3) = -2 (truncated)
    {CudaOp::DivS, 0x80000000u, 0xffffffffu, 0, 0xff7f7f80u},  // INT_MIN / 255 = -8421504 (never / -1)
    {CudaOp::RemS, 0xfffffff9u, 2, 0, 0xffffffffu},  // -7 % 3 = -1
    {CudaOp::Shl, 1, 33, 0, 2},      // amount 33 & 31 = 1
    {CudaOp::ShrU, 0x80000000u, 31, 0, 1},
    {CudaOp::ShrS, 0x80000000u, 31, 0, 0xffffffffu},
    {CudaOp::ShrS, 0x80000000u, 32, 0, 0x80000000u},  // amount 0
    {CudaOp::ShrS, 0x40000000u, 30, 0, 1},
    {CudaOp::LtU, 0xffffffffu, 0, 0, 0},
    {CudaOp::LeU, 3, 3, 0, 1},
    {CudaOp::GtU, 0xffffffffu, 0, 0, 1},
    {CudaOp::GeU, 2, 3, 0, 0},
    {CudaOp::LtS, 0xffffffffu, 0, 0, 1},
    {CudaOp::LeS, 0, 0xffffffffu, 0, 0},
    {CudaOp::GtS, 0, 0x80000000u, 0, 1},
    {CudaOp::GeS, 0x80000000u, 0x80000000u, 0, 1},
    {CudaOp::Eq, 5, 5, 0, 1},
    {CudaOp::Ne, 5, 5, 0, 0},
    {CudaOp::LAnd, 2, 4, 0, 1},
    {CudaOp::LOr, 0, 0, 0, 0},
    {CudaOp::LNot, 9, 0, 0, 0},
    {CudaOp::Select, 0, 1, 2, 2},
    {CudaOp::MinU, 0xffffffffu, 1, 0, 1},
    {CudaOp::MaxU, 0xffffffffu, 1, 0, 0xffffffffu},
    {CudaOp::MinS, 0xffffffffu, 1, 0, 0xffffffffu},
    {CudaOp::MaxS, 0xffffffffu, 1, 0, 1},
    {CudaOp::Abs, 0x80000000u, 0, 0, 0x7fffffffu},  // |INT_MIN | 1| = INT_MAX
    {CudaOp::Abs, 0xfffffffeu, 0, 0, 1},            // |-2 | 1| = |-1|
    {CudaOp::Popc, 0xf0f0u, 0, 0, 8},
    {CudaOp::Clz, 0, 0, 0, 32},
    {CudaOp::Clz, 1, 0, 0, 31},
    {CudaOp::Ffs, 0, 0, 0, 0},
    {CudaOp::Ffs, 8, 0, 0, 4},
    {CudaOp::Brev, 1, 0, 0, 0x80000000u},
    {CudaOp::BytePerm, 0x33221100u, 0x77665544u, 0x5410u, 0x55441100u},  // CUDA's own example
    {CudaOp::BytePerm, 0x332211aau, 0, 0x8888u, 0xaaaaaaaau},  // sign mode masked off: all byte 0
    {CudaOp::UMulHi, 0xffffffffu, 0xffffffffu, 0, 0xfffffffeu},
    {CudaOp::MulHi, 0x80000000u, 2, 0, 0xffffffffu},  // -2^31 * 2 = -2^32: high word -1
    {CudaOp::MulHi, 0xffffffffu, 0xffffffffu, 0, 0},
    {CudaOp::UMul24, 0x01000003u, 5, 0, 15},
    {CudaOp::Mul24, 0x00ffffffu, 3, 0, 0xfffffffdu},  // the low 24 bits are -1
    {CudaOp::USad, 3, 10, 1, 8},
    {CudaOp::Sad, 0xfffffffeu, 3, 0, 5},  // |-2 - 3|
    {CudaOp::Sad, 0x80000000u, 0x7fffffffu, 0, 0xffffffffu},  // |INT_MIN - INT_MAX| = 2^32 - 1
};

TEST(CudaOps, HandWorkedValues) {
  for (const OpRow& r : kRows)
    EXPECT_EQ(evalCudaOp(r.op, r.a, r.b, r.c), r.want)
        << cudaOpInfo(r.op).name << "(" << r.a << ", " << r.b << ", " << r.c << ")";
}

TEST(CudaOps, EveryOperatorHasAHandWorkedRow) {
  std::set<int> covered;
  for (const OpRow& r : kRows) covered.insert(static_cast<int>(r.op));
  EXPECT_EQ(covered.size(), cudaOpTable().size());
}

}  // namespace
}  // namespace qgpu::gen
