// qgpu/gen/program_gen.cpp — the random machine-program generator (contract: program_gen.h).
//
// Shape of a program: block 0 starts a sequence of regions; a region is a straight block, an
// early exit, an if, an if-else or a counted loop, and arms and loop bodies are sequences of
// regions again (to maxDepth). Blocks are numbered in the order they are laid out, so every edge
// but a loop's back edge goes to a higher block, and under min-PC scheduling (docs/machine.md §5)
// the lanes of a warp reconverge at the first block after a region. The last block exits.
//
// Registers: r1..r12 are data registers (random ops write only these, or r0); r13..r15 are loop
// counters, one per loop nesting level, written only by the loop's preheader (1..K) and latch
// (decrement). That is the whole termination argument.
#include "gen/program_gen.h"

#include "oracle/semantics.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gen/policy_text.h"
#include "gen/rng.h"

namespace qgpu::gen {

using namespace machine;

namespace {

constexpr int kNumClasses = static_cast<int>(OpClass::Warp) + 1;
constexpr uint8_t kFirstDataReg = 1;
constexpr uint8_t kLastDataReg = 12;
constexpr int kMaxLoopNest = kRegs - 1 - kLastDataReg;  // r13..r15

uint8_t counterReg(int loopDepth) {
  return static_cast<uint8_t>(kRegs - 1 - loopDepth);
}

[[noreturn]] void generatorBug(const std::string& header, const std::string& why,
                               const Program* program) {
  std::fprintf(stderr, "qgpu-gen: generator bug (%s)\n  case: %s\n", why.c_str(), header.c_str());
  if (program) std::fprintf(stderr, "%s", print(*program).c_str());
  std::abort();
}

// The ops of each class, in table order: the generator's only view of oracle/isa.def.
const std::array<std::vector<Op>, kNumClasses>& opsByClass() {
  static const auto table = [] {
    std::array<std::vector<Op>, kNumClasses> t;
    for (int i = 0; i < kNumOps; ++i) {
      const Op op = static_cast<Op>(i);
      const auto cls = static_cast<size_t>(opInfo(op).cls);
      if (cls >= t.size())  // a class added to OpClass after Warp: kNumClasses and randomOp
        generatorBug(
            "-", std::string("op class of '") + opInfo(op).mnemonic + "' is new to the generator",
            nullptr);
      t[cls].push_back(op);
    }
    return t;
  }();
  return table;
}

// Where a region's control leaves it: the terminator slot of a block (taken or next) that is
// patched with the block that follows the region.
struct Exit {
  int block;
  bool taken;
};
using Exits = std::vector<Exit>;

struct Ctx {
  int depth = 0;        // region nesting depth
  int loops = 0;        // enclosing loops
  uint64_t mult = 1;    // product of the enclosing loops' trip bounds
  bool uniform = true;  // every live lane of a warp reaches this point at the same block
};

// One block under construction.
struct BlockGen {
  Block block;
  uint8_t preds = 0;      // predicates written so far (bit p)
};

enum class Region : uint8_t { Straight, If, IfElse, Loop, Barrier, EarlyExit };
constexpr int kRegionCost[] = {1, 2, 3, 3, 1, 1};  // blocks a region needs at least

enum class AddrShape : uint8_t { Const, Lane, Data };

class Generator {
 public:
  Generator(const Policy& policy, uint64_t seed, std::string header)
      : pol_(policy), rng_(seed), header_(std::move(header)) {}

  Case generate() {
    Case c;
    c.header = header_;
    Launch& l = c.launch;
    l.gridX = static_cast<uint32_t>(
        rng_.range(static_cast<int>(pol_.minGrid), static_cast<int>(pol_.maxGrid)));
    l.blockX = static_cast<uint32_t>(
        rng_.range(static_cast<int>(pol_.minBlockX), static_cast<int>(pol_.maxBlockX)));
    for (auto& w : l.global) w = rng_.chance(pol_.initNonzeroProb) ? immediate() : 0;
    int shared = rng_.range(0, pol_.maxSharedWords);
    int spill = rng_.range(0, pol_.maxSpillSlots);
    while (shared + spill * static_cast<int>(l.blockX) > kSharedWords) {
      if (spill > 0)
        --spill;
      else
        shared = kSharedWords;
    }
    prog_.name = "gen";
    prog_.sharedWords = static_cast<uint8_t>(shared);
    prog_.spillSlots = static_cast<uint8_t>(spill);

    reserved_ = 1;  // the exit block
    Exits pending = sequence(Ctx{}, rng_.range(1, pol_.maxRegions));
    reserved_ = 0;
    const int tail = addBlock(1);
    BlockGen g;
    randomOps(g, opCount(0));
    finish(tail, g, Terminator{});
    patch(pending, tail);

    uint64_t perWarp = 0;
    for (uint64_t m : mult_) perWarp += m;
    const uint64_t warps = (l.blockX + kLanes - 1) / kLanes;
    c.stepBound = perWarp * warps * l.gridX;
    c.program = std::move(prog_);
    return c;
  }

 private:
  // ---- Blocks and regions ----

  int available() const {
    return pol_.maxBlocks - static_cast<int>(prog_.blocks.size()) - reserved_;
  }
  int addBlock(uint64_t mult) {
    prog_.blocks.emplace_back();
    mult_.push_back(mult);
    return static_cast<int>(prog_.blocks.size()) - 1;
  }
  void finish(int index, BlockGen& g, Terminator term) {
    g.block.term = term;
    prog_.blocks[static_cast<size_t>(index)] = std::move(g.block);
  }
  void patch(const Exits& exits, int target) {
    for (const Exit& e : exits) {
      Terminator& t = prog_.blocks[static_cast<size_t>(e.block)].term;
      (e.taken ? t.taken : t.next) = static_cast<uint8_t>(target);
    }
  }

  Exits sequence(const Ctx& ctx, int regions) {
    Exits pending;
    for (int i = 0; i < regions; ++i) {
      if (i > 0 && available() < 1) break;
      const int start = static_cast<int>(prog_.blocks.size());
      Exits exits = region(ctx);
      patch(pending, start);
      pending = std::move(exits);
    }
    return pending;
  }

  Exits region(const Ctx& ctx) {
    std::array<uint32_t, 6> w = {pol_.wStraight, pol_.wIf,      pol_.wIfElse,
                                 pol_.wLoop,     pol_.wBarrier, pol_.wEarlyExit};
    const bool nest = ctx.depth < pol_.maxDepth;
    for (size_t k = 0; k < w.size(); ++k) {
      if (kRegionCost[k] > available()) w[k] = 0;
    }
    if (!nest) w[1] = w[2] = w[3] = 0;
    if (ctx.loops >= kMaxLoopNest) w[3] = 0;
    int pick = rng_.weighted(w);
    Region kind = pick < 0 ? Region::Straight : static_cast<Region>(pick);
    if (kind == Region::Barrier && !ctx.uniform && !rng_.chance(pol_.divergentBarrierProb))
      kind = Region::Straight;
    switch (kind) {
      case Region::Straight:
      case Region::Barrier: {
        const int b = addBlock(ctx.mult);
        BlockGen g;
        randomOps(g, opCount(0));
        finish(b, g,
               Terminator{kind == Region::Barrier ? TermKind::Barrier : TermKind::Jump, kNoPred,
                          false, 0, 0});
        return {{b, false}};
      }
      case Region::EarlyExit: {
        const int b = addBlock(ctx.mult);
        BlockGen g;
        randomOps(g, opCount(1));
        const bool divergent = rng_.chance(pol_.divergentProb);
        const uint8_t p = branchPred(g, divergent);
        const bool exitTaken = rng_.chance(0.5);
        Terminator t{TermKind::Branch, p, rng_.chance(pol_.negateProb), 0, 0};
        (exitTaken ? t.taken : t.next) = kExitTarget;
        finish(b, g, t);
        return {{b, !exitTaken}};
      }
      case Region::If:
      case Region::IfElse: {
        const int a = addBlock(ctx.mult);
        BlockGen g;
        randomOps(g, opCount(1));
        const bool divergent = rng_.chance(pol_.divergentProb);
        const uint8_t p = branchPred(g, divergent);
        const bool thenTaken = rng_.chance(0.5);  // which slot of the br leads into the then arm
        finish(a, g, Terminator{TermKind::Branch, p, rng_.chance(pol_.negateProb), 0, 0});
        patch({{a, thenTaken}}, a + 1);
        Ctx arm = ctx;
        arm.depth += 1;
        arm.uniform = ctx.uniform && !divergent;
        if (kind == Region::If) {
          Exits exits = sequence(arm, rng_.range(1, pol_.maxArmRegions));
          exits.push_back({a, !thenTaken});
          return exits;
        }
        reserved_ += 1;  // the else arm's first block
        Exits exits = sequence(arm, rng_.range(1, pol_.maxArmRegions));
        reserved_ -= 1;
        patch({{a, !thenTaken}}, static_cast<int>(prog_.blocks.size()));
        Exits elseExits = sequence(arm, rng_.range(1, pol_.maxArmRegions));
        exits.insert(exits.end(), elseExits.begin(), elseExits.end());
        return exits;
      }
      case Region::Loop:
        return loop(ctx);
    }
    generatorBug(header_, "unknown region kind", nullptr);
  }

  // Preheader: rc = (x rem.u K) + 1, in 1..K. Body: a sequence of regions. Latch: rc -= 1, back
  // to the body while rc != 0. x is lane-dependent for a divergent loop, else uniform.
  Exits loop(const Ctx& ctx) {
    const uint8_t rc = counterReg(ctx.loops);
    const int trips = rng_.range(1, static_cast<int>(pol_.maxTrips));
    const bool divergent = rng_.chance(pol_.divergentProb);
    const int pre = addBlock(ctx.mult);
    {
      BlockGen g;
      randomOps(g, opCount(2));
      Operand x = divergent ? laneDependent() : uniformOperand();
      g.block.ops.push_back(aluOp(Op::RemU, rc, x, Operand::i(static_cast<uint32_t>(trips))));
      g.block.ops.push_back(aluOp(Op::Add, rc, Operand::r(rc), Operand::i(1)));
      finish(pre, g, Terminator{TermKind::Jump, kNoPred, false, 0, static_cast<uint8_t>(pre + 1)});
    }
    Ctx body = ctx;
    body.depth += 1;
    body.loops += 1;
    body.mult = ctx.mult * static_cast<uint64_t>(trips);
    body.uniform = ctx.uniform && !divergent;
    reserved_ += 1;  // the latch
    Exits bodyExits = sequence(body, rng_.range(1, pol_.maxArmRegions));
    reserved_ -= 1;
    const int latch = addBlock(body.mult);
    patch(bodyExits, latch);
    BlockGen g;
    randomOps(g, opCount(2));
    g.block.ops.push_back(aluOp(Op::Sub, rc, Operand::r(rc), Operand::i(1)));
    const uint8_t p = static_cast<uint8_t>(rng_.below(kPreds));
    // Either "set.ne p, rc, 0; br p ? body : next" or "set.eq p, rc, 0; br p ? next : body".
    const bool ne = rng_.chance(0.5);
    Instr cmp;
    cmp.op = ne ? Op::SetNe : Op::SetEq;
    cmp.dstPred = p;
    cmp.src = {Operand::r(rc), Operand::i(0), Operand{}};
    g.block.ops.push_back(cmp);
    Terminator t{TermKind::Branch, p, false, 0, 0};
    (ne ? t.taken : t.next) = static_cast<uint8_t>(pre + 1);
    finish(latch, g, t);
    return {{latch, !ne}};
  }

  // ---- Ops ----

  // Random ops for a block that also holds `structural` ops of the generator's own.
  int opCount(int structural) {
    return std::min(rng_.range(pol_.minOps, pol_.maxOps), kMaxOpsPerBlock - structural);
  }

  static Instr aluOp(Op op, uint8_t dst, Operand a, Operand b = {}, Operand c = {}) {
    Instr in;
    in.op = op;
    in.dst = dst;
    in.src = {a, b, c};
    return in;
  }

  uint32_t immediate() {
    return rng_.chance(pol_.smallImmProb) ? static_cast<uint32_t>(rng_.range(-16, 16))
                                          : rng_.word();
  }
  Operand operand() {
    if (rng_.chance(pol_.immProb)) return Operand::i(immediate());
    if (rng_.chance(pol_.specialProb))
      return Operand::s(static_cast<Special>(rng_.below(kNumSpecials)));
    return Operand::r(static_cast<uint8_t>(rng_.below(kRegs)));
  }
  Operand laneDependent() {
    switch (rng_.below(3)) {
      case 0:
        return Operand::s(Special::TidX);
      case 1:
        return Operand::s(Special::LaneId);
      default:
        return Operand::r(dataReg());
    }
  }
  // Same value in every lane of a CTA.
  Operand uniformOperand() {
    switch (rng_.below(4)) {
      case 0:
        return Operand::s(Special::CtaidX);
      case 1:
        return Operand::s(Special::NctaidX);
      case 2:
        return Operand::s(Special::NtidX);
      default:
        return Operand::i(immediate());
    }
  }
  uint8_t dataReg() { return static_cast<uint8_t>(rng_.range(kFirstDataReg, kLastDataReg)); }
  uint8_t dstReg() { return rng_.chance(pol_.r0DstProb) ? 0 : dataReg(); }
  uint8_t writtenPred(const BlockGen& g) {
    uint8_t choices[kPreds];
    int n = 0;
    for (int p = 0; p < kPreds; ++p) {
      if (g.preds >> p & 1) choices[n++] = static_cast<uint8_t>(p);
    }
    return choices[rng_.below(static_cast<uint32_t>(n))];
  }
  Op pickOp(OpClass cls) {
    const auto& ops = ops_[static_cast<size_t>(cls)];
    return ops[rng_.below(static_cast<uint32_t>(ops.size()))];
  }

  // An unguarded compare for a terminator: lane-dependent or uniform sources.
  uint8_t branchPred(BlockGen& g, bool divergent) {
    Instr in;
    in.op = pickOp(OpClass::Cmp);
    in.dstPred = static_cast<uint8_t>(rng_.below(kPreds));
    if (divergent) {
      in.src = {laneDependent(),
                rng_.chance(0.5) ? Operand::i(static_cast<uint32_t>(rng_.range(0, 8))) : operand(),
                Operand{}};
    } else {
      in.src = {uniformOperand(), uniformOperand(), Operand{}};
    }
    g.block.ops.push_back(in);
    g.preds |= static_cast<uint8_t>(1u << in.dstPred);
    return in.dstPred;
  }

  // `count` trace records (machine::blockRecords: an atomic or a multiply with a register
  // destination writes two, and a block holds 16 records), so opCount's room for the structural ops
  // holds.
  void randomOps(BlockGen& g, int count) {
    const int limit = blockRecords(g.block) + count;
    while (blockRecords(g.block) < limit) randomOp(g, limit - blockRecords(g.block));
  }

  // One op from the table (plus up to two address ops before it, within `room` records).
  void randomOp(BlockGen& g, int room) {
    const int before = blockRecords(g.block);
    std::array<uint32_t, kNumClasses> w = {pol_.wAlu, pol_.wCmp,   pol_.wSel, pol_.wPred,
                                           pol_.wMem, pol_.wLocal, pol_.wWarp};
    if (prog_.spillSlots == 0) w[static_cast<size_t>(OpClass::Local)] = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      if (ops_[k].empty()) w[k] = 0;
    }
    const int pick = rng_.weighted(w);
    if (pick < 0)
      generatorBug(header_, "no op class has weight (validate() should refuse)", nullptr);
    const auto cls = static_cast<OpClass>(pick);
    Op op = pickOp(cls);
    // Predicate sources must have been written earlier in the block: write one first.
    if (numPredSources(op) > 0 && g.preds == 0) {
      op = pickOp(OpClass::Cmp);
    }
    const OpInfo& info = opInfo(op);
    Instr in;
    in.op = op;
    // The shape every op shares, read from its table row.
    for (int s = 0; s < info.numSources; ++s) in.src[static_cast<size_t>(s)] = operand();
    for (int s = 0; s < info.numPredSources; ++s) in.psrc[static_cast<size_t>(s)] = writtenPred(g);
    if (info.dst == DstKind::Reg) in.dst = dstReg();
    if (info.dst == DstKind::Pred) in.dstPred = static_cast<uint8_t>(rng_.below(kPreds));
    // What a class adds to the shape.
    switch (info.cls) {
      case OpClass::Alu:
      case OpClass::Cmp:
      case OpClass::Sel:
        break;
      case OpClass::Pred:
        if (info.numSources > 0) in.src[0] = Operand::i(rng_.below(2));  // pconst: its value
        break;
      case OpClass::Mem:
        address(g, in, room);
        break;
      case OpClass::Local:
        in.offset = static_cast<int32_t>(rng_.below(prog_.spillSlots));
        break;
      case OpClass::Warp:
        if (info.numSources == 3) {  // shuffles: b = lane or offset, c = clamp and segment mask
          if (rng_.chance(0.7)) in.src[1] = Operand::i(rng_.below(5));
          if (rng_.chance(pol_.width4ShflProb))
            in.src[2] = Operand::i(rng_.chance(0.5) ? 0x1c1fu : 0x1c00u);
        }
        break;
      default:
        generatorBug(header_,
                     std::string("op class of '") + info.mnemonic + "' has no generator case",
                     nullptr);
    }
    if (g.preds != 0 && rng_.chance(pol_.guardProb))
      in.guard = Guard{writtenPred(g), rng_.chance(pol_.negateProb)};
    if (info.dst == DstKind::Pred) g.preds |= static_cast<uint8_t>(1u << in.dstPred);
    // An atomic's second record must fit the room too; into r0 it writes one.
    if (blockRecords(g.block) - before + recordsOf(in) > room) in.dst = 0;
    g.block.ops.push_back(in);
  }

  // Sets a memory op's space, src0 and offset; an indexed address adds two ops before it (and,
  // shl) when `room` allows. In range and aligned unless outOfRangeProb says otherwise.
  void address(BlockGen& g, Instr& in, int room) {
    const bool shared = prog_.sharedWords > 0 && rng_.chance(pol_.sharedProb);
    in.space = shared ? Space::Shared : Space::Global;
    const int words = shared ? prog_.sharedWords : kGlobalWords;
    // Bytes one lane accesses (4; st.b8 1, st.b16 2): the alignment an address must have.
    const int bytes = oracle::accessBytes(in.op);
    if (rng_.chance(pol_.outOfRangeProb)) {
      in.offset = 0;
      int kind = static_cast<int>(rng_.below(4));
      if (kind == 1 && bytes == 1) kind = 0;  // a byte address cannot be misaligned
      switch (kind) {
        case 0:  // just past the end
          in.src[0] = Operand::i(static_cast<uint32_t>(4 * (words + rng_.range(0, 7))));
          break;
        case 1:  // misaligned
          in.src[0] = Operand::i(static_cast<uint32_t>(
              4 * rng_.range(0, words - 1) + (bytes == 2 ? 1 + 2 * rng_.range(0, 1) : rng_.range(1, 3))));
          break;
        case 2:  // below zero
          in.src[0] = Operand::i(0);
          in.offset = -4 * rng_.range(1, 4);
          break;
        default:  // shared memory the program does not have, or the top of the address space
          if (prog_.sharedWords == 0) {
            in.space = Space::Shared;
            in.src[0] = Operand::i(0);
          } else {
            in.src[0] = Operand::i(0xfffffffcu);
          }
          break;
      }
      return;
    }
    const std::array<uint32_t, 3> w = {pol_.wConstAddr, pol_.wLaneAddr, pol_.wDataAddr};
    int pick = rng_.weighted(w);
    auto shape = pick < 0 ? AddrShape::Const : static_cast<AddrShape>(pick);
    if (room < 3) shape = AddrShape::Const;
    if (shape == AddrShape::Const) {
      const int word = rng_.range(0, words - 1);
      const int off = rng_.range(0, word);
      in.src[0] = rng_.chance(0.2) && off == word
                      ? Operand::r(0)
                      : Operand::i(static_cast<uint32_t>(4 * (word - off)));
      in.offset = 4 * off + subwordOffset(bytes);
      return;
    }
    // index = source & (2^k - 1), 2^k <= words; address = 4 * (base + index).
    int maxK = 0;
    while ((2 << maxK) <= words) ++maxK;
    const int k = rng_.range(0, maxK);
    const uint32_t mask = (1u << k) - 1;
    const int base = rng_.range(0, words - (1 << k));
    const Operand src = shape == AddrShape::Lane
                            ? Operand::s(rng_.chance(0.6) ? Special::TidX : Special::LaneId)
                            : Operand::r(static_cast<uint8_t>(rng_.below(kRegs)));
    const uint8_t t = dataReg();
    if (rng_.chance(0.5)) {
      g.block.ops.push_back(aluOp(Op::And, t, src, Operand::i(mask)));
      g.block.ops.push_back(aluOp(Op::Shl, t, Operand::r(t), Operand::i(2)));
    } else {
      g.block.ops.push_back(aluOp(Op::Shl, t, src, Operand::i(2)));
      g.block.ops.push_back(aluOp(Op::And, t, Operand::r(t), Operand::i(mask << 2)));
    }
    in.src[0] = Operand::r(t);
    in.offset = 4 * base + subwordOffset(bytes);
  }

  // A sub-word store's byte within its word (a multiple of `bytes`); 0 for a word access.
  int subwordOffset(int bytes) {
    return bytes < 4 ? bytes * static_cast<int>(rng_.below(static_cast<uint32_t>(4 / bytes))) : 0;
  }

  const Policy& pol_;
  const std::array<std::vector<Op>, kNumClasses>& ops_ = opsByClass();
  Rng rng_;
  std::string header_;
  Program prog_;
  std::vector<uint64_t> mult_;  // per block: executions per warp at most
  int reserved_ = 0;            // blocks promised to regions still to come
};


}  // namespace

Status validate(const Policy& p) {
  auto bad = [](const std::string& what) -> Status {
    return makeDiag(ErrorKind::Usage, "generator policy: " + what);
  };
#define QGPU_GEN_CHECK_PROB(type, name, def, doc)                                  \
  if constexpr (std::is_same_v<type, double>) {                                    \
    if (!(p.name >= 0.0 && p.name <= 1.0)) return bad(#name " must be in [0, 1]"); \
  }
  QGPU_GEN_POLICY_FIELDS(QGPU_GEN_CHECK_PROB)
#undef QGPU_GEN_CHECK_PROB
  if (p.maxRegions < 1) return bad("maxRegions must be >= 1");
  if (p.maxBlocks < 2 || p.maxBlocks > kMaxBlocks)
    return bad("maxBlocks must be in 2.." + std::to_string(kMaxBlocks));
  if (p.maxDepth < 0) return bad("maxDepth must be >= 0");
  if (p.maxArmRegions < 1) return bad("maxArmRegions must be >= 1");
  if (p.minOps < 0 || p.maxOps < p.minOps || p.maxOps > kMaxOpsPerBlock)
    return bad("need 0 <= minOps <= maxOps <= " + std::to_string(kMaxOpsPerBlock));
  if (p.maxTrips < 1 || p.maxTrips > 1000) return bad("maxTrips must be in 1..1000");
  if (p.wAlu + p.wCmp + p.wSel + p.wPred + p.wMem + p.wWarp == 0)
    return bad("every op class but Local has weight 0");
  if (p.maxSharedWords < 0 || p.maxSharedWords > kSharedWords)
    return bad("maxSharedWords must be in 0.." + std::to_string(kSharedWords));
  if (p.maxSpillSlots < 0 || p.maxSpillSlots > kSharedWords)
    return bad("maxSpillSlots must be in 0.." + std::to_string(kSharedWords));
  if (p.minGrid < 1 || p.maxGrid < p.minGrid || p.maxGrid > static_cast<uint32_t>(kMaxGridBlocks))
    return bad("need 1 <= minGrid <= maxGrid <= " + std::to_string(kMaxGridBlocks));
  if (p.minBlockX < 1 || p.maxBlockX < p.minBlockX ||
      p.maxBlockX > static_cast<uint32_t>(kMaxThreadsPerBlock))
    return bad("need 1 <= minBlockX <= maxBlockX <= " + std::to_string(kMaxThreadsPerBlock));
  return Ok{};
}

std::string describe(const Policy& policy, uint64_t seed) {
  std::string out = "qgpu-gen program v" + std::to_string(kGeneratorVersion) +
                    " seed=" + std::to_string(seed) + " policy:";
#define QGPU_GEN_DESCRIBE(type, name, def, doc) out += " " #name "=" + formatPolicyValue(policy.name);
  QGPU_GEN_POLICY_FIELDS(QGPU_GEN_DESCRIBE)
#undef QGPU_GEN_DESCRIBE
  return out;
}

Expected<Policy> parsePolicy(std::string_view text) {
  Policy policy;
  auto set = [&](std::string_view name, std::string_view value) -> std::optional<bool> {
#define QGPU_GEN_PARSE(type, field, def, doc) \
  if (name == #field) return parsePolicyValue(value, policy.field);
    QGPU_GEN_POLICY_FIELDS(QGPU_GEN_PARSE)
#undef QGPU_GEN_PARSE
    return std::nullopt;
  };
  QGPU_CHECK(readPolicyItems(text, "generator policy", set));
  QGPU_CHECK(validate(policy));
  return policy;
}

Expected<Case> generateProgram(const Policy& policy, uint64_t seed) {
  QGPU_CHECK(validate(policy));
  Case c = Generator(policy, seed, describe(policy, seed)).generate();
  const Status ok = verify(c.program, c.launch);
  if (!ok.ok()) generatorBug(c.header, "the case fails verify: " + ok.error().message, &c.program);
  return c;
}

}  // namespace qgpu::gen
