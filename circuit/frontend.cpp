// qgpu/circuit/frontend.cpp — see frontend.h for the construction and its maths.
#include "circuit/frontend.h"

#include <bit>
#include <string>

#include "circuit/assembler.h"
#include "circuit/counter.h"
#include "circuit/logic.h"
#include "circuit/tap.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using trace::Family;

Diag frontEndUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "front end: " + message);
}

// The prompt's tags: the prompt-tag latch holds the last of them (RUN included, so that no run
// value is taken for a prompt word).
constexpr Family kPromptTags[] = {Family::Prog, Family::Blk,  Family::Gw,    Family::Term,
                                  Family::Gmem, Family::Run, Family::OpWord};


constexpr int kOpBits = std::countr_zero(static_cast<unsigned>(machine::kMaxOpsPerBlock));
constexpr int kBlockBits = std::countr_zero(static_cast<unsigned>(machine::kMaxBlocks));
constexpr int kPorts = 3;         // source operands
constexpr int kRegPorts = 4;      // + the destination's old value
constexpr int kPredPorts = 4;     // guard, psrc0, psrc1, dstPred (FrontEnd::predPort order)
// Value records of MG / MS: a (word, value) pair per executing lane.
constexpr int kMaxRecordValues = 2 * machine::kLanes;

}  // namespace

std::vector<int> frontEndHeads(int64_t keyHeadDim, bool payloadBanks) {
  const int rows = machine::kMaxOpsPerBlock * machine::kMaxBlocks;
  const int banks = keyHeadDim > 0 && rows > keyHeadDim ? static_cast<int>(rows / keyHeadDim) : 1;
  const int valueThresholds = kMaxRecordValues;  // [n ≥ 1..8]
  const int romSlots = payloadBanks ? trace::kRomSlots : 2;
  return {4, 10, valueThresholds + machine::kMaxOpsPerBlock + 2, romSlots * banks + 1,
          kRegPorts * machine::kLanes + kPredPorts};
}

Expected<FrontEnd> buildFrontEnd(CircuitWeights& w, FieldAllocator& alloc, const FrontEndSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  const int L = s.layer0;
  for (int l = L; l < L + 5; ++l)
    if (l < 0 || l >= c.numLayers() ||
        c.layerTypes[static_cast<size_t>(l)] != model::LayerType::Linear)
      return frontEndUsage("layers " + std::to_string(L) + ".." + std::to_string(L + 4) +
                   " must be linear_attention layers of the config");
  const std::vector<int> need = frontEndHeads(c.linearKeyHeadDim, s.payloadBanks);
  int most = 0;
  for (int h : need) most = std::max(most, h);
  if (c.linearNumValueHeads < most || c.linearNumKeyHeads != c.linearNumValueHeads)
    return frontEndUsage("needs " + std::to_string(most) + " value heads per layer, each with its own key "
                 "head; the config has " + std::to_string(c.linearNumValueHeads) + " / " +
                 std::to_string(c.linearNumKeyHeads));
  if (t.hidden != c.hiddenSize || t.lambda != 1.0)
    return frontEndUsage("the token layout must be the full layout (λ = 1) of this hidden size");
  // isTerm reads "op j is absent" from the head word's op index and opcode and source 0's kind:
  // that needs every op with opcode 0 to have a source (isa.def's first row).
  if (machine::opInfo(static_cast<machine::Op>(0)).numSources < 1)
    return frontEndUsage("isa.def's op 0 has no source: an absent op and op 0 would read alike");

  FrontEnd fe;
  // The read keys first: the register file takes them as its spec.
  RegisterFileSpec rs;
  rs.tokens = t;
  rs.layer0 = L;
  rs.ports = kRegPorts;
  rs.readLayer = L + 4;
  rs.headGain = s.headGain;
  rs.mlpGain = s.mlpGain;
  for (int p = 0; p < kRegPorts; ++p) {
    QGPU_TRY(k, alloc.take("fe.readKey" + std::to_string(p), registerFileShape().keyBits));
    rs.readKey.push_back(k);
  }
  fe.readKey = rs.readKey;
  QGPU_TRY(rf, buildRegisterFile(w, alloc, rs));
  fe.rf = rf;
  const RegisterFileShape& sh = fe.rf.shape;
  fe.warp = fe.rf.wmLatch.slice(0, sh.warpBits);
  fe.mask = fe.rf.wmLatch.slice(sh.warpBits, sh.lanes);
  fe.oldDst = fe.rf.operand[kPorts];
  fe.romShape = romShape(c);
  const RomShape& rsh = fe.romShape;

  // Fields. fetchKey = opIndex (4) then the EX latch's b; romWriteKey = the head-word latch's op
  // bits then the BLK latch's b: each is consecutive, as the ROM's keys must be.
  QGPU_TRY(fetch, alloc.take("fe.fetch", kOpBits + 8));
  fe.opIndex = fetch.slice(0, kOpBits);
  fe.exLatch = fetch.slice(kOpBits, 8);
  fe.execBlock = fe.exLatch.slice(0, kBlockBits);
  fe.fetchKey = fetch.slice(0, kOpBits + kBlockBits);
  QGPU_TRY(promptTag, alloc.take("fe.promptTag", 1));
  QGPU_TRY(kindLatch, alloc.take("fe.kindLatch", 8));
  QGPU_TRY(promptLatch, alloc.take("fe.promptLatch", 8));
  QGPU_TRY(slotEnable, alloc.take("fe.slotEnable", trace::kRomSlots + 1));
  QGPU_TRY(blkEnable, alloc.take("fe.blkEnable", 1));
  QGPU_TRY(more, alloc.take("fe.moreAtLeast", kMaxRecordValues - sh.thresholds));
  QGPU_TRY(opAtLeast, alloc.take("fe.opAtLeast", machine::kMaxOpsPerBlock));
  QGPU_TRY(romKeys, alloc.take("fe.romKeys", 16));
  QGPU_TRY(recordEnd, alloc.take("fe.recordEnd", 1));
  std::vector<Field> rom;
  for (int slot = 0; slot <= trace::kRomSlots; ++slot) {
    const std::string name = slot < trace::kRomSlots ? trace::kRomSlotNames[slot] : "term";
    QGPU_TRY(word, alloc.take("fe.rom." + name, rsh.wordBits));
    rom.push_back(word);
  }
  QGPU_TRY(isTerm, alloc.take("fe.isTerm", 1));
  QGPU_TRY(isOp, alloc.take("fe.isOp", 1));
  QGPU_TRY(isCont, alloc.take("fe.isCont", 1));
  QGPU_TRY(predKeys, alloc.take("fe.predKeys", kPredPorts * predicateFileShape().predBits));
  QGPU_TRY(exec, alloc.take("fe.exec", 1));
  fe.predKeys = predKeys;
  fe.exec = exec;
  fe.promptTag = promptTag;
  fe.kindLatch = kindLatch;
  fe.promptLatch = promptLatch;
  fe.slotEnable = slotEnable;
  fe.blkEnable = blkEnable;
  fe.moreAtLeast = more;
  fe.opAtLeast = opAtLeast;
  fe.romKeys = romKeys;
  fe.romWriteKey = romKeys.slice(8 - kOpBits, kOpBits + kBlockBits);
  fe.recordEnd = recordEnd;
  fe.isOp = isOp;
  fe.isCont = isCont;
  fe.rom = rom;
  auto slot = [&](trace::RomSlot s) { return rom[static_cast<size_t>(s)]; };
  fe.headWord = slot(trace::RomSlot::Head);
  fe.sourcesWord = slot(trace::RomSlot::Sources);
  fe.termWord = rom.back();
  for (int k = 0; k < 3; ++k) fe.immWord[static_cast<size_t>(k)] = slot(trace::immSlot(k));
  fe.offsetWord = slot(trace::RomSlot::Offset);
  fe.isTerm = isTerm;

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
  const int bal = t.ballast.at(0);
  const int T = t.isTerminal.at(0);
  // A sign dim written by exclusive ANDs: cancel the pad, −u, then +2u per AND that holds.
  auto signBase = [&](UnitWriter& units, const Field& f) -> Status {
    QGPU_CHECK(buildCancel(units, f, ctx));
    std::vector<Output> base;
    for (int i = 0; i < f.dims; ++i) base.push_back({f.at(i), -1});
    QGPU_CHECK(addConstant(units, ctx, base));
    return Ok{};
  };
  auto orAnd = [&](UnitWriter& units, std::vector<Literal> lits, int dim) -> Status {
    QGPU_CHECK(addAnd(units, g, std::move(lits), {{dim, 2.0 * t.unit}}));
    return Ok{};
  };
  auto latch = [&](int layer, int head, int enable, std::vector<int> sources,
                   const Field& out) -> Status {
    QGPU_CHECK(buildLatch(w, tokenLatch(t, s.headGain, layer, head, enable, std::move(sources), out)));
    return Ok{};
  };
  auto threshold = [&](int layer, int head, int quiet, int n, int out) -> Status {
    ThresholdSpec ts;
    ts.layer = layer;
    ts.head = head;
    ts.ballast = t.ballast;
    ts.quiet = quiet;
    ts.levelExp = EventCounterSpec{}.levelExp;
    ts.threshold = n;
    ts.out = out;
    ts.unit = t.unit;
    ts.gain = s.headGain;
    ts.zGain = s.headGain / 4;
    QGPU_CHECK(buildThreshold(w, ts));
    return Ok{};
  };

  // ---- L: the EX latch; the prompt-tag detector ----
  {
    std::vector<int> src;
    for (int i = 0; i < kBlockBits; ++i) src.push_back(t.index.at(i));
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(L, 3, familyDim(t, Family::Ex), src, fe.exLatch));
    UnitWriter units(w, L, fe.rf.unitsUsed[0]);
    QGPU_CHECK(signBase(units, promptTag));
    // Family one-hot: Σ_{f ∈ tags} x̂_f = 2 − |tags| on a tag, −|tags| elsewhere.
    LinearForm n;
    for (Family f : kPromptTags) n.terms.push_back({familyDim(t, f), 1.0});
    n.constant = static_cast<double>(n.terms.size()) - 1;
    QGPU_CHECK(addDetector(units, ctx, n, {{bal, 1.0f}}, {{promptTag.at(0), 2}}));
    fe.heads[0] = 4;
    fe.units[0] = units.next();
  }

  // ---- L+1: op counter, record-kind latch, prompt-tag latch; slot enables ----
  {
    EventCounterSpec cs;
    cs.layer = L + 1;
    cs.head = 6;
    cs.ballast = t.ballast;
    cs.event = fe.rf.recordTag.at(0);
    cs.reset = familyDim(t, Family::Wm);
    cs.quiet = fe.rf.quiet.at(1);  // the register file's counter uses quiet.at(0)
    cs.unit = t.unit;
    cs.gain = s.headGain;
    QGPU_CHECK(buildEventCounter(w, cs));
    QGPU_CHECK(latch(L + 1, 7, fe.rf.recordTag.at(0),
                     {familyDim(t, Family::Wp), familyDim(t, Family::Mg), familyDim(t, Family::Ms),
                      bal, bal, bal, bal, bal},
                     kindLatch));
    QGPU_CHECK(latch(L + 1, 8, promptTag.at(0),
                     {familyDim(t, Family::Blk), familyDim(t, Family::Term),
                      familyDim(t, Family::OpWord), t.index.at(0), t.index.at(1), t.index.at(2),
                      bal, bal},
                     promptLatch));
    fe.heads[1] = 9;
    UnitWriter units(w, L + 1, fe.rf.unitsUsed[1]);
    const int isBlk = promptLatch.at(0), isTermTag = promptLatch.at(1), isOpTag = promptLatch.at(2);
    auto slotLits = [&](int slot) {
      std::vector<Literal> l = {{T, 1}, {isOpTag, 1}, {isBlk, -1}, {isTermTag, -1}};
      for (int i = 0; i < 3; ++i) l.push_back({promptLatch.at(3 + i), (slot >> i) & 1 ? 1 : -1});
      return l;
    };
    const int head = static_cast<int>(trace::RomSlot::Head);
    const int sources = static_cast<int>(trace::RomSlot::Sources);
    const Field enables[] = {slotEnable.slice(head, 1), slotEnable.slice(sources, 1),
                             slotEnable.slice(trace::kRomSlots, 1), blkEnable};
    for (const Field& f : enables) QGPU_CHECK(signBase(units, f));
    QGPU_CHECK(orAnd(units, slotLits(head), slotEnable.at(head)));
    QGPU_CHECK(orAnd(units, slotLits(sources), slotEnable.at(sources)));
    QGPU_CHECK(orAnd(units, {{T, 1}, {isTermTag, 1}, {isBlk, -1}, {isOpTag, -1}},
                     slotEnable.at(trace::kRomSlots)));
    QGPU_CHECK(orAnd(units, {{T, 1}, {isBlk, 1}, {isTermTag, -1}, {isOpTag, -1}}, blkEnable.at(0)));
    // The payload slots (i0..i2, offset): the same AND on their slot index.
    for (int slot = sources + 1; s.payloadBanks && slot < trace::kRomSlots; ++slot) {
      QGPU_CHECK(signBase(units, slotEnable.slice(slot, 1)));
      QGPU_CHECK(orAnd(units, slotLits(slot), slotEnable.at(slot)));
    }
    fe.units[1] = units.next();
  }

  // ---- L+2: thresholds, the ROM key latches; j's bits and recordEnd ----
  {
    int head = sh.thresholds;  // after the register file's [n ≥ 1..5]
    for (int n = sh.thresholds + 1; n <= kMaxRecordValues; ++n)
      QGPU_CHECK(threshold(L + 2, head++, fe.rf.quiet.at(0), n, more.at(n - sh.thresholds - 1)));
    for (int n = 1; n <= machine::kMaxOpsPerBlock; ++n)
      QGPU_CHECK(threshold(L + 2, head++, fe.rf.quiet.at(1), n, opAtLeast.at(n - 1)));
    const Field value = fe.rf.assembler.value;
    std::vector<int> headSrc = {bal, bal, bal, bal};
    for (int i = 0; i < kOpBits; ++i) headSrc.push_back(value.at(i));
    QGPU_CHECK(latch(L + 2, head++, slotEnable.at(static_cast<int>(trace::RomSlot::Head)), headSrc,
                     romKeys.slice(0, 8)));
    std::vector<int> blkSrc;
    for (int i = 0; i < kBlockBits; ++i) blkSrc.push_back(value.at(i));
    while (blkSrc.size() < 8) blkSrc.push_back(bal);
    QGPU_CHECK(latch(L + 2, head++, blkEnable.at(0), blkSrc, romKeys.slice(8, 8)));
    fe.heads[2] = head;

    UnitWriter units(w, L + 2, fe.rf.unitsUsed[2]);
    // j mod 16 from the thermometer [j ≥ 1..16].
    QGPU_CHECK(signBase(units, fe.opIndex));
    const int off = s.twin == FrontEndTwin::OpIndexOffByOne ? 1 : 0;
    for (int v = 0; v <= machine::kMaxOpsPerBlock; ++v) {
      const int shown = (v + off) % machine::kMaxOpsPerBlock;
      std::vector<std::pair<int, double>> outs;
      for (int b = 0; b < kOpBits; ++b)
        if ((shown >> b) & 1) outs.push_back({fe.opIndex.at(b), 2.0 * t.unit});
      if (outs.empty()) continue;
      std::vector<Literal> lits;
      if (v >= 1) lits.push_back({opAtLeast.at(v - 1), 1});
      if (v < machine::kMaxOpsPerBlock) lits.push_back({opAtLeast.at(v), -1});
      QGPU_CHECK(addAnd(units, g, lits, outs));
    }
    // recordEnd: the exclusive cases of the header.
    QGPU_CHECK(signBase(units, recordEnd));
    const int op = recordEnd.at(0);
    const int isWR = fe.rf.tagLatch.at(2), isWU = fe.rf.tagLatch.at(3);
    const Field lanesE = fe.rf.tagLatch.slice(4, sh.regBits);  // r = e for MG(e) / MS(e)
    const int isWP = kindLatch.at(0), isMG = kindLatch.at(1), isMS = kindLatch.at(2);
    auto atLeast = [&](int n) {  // [values since the tag ≥ n], n = 1..8
      return n <= sh.thresholds ? fe.rf.atLeast.at(n - 1) : more.at(n - sh.thresholds - 1);
    };
    QGPU_CHECK(orAnd(units, {{familyDim(t, Family::Wm), 1}}, op));
    QGPU_CHECK(orAnd(units, {{familyDim(t, Family::Nop), 1}}, op));
    QGPU_CHECK(orAnd(units, {{T, 1}, {isWU, 1}, {isWR, -1}, {atLeast(1), 1}}, op));
    QGPU_CHECK(orAnd(units,
                     {{T, 1}, {isWP, 1}, {isMG, -1}, {isMS, -1}, {isWR, -1}, {isWU, -1},
                      {atLeast(1), 1}},
                     op));
    for (int m = 1; m <= trace::kLaneMasks; ++m) {
      std::vector<Literal> lits = {{T, 1}, {isWR, 1}, {isWU, -1}};
      for (int l = 0; l < sh.lanes; ++l) lits.push_back({fe.mask.at(l), (m >> l) & 1 ? 1 : -1});
      lits.push_back({atLeast(std::popcount(static_cast<unsigned>(m))), 1});
      QGPU_CHECK(orAnd(units, lits, op));
    }
    for (int e = 1; e <= trace::kLaneMasks; ++e)
      for (int mem : {isMG, isMS}) {
        std::vector<Literal> lits = {{T, 1},     {isMG, mem == isMG ? 1 : -1},
                                     {isMS, mem == isMS ? 1 : -1},
                                     {isWP, -1}, {isWR, -1}, {isWU, -1}};
        for (int i = 0; i < sh.regBits; ++i) lits.push_back({lanesE.at(i), (e >> i) & 1 ? 1 : -1});
        lits.push_back({atLeast(2 * std::popcount(static_cast<unsigned>(e))), 1});
        QGPU_CHECK(orAnd(units, lits, op));
      }
    fe.units[2] = units.next();
  }

  // ---- L+3: the ROM; the read keys, isOp, isCont and isTerm ----
  {
    RomSpec r;
    r.layer = L + 3;
    r.firstHead = 0;
    r.ballast = t.ballast;
    r.slotEnable = slotEnable;
    r.writeKey = fe.romWriteKey;
    r.word = fe.rf.assembler.value;
    r.readKey = fe.fetchKey;
    r.out = rom;
    r.lambda = t.lambda;
    r.gain = s.headGain;
    r.outUnit = t.unit;
    r.payloadSlots = s.payloadBanks;
    r.readout = MemoryReadout::PadInverted;
    QGPU_TRY(rm, buildRom(w, r));
    fe.heads[3] = rm.headsUsed;

    UnitWriter units(w, L + 3);
    // In the fetched words −u is a set bit: a literal "bit set" is sign −1.
    for (int p = 0; p < kPorts; ++p) {
      const std::string k = "src" + std::to_string(p);
      QGPU_TRY(kind, packedField(trace::PackedWord::OpSources, (k + " kind").c_str(), "front end"));
      QGPU_TRY(index, packedField(trace::PackedWord::OpSources, (k + " index").c_str(), "front end"));
      const Field key = fe.readKey[static_cast<size_t>(p)];
      const Field reg = key.slice(0, sh.regBits);
      QGPU_CHECK(signBase(units, reg));
      const uint32_t isReg = static_cast<uint32_t>(machine::OperandKind::Reg);
      std::vector<Literal> kindLits;
      for (int i = 0; i < kind.width; ++i)
        kindLits.push_back({fe.sourcesWord.at(kind.offset + i), (isReg >> i) & 1 ? -1 : 1});
      for (int i = 0; i < sh.regBits && i < index.width; ++i) {
        std::vector<Literal> lits = kindLits;
        lits.push_back({fe.sourcesWord.at(index.offset + i), -1});
        QGPU_CHECK(orAnd(units, lits, reg.at(i)));
      }
      const Field warp = key.slice(sh.regBits, sh.warpBits);
      QGPU_CHECK(buildCancel(units, warp, ctx));
      for (int i = 0; i < sh.warpBits; ++i)
        QGPU_CHECK(addDetector(units, ctx, LinearForm{{}, 1.0}, {{fe.warp.at(i), 1.0f}},
                               {{warp.at(i), 1}}));
    }
    QGPU_TRY(opIndexField, packedField(trace::PackedWord::OpHead, "op index", "front end"));
    QGPU_TRY(opcodeField, packedField(trace::PackedWord::OpHead, "opcode", "front end"));
    QGPU_TRY(contField, packedField(trace::PackedWord::OpHead, "continuation", "front end"));
    QGPU_TRY(kind0, packedField(trace::PackedWord::OpSources, "src0 kind", "front end"));
    if (contField.width != 1) return frontEndUsage("the head word's continuation field must be one bit");
    // The fetched row is a continuation row (an atomic's second record, trace v5): at a record's
    // end that is no op's execution position but the position whose next token starts the same
    // atomic's regrec. −u = a set bit: "set" is literal sign −1.
    const int cont = fe.headWord.at(contField.offset);
    const int end = recordEnd.at(0);
    QGPU_CHECK(signBase(units, isOp));
    QGPU_CHECK(orAnd(units, {{end, 1}, {cont, 1}}, isOp.at(0)));
    QGPU_CHECK(signBase(units, isCont));
    QGPU_CHECK(orAnd(units, {{end, 1}, {cont, -1}}, isCont.at(0)));
    QGPU_CHECK(signBase(units, isTerm));
    const int j16 = opAtLeast.at(machine::kMaxOpsPerBlock - 1);
    QGPU_CHECK(orAnd(units, {{end, 1}, {cont, 1}, {j16, 1}}, isTerm.at(0)));
    std::vector<Literal> absent = {{end, 1}, {cont, 1}, {j16, -1}};
    for (const trace::PackedField& f : {opIndexField, opcodeField})
      for (int i = 0; i < f.width; ++i) absent.push_back({fe.headWord.at(f.offset + i), 1});
    for (int i = 0; i < kind0.width; ++i) absent.push_back({fe.sourcesWord.at(kind0.offset + i), 1});
    QGPU_CHECK(orAnd(units, absent, isTerm.at(0)));

    // The 4th register port's key: (dst, w), dst copied from the fetched head word (inverted:
    // a literal "bit set" is sign −1), w as for the sources.
    QGPU_TRY(dstField, packedField(trace::PackedWord::OpHead, "dst", "front end"));
    if (dstField.width != sh.regBits) return frontEndUsage("the head word's dst field must have " +
                                                           std::to_string(sh.regBits) + " bits");
    {
      const Field key = fe.readKey[kPorts];
      const Field reg = key.slice(0, sh.regBits);
      QGPU_CHECK(signBase(units, reg));
      for (int i = 0; i < sh.regBits; ++i)
        QGPU_CHECK(orAnd(units, {{fe.headWord.at(dstField.offset + i), -1}}, reg.at(i)));
      const Field warp = key.slice(sh.regBits, sh.warpBits);
      QGPU_CHECK(buildCancel(units, warp, ctx));
      for (int i = 0; i < sh.warpBits; ++i)
        QGPU_CHECK(addDetector(units, ctx, LinearForm{{}, 1.0}, {{fe.warp.at(i), 1.0f}},
                               {{warp.at(i), 1}}));
    }
    // The predicate ports' keys: p = code − 1 from a predicate code (p + 1, 0 = none) of the
    // fetched words, one 4-literal AND per code 2..kPreds (code 0 and 1 leave p = 0; the twin
    // reads p + 1 mod kPreds for every code, code 0 included); port 0 with a head code 0 reads
    // the TERM word's branch predicate code instead (one 8-literal AND per code 2..kPreds).
    const PredicateFileShape psh = predicateFileShape();
    QGPU_TRY(branch, packedField(trace::PackedWord::Term, "branch predicate", "front end"));
    const std::pair<trace::PackedWord, const char*> codes[kPredPorts] = {
        {trace::PackedWord::OpHead, "guard predicate"},
        {trace::PackedWord::OpSources, "psrc0"},
        {trace::PackedWord::OpSources, "psrc1"},
        {trace::PackedWord::OpHead, "dstPred"}};
    for (int p = 0; p < kPredPorts; ++p) {
      const auto& [word, name] = codes[p];
      QGPU_TRY(f, packedField(word, name, "front end"));
      const Field& src = word == trace::PackedWord::OpHead ? fe.headWord : fe.sourcesWord;
      const Field key = predKeys.slice(p * psh.predBits, psh.predBits);
      QGPU_CHECK(signBase(units, key));
      for (int code = 0; code <= psh.preds; ++code) {
        const int p0 = code == 0 ? 0 : code - 1;
        const int pred = s.twin == FrontEndTwin::PredKeyOffByOne ? (p0 + 1) % psh.preds : p0;
        std::vector<std::pair<int, double>> outs;
        for (int b = 0; b < psh.predBits; ++b)
          if ((pred >> b) & 1) outs.push_back({key.at(b), 2.0 * t.unit});
        if (outs.empty()) continue;
        std::vector<Literal> lits;
        for (int i = 0; i < f.width; ++i)
          lits.push_back({src.at(f.offset + i), (code >> i) & 1 ? -1 : 1});
        QGPU_CHECK(addAnd(units, g, lits, outs));
        // Port 0 where the head word names no guard (code 0: an unguarded op, a continuation
        // row, the absent row at the terminator position): the TERM word's branch predicate,
        // the scheduler's p (circuit/control.h). The same AND with the head's code-0 literals.
        if (p == 0 && code >= 2) {
          std::vector<Literal> term;
          for (int i = 0; i < f.width; ++i) term.push_back({src.at(f.offset + i), 1});
          for (int i = 0; i < branch.width; ++i)
            term.push_back({fe.termWord.at(branch.offset + i), (code >> i) & 1 ? -1 : 1});
          QGPU_CHECK(addAnd(units, g, term, outs));
        }
      }
    }
    fe.units[3] = units.next();
  }

  // ---- L, L+1, L+4: the predicate file (its tag latch, enable, reset; its heads at L+4) ----
  {
    PredicateFileSpec ps;
    ps.tokens = t;
    ps.layer0 = L;
    ps.ports = kPredPorts;
    for (int p = 0; p < kPredPorts; ++p)
      ps.readKey.push_back(fe.predKeys.slice(p * predicateFileShape().predBits,
                                             predicateFileShape().predBits));
    ps.headGain = s.headGain;
    ps.mlpGain = s.mlpGain;
    ps.read = ReadHeight::Exact;
    PredicateFileSpec::Shared sharedSpec;
    sharedSpec.assembler = fe.rf.assembler;
    sharedSpec.recordTag = fe.rf.recordTag;
    sharedSpec.latchHead = fe.heads[1];
    sharedSpec.readLayer = L + 4;
    sharedSpec.readHead = fe.rf.headsUsed[3];
    sharedSpec.firstUnit = {fe.units[0], fe.units[1], fe.rf.unitsUsed[3]};
    ps.shared = sharedSpec;
    QGPU_TRY(pf, buildPredicateFile(w, alloc, ps));
    fe.pf = pf;
    for (int p = 0; p < kPredPorts; ++p) fe.predPort[static_cast<size_t>(p)] = pf.bits[static_cast<size_t>(p)];
    fe.heads[1] += pf.headsUsed[1];
    fe.units[0] += pf.unitsUsed[0];
    fe.units[1] += pf.unitsUsed[1];
    fe.heads[4] = fe.rf.headsUsed[3] + pf.headsUsed[2];

    // exec = isOp ∧ ¬isTerm (both ready after L+3).
    UnitWriter units(w, L + 4, fe.rf.unitsUsed[3] + pf.unitsUsed[2]);
    QGPU_CHECK(signBase(units, exec));
    QGPU_CHECK(orAnd(units, {{fe.isOp.at(0), 1}, {fe.isTerm.at(0), -1}}, exec.at(0)));
    fe.units[4] = units.next();
  }
  return fe;
}

}  // namespace qgpu::circuit
