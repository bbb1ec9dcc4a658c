// qgpu/circuit/record_emit.cpp — see record_emit.h for the maths.
#include "circuit/record_emit.h"

#include <algorithm>
#include <bit>
#include <string>

#include "circuit/logic.h"
#include "circuit/tap.h"

namespace qgpu::circuit {
namespace {

constexpr int kBufferBits = 32;  // one latch: V = 32 (dv/V = 4 at dv = 128)
constexpr int kLatches = kRecordLanes + 3;

bool isRecordTag(trace::Token t) {
  switch (trace::familyOf(t)) {
    case trace::Family::Wr:
    case trace::Family::Wu:
    case trace::Family::Wp:
    case trace::Family::Mg:
    case trace::Family::Ms:
    case trace::Family::Nop:
      return true;
    default:
      return false;
  }
}

// The emit encoding of a token: dim f of the family one-hot, then the index bits (±1).
std::vector<int> emitSigns(trace::Token t) {
  std::vector<int> s;
  for (int f = 0; f < trace::kNumFamilies; ++f)
    s.push_back(f == static_cast<int>(trace::familyOf(t)) ? 1 : -1);
  for (int b = 0; b < tokenIndexBits(); ++b) s.push_back(indexBit(t, b));
  return s;
}

// The k-th set bit of m (k from 0), or −1.
int laneOf(unsigned m, int k) {
  for (int l = 0; l < kRecordLanes; ++l)
    if (m >> l & 1u) {
      if (k == 0) return l;
      --k;
    }
  return -1;
}

}  // namespace

Expected<RecordEmitter> buildRecordEmitter(CircuitWeights& w, const RecordEmitSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  const int hidden = c.hiddenSize;
  const int L = s.firstLayer;
  if (L < 0 || L + kRecordLayers > c.numLayers())
    return makeDiag(ErrorKind::Usage, "record emitter: needs layers " + std::to_string(L) + ".." +
                                          std::to_string(L + kRecordLayers - 1) + ", the config has " +
                                          std::to_string(c.numLayers()));
  if (s.firstHead < 0 || s.firstHead + kLatches + 4 > c.linearNumValueHeads ||
      c.linearNumKeyHeads != c.linearNumValueHeads)
    return makeDiag(ErrorKind::Usage, "record emitter: needs 11 value heads from head " +
                                          std::to_string(s.firstHead) + " with Hv = Hk");
  if (c.linearValueHeadDim != 128)
    return makeDiag(ErrorKind::Usage, "record emitter: needs value head dim 128 (latches of 32 "
                                      "bits, taps of 2, thresholds of 8)");
  // The emit encoding and the tag latch's "written" dim after it must fit one latch.
  if (trace::kNumFamilies + tokenIndexBits() >= kBufferBits)
    return makeDiag(ErrorKind::Internal, "record emitter: the emit encoding needs " +
                                             std::to_string(trace::kNumFamilies + tokenIndexBits()) +
                                             " of a latch's 31 free bits");
  FieldAllocator own(hidden);
  QGPU_TRY(again, planTokenLayout(own, hidden, t.rowOffset));
  if (t.hidden != hidden || again.isTerminal.offset != t.isTerminal.offset)
    return makeDiag(ErrorKind::Usage, "record emitter: the token layout must be planned over this "
                                      "config's hidden size from a fresh allocator");
  FieldAllocator& alloc = s.into ? *s.into : own;
  if (s.overrideFrom) {
    const RecordEmitSpec::Override& o = *s.overrideFrom;
    if (o.when.dims != 1 || o.emit.family.dims != trace::kNumFamilies ||
        o.emit.index.dims != tokenIndexBits())
      return makeDiag(ErrorKind::Usage, "record emitter: overrideFrom needs a 1-dim when and an "
                                        "emit field of the emit encoding");
  }
  if (s.outcomeFrom) {
    const RecordOutcomeFields& o = *s.outcomeFrom;
    bool ok = o.wordMask.dims == kBufferBits && o.tag.dims == kBufferBits;
    for (const Field& v : o.value) ok = ok && v.dims == kBufferBits;
    if (!ok)
      return makeDiag(ErrorKind::Usage, "record emitter: outcomeFrom needs 32-dim value, "
                                        "wordMask and tag fields");
  }
  RecordEmitter r;
  r.tokens = t;
  auto take = [&](const std::string& name, int dims) { return alloc.take("rec." + name, dims); };
  if (s.execFrom) {
    if (s.execFrom->dims != 1)
      return makeDiag(ErrorKind::Usage, "record emitter: execFrom needs a 1-dim field");
    r.exec = *s.execFrom;
    r.execEmbedded = false;
  } else {
    QGPU_TRY(f, take("exec", 1)); r.exec = f;
  }
  {
    QGPU_TRY(f, take("isTag", 1)); r.isTag = f;
  }
  {
    QGPU_TRY(f, take("quiet", 3)); r.quiet = f;
  }
  {
    QGPU_TRY(f, take("heavy", 1)); r.heavy = f;
  }
  if (!s.outcomeFrom) {
    for (int l = 0; l < kRecordLanes; ++l) {
      QGPU_TRY(f, take("in.value" + std::to_string(l), kBufferBits));
      r.inValue[static_cast<size_t>(l)] = f;
    }
    {
      QGPU_TRY(f, take("in.wordMask", kBufferBits)); r.inWordMask = f;
    }
    {
      QGPU_TRY(f, take("in.tag", kBufferBits)); r.inTag = f;
    }
  }
  if (!s.overrideFrom) {
    QGPU_TRY(f, take("in.next", kBufferBits)); r.inNext = f;
  }
  for (int l = 0; l < kRecordLanes; ++l) {
    QGPU_TRY(f, take("buf.value" + std::to_string(l), kBufferBits));
    r.value[static_cast<size_t>(l)] = f;
  }
  {
    QGPU_TRY(f, take("buf.wordMask", kBufferBits)); r.wordMask = f;
  }
  {
    QGPU_TRY(f, take("buf.tag", kBufferBits)); r.tag = f;
  }
  if (!s.overrideFrom) {
    QGPU_TRY(f, take("buf.next", kBufferBits)); r.next = f;
  }
  for (int k = 0; k < kWindow; ++k) {
    QGPU_TRY(f, take("back" + std::to_string(k + 1), kRecordBits));
    r.back[static_cast<size_t>(k)].f = f;
  }
  {
    QGPU_TRY(f, take("atLeast", kRecordCountMax)); r.atLeast = f;
  }
  {
    QGPU_TRY(f, take("sel", 2 * kRecordLanes + 1)); r.sel = f;
  }
  {
    QGPU_TRY(f, take("cur", kValueBits)); r.cur = f;
  }
  {
    QGPU_TRY(f, take("done", 1)); r.done = f;
  }
  {
    QGPU_TRY(ef, take("emit.family", trace::kNumFamilies));
    QGPU_TRY(ei, take("emit.index", tokenIndexBits()));
    r.emit = {ef, ei};
  }
  r.dims = alloc.used();

  const double lambda = t.lambda;
  const double one = t.unit, two = 2.0 * t.unit;
  int head = s.firstHead;

  // ---- L: the output buffer, the level-0 taps, the value counter. ----
  auto latch = [&](const Field& in, const Field& out) -> Status {
    LatchSpec ls;
    ls.layer = L;
    ls.head = head++;
    ls.ballast = t.ballast;
    ls.enable = r.exec.at(0);
    for (int i = 0; i < in.dims; ++i) ls.sources.push_back(in.at(i));
    ls.out = out;
    ls.lambda = lambda;
    ls.gain = ls.valueGain = s.headGain;
    ls.zGain = s.headGain / 4;
    ls.outUnit = t.unit;
    ls.prior = HeadPrior::Pad;
    QGPU_TRY(m, buildLatch(w, ls));
    (void)m;
    return Ok{};
  };
  for (int l = 0; l < kRecordLanes; ++l)
    QGPU_CHECK(latch(s.outcomeFrom ? s.outcomeFrom->value[static_cast<size_t>(l)]
                                   : r.inValue[static_cast<size_t>(l)],
                     r.value[static_cast<size_t>(l)]));
  QGPU_CHECK(latch(s.outcomeFrom ? s.outcomeFrom->wordMask : r.inWordMask, r.wordMask));
  QGPU_CHECK(latch(s.outcomeFrom ? s.outcomeFrom->tag : r.inTag, r.tag));
  if (!s.overrideFrom) QGPU_CHECK(latch(r.inNext, r.next));
  auto tap = [&](int layer, int back, const std::vector<int>& sources, const Field& out) -> Status {
    TapSpec ts;
    ts.layer = layer;
    ts.head = head++;
    ts.tap = back;
    ts.ballast = t.ballast;
    ts.sources = sources;
    ts.out = out;
    ts.lambda = lambda;
    ts.gain = ts.valueGain = s.headGain;
    ts.zGain = s.headGain / 4;
    ts.outUnit = t.unit;
    QGPU_TRY(m, buildTap(w, ts));
    (void)m;
    return Ok{};
  };
  // The assembler's 8-bit records (present, chunk, isChunk, isTerminal): with V = 8 hot channels
  // the gated norm's eps is below half an ulp of the mean square (with V = 2 it is not: measured,
  // every copied −u came out 1 ulp off).
  std::vector<int> embedRecord = {t.ballast.at(0)};
  for (int j = 0; j < trace::kChunkBits; ++j) embedRecord.push_back(t.chunk.at(j));
  embedRecord.push_back(t.isChunk.at(0));
  embedRecord.push_back(t.isTerminal.at(0));
  for (int k = 1; k <= 3; ++k)
    QGPU_CHECK(tap(L, k, embedRecord, r.back[static_cast<size_t>(k - 1)].f));
  EventCounterSpec cs;
  cs.layer = L;
  cs.head = head++;
  cs.ballast = t.ballast;
  cs.event = t.isTerminal.at(0);
  cs.reset = r.isTag.at(0);
  cs.quiet = r.quiet.at(0);
  cs.lambda = lambda;
  cs.unit = t.unit;
  QGPU_TRY(counter, buildEventCounter(w, cs));
  (void)counter;
  r.heads[0] = head - s.firstHead;

  // ---- L+1: level-1 taps, the thresholds, the selection. ----
  head = s.firstHead;
  for (int k = 1; k <= 3; ++k) {
    const Field& src = r.back[static_cast<size_t>(k - 1)].f;
    std::vector<int> level0;
    for (int j = 0; j < src.dims; ++j) level0.push_back(src.at(j));
    QGPU_CHECK(tap(L + 1, 3, level0, r.back[static_cast<size_t>(k + 2)].f));
  }
  {
    ThresholdSpec ts;
    ts.layer = L + 1;
    ts.head = head;
    ts.ballast = t.ballast;
    ts.quiet = r.quiet.at(0);
    ts.levelExp = cs.levelExp;
    ts.lambda = lambda;
    ts.unit = t.unit;
    QGPU_CHECK(buildThresholds(w, ts, r.atLeast));
    head += kRecordCountMax;
  }
  r.heads[1] = head - s.firstHead;

  const MlpContext cancelCtx{t.ballast, lambda, 128, t.unit};
  const AndGate g{t.ballast, lambda, s.mlpGain};
  auto fam = [&](const Field& emitEncoded, trace::Family f) {
    return emitEncoded.at(static_cast<int>(f));
  };
  auto track = [&](const std::vector<Literal>& l) {
    r.maxFanIn = std::max(r.maxFanIn, static_cast<int>(l.size()));
  };
  auto add = [&](UnitWriter& u, std::vector<Literal> l,
                 const std::vector<std::pair<int, double>>& outs) -> Status {
    track(l);
    QGPU_TRY(wrote, addAnd(u, g, std::move(l), outs));
    (void)wrote;
    return Ok{};
  };
  const int maskAt = kRecordLanes * kRecordWordBits;  // the mask bits in wordMask
  // The tag latch's dim 28 and up are −u at every record position (writeCarrier), so +u there
  // means the latch is still empty (no record position yet): its pad would hold every family
  // literal at once, and the selection must then write nothing.
  const Literal latched{r.tag.at(trace::kNumFamilies + tokenIndexBits()), -1};
  auto maskLiterals = [&](unsigned m) {
    std::vector<Literal> l;
    for (int b = 0; b < kRecordLanes; ++b) l.push_back({r.wordMask.at(maskAt + b), m >> b & 1u ? 1 : -1});
    return l;
  };
  // [n = j] as literals (ge_0 ≡ 1; ge_9 never asked).
  auto countIs = [&](int j) {
    std::vector<Literal> l;
    if (j > 0) l.push_back({r.atLeast.at(j - 1), 1});
    if (j < kRecordCountMax) l.push_back({r.atLeast.at(j), -1});
    return l;
  };
  auto selV = [&](int lane) { return r.sel.at(lane); };
  auto selW = [&](int lane) { return r.sel.at(kRecordLanes + lane); };
  const int wpAct = r.sel.at(2 * kRecordLanes);
  auto laneFor = [&](unsigned m, int k) {
    return s.twin == RecordEmitTwin::LaneByValueIndex ? (k < kRecordLanes ? k : -1)
                                                      : laneOf(m, k);
  };
  {
    UnitWriter u(w, L + 1);
    QGPU_CHECK(buildCancel(u, r.sel, cancelCtx));
    std::vector<std::pair<int, double>> base;
    for (int i = 0; i < r.sel.dims; ++i) base.push_back({r.sel.at(i), -one});
    QGPU_CHECK(add(u, {}, base));
    for (unsigned m = 1; m < (1u << kRecordLanes); ++m) {
      const int pop = std::popcount(m);
      auto cond = [&](trace::Family f, int j) {
        std::vector<Literal> l = maskLiterals(m);
        l.push_back({fam(r.tag, f), 1});
        l.push_back(latched);
        const std::vector<Literal> n = countIs(j);
        l.insert(l.end(), n.begin(), n.end());
        return l;
      };
      QGPU_CHECK(add(u, cond(trace::Family::Wu, 0), {{selV(laneFor(m, 0)), two}}));
      for (int j = 0; j < pop; ++j) {
        const int lane = laneFor(m, j);
        if (lane >= 0) QGPU_CHECK(add(u, cond(trace::Family::Wr, j), {{selV(lane), two}}));
      }
      for (trace::Family f : {trace::Family::Mg, trace::Family::Ms})
        for (int j = 0; j < 2 * pop; ++j) {
          const int lane = laneFor(m, j / 2);
          if (lane < 0) continue;
          QGPU_CHECK(add(u, cond(f, j), {{j % 2 == 0 ? selW(lane) : selV(lane), two}}));
        }
    }
    {
      std::vector<Literal> l = countIs(0);
      l.push_back({fam(r.tag, trace::Family::Wp), 1});
      l.push_back(latched);
      QGPU_CHECK(add(u, l, {{wpAct, two}}));
    }
    r.units[1] = u.used();
  }

  // ---- L+2: the mux into `cur`, and `done`. ----
  {
    UnitWriter u(w, L + 2);
    QGPU_CHECK(buildCancel(u, r.cur, cancelCtx));
    QGPU_CHECK(buildCancel(u, r.done, cancelCtx));
    std::vector<std::pair<int, double>> base;
    for (int i = 0; i < kValueBits; ++i) base.push_back({r.cur.at(i), -one});
    base.push_back({r.done.at(0), -one});
    QGPU_CHECK(add(u, {}, base));
    for (int l = 0; l < kRecordLanes; ++l) {
      const Field& v = r.value[static_cast<size_t>(l)];
      for (int i = 0; i < kValueBits; ++i)
        QGPU_CHECK(add(u, {{selV(l), 1}, {v.at(i), 1}}, {{r.cur.at(i), two}}));
      for (int i = 0; i < kRecordWordBits; ++i)
        QGPU_CHECK(add(u, {{selW(l), 1}, {r.wordMask.at(kRecordWordBits * l + i), 1}},
                       {{r.cur.at(i), two}}));
      QGPU_CHECK(add(u, {{wpAct, 1}, {v.at(0), 1}}, {{r.cur.at(l), two}}));
    }
    std::vector<Literal> none;
    for (int i = 0; i < r.sel.dims; ++i) none.push_back({r.sel.at(i), -1});
    QGPU_CHECK(add(u, none, {{r.done.at(0), two}}));
    r.units[2] = u.used();
  }

  // ---- L+3: the next token. ----
  {
    const Field& ef = r.emit.family;
    const Field& ei = r.emit.index;
    const int emitDims = ef.dims + ei.dims;
    auto emitDim = [&](int i) { return i < ef.dims ? ef.at(i) : ei.at(i - ef.dims); };
    UnitWriter u(w, L + 3);
    QGPU_CHECK(buildCancel(u, ef, cancelCtx));
    QGPU_CHECK(buildCancel(u, ei, cancelCtx));
    std::vector<std::pair<int, double>> base;
    for (int i = 0; i < emitDims; ++i) base.push_back({emitDim(i), -one});
    QGPU_CHECK(add(u, {}, base));
    const int exec = r.exec.at(0), done = r.done.at(0);
    // With overrideFrom every AND below holds only where the control stage does not decide.
    auto own = [&](std::vector<Literal> l) {
      if (s.overrideFrom) l.push_back({s.overrideFrom->when.at(0), -1});
      return l;
    };
    for (int i = 0; i < emitDims; ++i) {
      QGPU_CHECK(add(u, own({{exec, 1}, {r.tag.at(i), 1}}), {{emitDim(i), two}}));
      if (s.overrideFrom) {
        const EmitField& src = s.overrideFrom->emit;
        const int from = i < ef.dims ? src.family.at(i) : src.index.at(i - ef.dims);
        QGPU_CHECK(add(u, {{s.overrideFrom->when.at(0), 1}, {from, 1}}, {{emitDim(i), two}}));
      } else {
        QGPU_CHECK(add(u, {{exec, -1}, {done, 1}, {r.next.at(i), 1}}, {{emitDim(i), two}}));
      }
    }
    auto isChunk = [&](int q) {
      return q == 0 ? t.isChunk.at(0) : r.back[static_cast<size_t>(q - 1)].isChunk();
    };
    auto isTerminal = [&](int q) {
      return q == 0 ? t.isTerminal.at(0) : r.back[static_cast<size_t>(q - 1)].isTerminal();
    };
    auto run = [&](int q) {  // R_q: isC_0 .. isC_{q−1}
      std::vector<Literal> l;
      for (int x = 0; x < q; ++x) {
        l.push_back({isChunk(x), 1});
        l.push_back({isTerminal(x), -1});
      }
      return l;
    };
    auto lenAtMost = [&](int m) -> std::vector<std::vector<Literal>> {  // a sum of ANDs
      if (m <= 0) return {};
      if (m >= trace::kMaxValueChunks) return {{}};
      std::vector<Literal> ones, zeros;
      for (int b = trace::kChunkBits * m - 1; b < kValueBits; ++b) {
        ones.push_back({r.cur.at(b), 1});
        zeros.push_back({r.cur.at(b), -1});
      }
      return {ones, zeros};
    };
    const int famC = static_cast<int>(trace::Family::C), famT = static_cast<int>(trace::Family::T);
    for (int n = 1; n <= trace::kMaxValueChunks; ++n)
      for (int rr = 0; rr < n; ++rr) {
        const int e = n - 1 - rr;
        std::vector<std::pair<int, int>> outs = {{-1, ef.at(e > 0 ? famC : famT)}};
        for (int j = 0; j < trace::kChunkBits; ++j)
          outs.push_back({r.cur.at(std::min(trace::kChunkBits * e + j, kValueBits - 1)), ei.at(j)});
        for (auto [lm, lsign] : {std::pair{n, 1}, std::pair{n - 1, -1}})
          for (const std::vector<Literal>& lpart : lenAtMost(lm))
            for (auto [rq, rsign] : {std::pair{rr, 1}, std::pair{rr + 1, -1}}) {
              if (rq > kWindow + 1) continue;
              std::vector<Literal> cond = lpart;
              const std::vector<Literal> rl = run(rq);
              cond.insert(cond.end(), rl.begin(), rl.end());
              cond.push_back({exec, -1});
              cond.push_back({done, -1});
              cond = own(std::move(cond));
              for (auto [lit, dim] : outs) {
                std::vector<Literal> full = cond;
                if (lit >= 0) full.push_back({lit, 1});
                QGPU_CHECK(add(u, full, {{dim, two * lsign * rsign}}));
              }
            }
      }
    r.units[3] = u.used();
  }
  QGPU_TRY(margin, writeEmitHead(w, t, r.emit, s.emitWeight));
  r.logitMargin = margin * t.lambda;
  return r;
}

Status writeRecordEmbeddings(CircuitWeights& w, const RecordEmitter& r) {
  QGPU_CHECK(writeTokenEmbeddings(w, r.tokens));
  return writeRecordExtras(w, r);
}

Status writeRecordExtras(CircuitWeights& w, const RecordEmitter& r) {
  const std::string e = w.globalTensor("embed_tokens.weight");
  const float u = r.tokens.unit;
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const int64_t row = r.tokens.rowOffset + id;
    const auto tok = static_cast<trace::Token>(id);
    if (r.execEmbedded) QGPU_CHECK(w.set(e, row, r.exec.at(0), -u));
    QGPU_CHECK(w.set(e, row, r.isTag.at(0), isChunkToken(tok) ? -u : u));
    for (int i = 0; i < r.quiet.dims; ++i) QGPU_CHECK(w.set(e, row, r.quiet.at(i), 0.0f));
    QGPU_CHECK(w.set(e, row, r.heavy.at(0), 2 * u));
  }
  return Ok{};
}

Status writeCarrier(CircuitWeights& w, const RecordEmitter& r, int64_t row, trace::Token base,
                    const RecordOutcome& o) {
  const model::Qwen35Config& c = w.config();
  if (row < r.tokens.rowOffset + trace::kVocabSize || row >= c.vocabSize)
    return makeDiag(ErrorKind::Usage, "record carrier: row " + std::to_string(row) +
                                          " is not a spare row of the vocabulary");
  if (base >= trace::kVocabSize || o.tag >= trace::kVocabSize || o.next >= trace::kVocabSize)
    return makeDiag(ErrorKind::Usage, "record carrier: a token outside the trace vocabulary");
  if (!isRecordTag(o.tag))
    return makeDiag(ErrorKind::Usage, "record carrier: " + trace::tokenName(o.tag) +
                                          " is not a record tag");
  if (o.mask >= (1u << kRecordLanes))
    return makeDiag(ErrorKind::Usage, "record carrier: mask " + std::to_string(o.mask) +
                                          " has bits above lane 3");
  for (uint8_t word : o.words)
    if (word >= (1u << kRecordWordBits))
      return makeDiag(ErrorKind::Usage, "record carrier: word index " + std::to_string(word) +
                                            " does not fit 7 bits");
  const std::string e = w.globalTensor("embed_tokens.weight");
  const float u = r.tokens.unit;
  for (int d = 0; d < c.hiddenSize; ++d) {
    QGPU_TRY(v, w.get(e, r.tokens.rowOffset + base, d));
    QGPU_CHECK(w.set(e, row, d, v));
  }
  auto sign = [&](const Field& f, int i, bool bit) { return w.set(e, row, f.at(i), bit ? u : -u); };
  if (r.execEmbedded) QGPU_CHECK(w.set(e, row, r.exec.at(0), u));
  const std::vector<int> tag = emitSigns(o.tag), next = emitSigns(o.next);
  for (int i = 0; i < r.inNext.dims; ++i)  // none with overrideFrom
    QGPU_CHECK(sign(r.inNext, i, i < static_cast<int>(next.size()) && next[static_cast<size_t>(i)] > 0));
  if (r.inTag.dims == 0) return Ok{};  // outcomeFrom: the rest is computed in the residual
  for (int l = 0; l < kRecordLanes; ++l)
    for (int i = 0; i < kBufferBits; ++i)
      QGPU_CHECK(sign(r.inValue[static_cast<size_t>(l)], i, o.values[static_cast<size_t>(l)] >> i & 1u));
  for (int l = 0; l < kRecordLanes; ++l)
    for (int i = 0; i < kRecordWordBits; ++i)
      QGPU_CHECK(sign(r.inWordMask, kRecordWordBits * l + i, o.words[static_cast<size_t>(l)] >> i & 1u));
  for (int b = 0; b < kRecordLanes; ++b)
    QGPU_CHECK(sign(r.inWordMask, kRecordLanes * kRecordWordBits + b, o.mask >> b & 1u));
  for (int i = 0; i < kBufferBits; ++i)
    QGPU_CHECK(sign(r.inTag, i, i < static_cast<int>(tag.size()) && tag[static_cast<size_t>(i)] > 0));
  return Ok{};
}

}  // namespace qgpu::circuit
