// qgpu/circuit/tests/result_stage_inputs.h — the result stage stack's inputs (result_stage_stack.h),
// gtest-free so that a tool can build them too: a run of hand-made steps (every mask 1..15, four
// ops each from isa.def's rows that write a register or a predicate without a memrec), written by
// the interpreter's encoder (oracle::appendTrace) from the ops' effects (docs/trace.md "What one op
// writes"), and the carrier rows that hold each op's ALU-level inputs at its record position.
//
// result_stage_test.cpp runs them, and the transformers cross-check (hf_circuit_test.cpp,
// tools/make_circuit.cpp) builds the same checkpoint from them. The expected tokens are the
// encoder's, never the gadget's.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "circuit/record_emit.h"
#include "circuit/tests/result_stage_stack.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit::result_test {

inline constexpr int64_t kCarriers = 1200;
inline constexpr int64_t kVocab = trace::kVocabSize + kCarriers;

// The ALU-level inputs of one op at its record position.
struct OpInput {
  machine::Instr in;
  uint8_t index = 0;
  uint8_t mask = 0;
  std::array<uint32_t, 4> r{}, old{};
  uint8_t s = 0, g = 0, oldP = 0;  // bit l = lane l
};

// One record: its position p (the token before its tag), its k tokens after p (tag + chunks).
struct Record {
  size_t p = 0, k = 0;
  OpInput op;
};

struct Sequence {
  std::vector<trace::Token> trace;  // the encoder's tokens
  std::vector<int64_t> ids;         // the model's input: trace, with carriers at record positions
  std::vector<Record> records;
};

// docs/trace.md "What one op writes", for an op without a memrec.
inline oracle::OpEffects effectsOf(const OpInput& x) {
  oracle::OpEffects e;
  e.index = x.index;
  uint8_t gt = 0xf;
  if (x.in.guard.pred != machine::kNoPred) gt = x.in.guard.negate ? ~x.g & 0xf : x.g;
  e.exec = x.mask & gt;
  const machine::OpInfo& info = machine::opInfo(x.in.op);
  e.mem = info.mem;
  if (info.dst == machine::DstKind::Reg && x.in.dst != 0) {
    e.writesReg = true;
    e.reg = x.in.dst;
    for (size_t l = 0; l < 4; ++l)
      if (x.mask >> l & 1) e.regs[l] = (gt >> l & 1) ? x.r[l] : x.old[l];
  }
  if (info.dst == machine::DstKind::Pred) {
    e.writesPred = true;
    e.pred = x.in.dstPred;
    const uint8_t after = static_cast<uint8_t>((gt & x.s) | (~gt & x.oldP));
    e.predBits = static_cast<uint8_t>(after & x.mask & 0xf);
  }
  return e;
}

// The op's head word OP(a), packed by trace::packedLayout.
inline uint32_t headWord(const OpInput& x) {
  auto code = [](uint8_t p) { return p == machine::kNoPred ? 0u : p + 1u; };
  const std::map<std::string, uint32_t> v = {
      {"op index", x.index},
      {"opcode", static_cast<uint32_t>(x.in.op)},
      {"dst", x.in.dst},
      {"dstPred", code(x.in.dstPred)},
      {"guard predicate", code(x.in.guard.pred)},
      {"guard negate", x.in.guard.negate ? 1u : 0u},
      {"space", 0},
      {"continuation", 0}};
  uint32_t w = 0;
  for (const trace::PackedField& f : trace::packedLayout(trace::PackedWord::OpHead))
    w |= v.at(f.name) << f.offset;
  return w;
}

inline std::vector<machine::Op> eligibleOps() {
  std::vector<machine::Op> ops;
  for (int i = 0; i < machine::kNumOps; ++i) {
    const auto op = static_cast<machine::Op>(i);
    const machine::OpInfo& info = machine::opInfo(op);
    if (info.dst != machine::DstKind::None &&
        (info.mem == machine::MemEffect::None || info.mem == machine::MemEffect::Read))
      ops.push_back(op);
  }
  return ops;
}

// `steps` hand-made steps from `seed`; the trace ends with END and decodes (trace::decodeRun).
inline Expected<Sequence> makeRun(int steps, uint32_t seed) {
  using trace::Family;
  Sequence s;
  s.trace.push_back(trace::single(Family::Run));
  std::mt19937 rng(seed);
  const std::vector<uint32_t> edges = {0u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 15u, 16u,
                                       static_cast<uint32_t>(-16), 511u, 1u << 24, 0xdeadbeefu};
  auto word = [&] { return rng() % 3 == 0 ? edges[rng() % edges.size()] : static_cast<uint32_t>(rng()); };
  const std::vector<machine::Op> ops = eligibleOps();
  const int masks[] = {15, 5, 11, 1, 6, 14, 9, 7, 2, 13, 3, 12, 4, 10, 8};
  for (int st = 0; st < steps; ++st) {
    const int m = masks[st % 15];
    oracle::StepEvent e;
    e.kind = oracle::EventKind::Step;
    e.stepsBefore = static_cast<uint64_t>(st);
    e.step.block = static_cast<uint8_t>(st % 32);
    e.step.warp = static_cast<uint8_t>(st % 4);
    e.step.mask = static_cast<uint8_t>(m);
    std::vector<OpInput> inputs;
    for (int i = 0; i < 4; ++i) {
      OpInput x;
      x.index = static_cast<uint8_t>(i);
      x.mask = static_cast<uint8_t>(m);
      // Register writers twice as often as predicate writers (a WU / WR has more to get wrong).
      do x.in.op = ops[rng() % ops.size()];
      while (machine::writesPred(x.in.op) && rng() % 2);
      if (machine::writesReg(x.in.op)) x.in.dst = static_cast<uint8_t>(rng() % 8 == 0 ? 0 : 1 + rng() % 15);
      if (machine::writesPred(x.in.op)) x.in.dstPred = static_cast<uint8_t>(rng() % 8);
      if (rng() % 3 != 0) {
        x.in.guard.pred = static_cast<uint8_t>(rng() % 8);
        x.in.guard.negate = rng() % 2 == 1;
      }
      x.g = static_cast<uint8_t>(rng() % 16);
      x.s = static_cast<uint8_t>(rng() % 16);
      x.oldP = static_cast<uint8_t>(rng() % 16);
      for (size_t l = 0; l < 4; ++l) {
        x.r[l] = word();
        x.old[l] = word();
      }
      if (rng() % 10 < 4) {  // equal merged values in the active lanes
        uint8_t gt = 0xf;
        if (x.in.guard.pred != machine::kNoPred) gt = x.in.guard.negate ? ~x.g & 0xf : x.g;
        const uint32_t v = word();
        int last = -1;
        for (int l = 0; l < 4; ++l)
          if (m >> l & 1) {
            ((gt >> l & 1) ? x.r : x.old)[static_cast<size_t>(l)] = v;
            last = l;
          }
        if (std::popcount(static_cast<unsigned>(m)) > 1 && rng() % 5 == 0) {
          const uint32_t bit = 1u << (rng() % 32);
          ((gt >> last & 1) ? x.r : x.old)[static_cast<size_t>(last)] ^= bit;
        }
      }
      inputs.push_back(x);
      e.step.ops[static_cast<size_t>(i)] = effectsOf(x);
    }
    e.step.numOps = 4;
    const size_t before = s.trace.size();
    oracle::appendTrace(e, s.trace);
    size_t q = before;
    while (q < s.trace.size() && trace::familyOf(s.trace[q]) != Family::Ex) ++q;  // TICKs first
    q += 2;                                                                      // EX WM
    for (const OpInput& x : inputs) {
      size_t end = q + 1;
      while (end < s.trace.size() && isChunkToken(s.trace[end])) ++end;
      s.records.push_back({q - 1, end - q, x});
      q = end;
    }
    if (q != s.trace.size())
      return makeDiag(ErrorKind::Internal, "result stage inputs: step " + std::to_string(st) +
                                           " is not one record per op");
  }
  oracle::StepEvent end;
  end.kind = oracle::EventKind::Finished;
  oracle::appendTrace(end, s.trace);
  QGPU_TRY(decoded, trace::decodeRun(std::span<const trace::Token>(s.trace).subspan(1)));
  (void)decoded;
  s.ids.assign(s.trace.begin(), s.trace.end());
  return s;
}

// The record emitter's embeddings, and a carrier row per record (trace token at p + exec + the
// stage's input fields), placed into `s.ids` at each record position.
inline Status writeCarriers(CircuitWeights& w, const Stack& stack, Sequence& s) {
  QGPU_CHECK(writeRecordEmbeddings(w, stack.emitter));
  const ResultStageSpec& sp = stack.spec;
  const float u = sp.tokens.unit;
  const std::string e = w.globalTensor("embed_tokens.weight");
  auto signs = [&](int64_t row, const Field& f, uint64_t value) -> Status {
    for (int i = 0; i < f.dims; ++i) QGPU_CHECK(w.set(e, row, f.at(i), (value >> i) & 1 ? u : -u));
    return Ok{};
  };
  int64_t row = trace::kVocabSize;
  for (const Record& r : s.records) {
    if (row >= w.config().vocabSize)
      return makeDiag(ErrorKind::OverLimit, "result stage inputs: " + std::to_string(s.records.size()) +
                                            " records need more carrier rows than the vocabulary's " +
                                            std::to_string(w.config().vocabSize - trace::kVocabSize));
    RecordOutcome o;
    o.tag = s.trace[r.p + 1];
    o.next = r.p + r.k + 1 < s.trace.size() ? s.trace[r.p + r.k + 1] : trace::single(trace::Family::End);
    QGPU_CHECK(writeCarrier(w, stack.emitter, row, s.trace[r.p], o));
    QGPU_CHECK(signs(row, sp.head, headWord(r.op)));
    QGPU_CHECK(signs(row, sp.mask, r.op.mask));
    for (size_t l = 0; l < 4; ++l) {
      const ResultLane& x = sp.lanes[l];
      QGPU_CHECK(signs(row, x.r, r.op.r[l]));
      QGPU_CHECK(signs(row, x.old, r.op.old[l]));
      QGPU_CHECK(signs(row, x.s, r.op.s >> l & 1));
      QGPU_CHECK(signs(row, x.guard, r.op.g >> l & 1));
      QGPU_CHECK(signs(row, x.oldPred, r.op.oldP >> l & 1));
    }
    s.ids[r.p] = row++;
  }
  return Ok{};
}

}  // namespace qgpu::circuit::result_test
