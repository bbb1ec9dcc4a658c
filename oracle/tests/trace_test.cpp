// Tests for oracle/trace.cpp: vocabulary layout, value chunks, exact run traces, the run decoder
// (and its rejections), the prompt round trip, pretty-printing and the digest. Expected token ids
// are worked out by hand from the family table (docs/trace.md lists the same numbers).
#include "oracle/trace.h"

#include <gtest/gtest.h>

#include <climits>

#include "oracle/interpreter.h"
#include "oracle/tests/builder.h"

#ifdef QGPU_HAVE_RAPIDCHECK
#include <rapidcheck/gtest.h>
#endif

namespace qgpu::trace {
namespace {

using namespace machine;
using namespace machine::build;

Token T(int d) {
  return tok(Family::T, d & 31);
}
Token C(int d) {
  return tok(Family::C, d & 31);
}
const Token kEnd = single(Family::End);
const Token kNop = single(Family::Nop);

// Trace v4: v3's LAUNCH (id 4) is gone, so v3's ids 5..241 are one lower; TICK comes last.
TEST(TraceVocabulary, FamilyBasesAndSize) {
  EXPECT_EQ(single(Family::Prog), 0);
  EXPECT_EQ(single(Family::Blk), 1);
  EXPECT_EQ(single(Family::Gw), 2);  // v2's OPW row
  EXPECT_EQ(single(Family::Term), 3);
  EXPECT_EQ(single(Family::Gmem), 4);
  EXPECT_EQ(single(Family::Run), 5);
  EXPECT_EQ(ex(0), 6);
  EXPECT_EQ(ex(31), 37);
  EXPECT_EQ(wm(0, 1), 38);
  EXPECT_EQ(wm(3, 15), 97);
  EXPECT_EQ(wr(1), 98);
  EXPECT_EQ(wu(1), 113);
  EXPECT_EQ(wu(15), 127);
  EXPECT_EQ(wp(0), 128);
  EXPECT_EQ(wp(7), 135);
  EXPECT_EQ(mg(1), 136);
  EXPECT_EQ(mg(15), 150);
  EXPECT_EQ(ms(1), 151);
  EXPECT_EQ(ms(15), 165);
  EXPECT_EQ(single(Family::Nop), 166);
  EXPECT_EQ(single(Family::Cta), 167);
  EXPECT_EQ(kEnd, 168);
  EXPECT_EQ(single(Family::FaultTok), 169);
  EXPECT_EQ(single(Family::Limit), 170);
  EXPECT_EQ(C(0), 171);
  EXPECT_EQ(C(31), 202);
  EXPECT_EQ(T(0), 203);
  EXPECT_EQ(T(-1), 234);
  EXPECT_EQ(opWord(RomSlot::Head), 235);  // the ROM word tags (trace v3)
  EXPECT_EQ(opWord(RomSlot::Sources), 236);
  EXPECT_EQ(opWord(RomSlot::Imm0), 237);
  EXPECT_EQ(opWord(RomSlot::Imm2), 239);
  EXPECT_EQ(opWord(RomSlot::Offset), 240);
  EXPECT_EQ(tick(1), 241);  // the step ticks come last (trace v4)
  EXPECT_EQ(tick(2), 242);
  EXPECT_EQ(kVocabSize, 243);
  EXPECT_EQ(kVocabSize, kQwenRows);  // every unused row of Qwen3.5's embedding, none to spare
}

// The tick periods and the model's limit, by hand: R1 = R2 = R3 = 100.
TEST(TraceVocabulary, TickPeriodsAndTheModelsLimit) {
  EXPECT_EQ(tickPeriod(1), 100u);
  EXPECT_EQ(tickPeriod(2), 10'000u);
  EXPECT_EQ(kModelStepLimit, 1'000'000u);
  EXPECT_EQ(oracle::RunOptions{}.maxSteps, 1'000'000u);  // the default is the model's limit
  EXPECT_EQ(ticksDue(0), 0);  // nothing before the first step
  EXPECT_EQ(ticksDue(1), 0);
  EXPECT_EQ(ticksDue(99), 0);
  EXPECT_EQ(ticksDue(100), 1);
  EXPECT_EQ(ticksDue(200), 1);
  EXPECT_EQ(ticksDue(9'900), 1);
  EXPECT_EQ(ticksDue(10'000), 2);
  EXPECT_EQ(ticksDue(10'100), 1);
  EXPECT_EQ(ticksDue(1'000'000), 2);  // no third level: LIMIT comes instead of an EX
  EXPECT_EQ(ticksDue(2'000'000), 2);
}

TEST(TraceVocabulary, TokenNames) {
  EXPECT_EQ(tokenName(ex(3)), "EX(3)");
  EXPECT_EQ(tokenName(wm(0, 7)), "WM(w0,0111)");
  EXPECT_EQ(tokenName(wm(2, 8)), "WM(w2,1000)");
  EXPECT_EQ(tokenName(wr(5)), "WR(r5)");
  EXPECT_EQ(tokenName(wu(15)), "WU(r15)");
  EXPECT_EQ(tokenName(wp(2)), "WP(p2)");
  EXPECT_EQ(tokenName(mg(7)), "MG(0111)");
  EXPECT_EQ(tokenName(ms(8)), "MS(1000)");
  EXPECT_EQ(tokenName(single(Family::Nop)), "NOP");
  EXPECT_EQ(tokenName(T(-3)), "T(-3)");
  EXPECT_EQ(tokenName(C(7)), "C(7)");
  EXPECT_EQ(tokenName(single(Family::Gmem)), "GMEM");
  EXPECT_EQ(tokenName(single(Family::Gw)), "GW");
  EXPECT_EQ(tokenName(opWord(RomSlot::Head)), "OP(a)");
  EXPECT_EQ(tokenName(opWord(RomSlot::Sources)), "OP(b)");
  EXPECT_EQ(tokenName(opWord(RomSlot::Imm1)), "OP(i1)");
  EXPECT_EQ(tokenName(opWord(RomSlot::Offset)), "OP(off)");
  EXPECT_EQ(tokenName(tick(1)), "TICK(1)");
  EXPECT_EQ(tokenName(tick(2)), "TICK(2)");
  EXPECT_EQ(tokenName(kVocabSize), "?243");
}

TEST(TraceValues, BoundariesUseTheFewestChunks) {
  using V = std::vector<Token>;
  EXPECT_EQ(encodeValue(0), (V{T(0)}));
  EXPECT_EQ(encodeValue(15), (V{T(15)}));
  EXPECT_EQ(encodeValue(static_cast<uint32_t>(-16)), (V{T(-16)}));
  EXPECT_EQ(encodeValue(16), (V{C(0), T(16)}));                            // 00000 10000
  EXPECT_EQ(encodeValue(static_cast<uint32_t>(-17)), (V{C(-1), T(15)}));   // 11111 01111
  EXPECT_EQ(encodeValue(511), (V{C(15), T(31)}));                          // 01111 11111
  EXPECT_EQ(encodeValue(static_cast<uint32_t>(-512)), (V{C(-16), T(0)}));  // 10000 00000
  EXPECT_EQ(encodeValue(512), (V{C(0), C(16), T(0)}));
  EXPECT_EQ(encodeValue(UINT32_MAX), (V{T(-1)}));  // -1
  // INT_MIN sign-extended to 35 bits: 11110 00000 x 6.
  EXPECT_EQ(encodeValue(0x80000000u), (V{C(-2), C(0), C(0), C(0), C(0), C(0), T(0)}));
  // INT_MAX: 00001 11111 x 6.
  EXPECT_EQ(encodeValue(0x7fffffffu), (V{C(1), C(31), C(31), C(31), C(31), C(31), T(31)}));
  EXPECT_EQ(valueLength(0x80000000u), 7);
  EXPECT_EQ(valueLength(0x1fffffffu), 6);  // 2^29 - 1 fits 30 bits
  EXPECT_EQ(valueLength(0x20000000u), 7);
}

// EX(0) WM(w0,0001) WU(r1) <value tokens> END, decoded back to the value.
Expected<uint32_t> roundTrip(const std::vector<Token>& valueTokens) {
  std::vector<Token> run = {ex(0), wm(0, 1), wu(1)};
  run.insert(run.end(), valueTokens.begin(), valueTokens.end());
  run.push_back(kEnd);
  QGPU_TRY(events, decodeRun(run));
  if (events.size() != 3) return makeDiag(ErrorKind::Internal, "unexpected events");
  return std::get<RegWrite>(events[1]).values.at(0);
}

// The head word's bits, worked by hand from docs/trace.md "Prompt" (op index 4 bits at 0, opcode 7
// at 4, dst 4 at 11, dstPred code 4 at 15, guard code 4 at 19, negate at 23, space at 24, the
// continuation flag at 25; a predicate code is p + 1, 0 = none), so that a reader of the ROM (the
// circuit's tests) can take the word from packOpHead and not re-pack it by field name.
TEST(TracePackedWords, PackOpHeadPlacesEveryFieldAndTheContinuationRow) {
  Instr in;
  in.op = Op::Add;
  in.dst = 9;
  in.dstPred = 2;
  in.guard = {5, true};
  const uint32_t want = 3u | static_cast<uint32_t>(Op::Add) << 4 | 9u << 11 | 3u << 15 | 6u << 19 | 1u << 23;
  EXPECT_EQ(packOpHead(in, 3), want);
  in.space = Space::Shared;
  EXPECT_EQ(packOpHead(in, 3), want | 1u << 24);
  EXPECT_EQ(packOpHead(in, 7, true), 7u | 1u << 25);  // the row and the flag, nothing of `in`
  // The prompt carries exactly this word after OP(a) (its first value).
  Program p;
  Block b;
  b.ops.push_back(in);
  b.term.kind = TermKind::Exit;
  p.blocks.push_back(b);
  const std::vector<Token> t = encodePrompt(p, launch(1, 4));
  size_t at = 0;
  while (at < t.size() && t[at] != opWord(RomSlot::Head)) ++at;
  ASSERT_LT(at + 1, t.size());
  int64_t acc = 0;
  for (size_t i = at + 1; i < t.size(); ++i) {
    const int d = indexOf(t[i]) & 31;
    acc = i == at + 1 ? (d >= 16 ? d - 32 : d) : acc * 32 + d;
    if (familyOf(t[i]) == Family::T) break;
  }
  EXPECT_EQ(static_cast<uint32_t>(acc), packOpHead(in, 0));
}

TEST(TraceValues, DecodeRoundTripsBoundaries) {
  for (uint32_t v : {0u, 15u, 16u, static_cast<uint32_t>(-16), static_cast<uint32_t>(-17),
                     0x80000000u, 0x7fffffffu, UINT32_MAX, 0x12345678u}) {
    auto got = roundTrip(encodeValue(v));
    ASSERT_TRUE(got.ok()) << v << ": " << got.error().message;
    EXPECT_EQ(*got, v);
  }
}

TEST(TraceValues, DecodeRejectsMalformedValues) {
  auto expectBad = [](std::vector<Token> value, const std::string& part) {
    auto got = roundTrip(value);
    ASSERT_FALSE(got.ok()) << part;
    EXPECT_EQ(got.error().kind, ErrorKind::TraceInvalid);
    EXPECT_NE(got.error().message.find(part), std::string::npos) << got.error().message;
    EXPECT_EQ(got.error().message.rfind("token 3", 0), 0u) << got.error().message;
  };
  expectBad({C(0), T(5)}, "shortest form");    // 5 fits one chunk
  expectBad({C(-1), T(-1)}, "shortest form");  // -1 fits one chunk
  expectBad({C(0), C(0), C(0), C(0), C(0), C(0), C(0), T(1)}, "more than 7 chunks");
  expectBad({C(4), C(0), C(0), C(0), C(0), C(0), T(0)}, "does not fit in 32 bits");  // 2^32
  expectBad({C(3)}, "unterminated");  // truncated: END is not a chunk
}

// if (tid < 2) r1 = 10; else r1 = 20; global[tid] = r1.
Program diamond() {
  return Program{"diamond",
                 {block({cmp(Op::SetLtU, 0, Tid(), I(2))}, br(0, 1, 2)),
                  block({alu(Op::Mov, 1, I(10))}, jmp(3)),
                  block({alu(Op::Mov, 1, I(20))}, jmp(3)),
                  block({alu(Op::Shl, 2, Tid(), I(2)), st(Space::Global, R(2), R(1))}, exitTerm())},
                 0,
                 0};
}

TEST(TraceRun, DiamondTraceIsExactPerOp) {
  auto r = oracle::run(diamond(), launch(1, 4));
  ASSERT_TRUE(r.ok());
  // Hand-computed ids: EX(b) = 6 + b, WM(w0,m) = 38 + m - 1, WR(r) = 97 + r, WU(r) = 112 + r,
  // WP(p) = 128 + p, MG(e) = 136 + e - 1, C(d) = 171 + d, T(d) = 203 + d, END = 168.
  // 20 = 00000 10100 -> C(0) T(20).
  const std::vector<Token> want = {
      6,   52,  128, 206,                      // EX(0) WM(w0,1111) WP(p0) 0011
      7,   40,  113, 213,                      // EX(1) WM(w0,0011) WU(r1) 10
      8,   49,  113, 171, 223,                 // EX(2) WM(w0,1100) WU(r1) 20
      9,   52,  99,  203, 207, 211, 215,       // EX(3) WM(w0,1111) WR(r2) 0 4 8 12
      150, 203, 213, 204, 213,                 // MG(1111) [0]=10 [1]=10
      205, 171, 223, 206, 171, 223,            //          [2]=20 [3]=20
      168};                                    // END
  EXPECT_EQ(r->trace, want) << pretty(r->trace);
}

TEST(TraceRun, DotProductExampleOfDocsTraceMd) {
  // docs/trace.md: [1,2,3] . [4,5,6] with three threads and atom.add into word 6.
  Program p{"dot",
            {block({alu(Op::Shl, 1, Tid(), I(2)), ld(Space::Global, 2, R(1)),
                    ld(Space::Global, 3, R(1), 12), alu(Op::Mul, 2, R(2), R(3)),
                    atom(Op::AtomAdd, Space::Global, 0, I(24), R(2))},
                   exitTerm())},
            0,
            0};
  Launch l = launch(1, 3);
  for (uint32_t i = 0; i < 6; ++i) l.global[i] = i + 1;
  auto r = oracle::run(p, l);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->global[6], 32u);
  // EX(0) WM(w0,0111)
  // WR(r1) T(0) T(4) T(8)                  shl: 0 4 8
  // WR(r2) T(1) T(2) T(3)                  ld: 1 2 3
  // WR(r3) T(4) T(5) T(6)                  ld: 4 5 6
  // NOP                                     mul: its product one record late (trace v6)
  // WR(r2) T(4) T(10) C(0) T(18)           mul: 4 10 18 (18 = 00000 10010)
  // MG(0111) T(6) T(4) T(6) T(14) T(6) C(1) T(0)   atom.add r0: word 6 = 4, 14, 32 in lane order
  // END                                     (exit writes nothing): 29 tokens.
  const std::vector<Token> want = {6,   44,  98,  203, 207, 211, 99,  204, 205, 206,
                                   100, 207, 208, 209, 166, 99,  207, 213, 171, 221,
                                   142, 209, 207, 209, 217, 209, 172, 203, 168};
  EXPECT_EQ(r->trace, want) << pretty(r->trace);
  // The prompt (v4), summed by hand (a value of 16..511 is 2 chunks, 512..16383 three):
  //   PROG gridX 1 | blockX 3 << 5 | 1 block << 10 = 1121 (3) 4 (v3: PROG T(1) LAUNCH C(3) T(1)
  //   5), BLK T(0) 2;
  //   shl  OP(a) 0 | 21 << 4 | 1 << 11 = 2384 (4), OP(b) 3 | 2 << 6 = 131 (3), OP(i1) T(2) (2) = 9
  //   ld   OP(a) 1 | 50 << 4 | 2 << 11 (4), OP(b) 1 | 1 << 2 = 5 (2)                           = 6
  //   ld   OP(a) (4), OP(b) 5 (2), OP(off) 12 (2)                                             = 8
  //   mul  OP(a) 3 | 3 << 4 | 2 << 11 (4), OP(b) 1 | 2 << 2 | 1 << 6 | 3 << 8 = 841 (4)      = 8
  //        its continuation row (v6) OP(a) 4 | 1 << 25 (7)                                   = 7
  //   atom OP(a) 5 | 52 << 4 = 837 (4), OP(b) 2 | 1 << 6 | 2 << 8 = 578 (4), OP(i0) 24 (3)    = 11
  //   TERM T(3) 2; six words GMEM T(a) GW T(v) 24; RUN 1: 82 tokens (v5: 75, v3: 76, v2: 110).
  EXPECT_EQ(encodePrompt(p, l).size(), 82u);
}

// Runs `p` (which must verify) and compares its run tokens with `want`.
void expectTrace(const Program& p, const Launch& l, const std::vector<Token>& want,
                 const oracle::RunOptions& options = {}) {
  auto r = oracle::run(p, l, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trace, want) << pretty(r->trace);
  EXPECT_TRUE(decodeRun(r->trace).ok());
}

// Trace v6: every multiply into a register writes NOP, then its regrec — also when no lane
// executes it (the regrec of unchanged values, as any register write with e = 0); mulhi and mad
// alike; into r0 it writes one record, NOP. Values by hand: tid·7 = 0 7 14 21; mulhi.u of
// 0x80000000 · tid·7 = tid·7 / 2 = 0 3 7 10; mad tid·7 · 3 + 1 = 1 22 43 64 (64 = 00010 00000).
TEST(TraceRun, AMultiplyIntoARegisterWritesNopThenItsRegrec) {
  const Program p{"mul",
                  {block({alu(Op::Mul, 1, Tid(), I(7)), alu(Op::MulHiU, 2, R(1), I(0x80000000u)),
                          cmp(Op::SetGtU, 0, Tid(), I(9)), guard(alu(Op::Mul, 2, R(1), R(1)), 0),
                          alu(Op::Mad, 3, R(1), I(3), I(1)), alu(Op::Mul, 0, R(1), R(1))},
                         exitTerm())},
                  0,
                  0};
  // clang-format off
  expectTrace(p, launch(1, 4),
              {ex(0), wm(0, 15),
               kNop, wr(1), T(0), T(7), T(14), C(0), T(21),              // mul r1, %tid.x, 7
               kNop, wr(2), T(0), T(3), T(7), T(10),                     // mulhi.u r2
               wp(0), T(0),                                              // p0 false in every lane
               kNop, wr(2), T(0), T(3), T(7), T(10),                     // @p0 mul: no lane, r2 kept
               kNop, wr(3), T(1), C(0), T(22), C(1), T(11), C(2), T(0),  // mad r3
               kNop,                                                     // mul r0: one record
               kEnd});
  // clang-format on
}

TEST(TraceRun, GuardFalseLanesShowTheirUnchangedValueInWr) {
  const Program p{"guards",
                  {block({alu(Op::Mov, 1, Tid()), cmp(Op::SetLtU, 0, Tid(), I(2)),
                          guard(alu(Op::Add, 1, R(1), I(10)), 0),
                          guard(alu(Op::Mov, 2, I(7)), 0, true)},
                         exitTerm())},
                  0,
                  0};
  expectTrace(p, launch(1, 4),
              {ex(0), wm(0, 15),
               wr(1), T(0), T(1), T(2), T(3),     // mov r1, %tid.x
               wp(0), T(3),                       // p0 = lanes 0,1
               wr(1), T(10), T(11), T(2), T(3),   // @p0: lanes 2,3 unchanged
               wr(2), T(0), T(0), T(7), T(7),     // @!p0: lanes 0,1 unchanged (0)
               kEnd});
}

TEST(TraceRun, GuardedPredicateWritesKeepTheOtherLanesBits) {
  const Program p{"preds",
                  {block({cmp(Op::SetLtU, 0, Tid(), I(2)),
                          guard(cmp(Op::SetEq, 1, Tid(), I(1)), 0),
                          guard(cmp(Op::SetNe, 1, Tid(), I(5)), 0, true)},
                         exitTerm())},
                  0,
                  0};
  expectTrace(p, launch(1, 4),
              {ex(0), wm(0, 15), wp(0), T(3),  // 0011
               wp(1), T(2),                    // lanes 0,1 execute: lane 1 true -> 0010
               wp(1), T(14),                   // lanes 2,3 execute, both true -> 1110
               kEnd});
}

TEST(TraceRun, StoreOfAnUnchangedValueIsStillWritten) {
  const Program p{"same", {block({st(Space::Global, I(20), I(7))}, exitTerm())}, 0, 0};
  Launch l = launch(1, 1);
  l.global[5] = 7;
  expectTrace(p, l, {ex(0), wm(0, 1), mg(1), T(5), T(7), kEnd});
}

TEST(TraceRun, StoresOfTwoLanesToOneWordShowBothInLaneOrder) {
  const Program p{"race",
                  {block({alu(Op::Add, 1, Tid(), I(1)), st(Space::Global, I(0), R(1))},
                         exitTerm())},
                  0,
                  0};
  auto r = oracle::run(p, launch(1, 2));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->global[0], 2u);  // the highest lane's value
  EXPECT_EQ(r->trace, (std::vector<Token>{ex(0), wm(0, 3), wr(1), T(1), T(2), mg(3), T(0), T(1),
                                          T(0), T(2), kEnd}))
      << pretty(r->trace);
}

TEST(TraceRun, ByteStoresRecordTheWholeWordAfterEachLane) {
  // st.b8 [tid], 1 in two lanes: word 0 is 1 after lane 0 and 0x101 = 257 = 01000 00001 after
  // lane 1: MG(0011), (word 0, value 1), (word 0, value C(8) T(1)); no register record.
  const Program p{"bytes",
                  {block({stSub(Op::StB8, Space::Global, Tid(), I(1))}, exitTerm())},
                  0,
                  0};
  expectTrace(p, launch(1, 2), {ex(0), wm(0, 3), mg(3), T(0), T(1), T(0), C(8), T(1), kEnd});
}

TEST(TraceRun, AtomicsOfAllLanesChainInLaneOrderThenTheOldValues) {
  // word 1 = 100; each lane adds tid + 1: 101, 103, 106, 110; old values 100, 101, 103, 106.
  const Program p{"atomics",
                  {block({alu(Op::Add, 2, Tid(), I(1)),
                          atom(Op::AtomAdd, Space::Global, 1, I(4), R(2))},
                         exitTerm())},
                  0,
                  0};
  Launch l = launch(1, 4);
  l.global[1] = 100;  // 00011 00100
  expectTrace(p, l,
              {ex(0), wm(0, 15), wr(2), T(1), T(2), T(3), T(4),
               mg(15), T(1), C(3), T(5), T(1), C(3), T(7), T(1), C(3), T(10), T(1), C(3), T(14),
               wr(1), C(3), T(4), C(3), T(5), C(3), T(7), C(3), T(10),
               kEnd});
}

TEST(TraceRun, CasThatFailsShowsTheUnchangedWord) {
  // word 2 = 3; atom.cas [8], 3, 9 in two lanes: lane 0 finds 3 and writes 9, lane 1 finds 9 and
  // fails (the word stays 9). Old values 3, 9.
  const Program p{"cas",
                  {block({atom(Op::AtomCas, Space::Global, 2, I(8), I(3), I(9))}, exitTerm())},
                  0,
                  0};
  Launch l = launch(1, 2);
  l.global[2] = 3;
  expectTrace(p, l,
              {ex(0), wm(0, 3), mg(3), T(2), T(9), T(2), T(9), wr(2), T(3), T(9), kEnd});
}

TEST(TraceRun, SpillStoreIsMsAtTheSlotsSharedWord) {
  // sharedWords 1, blockX 2: slot 1 of thread t is shared word 1 + 1 x 2 + t = 3 + t.
  const Program p{"spill",
                  {block({alu(Op::Add, 1, Tid(), I(7)), stl(1, R(1)), ldl(2, 1)}, exitTerm())},
                  1,
                  2};
  expectTrace(p, launch(1, 2),
              {ex(0), wm(0, 3), wr(1), T(7), T(8), ms(3), T(3), T(7), T(4), T(8), wr(2), T(7),
               T(8), kEnd});
}

TEST(TraceRun, ShuffleAndVoteRecords) {
  const Program p{"warp",
                  {block({alu(Op::Mul, 1, Tid(), I(10)),
                          shfl(Op::ShflDown, 2, R(1), I(1), I(0x1c1f)),
                          cmp(Op::SetGtU, 0, Tid(), I(1)), ballot(3, 0), vote(Op::VoteAny, 1, 0),
                          vote(Op::VoteAll, 2, 0)},
                         exitTerm())},
                  0,
                  0};
  // clang-format off
  expectTrace(p, launch(1, 4),
              {ex(0), wm(0, 15),
               kNop, wr(1), T(0), T(10), C(0), T(20), C(0), T(30),   // mul (v6): 0 10 20 30
               wr(2), T(10), C(0), T(20), C(0), T(30), C(0), T(30),  // down 1; lane 3 keeps its own
               wp(0), T(12),                                         // 1100
               wu(3), T(12),                                         // ballot 0b1100
               wp(1), T(15),                                         // any: all lanes true
               wp(2), T(0),                                          // all: false
               kEnd});
  // clang-format on
}

TEST(TraceRun, OpsWithNothingToShowAreNop) {
  // A load and an add into r0: NOP. An op whose guard is false in every lane: a store is NOP,
  // a register write shows the unchanged values, an atomic with a dst NOP and then its regrec
  // (trace v5: its two records, as with executing lanes), an atomic into r0 NOP.
  const Program p{"nops",
                  {block({ld(Space::Global, 0, I(0)), alu(Op::Add, 0, Tid(), I(1)),
                          pconst(0, false), guard(st(Space::Global, I(0), I(1)), 0),
                          guard(alu(Op::Add, 1, R(1), I(1)), 0),
                          guard(atom(Op::AtomAdd, Space::Global, 2, I(0), I(1)), 0),
                          guard(atom(Op::AtomAdd, Space::Global, 0, I(0), I(1)), 0)},
                         exitTerm())},
                  0,
                  0};
  auto r = oracle::run(p, launch(1, 2));
  ASSERT_TRUE(r.ok());
  const Token nop = single(Family::Nop);
  EXPECT_EQ(r->trace, (std::vector<Token>{ex(0), wm(0, 3), nop, nop, wp(0), T(0), nop, wu(1),
                                          T(0), nop, wu(2), T(0), nop, kEnd}))
      << pretty(r->trace);
  EXPECT_EQ(r->global[0], 0u);
}

TEST(TraceRun, FaultInLaneTwoStoresNothingAndFollowsTheEarlierRecords) {
  // op 0 stores 5 to word 0 in every lane; op 1: r2 = tid x 252 = 0, 252, 504, 756 bytes; op 2
  // stores 9 to [r2]: lane 2's word 126 is out of range (lane 3's too), so no lane stores.
  const Program p{"fault",
                  {block({st(Space::Global, I(0), I(5)), alu(Op::Mul, 2, Tid(), I(252)),
                          st(Space::Global, R(2), I(9))},
                         exitTerm())},
                  0,
                  0};
  auto r = oracle::run(p, launch(1, 4));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, oracle::RunStatus::Fault);
  EXPECT_NE(r->fault.message.find("lane 2 (thread 2), block 0 op 2"), std::string::npos)
      << r->fault.message;
  EXPECT_EQ(r->global[0], 5u);   // op 0 stands
  EXPECT_EQ(r->global[63], 0u);  // lane 1's store of op 2 did not happen
  // 252 = 00111 11100, 504 = 01111 11000, 756 = 00000 10111 10100; the mul's NOP first (v6).
  // clang-format off
  const std::vector<Token> want = {ex(0), wm(0, 15),
                                   mg(15), T(0), T(5), T(0), T(5), T(0), T(5), T(0), T(5),
                                   kNop, wr(2), T(0), C(7), T(28), C(15), T(24), C(0), C(23), T(20),
                                   single(Family::FaultTok)};
  // clang-format on
  EXPECT_EQ(r->trace, want) << pretty(r->trace);
}

TEST(TraceRun, LimitReplacesTheNextStep) {
  const Program p{"spin", {block({alu(Op::Add, 1, R(1), I(1))}, jmp(0))}, 0, 0};
  oracle::RunOptions options;
  options.maxSteps = 2;
  expectTrace(p, launch(1, 1),
              {ex(0), wm(0, 1), wu(1), T(1), ex(0), wm(0, 1), wu(1), T(2),
               single(Family::Limit)},
              options);
}

TEST(TraceRun, CtaBeforeEachCtaAfterTheFirst) {
  const Program p{"ctas", {block({alu(Op::Mov, 1, S(Special::CtaidX))}, exitTerm())}, 0, 0};
  expectTrace(p, launch(2, 1),
              {ex(0), wm(0, 1), wu(1), T(0), single(Family::Cta), ex(0), wm(0, 1), wu(1), T(1),
               kEnd});
}

TEST(TraceRun, DecodeRunGivesTypedEvents) {
  const Token nop = single(Family::Nop);
  const std::vector<Token> run = {
      ex(2),  wm(1, 5), wr(3), T(1),  T(-2),  wu(4), T(7), wp(1), T(4), mg(1),
      T(9),   C(0),     T(16), ms(5), T(0),   T(1),  T(2), T(3),  nop,  single(Family::Cta),
      ex(0),  wm(0, 1), single(Family::FaultTok)};
  auto events = decodeRun(run);
  ASSERT_TRUE(events.ok()) << events.error().message;
  const std::vector<TraceEvent> want = {Exec{2, 1, 5},
                                        RegWrite{3, false, 5, {1, static_cast<uint32_t>(-2)}},
                                        RegWrite{4, true, 5, {7}},
                                        PredWrite{1, 4},
                                        MemWrite{Space::Global, 1, {{9, 16}}},
                                        MemWrite{Space::Shared, 5, {{0, 1}, {2, 3}}},
                                        NoEffect{},
                                        CtaStart{},
                                        Exec{0, 0, 1},
                                        Faulted{}};
  EXPECT_EQ(*events, want);
  EXPECT_EQ(pretty(run),
            "exec B2 warp 1 lanes 0,2\n"
            "  WR(r3) lane0=1 lane2=-2\n"
            "  WU(r4) all=7\n"
            "  WP(p1) 0100\n"
            "  MG(0001) [9]=16\n"
            "  MS(0101) [0]=1 [2]=3\n"
            "  NOP\n"
            "cta (next CTA starts)\n"
            "exec B0 warp 0 lanes 0\n"
            "fault\n");
}

void expectRunRejected(const std::vector<Token>& run, size_t index, const std::string& part) {
  auto events = decodeRun(run);
  ASSERT_FALSE(events.ok()) << part;
  EXPECT_EQ(events.error().kind, ErrorKind::TraceInvalid);
  EXPECT_EQ(events.error().message.rfind("token " + std::to_string(index) + " ", 0), 0u)
      << events.error().message;
  EXPECT_NE(events.error().message.find(part), std::string::npos) << events.error().message;
  EXPECT_EQ(events.error().index, index) << part;  // the same fact as a field
  // After a prompt of 100 tokens, the index is the token's place in the whole sequence.
  auto shifted = decodeRun(run, 100);
  ASSERT_FALSE(shifted.ok());
  EXPECT_EQ(shifted.error().index, index + 100) << part;
  EXPECT_EQ(shifted.error().message.rfind("token " + std::to_string(index + 100) + " ", 0), 0u)
      << shifted.error().message;
}

// One test per rule of the run grammar (docs/trace.md): each names the token it refuses.
TEST(TraceRunRejects, ARunWithoutItsFinalToken) {
  expectRunRejected({}, 0, "without END");
  expectRunRejected({ex(0), wm(0, 1), single(Family::Nop)}, 3, "without END");
}

TEST(TraceRunRejects, ExWithoutWm) {
  expectRunRejected({ex(0), kEnd}, 1, "expected WM");
}

TEST(TraceRunRejects, TokensThatAreNotRunTokens) {
  expectRunRejected({wm(0, 1), kEnd}, 0, "not a run token");
  expectRunRejected({single(Family::Prog), kEnd}, 0, "not a run token");
  expectRunRejected({ex(0), wm(0, 1), T(0), kEnd}, 2, "not a run token");  // a stray value
  expectRunRejected({ex(0), wm(0, 1), 999, kEnd}, 2, "not a qgpu token");
}

TEST(TraceRunRejects, TokensAfterTheEnd) {
  expectRunRejected({kEnd, kEnd}, 1, "after the end");
  expectRunRejected({single(Family::Limit), ex(0), wm(0, 1), kEnd}, 1, "after the end");
}

TEST(TraceRunRejects, RecordsOutsideAStep) {
  expectRunRejected({wu(1), T(0), kEnd}, 0, "outside a step");
  expectRunRejected({ex(0), wm(0, 1), single(Family::Cta), single(Family::Nop), kEnd}, 3,
                    "outside a step");
  expectRunRejected({mg(1), T(0), T(0), kEnd}, 0, "outside a step");
}

TEST(TraceRunRejects, WrWithEqualValuesOrOneLane) {
  expectRunRejected({ex(0), wm(0, 3), wr(1), T(4), T(4), kEnd}, 2, "must be written as WU");
  expectRunRejected({ex(0), wm(0, 4), wr(1), T(4), kEnd}, 2, "one-lane register write");
}

TEST(TraceRunRejects, WrWithFewerValuesThanActiveLanes) {
  expectRunRejected({ex(0), wm(0, 7), wr(1), T(1), T(2), kEnd}, 5, "expected a value");
}

TEST(TraceRunRejects, PredicateBitsOutOfRange) {
  expectRunRejected({ex(0), wm(0, 15), wp(0), C(0), T(16), kEnd}, 3, "outside 0..15");
  expectRunRejected({ex(0), wm(0, 15), wp(0), T(-1), kEnd}, 3, "outside 0..15");
}

TEST(TraceRunRejects, PredicateBitsOutsideTheActiveLanes) {
  expectRunRejected({ex(0), wm(0, 3), wp(0), T(4), kEnd}, 3, "outside the active lanes 0011");
}

TEST(TraceRunRejects, MemoryWriteLanesOutsideTheActiveLanes) {
  expectRunRejected({ex(0), wm(0, 3), mg(4), T(0), T(0), kEnd}, 2, "outside the active lanes");
  expectRunRejected({ex(0), wm(0, 3), ms(7), T(0), T(0), T(0), T(0), T(0), T(0), kEnd}, 2,
                    "outside the active lanes");
}

TEST(TraceRunRejects, WordIndexOutsideMemory) {
  // 3 x 32 + 30 = 126: one past the last word.
  expectRunRejected({ex(0), wm(0, 1), mg(1), C(3), T(-2), T(0), kEnd}, 3, "global word index");
  expectRunRejected({ex(0), wm(0, 1), ms(1), C(3), T(-2), T(0), kEnd}, 3, "shared word index");
  expectRunRejected({ex(0), wm(0, 1), mg(1), T(-1), T(0), kEnd}, 3, "global word index");
}

TEST(TraceRunRejects, MemoryWriteWithFewerAccessesThanLanes) {
  expectRunRejected({ex(0), wm(0, 3), mg(3), T(0), T(1), kEnd}, 5, "expected a value");
}

TEST(TraceRunRejects, FaultOutsideAStep) {
  expectRunRejected({single(Family::FaultTok)}, 0, "FAULT outside a step");
  expectRunRejected({ex(0), wm(0, 1), single(Family::Cta), single(Family::FaultTok)}, 3,
                    "FAULT outside a step");
}

TEST(TraceRun, FaultAndLimitEndTheRun) {
  EXPECT_TRUE(decodeRun(std::vector<Token>{ex(0), wm(0, 1), single(Family::FaultTok)}).ok());
  EXPECT_TRUE(decodeRun(std::vector<Token>{ex(0), wm(0, 1), wu(1), T(0),
                                           single(Family::FaultTok)})
                  .ok());
  EXPECT_TRUE(decodeRun(std::vector<Token>{single(Family::Limit)}).ok());
  EXPECT_TRUE(decodeRun(std::vector<Token>{ex(0), wm(0, 1), single(Family::Cta),
                                           single(Family::Limit)})
                  .ok());
}

// ---- Step ticks (trace v4, docs/trace.md "Step ticks") ----
//
// The expected runs below are built by hand from the rule with the literal periods 100 and
// 10,000 (not from ticksDue): before the EX of step i + 1 or the LIMIT after i steps, TICK(1) if
// 100 divides i > 0, then TICK(2) if 10,000 does.

const Token kTick1 = tick(1), kTick2 = tick(2), kLimit = single(Family::Limit),
            kCta = single(Family::Cta);

// spin: r1 = r1 + 1 forever, one thread. Step i writes EX(0) WM(w0,0001) WU(r1) v(i).
Program spin() {
  return Program{"spin", {block({alu(Op::Add, 1, R(1), I(1))}, jmp(0))}, 0, 0};
}
std::vector<Token> spinRun(uint64_t steps) {
  std::vector<Token> want;
  for (uint64_t i = 0; i <= steps; ++i) {
    if (i > 0 && i % 100 == 0) want.push_back(kTick1);
    if (i > 0 && i % 10'000 == 0) want.push_back(kTick2);
    if (i == steps) break;
    want.insert(want.end(), {ex(0), wm(0, 1), wu(1)});
    appendValue(want, static_cast<uint32_t>(i + 1));
  }
  want.push_back(kLimit);
  return want;
}

TEST(TraceTicks, Tick1AfterEvery100StepsAndBothTicksAfter10000) {
  oracle::RunOptions options;
  options.maxSteps = 10'000;
  auto r = oracle::run(spin(), launch(1, 1), options);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->trace, spinRun(10'000));
  // By hand: steps 1..15 are 4 tokens (v(i) one chunk), 16..100 five (two chunks), so the first
  // TICK(1) is token 15 x 4 + 85 x 5 = 485, right before step 101's EX.
  EXPECT_EQ(r->trace[485], kTick1);
  EXPECT_EQ(r->trace[484], T(100 & 31));  // step 100's value 100 = 00011 00100
  EXPECT_EQ(r->trace[486], ex(0));
  EXPECT_EQ(std::count(r->trace.begin(), r->trace.end(), kTick1), 100);
  EXPECT_EQ(std::count(r->trace.begin(), r->trace.end(), kTick2), 1);
  // After the 10,000th step: TICK(1) TICK(2) LIMIT.
  const std::vector<Token> tail(r->trace.end() - 3, r->trace.end());
  EXPECT_EQ(tail, (std::vector<Token>{kTick1, kTick2, kLimit}));
  EXPECT_TRUE(decodeRun(r->trace).ok());
}

TEST(TraceTicks, AMillionStepsEndInBothTicksAndLimitAtTheModelsLimit) {
  // The default maxSteps is the model's limit, 10^6 = 100^3 steps.
  auto r = oracle::run(spin(), launch(1, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, oracle::RunStatus::StepLimit);
  EXPECT_EQ(r->blockExecs, 1'000'000u);
  EXPECT_EQ(std::count(r->trace.begin(), r->trace.end(), kTick1), 10'000);
  EXPECT_EQ(std::count(r->trace.begin(), r->trace.end(), kTick2), 100);
  // The last step's value 10^6 = 00000 11110 10000 10010 00000 (5 chunks), then the ticks.
  const std::vector<Token> tail(r->trace.end() - 11, r->trace.end());
  EXPECT_EQ(tail, (std::vector<Token>{ex(0), wm(0, 1), wu(1), C(0), C(30), C(16), C(18), T(0),
                                      kTick1, kTick2, kLimit}));
  EXPECT_EQ(r->trace, spinRun(1'000'000));
  auto events = decodeRun(r->trace);
  ASSERT_TRUE(events.ok()) << events.error().message;
  EXPECT_EQ(events->size(), 2 * 1'000'000u + 10'000 + 100 + 1);
}

TEST(TraceTicks, LimitOtherThanTheModelsKeepsTheFixedPeriods) {
  // maxSteps 100: the ticks due after 100 steps, then LIMIT.
  oracle::RunOptions options;
  options.maxSteps = 100;
  expectTrace(spin(), launch(1, 1), spinRun(100), options);
  EXPECT_EQ(spinRun(100).end()[-2], kTick1);
  // maxSteps 150: TICK(1) after step 100 only; LIMIT after 150 steps with no tick before it.
  options.maxSteps = 150;
  expectTrace(spin(), launch(1, 1), spinRun(150), options);
  EXPECT_EQ(spinRun(150).end()[-2], T(150 & 31));
  // maxSteps 0: LIMIT at once (no tick before the first step).
  options.maxSteps = 0;
  expectTrace(spin(), launch(1, 1), {kLimit}, options);
}

// count: r1 = r1 + 1 until 25, one thread: 25 steps per CTA (the registers reset at each CTA).
Program countTo25() {
  return Program{"count",
                 {block({alu(Op::Add, 1, R(1), I(1)), cmp(Op::SetLtU, 0, R(1), I(25))},
                        br(0, 0, kExitTarget))},
                 0,
                 0};
}
// The run of `ctas` CTAs of countTo25, by hand (ticks after the CTA token, before the EX).
std::vector<Token> countRun(int ctas) {
  std::vector<Token> want;
  uint64_t s = 0;
  for (int c = 0; c < ctas; ++c) {
    if (c > 0) want.push_back(kCta);
    for (uint32_t i = 1; i <= 25; ++i, ++s) {
      if (s > 0 && s % 100 == 0) want.push_back(kTick1);
      want.insert(want.end(), {ex(0), wm(0, 1), wu(1)});
      appendValue(want, i);
      want.insert(want.end(), {wp(0), T(i < 25 ? 1 : 0)});
    }
  }
  want.push_back(kEnd);
  return want;
}

TEST(TraceTicks, ATickAfterACtaBoundaryComesAfterTheCtaToken) {
  // CTA 3 ends with the 100th step: CTA, then TICK(1), then the EX of step 101.
  auto r = oracle::run(countTo25(), launch(5, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->trace, countRun(5)) << pretty(r->trace);
  const auto cta4 = std::find(r->trace.begin() + 1, r->trace.end(), kTick1);
  ASSERT_NE(cta4, r->trace.end());
  EXPECT_EQ(cta4[-1], kCta);
  EXPECT_EQ(cta4[1], ex(0));
  EXPECT_TRUE(decodeRun(r->trace).ok());
}

TEST(TraceTicks, NoTickBeforeEnd) {
  // Four CTAs: 100 steps, then END with no tick (a tick comes only before an EX or LIMIT).
  auto r = oracle::run(countTo25(), launch(4, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->trace, countRun(4));
  EXPECT_EQ(std::count(r->trace.begin(), r->trace.end(), kTick1), 0);
  EXPECT_EQ(r->trace.back(), kEnd);
}

TEST(TraceTicks, DecodeGivesTickEventsWhereTheyStand) {
  // 100 steps of EX(0) WM(w0,0001) NOP, TICK(1), one more step, then LIMIT.
  std::vector<Token> run;
  std::vector<TraceEvent> want;
  for (int i = 0; i < 101; ++i) {
    if (i == 100) {
      run.push_back(kTick1);
      want.push_back(Tick{1});
    }
    run.insert(run.end(), {ex(0), wm(0, 1), kNop});
    want.push_back(Exec{0, 0, 1});
    want.push_back(NoEffect{});
  }
  run.push_back(kLimit);
  want.push_back(LimitReached{});
  auto events = decodeRun(run);
  ASSERT_TRUE(events.ok()) << events.error().message;
  EXPECT_EQ(*events, want);
  const std::string text = pretty(run);
  EXPECT_NE(text.find("  NOP\ntick 1 (a multiple of 100 steps)\nexec B0"), std::string::npos)
      << text;
}

// `steps` steps of EX(0) WM(w0,0001) NOP with the ticks the rule puts before each EX, and
// nothing after the last step.
std::vector<Token> nopSteps(int steps) {
  std::vector<Token> run;
  for (int i = 0; i < steps; ++i) {
    if (i > 0 && i % 100 == 0) run.push_back(kTick1);
    if (i > 0 && i % 10'000 == 0) run.push_back(kTick2);
    run.insert(run.end(), {ex(0), wm(0, 1), kNop});
  }
  return run;
}
std::vector<Token> plus(std::vector<Token> run, std::initializer_list<Token> more) {
  run.insert(run.end(), more);
  return run;
}

TEST(TraceTicks, TheRejectionTwinsDecode) {
  // The same runs as the refusals below, with the ticks where the rule puts them.
  EXPECT_TRUE(decodeRun(plus(nopSteps(100), {kTick1, ex(0), wm(0, 1), kEnd})).ok());
  EXPECT_TRUE(decodeRun(plus(nopSteps(100), {kTick1, kLimit})).ok());
  EXPECT_TRUE(decodeRun(plus(nopSteps(100), {kCta, kTick1, ex(0), wm(0, 1), kEnd})).ok());
  EXPECT_TRUE(decodeRun(plus(nopSteps(100), {kEnd})).ok());
  EXPECT_TRUE(decodeRun(plus(nopSteps(10'000), {kTick1, kTick2, kLimit})).ok());
  EXPECT_TRUE(decodeRun(plus(nopSteps(99), {kLimit})).ok());
}

TEST(TraceRunRejects, ATickBeforeTheFirstStep) {
  expectRunRejected({kTick1, ex(0), wm(0, 1), kEnd}, 0, "TICK(1) misplaced: after 0 steps");
}

TEST(TraceRunRejects, ATickAfterAStepCountThatIsNoMultipleOf100) {
  expectRunRejected(plus(nopSteps(99), {kTick1, ex(0), wm(0, 1), kEnd}), 99 * 3,
                    "TICK(1) misplaced: after 99 steps the rule writes 0 ticks");
}

TEST(TraceRunRejects, AMissingTick) {
  expectRunRejected(plus(nopSteps(100), {ex(0), wm(0, 1), kEnd}), 300,
                    "TICK(1) missing before this EX after 100 steps");
  expectRunRejected(plus(nopSteps(100), {kLimit}), 300, "TICK(1) missing before LIMIT");
  // After 10,000 steps both: TICK(2) missing.
  const size_t at = 10'000 * 3 + 99;  // 99 TICK(1) so far, then this step's TICK(1)
  expectRunRejected(plus(nopSteps(10'000), {kTick1, kLimit}), at + 1,
                    "TICK(2) missing before LIMIT after 10000 steps");
}

TEST(TraceRunRejects, TicksOutOfOrderOrRepeated) {
  expectRunRejected(plus(nopSteps(100), {kTick2, ex(0), wm(0, 1), kEnd}), 300,
                    "TICK(2) misplaced: after 100 steps the rule writes 1 tick");
  expectRunRejected(plus(nopSteps(100), {kTick1, kTick1, kLimit}), 301, "TICK(1) misplaced");
  expectRunRejected(plus(nopSteps(100), {kTick1, kTick2, kLimit}), 301, "TICK(2) misplaced");
  const size_t at = 10'000 * 3 + 99;
  expectRunRejected(plus(nopSteps(10'000), {kTick2, kTick1, kLimit}), at,
                    "TICK(2) misplaced: after 10000 steps");
}

TEST(TraceRunRejects, ATickBeforeCtaEndOrARecord) {
  // Ticks come right before an EX or LIMIT: after the CTA token, never before END.
  expectRunRejected(plus(nopSteps(100), {kTick1, kCta, ex(0), wm(0, 1), kEnd}), 301,
                    "after TICK(1) comes EX or LIMIT");
  expectRunRejected(plus(nopSteps(100), {kTick1, kEnd}), 301, "after TICK(1) comes EX or LIMIT");
  expectRunRejected(plus(nopSteps(100), {kTick1, kNop, kEnd}), 301,
                    "after TICK(1) comes EX or LIMIT");
}

// A program that touches every field of Instr, Terminator and Block.
Program everything() {
  return Program{"",
                 {block({cmp(Op::SetLtS, 3, Tid(), I(-5)),
                         guard(alu(Op::Mad, 1, S(Special::CtaidX), I(0x80000000u), R(15)), 3, true),
                         ld(Space::Shared, 2, R(1), -8),
                         atom(Op::AtomCas, Space::Global, 4, I(12), R(2), I(123456789)),
                         pop(Op::PXor, 5, 3, 3), selp(6, S(Special::WarpId), I(0), 5),
                         shfl(Op::ShflBfly, 7, R(6), I(1), I(0x1c1f)), vote(Op::VoteAll, 6, 5),
                         ballot(8, 6), stl(1, R(8)), ldl(9, 1), pconst(7, true)},
                        br(7, 1, 2, true)),
                  block({}, bar(2)), block({}, jmp(3)), block({}, exitTerm())},
                 7,
                 2};
}

Launch memoryLaunch() {
  Launch l = launch(3, 13);
  l.global[0] = 1;
  l.global[1] = 0xffffffffu;
  l.global[2] = 17;
  l.global[5] = 0x80000000u;
  l.global[125] = 42;
  return l;
}

TEST(TracePrompt, RoundTripsEveryField) {
  const Program p = everything();
  const Launch l = memoryLaunch();
  ASSERT_TRUE(verify(p, l).ok()) << verify(p, l).error().message;
  const std::vector<Token> tokens = encodePrompt(p, l);
  auto back = decodePrompt(tokens);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->program, p) << print(back->program);
  EXPECT_EQ(back->launch.gridX, l.gridX);
  EXPECT_EQ(back->launch.blockX, l.blockX);
  EXPECT_EQ(back->launch.global, l.global);
}

TEST(TracePrompt, RoundTripsAnExitTarget) {
  Program p = diamond();
  p.blocks[0].term.taken = kExitTarget;
  ASSERT_TRUE(verify(p).ok()) << verify(p).error().message;
  auto back = decodePrompt(encodePrompt(p, launch(1, 4)));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->program.blocks[0].term.taken, kExitTarget);
}

TEST(TracePrompt, SmallestPromptIsExact) {
  Program p{"", {block({}, exitTerm())}, 0, 0};
  Launch l = launch(1, 1);
  l.global[3] = 100;                       // 00011 00100
  // PROG: gridX 1 | blockX 1 << 5 | 1 block << 10, 0 shared, 0 spill = 1057 = 00001 00001 00001
  const std::vector<Token> want = {0, C(1), C(1), T(1),
                                   1, T(0),          // BLK 0, no ops
                                   3, T(3),          // TERM: exit (kind 3), no targets, no pred
                                   4, T(3), 2, C(3), T(4),  // GMEM 3, GW 100
                                   5};                      // RUN
  EXPECT_EQ(encodePrompt(p, l), want);
}

// The bit layouts, worked out by hand from machine.h's limits and isa.def's 73 ops: op index
// 0..15 (4 bits), opcode 0..72 (7), registers 0..15 (4), predicates p + 1 with 0 = none (4),
// operand kinds 0..3 (2), targets 0..31 with 32 = exit (6), 126 shared words (7), 16 CTAs and
// 16 threads (5).
TEST(TracePrompt, PackedLayoutsAreDerivedFromTheMachine) {
  auto text = [](PackedWord w) {
    std::string s;
    for (const PackedField& f : packedLayout(w))
      s += std::string(f.name) + "@" + std::to_string(f.offset) + ":" + std::to_string(f.width) + " ";
    return s;
  };
  EXPECT_EQ(text(PackedWord::Program),
            "gridX@0:5 blockX@5:5 block count@10:6 sharedWords@16:7 spillSlots@23:7 ");
  EXPECT_EQ(text(PackedWord::OpHead),
            "op index@0:4 opcode@4:7 dst@11:4 dstPred@15:4 guard predicate@19:4 "
            "guard negate@23:1 space@24:1 continuation@25:1 ");
  EXPECT_EQ(text(PackedWord::OpSources),
            "src0 kind@0:2 src0 index@2:4 src1 kind@6:2 src1 index@8:4 src2 kind@12:2 "
            "src2 index@14:4 psrc0@18:4 psrc1@22:4 ");
  EXPECT_EQ(text(PackedWord::Term),
            "terminator kind@0:2 next target@2:6 taken target@8:6 branch predicate@14:4 "
            "branch negate@18:1 ");
}

// One op's words, by hand: shl r1, %tid.x, 2 is op 0 of block 0.
//   OP(a) 0 | 21 << 4 | 1 << 11 = 2384 = 00010 01010 10000 → C(2) C(10) T(-16)
//   OP(b) src0 Special (3) index 0, src1 Imm (2 << 6) = 131 = 00100 00011 → C(4) T(3)
//   OP(i1) 2 (src1's immediate); no OP(i0) (src0 is no immediate), no OP(off) (offset 0)
TEST(TracePrompt, AnOpIsItsTaggedWordsInSlotOrder) {
  Program p{"", {block({alu(Op::Shl, 1, Tid(), I(2))}, exitTerm())}, 0, 0};
  const std::vector<Token> got = encodePrompt(p, launch(1, 1));
  const std::vector<Token> op = {opWord(RomSlot::Head), C(2), C(10), T(-16),
                                 opWord(RomSlot::Sources), C(4), T(3),
                                 opWord(RomSlot::Imm1), T(2)};
  // PROG C(1) C(1) T(1) BLK T(0), then the op at token 6.
  ASSERT_GE(got.size(), 6u + op.size());
  EXPECT_EQ(std::vector<Token>(got.begin() + 6, got.begin() + 6 + static_cast<long>(op.size())), op);
  EXPECT_EQ(got[6 + op.size()], single(Family::Term));
  // A guarded store with an offset and a zero immediate: st.shared [r2+8], 0 @!p1. The zero
  // immediate has no word (an absent ROM word reads 0); the offset has one.
  Program q{"", {block({cmp(Op::SetEq, 1, Tid(), I(0)),
                        guard(st(Space::Shared, R(2), I(0), 8), 1, true)},
                       exitTerm())},
            4, 0};
  ASSERT_TRUE(verify(q, launch(1, 1)).ok()) << verify(q, launch(1, 1)).error().message;
  const std::vector<Token> all = encodePrompt(q, launch(1, 1));
  auto back = decodePrompt(all);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->program, q);
  EXPECT_EQ(std::count(all.begin(), all.end(), opWord(RomSlot::Imm1)), 0);
  EXPECT_EQ(std::count(all.begin(), all.end(), opWord(RomSlot::Offset)), 1);
}

// One block's prompt: its op words (after PROG's 4 tokens and BLK T(0)) are `ops`, then TERM;
// the prompt decodes back to `p` (a continuation row dropped, the op indices restored).
void expectOneBlockPrompt(const Program& p, const std::vector<Token>& got,
                          const std::vector<Token>& ops) {
  ASSERT_GE(got.size(), 6u + ops.size());
  EXPECT_EQ(std::vector<Token>(got.begin() + 6, got.begin() + 6 + static_cast<long>(ops.size())),
            ops);
  EXPECT_EQ(got[6 + ops.size()], single(Family::Term));
  auto back = decodePrompt(got);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->program, p);
}

// Trace v5: an atomic with a register destination is keyed by its first record's index and gets a
// continuation row; later ops' rows run ahead of their op index. By hand (block 0):
//   op 0 atom.add r1, [r2], 1: OP(a) 0 | 52 << 4 | 1 << 11 = 2880 = 00010 11010 00000 →
//        C(2) C(-6) T(0); OP(b) 137 = 00100 01001 → C(4) T(9); OP(i1) T(1)
//   row 1, its continuation: OP(a) 1 | 1 << 25 = 33554433 → C(1) C(0) C(0) C(0) C(0) T(1)
//   op 1 mov r3, 5 at row 2: OP(a) 2 | 3 << 11 = 6146 = 00110 00000 00010 → C(6) C(0) T(2);
//        OP(b) src0 Imm (2) → T(2); OP(i0) T(5)
//   op 2 atom.add r0, [r2], 1 at row 3 (into r0: one record, no continuation row): OP(a)
//        3 | 52 << 4 = 835 = 11010 00011 → C(0) C(-6) T(3) (835 needs 11 signed bits: 3 chunks)
TEST(TracePrompt, AnAtomicWithADestinationHasAContinuationRow) {
  Program p{"", {block({atom(Op::AtomAdd, Space::Global, 1, R(2), I(1)), alu(Op::Mov, 3, I(5)),
                        atom(Op::AtomAdd, Space::Global, 0, R(2), I(1))},
                       exitTerm())},
            0, 0};
  ASSERT_TRUE(verify(p, launch(1, 1)).ok()) << verify(p, launch(1, 1)).error().message;
  const std::vector<Token> got = encodePrompt(p, launch(1, 1));
  const Token kA = opWord(RomSlot::Head), kB = opWord(RomSlot::Sources),
              kI0 = opWord(RomSlot::Imm0), kI1 = opWord(RomSlot::Imm1);
  const std::vector<Token> ops = {kA,  C(2), C(-6), T(0), kB,   C(4), T(9), kI1,  T(1),
                                  kA,  C(1), C(0),  C(0), C(0), C(0), T(1),
                                  kA,  C(6), C(0),  T(2), kB,   T(2), kI0,  T(5),
                                  kA,  C(0), C(-6), T(3), kB,   C(4), T(9), kI1,  T(1)};
  expectOneBlockPrompt(p, got, ops);
  // The OverLimit twin: 9 such atomics are 18 records, which verify() refuses before encoding.
  Program q = p;
  q.blocks[0].ops.assign(9, atom(Op::AtomAdd, Space::Global, 1, R(2), I(1)));
  EXPECT_EQ(verify(q).error().kind, ErrorKind::OverLimit);
}

// Trace v6: a multiply with a register destination is keyed and continued as an atomic is. By hand
// (block 0):
//   op 0 mul r1, r2, r3: OP(a) 0 | 3 << 4 | 1 << 11 = 2096 = 00010 00001 10000 → C(2) C(1) T(16);
//        OP(b) Reg r2 | Reg r3 = 1 | 2 << 2 | 1 << 6 | 3 << 8 = 841 = 11010 01001 → C(0) C(-6) T(9)
//   row 1, its continuation: OP(a) 1 | 1 << 25 → C(1) C(0) C(0) C(0) C(0) T(1)
//   op 1 mov r3, 5 at row 2: as above
//   op 2 mul r0, r2, r3 at row 3 (into r0: one record): OP(a) 3 | 3 << 4 = 51 = 00001 10011 →
//        C(1) T(19); OP(b) C(0) C(-6) T(9)
TEST(TracePrompt, AMultiplyWithADestinationHasAContinuationRow) {
  ASSERT_EQ(static_cast<int>(Op::Mul), 3);
  Program p{
      "",
      {block({alu(Op::Mul, 1, R(2), R(3)), alu(Op::Mov, 3, I(5)), alu(Op::Mul, 0, R(2), R(3))},
             exitTerm())},
      0,
      0};
  ASSERT_TRUE(verify(p, launch(1, 1)).ok()) << verify(p, launch(1, 1)).error().message;
  const std::vector<Token> got = encodePrompt(p, launch(1, 1));
  const Token kA = opWord(RomSlot::Head), kB = opWord(RomSlot::Sources),
              kI0 = opWord(RomSlot::Imm0);
  // clang-format off
  const std::vector<Token> ops = {kA, C(2), C(1), T(16), kB, C(0), C(-6), T(9),
                                  kA, C(1), C(0), C(0), C(0), C(0), T(1),
                                  kA, C(6), C(0), T(2), kB, T(2), kI0, T(5),
                                  kA, C(1), T(19), kB, C(0), C(-6), T(9)};
  // clang-format on
  expectOneBlockPrompt(p, got, ops);
  // mad and both mulhi take the row too; 9 multiplies into r1 are 18 records: OverLimit.
  for (Op op : {Op::Mad, Op::MulHiU, Op::MulHiS}) {
    const Instr in = alu(op, 1, R(2), R(3), op == Op::Mad ? R(2) : Operand{});
    EXPECT_EQ(recordsOf(in), 2) << opInfo(op).mnemonic;
  }
  Program q = p;
  q.blocks[0].ops.assign(9, alu(Op::Mul, 1, R(2), R(3)));
  EXPECT_EQ(verify(q).error().kind, ErrorKind::OverLimit);
  q.blocks[0].ops.assign(8, alu(Op::Mul, 1, R(2), R(3)));
  EXPECT_TRUE(verify(q).ok());
}

TEST(TracePrompt, DecodeRejectsTruncatedAndInvalidPrompts) {
  const std::vector<Token> full = encodePrompt(everything(), memoryLaunch());
  for (size_t n = 0; n < full.size(); ++n) {
    auto got = decodePrompt(std::span<const Token>(full.data(), n));
    ASSERT_FALSE(got.ok()) << "prefix of " << n << " tokens decoded";
    EXPECT_EQ(got.error().kind, ErrorKind::TraceInvalid);
  }
  // A program that decodes but breaks verify(): jump to a missing block.
  Program bad{"", {block({}, jmp(0))}, 0, 0};
  std::vector<Token> tokens = encodePrompt(bad, launch(1, 1));
  ASSERT_EQ(tokens[6], single(Family::Term));
  tokens[7] = T(1 << 2);  // TERM: jmp (kind 0), next target 1 (bits 2..7)
  auto got = decodePrompt(tokens);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("invalid program"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("B1 does not exist"), std::string::npos)
      << got.error().message;
  // Tokens after RUN.
  tokens = encodePrompt(everything(), memoryLaunch());
  tokens.push_back(kEnd);
  EXPECT_FALSE(decodePrompt(tokens).ok());
  size_t used = 0;
  EXPECT_TRUE(decodePrompt(tokens, &used).ok());
  EXPECT_EQ(used, tokens.size() - 1);
}

// ---- One refusal per rule of the prompt's grammar (docs/trace.md "Prompt") ----
//
// Prompts are assembled from parts: PROG v, then the blocks' tokens, then RUN. The base program
// is one block; `ops` go between BLK v(0) and TERM v(exit). Token 0 is PROG, 1..3 its word
// (gridX 1 | blockX 1 << 5 | 1 block << 10 = 1057: C(1) C(1) T(1)), 4 BLK, 5 T(0), 6 the ops.
std::vector<Token> cat(std::initializer_list<std::vector<Token>> parts) {
  std::vector<Token> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
std::vector<Token> val(uint32_t v) { return encodeValue(v); }
const Token kProg = single(Family::Prog),
            kBlk = single(Family::Blk), kTerm = single(Family::Term), kGmem = single(Family::Gmem),
            kGw = single(Family::Gw), kRun = single(Family::Run);
const Token kA = opWord(RomSlot::Head), kB = opWord(RomSlot::Sources),
            kI0 = opWord(RomSlot::Imm0), kI1 = opWord(RomSlot::Imm1),
            kOff = opWord(RomSlot::Offset);
// Head word of op `index`: opcode, dst (fields of PackedLayoutsAreDerivedFromTheMachine).
uint32_t head(uint32_t index, Op op, uint32_t dst) {
  return index | static_cast<uint32_t>(op) << 4 | dst << 11;
}
// Sources word: src k's kind (1 Reg, 2 Imm, 3 Special) and index.
uint32_t source(int k, uint32_t kind, uint32_t index) {
  return (kind | index << 2) << (6 * k);
}
constexpr uint32_t kReg = 1, kImm = 2, kSpecial = 3;
std::vector<Token> onlyBlock(const std::vector<Token>& ops, const std::vector<Token>& gmem = {}) {
  return cat({{kProg}, val(1 | 1 << 5 | 1 << 10), {kBlk}, val(0), ops, {kTerm}, val(3), gmem,
              {kRun}});
}
// mov r1, 5 as op `index`.
std::vector<Token> mov5(uint32_t index) {
  return cat({{kA}, val(head(index, Op::Mov, 1)), {kB}, val(source(0, kImm, 0)), {kI0}, val(5)});
}

void expectPromptRejected(const std::vector<Token>& tokens, size_t index, const std::string& part) {
  auto got = decodePrompt(tokens);
  ASSERT_FALSE(got.ok()) << part;
  EXPECT_EQ(got.error().kind, ErrorKind::TraceInvalid);
  EXPECT_EQ(got.error().index, index) << got.error().message;
  EXPECT_NE(got.error().message.find(part), std::string::npos) << got.error().message;
}

TEST(TracePromptRejects, TheBaseCasesDecode) {
  // The twins of every refusal below: the same assembly with the rule kept decodes.
  EXPECT_TRUE(decodePrompt(onlyBlock({})).ok());
  auto one = decodePrompt(onlyBlock(mov5(0)));
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->program.blocks[0].ops[0], alu(Op::Mov, 1, I(5)));
  auto two = decodePrompt(onlyBlock(cat({mov5(0), mov5(1)}), cat({{kGmem}, val(2), {kGw}, val(7),
                                                                  {kGmem}, val(3), {kGw}, val(9)})));
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->launch.global[2], 7u);
  EXPECT_EQ(two->launch.global[3], 9u);
}

TEST(TracePromptRejects, AProgramWordFieldOutOfRange) {
  const std::vector<Token> rest = {kBlk, T(0), kTerm, T(3), kRun};
  // block count 0.
  expectPromptRejected(cat({{kProg}, val(1 | 1 << 5), rest}), 1,
                       "field 'block count' (bits 10..15) = 0 is outside 1..32");
  // The launch shape is in the program word (trace v4): gridX 0, blockX 17.
  expectPromptRejected(cat({{kProg}, val(1 << 5 | 1 << 10), rest}), 1,
                       "field 'gridX' (bits 0..4) = 0 is outside 1..16");
  expectPromptRejected(cat({{kProg}, val(1 | 17 << 5 | 1 << 10), rest}), 1,
                       "field 'blockX' (bits 5..9) = 17 is outside 1..16");
}

TEST(TracePromptRejects, BitsAboveAPackedWordsFields) {
  std::vector<Token> t = cat({{kProg}, val(1 | 1 << 5 | 1 << 10 | 1u << 30)});
  expectPromptRejected(t, 1, "program word sets bits above its 30 used bits");
  std::vector<Token> op = onlyBlock(cat({{kA}, val(head(0, Op::Mov, 1) | 1u << 26)}));
  expectPromptRejected(op, 7, "head word sets bits above its 26 used bits");
}

TEST(TracePromptRejects, ALaunchTagIsNoLongerAToken) {
  // v3's LAUNCH v(launch word) after the program word: id 4 is GMEM in v4, so the old prompt's
  // LAUNCH reads as a global word's tag where BLK must come.
  expectPromptRejected(cat({{kProg}, val(1 | 1 << 5 | 1 << 10), {single(Family::Gmem)},
                            val(33), {kBlk, T(0), kTerm, T(3), kRun}}),
                       4, "expected BLK");
}

TEST(TracePromptRejects, ABlockIndexOutOfOrder) {
  std::vector<Token> t = onlyBlock({});
  t[5] = T(1);
  expectPromptRejected(t, 5, "block index = 1 is outside 0..0");
}

TEST(TracePromptRejects, AnOpThatDoesNotStartWithItsHeadWord) {
  expectPromptRejected(onlyBlock(cat({{kB}, val(5)})), 6, "an op starts with OP(a)");
}

TEST(TracePromptRejects, AHeadWordWithTheWrongOpIndex) {
  expectPromptRejected(onlyBlock(cat({mov5(0), mov5(0)})), 15,
                       "op index 0, but this op's first record is record 1");
}

TEST(TracePromptRejects, AnOpcodeOutsideTheOpTable) {
  const uint32_t bad = static_cast<uint32_t>(kNumOps) << 4;
  expectPromptRejected(onlyBlock(cat({{kA}, val(bad)})), 7,
                       "field 'opcode' (bits 4..10) = " + std::to_string(kNumOps) + " is outside 0..");
}

TEST(TracePromptRejects, OpWordsOutOfSlotOrderOrRepeated) {
  const std::vector<Token> a = cat({{kA}, val(head(0, Op::Mov, 1))});
  expectPromptRejected(onlyBlock(cat({a, {kOff}, val(5), {kB}, val(source(0, kImm, 0))})), 12,
                       "OP(b) after OP(off)");
  expectPromptRejected(
      onlyBlock(cat({a, {kB}, val(source(0, kImm, 0)), {kB}, val(source(0, kImm, 0))})), 12,
      "OP(b) after OP(b)");
}

TEST(TracePromptRejects, AZeroOpWord) {
  expectPromptRejected(onlyBlock(cat({{kA}, val(head(0, Op::Mov, 1)), {kB}, val(0)})), 11,
                       "OP(b) carries 0");
  expectPromptRejected(
      onlyBlock(cat({{kA}, val(head(0, Op::Ld, 1)), {kB}, val(source(0, kReg, 2)), {kOff}, val(0)})),
      13, "OP(off) carries 0");
}

TEST(TracePromptRejects, AnImmediateWordForAnOperandThatIsNoImmediate) {
  expectPromptRejected(onlyBlock(cat({{kA}, val(head(0, Op::Add, 1)), {kB},
                                      val(source(0, kReg, 2) | source(1, kReg, 3)), {kI1}, val(7)})),
                       15, "OP(i1) for src1, which is not an immediate");
}

TEST(TracePromptRejects, ASourcesWordIndexThatNamesNothing) {
  expectPromptRejected(onlyBlock(cat({{kA}, val(head(0, Op::Mov, 1)), {kB},
                                      val(source(0, kSpecial, machine::kNumSpecials))})),
                       11, "src0 names special register 6");
  expectPromptRejected(onlyBlock(cat({{kA}, val(head(0, Op::Mov, 1)), {kB},
                                      val(source(0, kImm, 3)), {kI0}, val(5)})),
                       11, "src0 is no register or special but its index is 3");
}

TEST(TracePromptRejects, MoreOpsThanABlockHolds) {
  std::vector<Token> ops;
  for (uint32_t j = 0; j < static_cast<uint32_t>(kMaxOpsPerBlock); ++j) {
    const auto op = mov5(j);
    ops.insert(ops.end(), op.begin(), op.end());
  }
  const size_t at = 6 + ops.size();
  const auto extra = mov5(0);
  ops.insert(ops.end(), extra.begin(), extra.end());
  expectPromptRejected(onlyBlock(ops), at, "has more than 16 records");
}

// ---- Continuation rows (trace v5): an atomic with a register destination writes two records ----
//
// atom.add r1, [r2], 1 at ROM row `row`: head row | AtomAdd (isa.def row 52) << 4 | r1 << 11; sources
// src0 Reg r2 (1 | 2 << 2 = 9), src1 Imm (2 << 6 = 128); OP(i1) 1. Its continuation row at row + 1:
// OP(a) v(row + 1 | 1 << 25).
std::vector<Token> atomR1(uint32_t row) {
  return cat({{kA}, val(row | 52u << 4 | 1u << 11), {kB}, val(137), {kI1}, val(1)});
}
std::vector<Token> cont(uint32_t row) { return cat({{kA}, val(row | 1u << 25)}); }

TEST(TracePromptRejects, TheContinuationBaseCasesDecode) {
  ASSERT_EQ(static_cast<int>(Op::AtomAdd), 52);
  auto one = decodePrompt(onlyBlock(cat({atomR1(0), cont(1), mov5(2)})));
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(one->program.blocks[0].ops.size(), 2u);  // the continuation row is no op
  EXPECT_EQ(one->program.blocks[0].ops[0], atom(Op::AtomAdd, Space::Global, 1, R(2), I(1)));
  EXPECT_EQ(one->program.blocks[0].ops[1], alu(Op::Mov, 1, I(5)));
  // 8 such atomics fill the 16 rows.
  std::vector<Token> ops;
  for (uint32_t r = 0; r < 16; r += 2) ops = cat({ops, atomR1(r), cont(r + 1)});
  auto full = decodePrompt(onlyBlock(ops));
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_EQ(full->program.blocks[0].ops.size(), 8u);
}

TEST(TracePromptRejects, AnAtomicWithADestinationWithoutItsContinuationRow) {
  // Token 6 + 9 = 15 is what follows the atomic's words.
  expectPromptRejected(onlyBlock(atomR1(0)), 15,
                       "op 0 of block 0 (atom.add into r1) writes two records: its continuation "
                       "row OP(a) must follow");
  // The next op where the continuation row must be: its row is 1, not 2 (the op index check
  // would accept it as op 1, so the continuation rule must come first).
  expectPromptRejected(onlyBlock(cat({atomR1(0), mov5(1)})), 16,
                       "the head word must be 33554433 (op index 1 and the continuation bit");
}

// Trace v6: a multiply into a register needs its continuation row as an atomic does; into r0 it
// has none. mul r1, r2, r3 at row 0: head 0 | Mul (isa.def row 3) << 4 | r1 << 11; sources Reg r2,
// Reg r3 = 1 | 2 << 2 | 1 << 6 | 3 << 8 = 841.
TEST(TracePromptRejects, AMultiplyWithADestinationWithoutItsContinuationRow) {
  const std::vector<Token> mul = cat({{kA}, val(head(0, Op::Mul, 1)), {kB}, val(841)});
  expectPromptRejected(onlyBlock(mul), 6 + mul.size(),
                       "op 0 of block 0 (mul into r1) writes two records: its continuation row "
                       "OP(a) must follow");
  EXPECT_TRUE(decodePrompt(onlyBlock(cat({mul, cont(1), mov5(2)}))).ok());  // the twin
  const std::vector<Token> mulR0 = cat({{kA}, val(head(0, Op::Mul, 0)), {kB}, val(841)});
  EXPECT_TRUE(decodePrompt(onlyBlock(cat({mulR0, mov5(1)}))).ok());
  expectPromptRejected(onlyBlock(cat({mulR0, cont(1)})), 6 + mulR0.size() + 1,
                       "a continuation row at row 1, where an op starts");
}

TEST(TracePromptRejects, AContinuationRowThatIsNotExactlyTheRowAndItsFlag) {
  // Wrong row; another field set; a word after it.
  expectPromptRejected(onlyBlock(cat({atomR1(0), cont(2), mov5(3)})), 16,
                       "continuation row of op 0 of block 0 (atom.add into r1): the head word "
                       "must be 33554433");
  expectPromptRejected(onlyBlock(cat({atomR1(0), {kA}, val(1 | 1u << 11 | 1u << 25)})), 16,
                       "must be 33554433");
  expectPromptRejected(onlyBlock(cat({atomR1(0), cont(1), {kB}, val(137)})), 22,
                       "a continuation row has no words but its head word");
}

TEST(TracePromptRejects, AContinuationRowWhereAnOpStarts) {
  // The flag on an op's head word, and a continuation row after an atomic into r0 (one record).
  expectPromptRejected(onlyBlock(cat({{kA}, val(head(0, Op::Mov, 1) | 1u << 25)})), 7,
                       "a continuation row at row 0, where an op starts");
  const std::vector<Token> atomR0 =
      cat({{kA}, val(52u << 4), {kB}, val(137), {kI1}, val(1)});
  expectPromptRejected(onlyBlock(cat({atomR0, cont(1)})), 15 + 1,
                       "a continuation row at row 1, where an op starts");
  EXPECT_TRUE(decodePrompt(onlyBlock(cat({atomR0, mov5(1)}))).ok());
}

TEST(TracePromptRejects, MoreRecordsThanABlockHolds) {
  // 7 atomics (rows 0..13), then one at row 14 whose continuation would be row 15: fits; one more
  // op is record 16. An atomic at row 15 has no row for its continuation.
  std::vector<Token> ops;
  for (uint32_t r = 0; r < 14; r += 2) ops = cat({ops, atomR1(r), cont(r + 1)});
  EXPECT_TRUE(decodePrompt(onlyBlock(cat({ops, atomR1(14), cont(15)}))).ok());
  const size_t at = 6 + ops.size() + atomR1(14).size() + cont(15).size();
  expectPromptRejected(onlyBlock(cat({ops, atomR1(14), cont(15), mov5(0)})), at,
                       "block 0 has more than 16 records");
  const std::vector<Token> fifteen = cat({ops, mov5(14), atomR1(15)});
  expectPromptRejected(onlyBlock(cat({fifteen, cont(16)})), 6 + fifteen.size(),
                       "block 0 has more than 16 records");
}

TEST(TracePromptRejects, ATerminatorTargetOutOfRange) {
  std::vector<Token> t = onlyBlock({});
  const std::vector<Token> next33 = val(33 << 2);  // jmp, next target 33 (32 is exit)
  t.erase(t.begin() + 7);
  t.insert(t.begin() + 7, next33.begin(), next33.end());
  expectPromptRejected(t, 7, "field 'next target' (bits 2..7) = 33 is outside 0..32");
}

TEST(TracePromptRejects, GlobalWordsOutOfOrderZeroOrUntagged) {
  const auto word = [](uint32_t a, uint32_t v) { return cat({{kGmem}, val(a), {kGw}, val(v)}); };
  // Token 8 is the first GMEM.
  expectPromptRejected(onlyBlock({}, cat({word(3, 1), word(3, 2)})), 13,
                       "global word address = 3 is outside 4..125");
  expectPromptRejected(onlyBlock({}, cat({word(5, 1), word(3, 2)})), 13, "outside 6..125");
  expectPromptRejected(onlyBlock({}, word(machine::kGlobalWords, 1)), 9, "outside 0..125");
  expectPromptRejected(onlyBlock({}, word(3, 0)), 11, "a zero global word");
  expectPromptRejected(onlyBlock({}, cat({{kGmem}, val(3), val(9)})), 10, "expected GW");
}

TEST(TracePretty, FullTraceListsProgramThenRun) {
  auto r = oracle::run(diamond(), launch(1, 4));
  ASSERT_TRUE(r.ok());
  std::vector<Token> full = encodePrompt(diamond(), launch(1, 4));
  full.insert(full.end(), r->trace.begin(), r->trace.end());
  const std::string text = pretty(full);
  EXPECT_NE(text.find("B3:\n  shl r2, %tid.x, 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("launch grid 1 block 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("exec B2 warp 0 lanes 2,3\n  WU(r1) all=20\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  MG(1111) [0]=10 [1]=10 [2]=20 [3]=20\nend\n"), std::string::npos) << text;
}

TEST(TracePretty, MalformedRunShowsThePrefixAndTheError) {
  const std::string text = pretty(std::vector<Token>{ex(1), wm(0, 1), wu(1)});
  EXPECT_NE(text.find("EX(1) WM(w0,0001) WU(r1)"), std::string::npos) << text;
  EXPECT_NE(text.find("error: token 3"), std::string::npos) << text;
}

TEST(TraceDigest, IsFnv1aOverLittleEndianIds) {
  EXPECT_EQ(digest({}), 0xcbf29ce484222325ull);
  // Computed independently (Python) for the ids 7, 138 (any ids: the digest does not read them).
  EXPECT_EQ(digest(std::vector<Token>{7, 138}), 0x6efcd6669cafc5b8ull);
  EXPECT_NE(digest(std::vector<Token>{138, 7}), digest(std::vector<Token>{7, 138}));
}

#ifdef QGPU_HAVE_RAPIDCHECK

RC_GTEST_PROP(TraceValuesProperty, EveryWordRoundTripsInShortestForm, (uint32_t v)) {
  const std::vector<Token> tokens = encodeValue(v);
  RC_ASSERT(static_cast<int>(tokens.size()) == valueLength(v));
  // Shortest: the value does not fit in one chunk fewer.
  const auto s = static_cast<int64_t>(static_cast<int32_t>(v));
  const int k = static_cast<int>(tokens.size());
  RC_ASSERT(s >= -(int64_t{1} << (5 * k - 1)));
  RC_ASSERT(s < (int64_t{1} << (5 * k - 1)));
  if (k > 1) RC_ASSERT(!(s >= -(int64_t{1} << (5 * k - 6)) && s < (int64_t{1} << (5 * k - 6))));
  auto back = roundTrip(tokens);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == v);
}

// A random canonical program: every op kind, predicates read only after they are written.
Program randomProgram() {
  Program p;
  p.sharedWords = *rc::gen::inRange<uint8_t>(0, 100);
  p.spillSlots = *rc::gen::inRange<uint8_t>(0, 2);
  const int nblocks = *rc::gen::inRange(1, kMaxBlocks + 1);
  auto operand = [] {
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        return Operand::r(*rc::gen::inRange<uint8_t>(0, kRegs));
      case 1:
        return Operand::i(*rc::gen::arbitrary<uint32_t>());
      default:
        return Operand::s(static_cast<Special>(*rc::gen::inRange(0, kNumSpecials)));
    }
  };
  for (int b = 0; b < nblocks; ++b) {
    Block block;
    uint8_t written = 0;
    auto writtenPred = [&]() -> uint8_t {
      std::vector<uint8_t> ps;
      for (uint8_t q = 0; q < kPreds; ++q) {
        if (written >> q & 1) ps.push_back(q);
      }
      return ps[static_cast<size_t>(*rc::gen::inRange<size_t>(0, ps.size()))];
    };
    const int nops = *rc::gen::inRange(0, kMaxOpsPerBlock + 1);
    for (int i = 0; i < nops; ++i) {
      Instr in;
      in.op = static_cast<Op>(*rc::gen::inRange(0, kNumOps));
      const bool needsPred = numPredSources(in.op) > 0;
      if ((needsPred && written == 0) ||
          (opInfo(in.op).cls == OpClass::Local && p.spillSlots == 0)) {
        in.op = Op::PConst;
      }
      if (in.op == Op::PConst) {
        in.src[0] = Operand::i(*rc::gen::inRange<uint32_t>(0, 2));
      } else {
        for (int s = 0; s < numGeneralSources(in.op); ++s)
          in.src[static_cast<size_t>(s)] = operand();
      }
      for (int s = 0; s < numPredSources(in.op); ++s)
        in.psrc[static_cast<size_t>(s)] = writtenPred();
      if (writesReg(in.op)) in.dst = *rc::gen::inRange<uint8_t>(0, kRegs);
      if (writesPred(in.op)) in.dstPred = *rc::gen::inRange<uint8_t>(0, kPreds);
      if (opInfo(in.op).cls == OpClass::Mem) {
        in.space = *rc::gen::arbitrary<bool>() ? Space::Shared : Space::Global;
        in.offset = *rc::gen::arbitrary<int32_t>();
      }
      if (opInfo(in.op).cls == OpClass::Local)
        in.offset = *rc::gen::inRange<int32_t>(0, p.spillSlots);
      if (written != 0 && *rc::gen::arbitrary<bool>())
        in.guard = Guard{writtenPred(), *rc::gen::arbitrary<bool>()};
      // At most 16 records (an atomic into a register writes two): into r0 it writes one.
      if (blockRecords(block) + recordsOf(in) > kMaxOpsPerBlock) in.dst = 0;
      if (blockRecords(block) + recordsOf(in) > kMaxOpsPerBlock) break;
      if (writesPred(in.op)) written = static_cast<uint8_t>(written | (1u << in.dstPred));
      block.ops.push_back(in);
    }
    const auto target = [&] {
      return *rc::gen::inRange<uint8_t>(0, static_cast<uint8_t>(nblocks));
    };
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        block.term = jmp(target());
        break;
      case 1:
        block.term = bar(target());
        break;
      case 2:
        if (written != 0) {
          block.term = br(writtenPred(), target(), target(), *rc::gen::arbitrary<bool>());
          break;
        }
        [[fallthrough]];
      default:
        block.term = exitTerm();
        break;
    }
    p.blocks.push_back(std::move(block));
  }
  return p;
}

RC_GTEST_PROP(TracePromptProperty, RandomValidProgramsRoundTrip, ()) {
  const Program p = randomProgram();
  Launch l = launch(*rc::gen::inRange<uint32_t>(1, 17), *rc::gen::inRange<uint32_t>(1, 14));
  for (auto& w : l.global)
    w = *rc::gen::weightedOneOf<uint32_t>(
        {{3, rc::gen::just(0u)}, {1, rc::gen::arbitrary<uint32_t>()}});
  const Status ok = verify(p, l);
  RC_ASSERT(ok.ok());
  auto back = decodePrompt(encodePrompt(p, l));
  RC_ASSERT(back.ok());
  RC_ASSERT(back->program == p);
  RC_ASSERT(back->launch.global == l.global);
  RC_ASSERT(back->launch.gridX == l.gridX);
  RC_ASSERT(back->launch.blockX == l.blockX);
}

#endif

}  // namespace
}  // namespace qgpu::trace
