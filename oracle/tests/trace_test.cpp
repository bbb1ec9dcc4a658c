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

TEST(TraceVocabulary, FamilyBasesAndSize) {
  EXPECT_EQ(single(Family::Prog), 0);
  EXPECT_EQ(single(Family::Run), 6);
  EXPECT_EQ(ex(0), 7);
  EXPECT_EQ(ex(31), 38);
  EXPECT_EQ(wm(0, 1), 39);
  EXPECT_EQ(wm(3, 15), 98);
  EXPECT_EQ(wr(1), 99);
  EXPECT_EQ(wu(1), 114);
  EXPECT_EQ(stg(1), 129);
  EXPECT_EQ(sts(4), 136);
  EXPECT_EQ(single(Family::Cta), 137);
  EXPECT_EQ(kEnd, 138);
  EXPECT_EQ(single(Family::FaultTok), 139);
  EXPECT_EQ(single(Family::Limit), 140);
  EXPECT_EQ(C(0), 141);
  EXPECT_EQ(T(0), 173);
  EXPECT_EQ(kVocabSize, 205);
}

TEST(TraceVocabulary, TokenNames) {
  EXPECT_EQ(tokenName(ex(3)), "EX(3)");
  EXPECT_EQ(tokenName(wm(0, 7)), "WM(w0,0111)");
  EXPECT_EQ(tokenName(wm(2, 8)), "WM(w2,1000)");
  EXPECT_EQ(tokenName(wr(5)), "WR(r5)");
  EXPECT_EQ(tokenName(wu(15)), "WU(r15)");
  EXPECT_EQ(tokenName(stg(4)), "STG(4)");
  EXPECT_EQ(tokenName(T(-3)), "T(-3)");
  EXPECT_EQ(tokenName(C(7)), "C(7)");
  EXPECT_EQ(tokenName(single(Family::Gmem)), "GMEM");
  EXPECT_EQ(tokenName(kVocabSize), "?205");
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
                  block({alu(Op::Mov, 1, I(10))}, jmp(3), commit({1})),
                  block({alu(Op::Mov, 1, I(20))}, jmp(3), commit({1})),
                  block({alu(Op::Shl, 2, Tid(), I(2)), st(Space::Global, R(2), R(1))}, exitTerm())},
                 0,
                 0};
}

TEST(TraceRun, DiamondTraceIsExact) {
  auto r = oracle::run(diamond(), launch(1, 4));
  ASSERT_TRUE(r.ok());
  // Hand-computed ids: EX(b) = 7 + b, WM(w0,m) = 39 + m - 1, WU(r1) = 114, STG(4) = 132,
  // T(d) = 173 + d, C(0) = 141, END = 138. 20 = 00000 10100 -> C(0) T(20).
  const std::vector<Token> want = {7,   53,                  // EX(0) WM(w0,1111)
                                   8,   41,  114, 183,       // EX(1) WM(w0,0011) WU(r1) 10
                                   9,   50,  114, 141, 193,  // EX(2) WM(w0,1100) WU(r1) 20
                                   10,  53,  132, 173, 183,
                                   183, 141, 193, 141, 193,  // STG(4) 0: 10 10 20 20
                                   138};
  EXPECT_EQ(r->trace, want) << pretty(r->trace);
}

TEST(TraceRun, NonUniformWritesUseWrAndMemoryRunsSplitAtFourAndAtGaps) {
  // Six threads over two warps: r1 = tid + 1 (committed: WR), stored to words t, t + 4, t + 12.
  // Warp 0 changes words 0..7 (two runs of 4) and 12..15; warp 1 (tids 4, 5) changes 4..5,
  // 8..9 and 16..17. Word 20 is stored with its old value: no net change, so no token.
  Program p{"runs",
            {block({alu(Op::Add, 1, Tid(), I(1)), alu(Op::Shl, 2, Tid(), I(2)),
                    st(Space::Global, R(2), R(1)), st(Space::Global, R(2), R(1), 16),
                    st(Space::Global, R(2), R(1), 48), st(Space::Global, I(80), I(0))},
                   exitTerm(), commit({1}))},
            0,
            0};
  auto r = oracle::run(p, launch(1, 6));
  ASSERT_TRUE(r.ok());
  const std::vector<Token> want = {
      ex(0),  wm(0, 15), wr(1), T(1), T(2), T(3), T(4),  // warp 0
      stg(4), T(0),      T(1),  T(2), T(3), T(4),        // words 0..3
      stg(4), T(4),      T(1),  T(2), T(3), T(4),        // words 4..7: a run holds at most 4
      stg(4), T(12),     T(1),  T(2), T(3), T(4),        // words 12..15
      ex(0),  wm(1, 3),  wr(1), T(5), T(6),              // warp 1, lanes 0,1
      stg(2), T(4),      T(5),  T(6),                    // words 4..5
      stg(2), T(8),      T(5),  T(6),                    // words 8..9
      stg(2), C(0),      T(16), T(5), T(6),              // words 16..17 (16 = 00000 10000)
      kEnd};
  EXPECT_EQ(r->trace, want) << pretty(r->trace);
  EXPECT_TRUE(decodeRun(r->trace).ok());
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
  // EX(0) WM(w0,0111) STG(1) T(6) C(1) T(0) END; 32 = 00001 00000.
  EXPECT_EQ(r->trace, (std::vector<Token>{7, 45, 129, 179, 142, 173, 138}));
  EXPECT_EQ(encodePrompt(p, l).size(), 111u);
}

TEST(TraceRun, DecodeRunGivesTypedEvents) {
  const std::vector<Token> run = {
      ex(2), wm(1, 5), wr(3), T(1),   T(-2), wu(4), T(7), stg(1),
      T(9),  C(0),     T(16), sts(2), T(0),  T(1),  T(2), single(Family::Cta),
      kEnd};
  auto events = decodeRun(run);
  ASSERT_TRUE(events.ok()) << events.error().message;
  const std::vector<TraceEvent> want = {Exec{2, 1, 5},
                                        RegWrite{3, false, {1, static_cast<uint32_t>(-2)}},
                                        RegWrite{4, true, {7}},
                                        MemWrite{Space::Global, 9, {16}},
                                        MemWrite{Space::Shared, 0, {1, 2}},
                                        CtaStart{},
                                        Finished{}};
  EXPECT_EQ(*events, want);
  EXPECT_EQ(pretty(run),
            "exec B2 warp 1 lanes 0,2\n"
            "  r3 = 1 -2\n"
            "  r4 = 7 (all lanes)\n"
            "  global[9] = 16\n"
            "  shared[0..1] = 1 2\n"
            "cta (next CTA starts)\n"
            "end\n");
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

TEST(TraceRun, DecodeRejectsMalformedRuns) {
  expectRunRejected({}, 0, "without END");
  expectRunRejected({ex(0), wm(0, 1)}, 2, "without END");
  expectRunRejected({ex(0), kEnd}, 1, "expected WM");
  expectRunRejected({wm(0, 1), kEnd}, 0, "not a run token");
  expectRunRejected({ex(0), wm(0, 1), 999, kEnd}, 2, "not a qgpu token");
  expectRunRejected({kEnd, kEnd}, 1, "after the end");
  expectRunRejected({wu(1), T(0), kEnd}, 0, "outside a step");
  expectRunRejected({ex(0), wm(0, 3), wr(1), T(4), T(4), kEnd}, 2, "must be written as WU");
  expectRunRejected({ex(0), wm(0, 1), wu(2), T(0), wu(1), T(0), kEnd}, 4, "increasing order");
  expectRunRejected({ex(0), wm(0, 1), sts(1), T(0), T(0), stg(1), T(0), T(0), kEnd}, 5,
                    "global writes must come before shared");
  expectRunRejected({ex(0), wm(0, 1), stg(1), T(0), T(0), wu(1), T(0), kEnd}, 5,
                    "after memory writes");
  expectRunRejected({ex(0), wm(0, 1), stg(2), T(5), T(0), T(0), stg(1), T(7), T(0), kEnd}, 7,
                    "word address");  // word 7 is adjacent to run 5..6: must have been merged
  expectRunRejected({ex(0), wm(0, 1), stg(4), C(3), T(-2), T(0), T(0), T(0), T(0), kEnd}, 3,
                    "word address");  // 3*32 + 30 = 126: beyond memory
  expectRunRejected({single(Family::Prog), kEnd}, 0, "not a run token");
}

TEST(TraceRun, FaultAndLimitEndTheRun) {
  EXPECT_TRUE(decodeRun(std::vector<Token>{ex(0), wm(0, 1), single(Family::FaultTok)}).ok());
  EXPECT_TRUE(decodeRun(std::vector<Token>{single(Family::Limit)}).ok());
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
                        br(7, 1, 2, true), commit({1, 2, 15})),
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
  l.global[3] = 100;                                      // 00011 00100
  const std::vector<Token> want = {0, T(1), T(0),  T(0),  // PROG 1 block, 0 shared, 0 spill
                                   1, T(0), T(0),         // BLK 0 ops, commit 0
                                   3, T(3), T(-1), T(0), T(0), T(0),  // TERM exit, no pred
                                   4, T(1), T(1),                     // LAUNCH 1 x 1
                                   5, T(3), T(1),  C(3), T(4),        // GMEM word 3: 1 word, 100
                                   6};                                // RUN
  EXPECT_EQ(encodePrompt(p, l), want);
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
  tokens[12] = T(1);  // TERM(7) jmp pred negate taken next(12): next 0 -> 1
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

TEST(TracePrompt, DecodeRejectsNonCanonicalMemoryRuns) {
  // Base: word 3 = 100 as in SmallestPromptIsExact; the GMEM section is at tokens 17..20.
  Program p{"", {block({}, exitTerm())}, 0, 0};
  Launch l = launch(1, 1);
  l.global[3] = 100;
  const std::vector<Token> good = encodePrompt(p, l);
  ASSERT_TRUE(decodePrompt(good).ok());
  auto withGmem = [&](std::vector<Token> gmem) {
    std::vector<Token> t(good.begin(), good.begin() + 17);
    t.insert(t.end(), gmem.begin(), gmem.end());
    t.push_back(single(Family::Run));
    return decodePrompt(t);
  };
  auto zero = withGmem({T(3), T(2), C(3), T(4), T(0)});  // run of 2 whose second word is 0
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("zero word"), std::string::npos) << zero.error().message;
  auto adjacent =
      withGmem({T(3), T(1), T(1), T(4), T(1), T(1)});  // runs 3..3 and 4..4: not maximal
  ASSERT_FALSE(adjacent.ok());
  EXPECT_NE(adjacent.error().message.find("memory run address"), std::string::npos);
  auto backwards = withGmem({T(5), T(1), T(1), T(3), T(1), T(1)});
  ASSERT_FALSE(backwards.ok());
  EXPECT_TRUE(withGmem({T(3), T(1), T(1), T(5), T(1), T(1)}).ok());  // a gap at word 4
}

TEST(TracePretty, FullTraceListsProgramThenRun) {
  auto r = oracle::run(diamond(), launch(1, 4));
  ASSERT_TRUE(r.ok());
  std::vector<Token> full = encodePrompt(diamond(), launch(1, 4));
  full.insert(full.end(), r->trace.begin(), r->trace.end());
  const std::string text = pretty(full);
  EXPECT_NE(text.find("B3:\n  shl r2, %tid.x, 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("launch grid 1 block 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("exec B2 warp 0 lanes 2,3\n  r1 = 20 (all lanes)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("global[0..3] = 10 10 20 20\nend\n"), std::string::npos) << text;
}

TEST(TracePretty, MalformedRunShowsThePrefixAndTheError) {
  const std::string text = pretty(std::vector<Token>{ex(1), wm(0, 1), wu(1)});
  EXPECT_NE(text.find("EX(1) WM(w0,0001) WU(r1)"), std::string::npos) << text;
  EXPECT_NE(text.find("error: token 3"), std::string::npos) << text;
}

TEST(TraceDigest, IsFnv1aOverLittleEndianIds) {
  EXPECT_EQ(digest({}), 0xcbf29ce484222325ull);
  // Computed independently (Python) for the ids 7, 138.
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
      if (writesPred(in.op)) written = static_cast<uint8_t>(written | (1u << in.dstPred));
      block.ops.push_back(in);
    }
    block.commit = static_cast<uint16_t>(*rc::gen::arbitrary<uint16_t>() & 0xfffe);
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
