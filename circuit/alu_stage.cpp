// qgpu/circuit/alu_stage.cpp — see alu_stage.h for the maths and the layer plan; the gadgets come
// from logic.h and alu_bits.h, the stage's own units (decode, operand prep, result cases) from
// logic.h's addDetector / addConstant.
#include "circuit/alu_stage.h"

#include <optional>
#include <string>
#include <utility>

#include "circuit/alu_bits.h"

namespace qgpu::circuit {
namespace {

using machine::Op;
using machine::OpClass;

Diag aluStageUsage(const std::string& m) { return makeDiag(ErrorKind::Usage, "alu stage: " + m); }

// A literal: a linear form worth +1 when true and ≤ −1 when false.
struct Lit {
  std::vector<std::pair<int, double>> terms;
  double constant = 0;
};
Lit bit(int dim, bool positive = true) { return {{{dim, positive ? 1.0 : -1.0}}, 0}; }
// The opcode field equals op's row: Σ ±x̂ − (bits − 1) is +1 on the match, ≤ −1 elsewhere.
// With `inverted` (−u = 1) every coefficient's sign flips.
Lit opcodeIs(const Field& opc, Op op, bool inverted) {
  Lit l;
  const auto code = static_cast<unsigned>(op);
  const double set = inverted ? -1.0 : 1.0;
  for (int i = 0; i < opc.dims; ++i) l.terms.push_back({opc.at(i), (code >> i) & 1 ? set : -set});
  l.constant = -(opc.dims - 1);
  return l;
}
// AND of literals: N = Σ ℓ − (k − 1) (+1 iff every literal is true, else ≤ −1).
LinearForm andOf(std::initializer_list<Lit> lits) {
  LinearForm n;
  for (const Lit& l : lits) {
    n.terms.insert(n.terms.end(), l.terms.begin(), l.terms.end());
    n.constant += l.constant;
  }
  n.constant -= static_cast<double>(lits.size()) - 1;
  return n;
}
LinearForm andOf(const std::vector<Lit>& lits) {
  LinearForm n;
  for (const Lit& l : lits) {
    n.terms.insert(n.terms.end(), l.terms.begin(), l.terms.end());
    n.constant += l.constant;
  }
  n.constant -= static_cast<double>(lits.size()) - 1;
  return n;
}

// Per-lane bus layout (dims in this order).
struct LaneBus {
  Field x, y, cin;               // S0: the shared adder's operands
  Field popc, clz, bfind, prmt;  // S0
  Field hi, lo, start;           // S1: shifter prep
  Field adder;                   // S1: adder level 1
  Field cmpBus;                  // S1: the compares' level 1 (unsigned; the signed below the top)
  Field cmpTop;                  // S1: the signed compares' top nibble
  Field cmp;                     // S2: eq, lt.u, le.u, lt.s, le.s
  Field sum;                     // S2
  Field shifted;                 // S2: the window (for bfe: its sh = a >> pos)
  Field bfe;                     // bfe's signed bus: sh = `shifted` (S2), then m, r, f (S0)
};
constexpr CompareOp kCompares[5] = {CompareOp::Eq, CompareOp::LtU, CompareOp::LeU, CompareOp::LtS,
                                    CompareOp::LeS};
enum CmpIndex { kEq = 0, kLtU = 1, kLeU = 2, kLtS = 3, kLeS = 4 };

constexpr int kLaneBusDims = 32 + 32 + 1 + 4 * 32 + 32 + 32 + 33 + 80 + 16 + 2 + 5 + 32 + 97;

// The bus's fields per lane, their dims and live ranges in stage layers [write, lastRead):
// what each gadget of buildAluStage writes and which later layer reads it last.
struct BusEntry {
  const char* name;
  int dims;
  int write, lastRead;
  AluGroup group;  // the ops that write and read it
};
std::vector<BusEntry> laneBusEntries() {
  using G = AluGroup;
  std::vector<BusEntry> e = {{"x", 32, 0, 1, G::Add},
                             {"y", 32, 0, 1, G::Add},
                             {"cin", 1, 0, 2, G::Add},  // adder level 2 reads cin
                             // read last where the result word begins
                             {"popc", 32, 0, kAluResultFirstLayer, G::Popc},
                             {"clz", 32, 0, kAluResultFirstLayer, G::Clz},
                             {"bfind", 32, 0, kAluResultFirstLayer, G::Bfind},
                             {"prmt", 32, 0, kAluResultFirstLayer, G::Prmt},
                             {"hi", 32, 1, 2, G::Shift},
                             {"lo", 32, 1, 2, G::Shift},
                             {"start", 33, 1, 2, G::Shift},
                             {"adder", adderBusDims(32), 1, 2, G::Add}};
  // the five compares' one level 1: eq, lt.u and le.u of a, b share a bus, and lt.s, le.s
  // share it below their top nibble (logic.h CompareSpec::top)
  e.push_back({"cmpbus", compareBusDims(32), 1, 2, G::Compare});
  e.push_back({"cmptop", 2, 1, 2, G::Compare});
  e.push_back({"cmp", 5, 2, 3, G::Compare});
  e.push_back({"sum", 32, 2, 3, G::Add});
  // bfe's bus is sh 0..31, m 32..63, r 64..95, f 96; with shiftOutside level 1 touches only
  // m, r, f (S0), and sh is the shifter's window (S2): one field per value in carve order, two
  // fields by liveness (the bfe spec then names the 32 dims before mrf, which it never touches).
  e.push_back({"bfe", bfeBusDims(true), 0, 3, G::Shift});
  return e;
}

LaneBus carve(const Field& bus, int offset, int lane) {
  LaneBus b;
  int at = offset;
  const std::string p = "lane" + std::to_string(lane) + ".";
  auto take = [&](int dims, const std::string& name) {
    Field f = bus.slice(at, dims, p + name);
    at += dims;
    return f;
  };
  b.x = take(32, "x");
  b.y = take(32, "y");
  b.cin = take(1, "cin");
  b.popc = take(32, "popc");
  b.clz = take(32, "clz");
  b.bfind = take(32, "bfind");
  b.prmt = take(32, "prmt");
  b.hi = take(32, "hi");
  b.lo = take(32, "lo");
  b.start = take(33, "start");
  b.adder = take(adderBusDims(32), "adder");
  b.cmpBus = take(compareBusDims(32), "cmpbus");
  b.cmpTop = take(2, "cmptop");
  b.cmp = take(5, "cmp");
  b.sum = take(32, "sum");
  b.bfe = take(bfeBusDims(true), "bfe");  // its first 32 dims are `shifted`
  b.shifted = b.bfe.slice(0, 32, "shifted");
  return b;
}

// The same fields, where the liveness plan put them (offsets relative to the bus).
Expected<LaneBus> carveLive(const Field& bus, const LayoutPlan& plan, int lane) {
  const std::string p = "lane" + std::to_string(lane) + ".";
  auto get = [&](const std::string& name) -> Expected<Field> {
    QGPU_TRY(f, plan.field(p + name));
    return Field{f.name, bus.offset + f.offset, f.dims};
  };
  LaneBus b;
  QGPU_TRY(x, get("x")); b.x = x;
  QGPU_TRY(y, get("y")); b.y = y;
  QGPU_TRY(cin, get("cin")); b.cin = cin;
  QGPU_TRY(popc, get("popc")); b.popc = popc;
  QGPU_TRY(clz, get("clz")); b.clz = clz;
  QGPU_TRY(bfind, get("bfind")); b.bfind = bfind;
  QGPU_TRY(prmt, get("prmt")); b.prmt = prmt;
  QGPU_TRY(hi, get("hi")); b.hi = hi;
  QGPU_TRY(lo, get("lo")); b.lo = lo;
  QGPU_TRY(start, get("start")); b.start = start;
  QGPU_TRY(adder, get("adder")); b.adder = adder;
  QGPU_TRY(cmpBus, get("cmpbus")); b.cmpBus = cmpBus;
  QGPU_TRY(cmpTop, get("cmptop")); b.cmpTop = cmpTop;
  QGPU_TRY(cmp, get("cmp")); b.cmp = cmp;
  QGPU_TRY(sum, get("sum")); b.sum = sum;
  QGPU_TRY(shifted, get("shifted")); b.shifted = shifted;
  QGPU_TRY(mrf, get("bfe.mrf"));
  b.bfe = Field{p + "bfe", mrf.offset - 32, bfeBusDims(true)};  // dims 0..31 are never touched
  return b;
}

std::vector<Op> buildOpList() {
  std::vector<Op> ops(std::begin(kShiftOps), std::end(kShiftOps));
  for (int i = 0; i < machine::kNumOps; ++i) {
    const auto op = static_cast<Op>(i);
    bool shift = false;
    for (Op s : kShiftOps) shift = shift || s == op;
    if (!shift && aluStageExclusion(op) == nullptr) ops.push_back(op);
  }
  return ops;
}

// The result cases of S3 and the decode/prep units of S0 go through one small writer.
class Cases {
 public:
  Cases(UnitWriter& units, const MlpContext& ctx, GadgetReport& rep)
      : units_(units), ctx_(ctx), rep_(rep) {}
  // +2u on `dim` when every literal holds.
  Status when(std::initializer_list<Lit> lits, int dim) { return add(andOf(lits), dim); }
  Status when(const std::vector<Lit>& lits, int dim) { return add(andOf(lits), dim); }
  // The word 0 (−u) on every dim of the fields: one unit.
  Status zero(std::initializer_list<Field> fields) {
    std::vector<Output> out;
    for (const Field& f : fields)
      for (int i = 0; i < f.dims; ++i) out.push_back({f.at(i), -1});
    QGPU_TRY(r, addConstant(units_, ctx_, out));
    rep_ += r;
    return Ok{};
  }
  Status cancel(const Field& f) {
    QGPU_TRY(r, buildCancel(units_, f, ctx_));
    rep_ += r;
    return Ok{};
  }

 private:
  Status add(const LinearForm& n, int dim) {
    QGPU_TRY(r, addDetector(units_, ctx_, n, {{ctx_.ballast.at(0), 1.0f}}, {{dim, 2}}));
    rep_ += r;
    return Ok{};
  }
  UnitWriter& units_;
  const MlpContext& ctx_;
  GadgetReport& rep_;
};

Status check(const Expected<GadgetReport>& r, GadgetReport& rep) {
  if (!r.ok()) return r.error();
  rep += r.value();
  return Ok{};
}

}  // namespace

const char* aluStageExclusion(Op op) {
  switch (op) {
    case Op::DivU: case Op::DivS: case Op::RemU: case Op::RemS:
      return "division: the host expands it into a shift-subtract loop (docs/circuit.md §8)";
    case Op::Mul: case Op::Mad: case Op::MulHiU: case Op::MulHiS:
      return "multiply: the MUL stage (circuit/multiply.h, 5-6 layers, 652-1,288 live dims per "
             "lane; four lanes do not fit the residual at once, docs/circuit.md §8)";
    default: break;
  }
  switch (machine::opInfo(op).cls) {
    case OpClass::Alu: case OpClass::Cmp: case OpClass::Sel: case OpClass::Pred: return nullptr;
    case OpClass::Mem: return "memory op: the memory stage (L5)";
    case OpClass::Local: return "spill slot op: the memory stage (L5)";
    case OpClass::Warp: return "warp op: reads other lanes (shuffle crossbar, votes)";
  }
  return "unknown class";
}

const std::vector<Op>& aluStageOps() {
  static const std::vector<Op> ops = buildOpList();
  return ops;
}

std::optional<AluGroup> aluGroup(Op op) {
  for (Op shift : kShiftOps)
    if (op == shift) return AluGroup::Shift;
  switch (op) {
    case Op::Add:
    case Op::Sub:
    case Op::Neg:
    case Op::Abs:
      return AluGroup::Add;
    case Op::SetEq:
    case Op::SetNe:
    case Op::SetLtS:
    case Op::SetLeS:
    case Op::SetGtS:
    case Op::SetGeS:
    case Op::SetLtU:
    case Op::SetLeU:
    case Op::SetGtU:
    case Op::SetGeU:
    case Op::MinS:
    case Op::MinU:
    case Op::MaxS:
    case Op::MaxU:
      return AluGroup::Compare;
    case Op::BfeU:
    case Op::BfeS:
      return AluGroup::Shift;
    case Op::Popc:
      return AluGroup::Popc;
    case Op::Clz:
      return AluGroup::Clz;
    case Op::Bfind:
      return AluGroup::Bfind;
    case Op::Prmt:
      return AluGroup::Prmt;
    default:
      return std::nullopt;
  }
}

uint32_t aluGroupKind(AluGroup g) {
  // In AluGroup order.
  constexpr uint32_t kinds[kAluGroups] = {kKindAluAdd, kKindAluCompare, kKindAluShift, kKindAluPopc,
                                          kKindAluClz, kKindAluBfind,   kKindAluPrmt};
  return kinds[static_cast<size_t>(g)];
}

Expected<LayoutPlan> aluStageBusPlan(int lanes, AluBusLayout layout) {
  if (lanes < 1 || lanes > machine::kLanes)
    return aluStageUsage("needs 1.." + std::to_string(machine::kLanes) + " lanes, has " +
                 std::to_string(lanes));
  int laneDims = 0;
  for (const BusEntry& e : laneBusEntries()) laneDims += e.dims;
  if (laneDims != kLaneBusDims)
    return makeDiag(ErrorKind::Internal, "alu stage: the bus entries hold " +
                                             std::to_string(laneDims) + " dims per lane, not " +
                                             std::to_string(kLaneBusDims));
  LayoutPlan plan;
  const int nOps = static_cast<int>(aluStageOps().size());
  const int total = nOps + kLaneBusDims * lanes;
  if (layout == AluBusLayout::OneFieldPerValue) {  // carve order, pinned
    plan.pin("op", nOps, {mlpAt(0), mlpAt(3)}, 0);
    for (int l = 0; l < lanes; ++l) {
      const std::string p = "lane" + std::to_string(l) + ".";
      int at = nOps + l * kLaneBusDims;
      for (const BusEntry& e : laneBusEntries()) {
        plan.pin(p + e.name, e.dims, {mlpAt(e.write), mlpAt(e.lastRead)}, at);
        at += e.dims;
      }
    }
  } else {
    // ByGroup: the one-hot is every op's; each group's fields are its own kind.
    const bool byGroup = layout == AluBusLayout::ByGroup;
    plan.add("op", nOps, {mlpAt(0), mlpAt(3)}, byGroup ? uint32_t{kKindAlu} : 0u);
    for (int l = 0; l < lanes; ++l) {
      const std::string p = "lane" + std::to_string(l) + ".";
      for (const BusEntry& e : laneBusEntries()) {
        const uint32_t kinds = byGroup ? aluGroupKind(e.group) : 0u;
        if (std::string(e.name) == "bfe") {  // sh apart from m, r, f
          plan.add(p + "shifted", 32, {mlpAt(2), mlpAt(3)}, kinds);
          plan.add(p + "bfe.mrf", e.dims - 32, {mlpAt(0), mlpAt(3)}, kinds);
          continue;
        }
        plan.add(p + e.name, e.dims, {mlpAt(e.write), mlpAt(e.lastRead)}, kinds);
      }
    }
  }
  QGPU_CHECK(plan.solve(total));
  return plan;
}

int aluStageBusDims(int lanes, AluBusLayout layout) {
  auto plan = aluStageBusPlan(lanes, layout);
  return plan.ok() ? plan->report().span : 0;
}

Expected<AluStageReport> buildAluStage(std::span<const AluLayer> layers, const AluStageSpec& s) {
  if (layers.size() != static_cast<size_t>(kAluStageLayers))
    return aluStageUsage("needs " + std::to_string(kAluStageLayers) + " layers, has " +
                 std::to_string(layers.size()));
  for (const AluLayer& l : layers)
    if (l.units == nullptr) return aluStageUsage("a layer without a unit writer");
  if (s.opcode.dims != kOpcodeBits)
    return aluStageUsage("the opcode field needs " + std::to_string(kOpcodeBits) + " dims, has " +
                 std::to_string(s.opcode.dims));
  if (s.lanes.empty() || s.lanes.size() > static_cast<size_t>(machine::kLanes))
    return aluStageUsage("needs 1.." + std::to_string(machine::kLanes) + " lanes, has " +
                 std::to_string(s.lanes.size()));
  const int lanes = static_cast<int>(s.lanes.size());
  if (s.bus.dims != aluStageBusDims(lanes, s.busLayout))
    return aluStageUsage("the bus needs " + std::to_string(aluStageBusDims(lanes, s.busLayout)) + " dims, has " +
                 std::to_string(s.bus.dims));
  for (const AluLane& l : s.lanes) {
    for (const Field* f : {&l.a, &l.b, &l.c, &l.r})
      if (f->dims != 32) return aluStageUsage("a lane's a, b, c and r need 32 dims, " + f->name + " has " + std::to_string(f->dims));
    for (const Field* f : {&l.p, &l.q, &l.s})
      if (f->dims != 1) return aluStageUsage("a lane's p, q and s need 1 dim, " + f->name + " has " + std::to_string(f->dims));
  }

  if (s.guard.dims > 1)
    return aluStageUsage("the guard needs 0 or 1 dim, has " + std::to_string(s.guard.dims));
  const bool groupGuards = s.groupGuard.dims == kAluGroups;
  if ((s.groupGuard.dims != 0 && !groupGuards) || (groupGuards && s.guard.dims != 1) ||
      (s.busLayout == AluBusLayout::ByGroup && !groupGuards))
    return aluStageUsage("the group guards need the guard and " + std::to_string(kAluGroups) +
                         " dims, and the bus by group needs them; has " +
                         std::to_string(s.guard.dims) + " and " +
                         std::to_string(s.groupGuard.dims));
  std::optional<LayoutPlan> livePlan;
  if (s.busLayout != AluBusLayout::OneFieldPerValue) {
    QGPU_TRY(plan, aluStageBusPlan(lanes, s.busLayout));
    livePlan = std::move(plan);
  }

  const std::vector<Op>& ops = aluStageOps();
  const int nOps = static_cast<int>(ops.size());
  Field onehot = s.bus.slice(0, nOps, "op");
  if (livePlan) {
    QGPU_TRY(op, livePlan->field("op"));
    onehot = s.bus.slice(op.offset, nOps, "op");
  }
  auto ohDim = [&](Op op) {
    for (int i = 0; i < nOps; ++i)
      if (ops[static_cast<size_t>(i)] == op) return onehot.at(i);
    return -1;  // not a stage op: never asked (the cases below name stage ops only)
  };
  auto is = [&](Op op) { return bit(ohDim(op)); };
  if (ohDim(Op::BfeS) != ohDim(Op::BfeU) + 1)
    return makeDiag(ErrorKind::Internal, "alu stage: bfe.u and bfe.s are not adjacent in the one-hot");

  AluStageReport rep;
  rep.busDims = s.bus.dims;
  rep.busLayout = s.busLayout;
  std::vector<int> before;
  for (const AluLayer& l : layers) before.push_back(l.units->used());
  UnitWriter& w0 = *layers[0].units;
  UnitWriter& w1 = *layers[1].units;
  UnitWriter& w2 = *layers[2].units;
  UnitWriter& w3 = *layers[3].units;
  const MlpContext& c0 = layers[0].ctx;
  const MlpContext& c1 = layers[1].ctx;
  const MlpContext& c2 = layers[2].ctx;
  const MlpContext& c3 = layers[3].ctx;
  GadgetReport& g = rep.gadget;
  // With a guard every unit below is silent where the ALU's ops do not execute, but r's and s's
  // cancel and −u (every token's: `unguarded`).
  std::vector<UnitWriter*> writers;
  for (const AluLayer& l : layers) writers.push_back(l.units);
  std::optional<UnitGuard> aluGuard;
  if (s.guard.dims == 1) aluGuard = UnitGuard{s.guard.at(0), 1, c0.ballast, c0.lambda, kKindAlu};
  const GuardScope guard(writers, aluGuard);
  auto unguarded = [](UnitWriter& u, auto&& write) -> Status {
    const std::optional<UnitGuard> kept = u.guard();
    u.setGuard(std::nullopt);
    Status st = write();
    u.setGuard(kept);
    return st;
  };
  // By group, the units that write a group's bus fields carry its own guard instead.
  auto groupGuard = [&](AluGroup group) -> std::optional<UnitGuard> {
    if (!groupGuards) return std::nullopt;
    return UnitGuard{s.groupGuard.at(static_cast<int>(group)), 1, c0.ballast, c0.lambda,
                     aluGroupKind(group)};
  };

  // S0: the op one-hot, shared by the lanes.
  {
    Cases k(w0, c0, g);
    QGPU_CHECK(k.cancel(onehot));
    QGPU_CHECK(k.zero({onehot}));
    for (int i = 0; i < nOps; ++i)
      QGPU_CHECK(k.when({opcodeIs(s.opcode, ops[static_cast<size_t>(i)], s.opcodeInverted)}, onehot.at(i)));
  }

  for (int li = 0; li < lanes; ++li) {
    const AluLane& L = s.lanes[static_cast<size_t>(li)];
    LaneBus b;
    if (livePlan) {
      QGPU_TRY(live, carveLive(s.bus, *livePlan, li));
      b = live;
    } else {
      b = carve(s.bus, nOps + li * kLaneBusDims, li);
    }
    auto opc = [&](Op op) { return opcodeIs(s.opcode, op, s.opcodeInverted); };

    // S0: the adder's operands, from the opcode bits (the one-hot is written in this layer).
    {
      const GuardScope adds({&w0}, groupGuard(AluGroup::Add));
      Cases k(w0, c0, g);
      QGPU_CHECK(k.cancel(b.x));
      QGPU_CHECK(k.cancel(b.y));
      QGPU_CHECK(k.cancel(b.cin));
      QGPU_CHECK(k.zero({b.x, b.y, b.cin}));
      for (int j = 0; j < 32; ++j) {
        QGPU_CHECK(k.when({opc(Op::Add), bit(L.a.at(j))}, b.x.at(j)));
        QGPU_CHECK(k.when({opc(Op::Sub), bit(L.a.at(j))}, b.x.at(j)));
        QGPU_CHECK(k.when({opc(Op::Add), bit(L.b.at(j))}, b.y.at(j)));
        QGPU_CHECK(k.when({opc(Op::Sub), bit(L.b.at(j), false)}, b.y.at(j)));
        QGPU_CHECK(k.when({opc(Op::Neg), bit(L.a.at(j), false)}, b.y.at(j)));
        QGPU_CHECK(k.when({opc(Op::Abs), bit(L.a.at(j), false)}, b.y.at(j)));
      }
      for (Op op : {Op::Sub, Op::Neg, Op::Abs}) QGPU_CHECK(k.when({opc(op)}, b.cin.at(0)));
    }
    // S0: bfe level 1, signed (its m, r serve bfe.u too), its sh left to the shared shifter;
    // popc, clz, bfind.u, prmt.
    BfeSpec bfe;
    bfe.isSigned = true;
    bfe.a = L.a;
    bfe.b = L.b;
    bfe.c = L.c;
    bfe.bus = b.bfe;
    bfe.out = L.r;  // not written by level 1 (checked for width only)
    bfe.busPrior = Prior::Replace;
    bfe.shiftOutside = true;
    {
      const GuardScope shifts({&w0}, groupGuard(AluGroup::Shift));
      QGPU_CHECK(check(buildBfeLevel1(w0, c0, bfe), g));
    }
    {
      const GuardScope popc({&w0}, groupGuard(AluGroup::Popc));
      QGPU_CHECK(check(buildPopc(w0, {L.a, b.popc, Prior::Replace}, c0), g));
    }
    {
      const GuardScope clz({&w0}, groupGuard(AluGroup::Clz));
      QGPU_CHECK(check(buildPriority(w0, {PriorityOp::Clz, L.a, b.clz, Prior::Replace}, c0), g));
    }
    {
      const GuardScope bfind({&w0}, groupGuard(AluGroup::Bfind));
      QGPU_CHECK(
          check(buildPriority(w0, {PriorityOp::BfindU, L.a, b.bfind, Prior::Replace}, c0), g));
    }
    {
      const GuardScope prmt({&w0}, groupGuard(AluGroup::Prmt));
      QGPU_CHECK(check(buildPrmt(w0, {L.a, L.b, L.c, b.prmt, Prior::Replace}, c0), g));
    }

    // S1 (kAluResultFirstLayer): the result word starts here (−u, then popc's, clz's, bfind's
    // and prmt's cases), so those four fields give their bus dims back after S1; S3 adds the
    // other ops' cases onto it.
    {
      const AluLayer& first = layers[kAluResultFirstLayer];
      Cases k(*first.units, first.ctx, g);
      QGPU_CHECK(unguarded(*first.units, [&]() -> Status {
        if (s.outPrior == Prior::Replace) QGPU_CHECK(k.cancel(L.r));
        return k.zero({L.r});
      }));
      for (int j = 0; j < 32; ++j) {
        const int r = L.r.at(j);
        QGPU_CHECK(k.when({is(Op::Popc), bit(b.popc.at(j))}, r));
        QGPU_CHECK(k.when({is(Op::Clz), bit(b.clz.at(j))}, r));
        QGPU_CHECK(k.when({is(Op::Bfind), bit(b.bfind.at(j))}, r));
        QGPU_CHECK(k.when({is(Op::Prmt), bit(b.prmt.at(j))}, r));
      }
    }

    // S1: shifter prep (the five shifts and bfe's a >> pos), adder level 1 (level 2 in S2), the
    // comparators' level 1 (level 2 in S2).
    ShiftPrepSpec prep;
    prep.op = onehot.slice(0, 5, "shift");
    prep.a = L.a;
    prep.b = L.b;
    prep.c = L.c;
    prep.hi = b.hi;
    prep.lo = b.lo;
    prep.start = b.start;
    prep.prior = Prior::Replace;
    prep.bfe = Field{"op.bfe", ohDim(Op::BfeU), 2};
    {
      const GuardScope shifts({&w1}, groupGuard(AluGroup::Shift));
      QGPU_CHECK(check(buildShiftPrep(w1, prep, c1), g));
    }
    AdderSpec add;
    add.a = b.x;
    add.b = b.y;
    add.cin = b.cin;
    add.bus = b.adder;
    add.out = b.sum;
    add.busPrior = add.outPrior = Prior::Replace;
    {
      const GuardScope adds({&w1, &w2}, groupGuard(AluGroup::Add));
      QGPU_CHECK(check(buildAdder(w1, c1, w2, c2, add), g));
    }
    {
      const GuardScope compares({&w1, &w2}, groupGuard(AluGroup::Compare));
      for (int i = 0; i < 5; ++i) {
        CompareSpec cs;
        cs.op = kCompares[i];
        cs.a = L.a;
        cs.b = L.b;
        QGPU_CHECK(shareLevel1(cs, b.cmpBus, b.cmpTop));
        cs.out = b.cmp.slice(i, 1, compareOpName(kCompares[i]));
        cs.busPrior = cs.outPrior = Prior::Replace;
        QGPU_CHECK(check(buildCompare(w1, c1, w2, c2, cs), g));
      }
    }

    // S2: the window.
    {
      const GuardScope shifts({&w2}, groupGuard(AluGroup::Shift));
      QGPU_CHECK(check(buildWindow(w2, {b.lo, b.hi, b.start, b.shifted, Prior::Replace}, c2), g));
    }

    // S3: the other ops' cases onto the result word (begun in S1), and the predicate result,
    // one detector per case.
    Cases k(w3, c3, g);
    QGPU_CHECK(unguarded(w3, [&]() -> Status {
      if (s.outPrior == Prior::Replace) QGPU_CHECK(k.cancel(L.s));
      return k.zero({L.s});
    }));
    const Lit lts = bit(b.cmp.at(kLtS)), ltu = bit(b.cmp.at(kLtU));
    const Lit nlts = bit(b.cmp.at(kLtS), false), nltu = bit(b.cmp.at(kLtU), false);
    const Lit sign = bit(L.a.at(31)), nsign = bit(L.a.at(31), false);
    Lit anyAdd = is(Op::Add);  // add, sub or neg: exactly one of the three dims can be +1
    for (Op op : {Op::Sub, Op::Neg}) anyAdd.terms.push_back({ohDim(op), 1.0});
    anyAdd.constant = 2;
    Lit anyShift;
    for (Op op : kShiftOps) anyShift.terms.push_back({ohDim(op), 1.0});
    anyShift.constant = 4;
    for (int j = 0; j < 32; ++j) {
      const int r = L.r.at(j);
      const Lit a = bit(L.a.at(j)), na = bit(L.a.at(j), false);
      const Lit bb = bit(L.b.at(j)), nb = bit(L.b.at(j), false);
      const Lit sum = bit(b.sum.at(j));
      QGPU_CHECK(k.when({is(Op::Mov), a}, r));
      QGPU_CHECK(k.when({anyAdd, sum}, r));
      QGPU_CHECK(k.when({is(Op::Abs), sign, sum}, r));
      QGPU_CHECK(k.when({is(Op::Abs), nsign, a}, r));
      QGPU_CHECK(k.when({is(Op::MinS), lts, a}, r));
      QGPU_CHECK(k.when({is(Op::MinS), nlts, bb}, r));
      QGPU_CHECK(k.when({is(Op::MaxS), lts, bb}, r));
      QGPU_CHECK(k.when({is(Op::MaxS), nlts, a}, r));
      QGPU_CHECK(k.when({is(Op::MinU), ltu, a}, r));
      QGPU_CHECK(k.when({is(Op::MinU), nltu, bb}, r));
      QGPU_CHECK(k.when({is(Op::MaxU), ltu, bb}, r));
      QGPU_CHECK(k.when({is(Op::MaxU), nltu, a}, r));
      QGPU_CHECK(k.when({is(Op::And), a, bb}, r));
      QGPU_CHECK(k.when({is(Op::Or), a}, r));
      QGPU_CHECK(k.when({is(Op::Or), na, bb}, r));
      QGPU_CHECK(k.when({is(Op::Xor), a, nb}, r));
      QGPU_CHECK(k.when({is(Op::Xor), na, bb}, r));
      QGPU_CHECK(k.when({is(Op::Not), na}, r));
      QGPU_CHECK(k.when({is(Op::Brev), bit(L.a.at(31 - j))}, r));
      QGPU_CHECK(k.when({anyShift, bit(b.shifted.at(j))}, r));
      // bfe's level 2 (alu_bits.h): keep_j = m_j ∧ r_j selects sh_j; bfe.s fills f where
      // ¬keep_j and len ≠ 0, as the two disjoint cases ¬m_j ∧ m_0 ∧ f and m_j ∧ ¬r_j ∧ f.
      const Lit m = bit(b.bfe.at(32 + j)), rr = bit(b.bfe.at(64 + j)), sh = bit(b.shifted.at(j));
      const Lit f = bit(b.bfe.at(96));
      QGPU_CHECK(k.when({is(Op::BfeU), m, rr, sh}, r));
      QGPU_CHECK(k.when({is(Op::BfeS), m, rr, sh}, r));
      if (j >= 1)
        QGPU_CHECK(k.when({is(Op::BfeS), bit(b.bfe.at(32 + j), false), bit(b.bfe.at(32)), f}, r));
      QGPU_CHECK(k.when({is(Op::BfeS), m, bit(b.bfe.at(64 + j), false), f}, r));
      QGPU_CHECK(k.when({is(Op::Selp), bit(L.p.at(0)), a}, r));
      QGPU_CHECK(k.when({is(Op::Selp), bit(L.p.at(0), false), bb}, r));
    }
    const int sd = L.s.at(0);
    const Lit p = bit(L.p.at(0)), np = bit(L.p.at(0), false);
    const Lit q = bit(L.q.at(0)), nq = bit(L.q.at(0), false);
    struct SetCase {
      Op op;
      int cmp;
      bool positive;
    };
    const SetCase sets[] = {{Op::SetEq, kEq, true},   {Op::SetNe, kEq, false},
                            {Op::SetLtS, kLtS, true}, {Op::SetLeS, kLeS, true},
                            {Op::SetGtS, kLeS, false}, {Op::SetGeS, kLtS, false},
                            {Op::SetLtU, kLtU, true}, {Op::SetLeU, kLeU, true},
                            {Op::SetGtU, kLeU, false}, {Op::SetGeU, kLtU, false}};
    for (const SetCase& c : sets) QGPU_CHECK(k.when({is(c.op), bit(b.cmp.at(c.cmp), c.positive)}, sd));
    QGPU_CHECK(k.when({is(Op::PAnd), p, q}, sd));
    QGPU_CHECK(k.when({is(Op::POr), p}, sd));
    QGPU_CHECK(k.when({is(Op::POr), np, q}, sd));
    QGPU_CHECK(k.when({is(Op::PXor), p, nq}, sd));
    QGPU_CHECK(k.when({is(Op::PXor), np, q}, sd));
    QGPU_CHECK(k.when({is(Op::PNot), np}, sd));
    QGPU_CHECK(k.when({is(Op::PMov), p}, sd));
    // pconst: [a ≠ 0] = [op] − [op ∧ a = 0] (a is the immediate): +2u, then −2u when a = 0.
    QGPU_CHECK(k.when({is(Op::PConst)}, sd));
    {
      std::vector<Lit> zero{is(Op::PConst)};
      for (int j = 0; j < 32; ++j) zero.push_back(bit(L.a.at(j), false));
      LinearForm n = andOf(zero);
      QGPU_TRY(r, addDetector(w3, c3, n, {{c3.ballast.at(0), 1.0f}}, {{sd, -2}}));
      g += r;
    }
  }
  for (size_t i = 0; i < layers.size(); ++i)
    rep.unitsPerLayer.push_back(layers[i].units->used() - before[i]);
  return rep;
}

}  // namespace qgpu::circuit
