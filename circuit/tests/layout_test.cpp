// qgpu/circuit/tests/layout_test.cpp — the torch-free checks of the liveness allocator
// (circuit/layout.h): which ranges may share dims (hand-made cases, each with its failing twin),
// first fit by write point reaching the peak on interval sets where request order would not,
// the report's figures (worked by hand in each test), and the refusals. The numerics of a
// reused dim (exact ±u through model::Decoder) are layout_decoder_test's.
#include <gtest/gtest.h>

#include "circuit/layout.h"

namespace qgpu::circuit {
namespace {

LiveRange mlp(int write, int lastRead) { return {mlpAt(write), mlpAt(lastRead)}; }

TEST(LayoutConflicts, AFieldReadLastByABlockMayGiveItsDimsToThatBlocksOutput) {
  // A read last by L1's MLP; B written by L1's MLP: the block reads A before it adds B.
  EXPECT_FALSE(conflicts(mlp(0, 1), mlp(1, 2)));
  EXPECT_FALSE(conflicts(mlp(1, 2), mlp(0, 1)));
  // Twin: B written by L1's attention, before L1's MLP reads A.
  EXPECT_TRUE(conflicts(mlp(0, 1), {attentionAt(1), mlpAt(2)}));
  // Twin: B written one layer earlier than A's last read.
  EXPECT_TRUE(conflicts(mlp(0, 2), mlp(1, 3)));
  // The embedding comes before layer 0's attention.
  EXPECT_FALSE(conflicts({kEmbedding, attentionAt(0)}, {attentionAt(0), mlpAt(0)}));
  EXPECT_TRUE(conflicts({kEmbedding, mlpAt(0)}, {attentionAt(0), mlpAt(1)}));
}

TEST(LayoutConflicts, OnlyFieldsOfDisjointKindsShareWhileLive) {
  EXPECT_TRUE(exclusiveKinds(kKindAtomAdd, kKindAtomInc));
  EXPECT_TRUE(exclusiveKinds(kKindAtomMinMax | kKindAtomDec, kKindAtomInc));
  // Twins: a kind in common; a field any token uses.
  EXPECT_FALSE(exclusiveKinds(kKindAtomMinMax | kKindAtomDec, kKindAtomDec));
  EXPECT_FALSE(exclusiveKinds(0, kKindAtomInc));
  EXPECT_FALSE(exclusiveKinds(kKindAtomAdd, 0));
}

TEST(LayoutPlan, FieldsOfExclusiveKindsStackOnOneRunOfDims) {
  LayoutPlan plan;
  const int any = plan.add("any", 4, mlp(0, 4));
  const int add = plan.add("add", 8, mlp(1, 3), kKindAtomAdd);
  const int inc = plan.add("inc", 6, mlp(2, 4), kKindAtomInc);
  const int dec = plan.add("dec", 8, mlp(1, 4), kKindAtomDec | kKindAtomMinMax);
  const int mm = plan.add("mm", 4, mlp(2, 3), kKindAtomMinMax);  // shares dec's kind
  ASSERT_TRUE(plan.solve(64).ok());
  EXPECT_EQ(plan.field(any).offset, 0);
  EXPECT_EQ(plan.field(add).offset, 4);
  EXPECT_EQ(plan.field(dec).offset, 4);  // on add's dims
  EXPECT_EQ(plan.field(inc).offset, 4);  // on add's and dec's
  EXPECT_EQ(plan.field(mm).offset, 12);  // not on dec's; on add's (4..11) it would cross dec's
  const LayoutReport r = plan.report();
  // After L2's MLP: any 4, the run 4..11 once, mm 4: 16 dims, not 4 + 8 + 6 + 8 + 4 = 30.
  EXPECT_EQ(r.peak, 16);
  EXPECT_EQ(r.span, 16);
  EXPECT_EQ(r.liveAfterMlp[static_cast<size_t>(2 - r.firstLayer)], 16);
}

TEST(LayoutPlan, FailingTwinFieldsWithoutKindsTakeDimsOfTheirOwn) {
  LayoutPlan plan;
  plan.add("any", 4, mlp(0, 4));
  plan.add("add", 8, mlp(1, 3));
  plan.add("inc", 6, mlp(2, 4));
  plan.add("dec", 8, mlp(1, 4));
  plan.add("mm", 4, mlp(2, 3));
  ASSERT_TRUE(plan.solve(64).ok());
  EXPECT_EQ(plan.report().peak, 30);
}

TEST(LayoutPoints, KeysOrderTheEmbeddingThenAttentionThenMlp) {
  EXPECT_EQ(kEmbedding.key(), -1);
  EXPECT_EQ(attentionAt(0).key(), 0);
  EXPECT_EQ(mlpAt(0).key(), 1);
  EXPECT_EQ(attentionAt(3).key(), 6);
  EXPECT_EQ(pointName(kEmbedding), "embedding");
  EXPECT_EQ(pointName(mlpAt(2)), "L2.mlp");
  EXPECT_EQ(pointName(attentionAt(0)), "L0.attn");
}

TEST(LayoutPlan, DeadFieldsDimsAreReusedAndReportedAsReused) {
  LayoutPlan plan;
  const int a = plan.add("a", 8, mlp(-1, 0));  // embedding .. L0.mlp
  const int b = plan.add("b", 8, mlp(0, 1));   // L0.mlp .. L1.mlp: a's dims
  const int c = plan.add("c", 4, mlp(0, 2));   // live beside b: fresh dims
  ASSERT_TRUE(plan.solve(64).ok());
  EXPECT_EQ(plan.field(a).offset, 0);
  EXPECT_EQ(plan.field(b).offset, 0);
  EXPECT_EQ(plan.field(c).offset, 8);
  EXPECT_FALSE(plan.placements()[static_cast<size_t>(a)].reused);
  EXPECT_TRUE(plan.placements()[static_cast<size_t>(b)].reused);
  EXPECT_FALSE(plan.placements()[static_cast<size_t>(c)].reused);
  const LayoutReport r = plan.report();
  EXPECT_EQ(r.span, 12);
  EXPECT_EQ(r.peak, 12);  // b + c after L0's MLP
  EXPECT_EQ(pointName(r.peakAt), "L0.mlp");
  EXPECT_EQ(r.fragmentation, 0);
  EXPECT_EQ(r.oneFieldPerValue, 20);
  // Layers −1..2 (c is read last at L2's MLP). After the MLP: a (8); b + c (12); c (4, b is
  // read last at L1's MLP); none. After the attention: none (layer −1 is the embedding); a;
  // b + c; c.
  EXPECT_EQ(r.firstLayer, -1);
  EXPECT_EQ(r.liveAfterMlp, (std::vector<int>{8, 12, 4, 0}));
  EXPECT_EQ(r.liveAfterAttention, (std::vector<int>{0, 8, 12, 4}));
}

TEST(LayoutPlan, OverlappingRangesGetDisjointDims) {  // the twin of the test above
  LayoutPlan plan;
  const int a = plan.add("a", 8, mlp(-1, 1));
  const int b = plan.add("b", 8, mlp(0, 2));
  ASSERT_TRUE(plan.solve(64).ok());
  EXPECT_EQ(plan.field(a).offset, 0);
  EXPECT_EQ(plan.field(b).offset, 8);
  EXPECT_EQ(plan.report().peak, 16);
}

TEST(LayoutPlan, FieldsArePlacedByWritePointNotByRequestOrder) {
  // Requested latest first; placed in write order y, x, w, z (hand):
  //   y [emb, L1.mlp) 4 dims → 0; x [L0.mlp, L2.mlp) → 4 (y live); w [L1.mlp, L3.mlp) → 0 (y is
  //   dead at L1's MLP); z [L2.mlp, L4.mlp) → 4 (x dead, w live).
  //   Live after L0.mlp: y, x = 8; after L1.mlp: w, x = 8; after L2.mlp: w, z = 8; L3: z = 4.
  LayoutPlan plan;
  plan.add("z", 4, mlp(2, 4));
  plan.add("x", 4, mlp(0, 2));
  plan.add("w", 4, mlp(1, 3));
  plan.add("y", 4, mlp(-1, 1));
  ASSERT_TRUE(plan.solve(64).ok());
  const LayoutReport r = plan.report();
  EXPECT_EQ(r.peak, 8);
  EXPECT_EQ(r.span, 8);
  EXPECT_EQ(r.fragmentation, 0);
  EXPECT_EQ(plan.field("y").value().offset, 0);
  EXPECT_EQ(plan.field("x").value().offset, 4);
  EXPECT_EQ(plan.field("w").value().offset, 0);
  EXPECT_EQ(plan.field("z").value().offset, 4);
}

TEST(LayoutPlan, ConsecutiveDimsCanCostMoreThanThePeakAndTheReportSaysSo) {
  // a, b, c of 2 dims each, written one after another (no ties): a at 0 (embedding .. L2.mlp), b
  // at 2 (L0.mlp .. L5.mlp), c at 4 (L1.mlp .. L2.mlp); L2.mlp writes d (4 dims) as a and c die:
  // dims 0..1 and 4..5 are free but not together, so d takes 4..7 (2 fresh).
  LayoutPlan plan;
  plan.add("a", 2, mlp(-1, 2));
  plan.add("b", 2, mlp(0, 5));
  plan.add("c", 2, mlp(1, 2));
  plan.add("d", 4, mlp(2, 5));
  ASSERT_TRUE(plan.solve(64).ok());
  const LayoutReport r = plan.report();
  EXPECT_EQ(r.peak, 6);  // a, b, c before L2.mlp; b + d after it
  EXPECT_EQ(r.span, 8);
  EXPECT_EQ(r.fragmentation, 2);
  EXPECT_EQ(plan.field("d").value().offset, 4);
}

// Fields written at one point: the tie-break decides which takes the low dims. a, b, c (2 dims
// each) from the embedding, a and c dying at L0.mlp, which writes d (4 dims): larger-first keeps
// request order (a 0, b 2, c 4) and leaves d no 4 consecutive free dims below 6; longer-lived
// first puts b at 0, so a and c free 2..5 together and d fits there — the smaller span wins.
TEST(LayoutPlan, AmongFieldsWrittenTogetherTheTieBreakThatFragmentsLeastWins) {
  LayoutPlan plan;
  plan.add("a", 2, mlp(-1, 0));
  plan.add("b", 2, mlp(-1, 2));
  plan.add("c", 2, mlp(-1, 0));
  plan.add("d", 4, mlp(0, 2));
  ASSERT_TRUE(plan.solve(64).ok());
  const LayoutReport r = plan.report();
  EXPECT_EQ(r.peak, 6);
  EXPECT_EQ(r.span, 6);
  EXPECT_EQ(r.fragmentation, 0);
  EXPECT_EQ(plan.field("b").value().offset, 0);
  EXPECT_EQ(plan.field("d").value().offset, 2);
}

TEST(LayoutPlan, APinnedFieldOnALiveFieldsDimsIsATypedError) {
  LayoutPlan plan;
  plan.pin("old", 8, mlp(-1, 2), 0);
  plan.pin("new", 4, mlp(1, 3), 6);  // written at L1, old still read at L2
  const Status st = plan.solve(64);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Usage);
  for (const char* part : {"'new'", "'old'", "dim 6", "overlap", "[L1.mlp, L3.mlp)"})
    EXPECT_NE(st.error().message.find(part), std::string::npos) << st.error().message;
}

TEST(LayoutPlan, APinnedFieldOnADeadFieldsDimsIsAccepted) {  // the twin of the test above
  LayoutPlan plan;
  plan.pin("old", 8, mlp(-1, 2), 0);
  plan.pin("new", 4, mlp(2, 3), 6);
  ASSERT_TRUE(plan.solve(64).ok());
  EXPECT_TRUE(plan.placements()[1].reused);
}

TEST(LayoutPlan, AFieldThatDoesNotFitIsOverLimitNamingIt) {
  LayoutPlan plan;
  plan.add("wide", 40, mlp(-1, 1));
  plan.add("late", 30, mlp(0, 2));
  const Status st = plan.solve(64);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(st.error().message.find("'late'"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("64"), std::string::npos) << st.error().message;
  LayoutPlan fits;  // the twin: 'late' written after 'wide' is dead
  fits.add("wide", 40, mlp(-1, 1));
  fits.add("late", 30, mlp(1, 2));
  EXPECT_TRUE(fits.solve(64).ok());
}

TEST(LayoutPlan, BadRequestsAreUsageErrors) {
  struct Case {
    const char* what;
    int dims;
    LiveRange range;
    int pinAt;  // −1: not pinned
  };
  const Case cases[] = {{"no dims", 0, mlp(0, 1), -1},
                        {"read before written", 4, mlp(2, 1), -1},
                        {"read where written", 4, mlp(1, 1), -1},
                        {"pinned outside", 4, mlp(0, 1), 62}};
  for (const Case& c : cases) {
    LayoutPlan plan;
    if (c.pinAt >= 0) plan.pin("f", c.dims, c.range, c.pinAt);
    else plan.add("f", c.dims, c.range);
    const Status st = plan.solve(64);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_EQ(st.error().kind, ErrorKind::Usage) << c.what;
  }
  LayoutPlan twice;
  twice.add("f", 1, mlp(0, 1));
  twice.add("f", 1, mlp(0, 1));
  const Status st = twice.solve(64);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("two fields named 'f'"), std::string::npos);
}

TEST(LayoutPlan, OneDimFieldsAlwaysSpanExactlyThePeak) {
  // Greedy colouring by start is optimal for intervals: with 1-dim fields (no consecutive-dims
  // constraint) the span equals the peak on every random set. 200 sets of 40 ranges in 12 layers.
  uint32_t seed = 12345;
  auto next = [&](int n) {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<int>((seed >> 8) % static_cast<uint32_t>(n));
  };
  for (int set = 0; set < 200; ++set) {
    LayoutPlan plan;
    for (int i = 0; i < 40; ++i) {
      const int w = next(24) - 1, len = 1 + next(8);  // keys −1..22, length 1..8
      const Point write{w < 0 ? -1 : w / 2, (w < 0 || (w & 1)) ? Block::Mlp : Block::Attention};
      const int r = w + len;
      const Point read{r / 2, (r & 1) ? Block::Mlp : Block::Attention};
      ASSERT_EQ(write.key(), w);
      ASSERT_EQ(read.key(), r);
      plan.add("f" + std::to_string(i), 1, {write, read});
    }
    ASSERT_TRUE(plan.solve(64).ok());
    const LayoutReport rep = plan.report();
    ASSERT_EQ(rep.span, rep.peak) << "set " << set;
  }
}


// ---- planByLiveness: live ranges from the weights' touches ----

// Three layers; keys −1 (embedding), 0..5, 6 (lm_head).
ResidualTouches touches(int hidden) { return ResidualTouches(hidden, 3); }

// Marks dims [offset, offset + dims) read or written at a key.
void reads(ResidualTouches& t, const Field& f, int key) {
  for (int i = 0; i < f.dims; ++i) t.read(f.at(i), key);
}
void writes(ResidualTouches& t, const Field& f, int key) {
  for (int i = 0; i < f.dims; ++i) t.write(f.at(i), key);
}

// A: an embedding value read by L0's MLP. B: written by L1's MLP, which also reads B's dims (the
// Replace writer's cancel), read by L2's MLP. B may take A's dims.
// (The twins below move B's writer or drop its cancel.)
struct TwoFields {
  Field a{"a", 0, 4}, b{"b", 4, 4};
  ResidualTouches t = touches(8);
  explicit TwoFields(int bWriter = 3, bool bCancels = true) {
    writes(t, a, -1);
    reads(t, a, 1);
    writes(t, b, bWriter);
    if (bCancels) reads(t, b, bWriter);
    reads(t, b, 5);
  }
  Expected<LivenessPlan> plan() const { return planByLiveness({a, b}, t, 0); }
};

TEST(LayoutByLiveness, AReplacingMlpWriterTakesTheDimsOfAFieldReadBeforeIt) {
  const TwoFields f;
  auto p = f.plan();
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->hidden, 4);
  EXPECT_EQ(p->fields[1].offset, p->fields[0].offset);
  EXPECT_EQ(p->ranges[0].write.key(), -1);
  EXPECT_EQ(p->ranges[0].lastRead.key(), 1);
  EXPECT_EQ(p->ranges[1].write.key(), 3);
  EXPECT_EQ(p->ranges[1].lastRead.key(), 5);
  EXPECT_TRUE(p->fromEmbedding[0]);
  EXPECT_FALSE(p->fromEmbedding[1]);
  EXPECT_EQ(p->fields[1].name, "b");  // the takes' own names, for FieldAllocator's check
}

// Two fields of exclusive kinds live side by side share dims when both writers replace; a field
// whose writer needs the pad, or that starts at the embedding, loses its kinds (the pad restore and
// the embedding's value are not guarded) and takes dims of its own.
TEST(LayoutByLiveness, KindsStayOnlyWithFieldsWhoseWritersReplace) {
  struct Case {
    bool yCancels, yEmbedded;
    int hidden;
    const char* what;
  };
  for (const Case& c : {Case{true, false, 4, "both writers replace"},
                        Case{false, false, 8, "y's writer adds (needs the pad)"},
                        Case{true, true, 8, "y starts at the embedding"}}) {
    const Field x{"x", 0, 4, kKindAtomAdd}, y{"y", 4, 4, kKindAtomInc};
    ResidualTouches t = touches(8);
    writes(t, x, 3);
    reads(t, x, 3);
    reads(t, x, 7);
    if (c.yEmbedded) writes(t, y, -1);
    writes(t, y, 3);
    if (c.yCancels) reads(t, y, 3);
    reads(t, y, 7);
    auto p = planByLiveness({x, y}, t, 0);
    ASSERT_TRUE(p.ok()) << c.what;
    EXPECT_EQ(p->hidden, c.hidden) << c.what;
    EXPECT_EQ(p->fields[1].kinds, c.hidden == 4 ? kKindAtomInc : 0u) << c.what;
  }
}

// A writer that needs the +u pad — an MLP that adds, an attention head — gets it back where the
// plan puts it on dims another field held: B then starts at the adding MLP itself, or at the
// MLP before the head's layer, shares A's dims, and the plan lists the pad restore.
TEST(LayoutByLiveness, WritersThatNeedThePadGetItBackWhereTheyReuseDims) {
  struct Case {
    TwoFields f;
    int start, padLayer, padOffset, padDims;
    const char* what;
  };
  TwoFields oneDim;
  oneDim.t.write(oneDim.b.at(2), 2);  // one dim of B written by L1's attention first
  for (const Case& c : {Case{TwoFields(3, false), 3, 1, 0, 4, "an MLP writer that adds"},
                        Case{TwoFields(2, true), 1, 0, 0, 4, "an attention writer"},
                        Case{oneDim, 1, 0, 2, 1, "one dim of B written by attention"}}) {
    auto p = c.f.plan();
    ASSERT_TRUE(p.ok()) << c.what;
    EXPECT_EQ(p->hidden, 4) << c.what;
    EXPECT_FALSE(p->fromEmbedding[1]) << c.what;
    EXPECT_EQ(p->ranges[1].write.key(), c.start) << c.what;
    ASSERT_EQ(p->pads.size(), 1u) << c.what;
    EXPECT_EQ(p->pads[0].layer, c.padLayer) << c.what;
    EXPECT_EQ(p->pads[0].field.offset, p->fields[1].offset + c.padOffset) << c.what;
    EXPECT_EQ(p->pads[0].field.dims, c.padDims) << c.what;
    const FieldAllocator alloc = p->allocator();
    EXPECT_EQ(alloc.pads().size(), 1u) << c.what;
  }
  // A replacing writer needs no pad.
  auto replacing = TwoFields().plan();
  ASSERT_TRUE(replacing.ok());
  EXPECT_TRUE(replacing->pads.empty());
}

// Given the build's units per layer, a field that needs pads starts at the latest MLP within
// three layers of its writer with room for them under the widest layer (here L1's is full, so
// L0's), and its pads go there.
TEST(LayoutByLiveness, PadsGoToAnMlpWithRoom) {
  const TwoFields f(4, false);  // B written by L2's attention, read by L2's MLP
  auto latest = f.plan();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->ranges[1].write.key(), 3);
  ASSERT_EQ(latest->pads.size(), 1u);
  EXPECT_EQ(latest->pads[0].layer, 1);
  auto roomy = planByLiveness({f.a, f.b}, f.t, 0, {10, 100, 50});
  ASSERT_TRUE(roomy.ok());
  EXPECT_EQ(roomy->hidden, 4);
  EXPECT_EQ(roomy->ranges[1].write.key(), 1);
  ASSERT_EQ(roomy->pads.size(), 1u);
  EXPECT_EQ(roomy->pads[0].layer, 0);
  // No MLP has room: the latest, as without units.
  auto full = planByLiveness({f.a, f.b}, f.t, 0, {100, 100, 100});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->ranges[1].write.key(), 3);
  EXPECT_EQ(full->pads[0].layer, 1);
}

// On dims nobody held before, the embedding's pad is still there: no restore.
TEST(LayoutByLiveness, APadIsRestoredOnlyWhereAnotherFieldLivedBefore) {
  TwoFields f(2, true);
  reads(f.t, f.a, 5);  // A now lives past B's writer
  auto p = f.plan();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hidden, 8);
  EXPECT_FALSE(p->fromEmbedding[1]);
  EXPECT_TRUE(p->pads.empty());
}

// The twins that still start at the embedding, and so cannot share A's dims.
TEST(LayoutByLiveness, AReadBeforeTheWriterOrAHeadAtLayerZeroStartsAtTheEmbedding) {
  TwoFields early;
  reads(early.t, early.b, 2);  // the embedding's value is read before B's writer
  auto p = early.plan();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hidden, 8);
  EXPECT_TRUE(p->fromEmbedding[1]);
  EXPECT_TRUE(p->pads.empty());
  // Layer 0's attention: no MLP before it could give the pad back.
  Field a{"a", 0, 4}, b{"b", 4, 4};
  ResidualTouches t = touches(8);
  writes(t, a, -1);
  reads(t, a, 0);
  writes(t, b, 0);
  reads(t, b, 5);
  auto q = planByLiveness({a, b}, t, 0);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->fromEmbedding[1]);
  EXPECT_EQ(q->ranges[1].write.key(), -1);
  EXPECT_EQ(q->hidden, 8);
}

TEST(LayoutByLiveness, ADimOffTheNormLivesToTheEnd) {
  TwoFields f;
  f.t.markOffNorm(f.a.at(3));  // e.g. a counter's quiet dim: 0 in the embedding
  auto p = f.plan();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hidden, 8);
  EXPECT_EQ(p->ranges[0].lastRead.key(), 7);  // after lm_head's point
}

TEST(LayoutByLiveness, AWriteAfterTheLastReadKeepsTheFieldOneMorePoint) {
  TwoFields f;
  f.t.write(f.a.at(0), 2);  // A written again at L1's attention, never read after
  auto p = f.plan();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ranges[0].lastRead.key(), 3);
  EXPECT_EQ(p->hidden, 4);  // B's writer at key 3 may still take the dims
  f.t.write(f.a.at(0), 3);  // at L1's MLP, B's own point: now they overlap
  p = f.plan();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hidden, 8);
}

TEST(LayoutByLiveness, UntouchedFieldsShareAnyDimsAndPinnedOnesStay) {
  TwoFields f;
  const Field c{"c", 8, 4};  // nothing touches it
  ResidualTouches t = touches(12);
  writes(t, f.a, -1);
  reads(t, f.a, 1);
  writes(t, f.b, 3);
  reads(t, f.b, 3);
  reads(t, f.b, 6);  // lm_head
  auto p = planByLiveness({f.a, f.b, c}, t, 0);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->hidden, 4);
  // A pinned at its offset: the token layout's fields stay where writeTokenEmbeddings expects them.
  const Field pinned{"a", 2, 4};
  ResidualTouches t2 = touches(12);
  writes(t2, pinned, -1);
  reads(t2, pinned, 1);
  const Field late{"late", 6, 2};
  writes(t2, late, 3);
  reads(t2, late, 3);
  reads(t2, late, 5);
  // Dims 0..5 pinned: x (untouched) and `pinned` keep theirs; `late` takes the first free fit.
  auto q = planByLiveness({Field{"x", 0, 2}, pinned, late}, t2, 6);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->fields[0].offset, 0);
  EXPECT_EQ(q->fields[1].offset, 2);
  EXPECT_EQ(q->fields[2].offset, 0);
  EXPECT_EQ(q->hidden, 6);
}

TEST(LayoutByLiveness, DimsNoFieldHoldsAndOverlappingTakesAreInternal) {
  TwoFields f;
  ResidualTouches stray = touches(10);
  stray.read(9, 2);  // no field holds dim 9
  auto p = planByLiveness({f.a, f.b}, stray, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::Internal);
  EXPECT_NE(p.error().message.find("dim 9"), std::string::npos);
  auto q = planByLiveness({f.a, Field{"over", 2, 4}}, f.t, 0);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().kind, ErrorKind::Internal);
  EXPECT_NE(q.error().message.find("'over'"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::circuit
