// qgpu/circuit/tests/alu_stage_test.cpp — the ALU stage (circuit/alu_stage.h) through
// model::Decoder: four linear_attention layers (GDN zero) whose MLPs are the stage's S0..S3, the
// full layout (every dim ±16, outputs replaced: λ = 1, every probe ±1), one token per input. A
// token carries the opcode field (7 bits, the head word's) and, for each of the four lanes,
// different a, b, c words and p, q predicate bits; the probes read every lane's result word r and
// predicate result s.
//
// Inputs: every op of the stage (the walk of oracle/isa.def: class Alu, Cmp, Sel, Pred minus the
// divisions and multiplies) and four ops it leaves to others (div.u, mul, ld, shfl.idx: r = 0,
// s = false), round robin, each with every pair of the edge words {0, 1, −1, INT_MIN, INT_MAX, 32}
// spread over its lanes (QGPU_CIRCUIT_FULL=1: 12 edge words incl. 31, 33, 255, 256, 0x80000001,
// 0xfffffffe), c from edge amounts and prmt selectors, then random words (amount-sized b and c
// half of the time). Expected values: oracle's evaluators (evalAlu, evalCmp, evalPred; selp by
// isa.def's rule psrc0 ? src0 : src1), never the stage.
//
// What it pins down: every result bit of every lane exactly ±1 in fp32 and bf16 × prefill /
// decode / mixed; the low-gain twin (λG = 4) is not exact.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <random>

#include "circuit/alu_stage.h"
#include "circuit/tests/harness.h"
#include "oracle/machine.h"
#include "oracle/semantics.h"

namespace qgpu::circuit {
namespace {

using namespace harness;
using machine::Op;

constexpr float kUnit = 16;
constexpr int kLanes = machine::kLanes;

struct LaneIn {
  uint32_t a = 0, b = 0, c = 0;
  bool p = false, q = false;
};
struct Input {
  Op op = Op::Mov;
  LaneIn lane[kLanes];
};

bool computed(Op op) { return aluStageExclusion(op) == nullptr; }

// The lane's register result (0 where the op writes none or is not the stage's).
uint32_t expectedR(Op op, const LaneIn& l) {
  if (!computed(op)) return 0;
  const auto cls = machine::opInfo(op).cls;
  if (cls == machine::OpClass::Alu) return oracle::evalAlu(op, l.a, l.b, l.c).value();
  if (cls == machine::OpClass::Sel) return l.p ? l.a : l.b;  // isa.def: psrc0 ? src0 : src1
  return 0;
}
// The lane's predicate result (false where the op writes none).
bool expectedS(Op op, const LaneIn& l) {
  if (!computed(op)) return false;
  const auto cls = machine::opInfo(op).cls;
  if (cls == machine::OpClass::Cmp) return oracle::evalCmp(op, l.a, l.b).value();
  if (cls == machine::OpClass::Pred) return oracle::evalPred(op, l.p, l.q, l.a).value() & 1;
  return false;
}

struct Stage {
  static constexpr int kHidden = 2944;
  // The liveness bus: ballast, opcode, 4 lanes' operands and results, and the bus (1,869 dims).
  static int liveHidden() {
    return 4 + kOpcodeBits + kLanes * 131 + aluStageBusDims(kLanes, AluBusLayout::Liveness);
  }
  int units = 0;
  CircuitWeights weights;
  Field ballast, opcode;
  std::vector<AluLane> lanes;
  AluStageReport report;
  Stage(int tokens, bool lowGain, AluBusLayout layout = AluBusLayout::OneFieldPerValue)
      : weights(config(layout == AluBusLayout::Liveness ? liveHidden() : kHidden, kAluStageLayers,
                       5056, std::max(tokens, 256))) {
    FieldAllocator alloc(weights.config().hiddenSize);
    auto take = [&](const std::string& n, int d) {
      auto f = alloc.take(n, d);
      EXPECT_TRUE(f.ok()) << f.error().message;
      return f.ok() ? f.value() : Field{};
    };
    ballast = take("ballast", 4);
    opcode = take("opcode", kOpcodeBits);
    AluStageSpec s;
    s.opcode = opcode;
    for (int l = 0; l < kLanes; ++l) {
      const std::string p = "lane" + std::to_string(l) + ".";
      AluLane lane{take(p + "a", 32), take(p + "b", 32), take(p + "c", 32), take(p + "p", 1),
                   take(p + "q", 1),  take(p + "r", 32), take(p + "s", 1)};
      lanes.push_back(lane);
    }
    s.lanes = lanes;
    s.busLayout = layout;
    s.bus = take("bus", aluStageBusDims(kLanes, layout));
    MlpContext ctx{ballast, 1.0, 128, kUnit, lowGain};
    UnitWriter u0(weights, 0), u1(weights, 1), u2(weights, 2), u3(weights, 3);
    const AluLayer layers[] = {{&u0, ctx}, {&u1, ctx}, {&u2, ctx}, {&u3, ctx}};
    auto r = buildAluStage(layers, s);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (r.ok()) report = r.value();
  }
  // Probes: lane l's r at logits 33l..33l+31, its s at 33l+32.
  static int probes() { return kLanes * 33; }
  std::string checkpoint(const std::vector<Input>& in, const std::string& name) {
    for (int l = 0; l < kLanes; ++l) {
      probe(weights, 33 * l, lanes[static_cast<size_t>(l)].r);
      probe(weights, 33 * l + 32, lanes[static_cast<size_t>(l)].s);
    }
    for (size_t t = 0; t < in.size(); ++t) {
      const auto tok = static_cast<int64_t>(t);
      fillRow(weights, tok, kUnit);
      setSigns(weights, tok, opcode, static_cast<uint32_t>(in[t].op), kUnit);
      for (int l = 0; l < kLanes; ++l) {
        const AluLane& f = lanes[static_cast<size_t>(l)];
        const LaneIn& v = in[t].lane[l];
        setSigns(weights, tok, f.a, v.a, kUnit);
        setSigns(weights, tok, f.b, v.b, kUnit);
        setSigns(weights, tok, f.c, v.c, kUnit);
        setSigns(weights, tok, f.p, v.p, kUnit);
        setSigns(weights, tok, f.q, v.q, kUnit);
      }
    }
    return write(weights, name);
  }
};

// The ops the test drives: the walk of isa.def (the stage's ops) plus four that are not its.
std::vector<Op> driven() {
  std::vector<Op> ops;
  for (int i = 0; i < machine::kNumOps; ++i) {
    const auto op = static_cast<Op>(i);
    const auto cls = machine::opInfo(op).cls;
    const bool aluLike = cls == machine::OpClass::Alu || cls == machine::OpClass::Cmp ||
                         cls == machine::OpClass::Sel || cls == machine::OpClass::Pred;
    if (aluLike && computed(op)) ops.push_back(op);
  }
  for (Op op : {Op::DivU, Op::Mul, Op::Ld, Op::ShflIdx}) ops.push_back(op);
  return ops;
}

std::vector<Input> makeInputs(size_t n, uint32_t seed) {
  const bool full = fullInputs();
  std::vector<uint32_t> edges = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 32u};
  if (full)
    for (uint32_t e : {31u, 33u, 255u, 256u, 0x80000001u, 0xfffffffeu}) edges.push_back(e);
  const uint32_t cs[] = {0u, 1u, 31u, 32u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x3210u,
                         0x7654u, 0xba98u, 0x0808u, 5u | (3u << 8), 33u};
  const std::vector<Op> ops = driven();
  std::mt19937 rng(seed);
  std::vector<Input> v;
  const size_t pairs = edges.size() * edges.size();
  const size_t rounds = (pairs + kLanes - 1) / kLanes;
  for (size_t k = 0; k < rounds && v.size() < n; ++k)
    for (Op op : ops) {
      Input in;
      in.op = op;
      for (int l = 0; l < kLanes; ++l) {
        const size_t i = (k * kLanes + static_cast<size_t>(l)) % pairs;
        LaneIn& x = in.lane[l];
        x.a = edges[i / edges.size()];
        x.b = edges[i % edges.size()];
        x.c = cs[(i + k) % std::size(cs)];
        x.p = (i >> 0) & 1;
        x.q = (i >> 1) & 1;
      }
      v.push_back(in);
    }
  while (v.size() < n) {
    Input in;
    in.op = ops[rng() % ops.size()];
    for (int l = 0; l < kLanes; ++l) {
      LaneIn& x = in.lane[l];
      x.a = static_cast<uint32_t>(rng());
      x.b = rng() % 2 ? static_cast<uint32_t>(rng()) % 64 : static_cast<uint32_t>(rng());
      x.c = rng() % 2 ? static_cast<uint32_t>(rng()) % 64 : static_cast<uint32_t>(rng());
      x.p = rng() & 1;
      x.q = rng() & 1;
    }
    v.push_back(in);
  }
  v.resize(n);
  return v;
}

struct Plan {
  ComputeDtype dtype;
  Path path;
  size_t tokens;
};

struct Outcome {
  SignCheck all;
  std::map<std::string, SignCheck> perOp;  // failures by op mnemonic
};

Outcome runPlans(const std::string& dir, const std::vector<Input>& in,
                 const std::vector<Plan>& plans, const std::string& tag) {
  Outcome out;
  for (ComputeDtype dtype : kDtypes) {
    std::unique_ptr<model::Decoder> dec;
    for (const Plan& p : plans) {
      if (p.dtype != dtype) continue;
      if (!dec) dec = load(dir, dtype);
      if (!dec) return out;
      const auto rows = run(*dec, [&] {
        std::vector<int64_t> t(p.tokens);
        for (size_t i = 0; i < p.tokens; ++i) t[i] = static_cast<int64_t>(i);
        return t;
      }(), p.path, Stage::probes());
      EXPECT_EQ(rows.size(), p.tokens);
      if (rows.size() != p.tokens) return out;
      SignCheck here;
      for (size_t t = 0; t < p.tokens; ++t) {
        const Input& x = in[t];
        const std::string name = machine::opInfo(x.op).mnemonic;
        for (int l = 0; l < kLanes; ++l) {
          const LaneIn& v = x.lane[l];
          std::vector<bool> bits = bitsOf(expectedR(x.op, v), 32);
          bits.push_back(expectedS(x.op, v));
          std::vector<float> row(rows[t].begin() + 33 * l, rows[t].begin() + 33 * (l + 1));
          const std::string where = std::string(computeDtypeName(dtype)) + " " +
                                    pathName(p.path) + " " + name + " lane " +
                                    std::to_string(l) + " a=" + std::to_string(v.a) +
                                    " b=" + std::to_string(v.b) + " c=" + std::to_string(v.c) +
                                    " p=" + std::to_string(v.p) + " q=" + std::to_string(v.q);
          SignCheck one;
          checkBits(one, row, bits, 1.0, where);
          checkBits(here, row, bits, 1.0, where);
          if (!one.ok()) {
            SignCheck& o = out.perOp[name];
            checkBits(o, row, bits, 1.0, where);
          }
        }
      }
      std::cout << "[" << tag << "] " << computeDtypeName(dtype) << " " << pathName(p.path)
                << ", " << p.tokens << " tokens x 4 lanes: " << here.summary() << "\n";
      SignCheck& a = out.all;
      a.values += here.values;
      a.wrongSign += here.wrongSign;
      a.inexact += here.inexact;
      a.magnitudes.insert(here.magnitudes.begin(), here.magnitudes.end());
      if (a.first.empty()) a.first = here.first;
    }
  }
  return out;
}

TEST(AluStage, EveryOpOfFourLanesIsExactInBothDtypesOnEveryPath) {
  const size_t n = static_cast<size_t>(inputs(512, 2048));
  const std::vector<Input> in = makeInputs(n, 8);
  Stage stage(static_cast<int>(n), false);
  for (size_t l = 0; l < stage.report.unitsPerLayer.size(); ++l)
    std::cout << "[alu stage] S" << l << ": " << stage.report.unitsPerLayer[l] << " units\n";
  const std::string dir = stage.checkpoint(in, "alu_stage");
  const size_t bf16 = static_cast<size_t>(inputs(48, 512));
  const std::vector<Plan> plans = {
      {ComputeDtype::F32, Path::Prefill, n},
      {ComputeDtype::F32, Path::Decode, static_cast<size_t>(inputs(48, 160))},
      {ComputeDtype::F32, Path::Mixed, static_cast<size_t>(inputs(96, 200))},
      {ComputeDtype::BF16, Path::Prefill, bf16},
      {ComputeDtype::BF16, Path::Decode, static_cast<size_t>(inputs(12, 96))},
      {ComputeDtype::BF16, Path::Mixed, static_cast<size_t>(inputs(48, 160))}};
  const Outcome out = runPlans(dir, in, plans, "alu stage");
  EXPECT_TRUE(out.all.ok()) << out.all.summary();
  for (const auto& [op, c] : out.perOp) ADD_FAILURE() << op << ": " << c.summary();
  EXPECT_EQ(out.all.magnitudes, std::set<float>{1.0f});
  std::filesystem::remove_all(dir);
}

// The bus by liveness (AluBusLayout::Liveness, circuit/layout.h): 1,086 bus dims instead of
// 2,130, fields sharing dims across S0..S3 (every bus write a Replace); the same ops and checks
// on fewer tokens per path.
TEST(AluStage, TheLivenessBusIsExactInBothDtypes) {
  const size_t n = static_cast<size_t>(inputs(192, 1024));
  const std::vector<Input> in = makeInputs(n, 9);
  Stage stage(static_cast<int>(n), false, AluBusLayout::Liveness);
  EXPECT_EQ(stage.report.busDims, aluStageBusDims(kLanes, AluBusLayout::Liveness));
  std::cout << "[alu stage, liveness bus] hidden " << stage.weights.config().hiddenSize
            << ", bus " << stage.report.busDims << " dims\n";
  const std::string dir = stage.checkpoint(in, "alu_stage_live");
  const std::vector<Plan> plans = {
      {ComputeDtype::F32, Path::Prefill, n},
      {ComputeDtype::F32, Path::Decode, static_cast<size_t>(inputs(24, 160))},
      {ComputeDtype::BF16, Path::Prefill, static_cast<size_t>(inputs(48, 512))},
      {ComputeDtype::BF16, Path::Mixed, static_cast<size_t>(inputs(24, 160))}};
  const Outcome out = runPlans(dir, in, plans, "alu stage, liveness bus");
  EXPECT_TRUE(out.all.ok()) << out.all.summary();
  for (const auto& [op, c] : out.perOp) ADD_FAILURE() << op << ": " << c.summary();
  EXPECT_EQ(out.all.magnitudes, std::set<float>{1.0f});
  std::filesystem::remove_all(dir);
}

TEST(AluStage, LowGainTwinIsNotExact) {
  const std::vector<Input> in = makeInputs(driven().size(), 8);
  Stage stage(static_cast<int>(in.size()), true);
  const std::string dir = stage.checkpoint(in, "alu_stage_twin");
  const Outcome out = runPlans(dir, in, {{ComputeDtype::F32, Path::Prefill, in.size()}},
                               "alu stage twin");
  EXPECT_FALSE(out.all.ok()) << "the twin must fail: " << out.all.summary();
  EXPECT_GT(out.all.inexact + out.all.wrongSign, out.all.values / 2) << out.all.summary();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qgpu::circuit
