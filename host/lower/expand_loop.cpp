// qgpu/host/lower/expand_loop.cpp — see expand_loop.h.
#include "host/lower/expand_loop.h"

namespace qgpu::lower::expand {

using machine::Block;
using machine::Guard;
using machine::Instr;
using machine::kExitTarget;
using machine::kNoPred;
using machine::Op;
using machine::Operand;
using machine::OperandKind;
using machine::Program;
using machine::TermKind;
using machine::Terminator;

bool isReg(const Operand& o) { return o.kind == OperandKind::Reg && o.reg != 0; }
RegSet regBit(const Operand& o) { return isReg(o) ? RegSet{1} << o.reg : 0; }

Instr alu(Op op, uint8_t dst, Operand a, Operand b, Operand c) {
  Instr in;
  in.op = op;
  in.dst = dst;
  in.src = {a, b, c};
  return in;
}
Instr cmp(Op op, uint8_t p, Operand a, Operand b) {
  Instr in;
  in.op = op;
  in.dstPred = p;
  in.src = {a, b, Operand{}};
  return in;
}
Instr pred2(Op op, uint8_t d, uint8_t a, uint8_t b) {
  Instr in;
  in.op = op;
  in.dstPred = d;
  in.psrc = {a, b};
  return in;
}
Instr pnot(uint8_t d, uint8_t a) {
  Instr in;
  in.op = Op::PNot;
  in.dstPred = d;
  in.psrc = {a, kNoPred};
  return in;
}
Instr selp(uint8_t dst, Operand a, Operand b, uint8_t p) {
  Instr in;
  in.op = Op::Selp;
  in.dst = dst;
  in.src = {a, b, Operand{}};
  in.psrc = {p, kNoPred};
  return in;
}
Instr guarded(Instr in, uint8_t p, bool negate) {
  in.guard = Guard{p, negate};
  return in;
}

int countOps(const Program& p) {
  int n = 0;
  for (const Block& b : p.blocks) n += static_cast<int>(b.ops.size());
  return n;
}

namespace {

// ---- Liveness of registers per lane (a guarded write keeps the old value: it reads dst) ----

void transfer(const Instr& in, RegSet& live) {
  const bool isGuarded = in.guard.pred != kNoPred;
  RegSet use = 0, def = 0;
  for (int s = 0; s < machine::numGeneralSources(in.op); ++s) use |= regBit(in.src[static_cast<size_t>(s)]);
  if (machine::writesReg(in.op) && in.dst != 0) {
    if (isGuarded)
      use |= RegSet{1} << in.dst;
    else
      def |= RegSet{1} << in.dst;
  }
  live = (live & ~def) | use;
}

template <typename F>
void forSuccessors(const Terminator& t, F f) {
  if (t.kind == TermKind::Exit) return;
  if (t.next != kExitTarget) f(t.next);
  if (t.kind == TermKind::Branch && t.taken != kExitTarget) f(t.taken);
}

// Registers live out of each block (a fixed point over the CFG; tiny programs, so simple rounds).
std::vector<RegSet> liveOut(const Program& p) {
  const size_t n = p.blocks.size();
  std::vector<RegSet> in(n, 0), out(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = n; b-- > 0;) {
      RegSet o = 0;
      forSuccessors(p.blocks[b].term, [&](uint8_t s) { if (s < n) o |= in[s]; });
      RegSet live = o;
      for (size_t i = p.blocks[b].ops.size(); i-- > 0;) transfer(p.blocks[b].ops[i], live);
      if (o != out[b] || live != in[b]) changed = true;
      out[b] = o;
      in[b] = live;
    }
  }
  return out;
}

// The predicates the ops from `from` on (and the terminator) read before an unguarded write
// kills them. A guarded write keeps the old bits in its guard-false lanes, so it reads them.
PredSet readBeforeKill(const Block& blk, size_t from) {
  PredSet kill = 0, read = 0;
  auto use = [&](uint8_t p) {
    if (p != kNoPred && !(kill >> p & 1)) read |= PredSet{1} << p;
  };
  for (size_t i = from; i < blk.ops.size(); ++i) {
    const Instr& in = blk.ops[i];
    use(in.guard.pred);
    for (int s = 0; s < machine::numPredSources(in.op); ++s) use(in.psrc[static_cast<size_t>(s)]);
    if (machine::writesPred(in.op)) {
      if (in.guard.pred != kNoPred)
        use(in.dstPred);
      else
        kill |= PredSet{1} << in.dstPred;
    }
  }
  if (blk.term.kind == TermKind::Branch) use(blk.term.pred);
  return read;
}

PredSet writtenBefore(const Block& blk, size_t until) {
  PredSet w = 0;
  for (size_t i = 0; i < until; ++i)
    if (machine::writesPred(blk.ops[i].op)) w |= PredSet{1} << blk.ops[i].dstPred;
  return w;
}

}  // namespace

Splicer::Splicer(Program p, const std::vector<std::vector<SourceLoc>>* opLocs,
                 bool (*replaced)(machine::Op))
    : p_(std::move(p)), replaced_(replaced) {
  bool fits = opLocs != nullptr && opLocs->size() == p_.blocks.size();
  for (size_t b = 0; fits && b < p_.blocks.size(); ++b) fits = (*opLocs)[b].size() == p_.blocks[b].ops.size();
  if (fits) {
    locs_ = *opLocs;
  } else {
    locs_.resize(p_.blocks.size());
    for (size_t b = 0; b < p_.blocks.size(); ++b) locs_[b].resize(p_.blocks[b].ops.size());
  }
}

Diag Splicer::overLimit(size_t b, size_t i, const std::string& loop, const std::string& why) const {
  const Instr& d = p_.blocks[b].ops[i];
  const SourceLoc& at = locs_[b][i];
  std::string where = "kernel `" + p_.name + "`: expanding `" + machine::print(d) + "` (block " +
                      std::to_string(b) + " op " + std::to_string(i);
  if (at.line != 0) where += ", PTX line " + std::to_string(at.line);
  return makeDiag(ErrorKind::OverLimit, where + ") into " + loop + ": " + why, at);
}

void Splicer::erase(size_t b, size_t i) {
  p_.blocks[b].ops.erase(p_.blocks[b].ops.begin() + static_cast<long>(i));
  locs_[b].erase(locs_[b].begin() + static_cast<long>(i));
}

void Splicer::replace(size_t b, size_t i, std::vector<Instr> ops) {
  const SourceLoc at = locs_[b][i];
  erase(b, i);
  p_.blocks[b].ops.insert(p_.blocks[b].ops.begin() + static_cast<long>(i), ops.begin(), ops.end());
  locs_[b].insert(locs_[b].begin() + static_cast<long>(i), ops.size(), at);
}

Status Splicer::roomForLoop(size_t b, size_t i, const std::string& loopName) const {
  if (p_.blocks.size() + 2 > static_cast<size_t>(machine::kMaxBlocks))
    return overLimit(b, i, loopName, "the program would need " + std::to_string(p_.blocks.size() + 2) +
                                         " program blocks; the machine has " + std::to_string(machine::kMaxBlocks));
  return Ok{};
}

std::vector<uint8_t> Splicer::deadAfter(size_t b, size_t i, RegSet taken) const {
  const Block& blk = p_.blocks[b];
  RegSet live = liveOut(p_)[b];
  for (size_t k = blk.ops.size(); k-- > i + 1;) transfer(blk.ops[k], live);
  taken |= live | 1u;
  std::vector<uint8_t> out;
  for (uint8_t r = 1; r < machine::kRegs; ++r)
    if (!(taken >> r & 1)) out.push_back(r);
  return out;
}

PredSet Splicer::readAfter(size_t b, size_t i) const { return readBeforeKill(p_.blocks[b], i + 1); }

int Splicer::records(const std::vector<Instr>& ops) const {
  int n = 0;
  for (const Instr& in : ops)
    n += replaced_ != nullptr && replaced_(in.op) ? 1 : machine::recordsOf(in);
  return n;
}

PredSet Splicer::mustSave(size_t b, size_t i) const {
  const Block& blk = p_.blocks[b];
  PredSet save = readAfter(b, i) & writtenBefore(blk, i);
  if (blk.ops[i].guard.pred != kNoPred) save |= PredSet{1} << blk.ops[i].guard.pred;
  return save;
}

Status Splicer::split(size_t b, size_t i, size_t skip, std::vector<Instr> setup, Block loop, uint8_t loopPred,
                      std::vector<Instr> finish, const std::string& loopName) {
  QGPU_CHECK(roomForLoop(b, i, loopName));
  const Block& blk = p_.blocks[b];
  const SourceLoc at = locs_[b][i];
  std::vector<Instr> head(blk.ops.begin(), blk.ops.begin() + static_cast<long>(i));
  head.insert(head.end(), setup.begin(), setup.end());
  const size_t added = finish.size();  // the continuation's own ops, before the ops after the op
  std::vector<Instr> cont = std::move(finish);
  for (size_t k = i + 1; k < blk.ops.size(); ++k)
    if (k != skip) cont.push_back(blk.ops[k]);
  // A block holds kMaxOpsPerBlock trace records (records(): an atomic or a multiply into a
  // register writes two).
  auto tooMany = [&](const std::string& what, int records) {
    return overLimit(b, i, loopName,
                     what + " need " + std::to_string(records) +
                         " records in one block; a block holds " +
                         std::to_string(machine::kMaxOpsPerBlock));
  };
  if (const int n = records(head); n > machine::kMaxOpsPerBlock)
    return tooMany("the ops before it and its setup", n);
  if (const int n = records(cont); n > machine::kMaxOpsPerBlock)
    return tooMany("its result and the ops after it", n);

  // Blocks after b move up by 2 (the loop at b + 1, the continuation at b + 2); a target b
  // stays b: the head is where the block starts.
  auto shift = [&](uint8_t& t) {
    if (t != kExitTarget && t > b) t = static_cast<uint8_t>(t + 2);
  };
  for (Block& x : p_.blocks) {
    if (x.term.kind == TermKind::Exit) continue;
    shift(x.term.next);
    if (x.term.kind == TermKind::Branch) shift(x.term.taken);
  }
  const auto loopIndex = static_cast<uint8_t>(b + 1);
  loop.term = Terminator{TermKind::Branch, loopPred, false, loopIndex, static_cast<uint8_t>(b + 2)};
  Block contBlock{std::move(cont), p_.blocks[b].term};
  Block headBlock{std::move(head), Terminator{TermKind::Jump, kNoPred, false, 0, loopIndex}};

  std::vector<SourceLoc> headLocs(locs_[b].begin(), locs_[b].begin() + static_cast<long>(i));
  headLocs.resize(headBlock.ops.size(), at);
  std::vector<SourceLoc> contLocs(added, at);
  for (size_t k = i + 1; k < locs_[b].size(); ++k)
    if (k != skip) contLocs.push_back(locs_[b][k]);
  std::vector<SourceLoc> loopLocs(loop.ops.size(), at);

  p_.blocks[b] = std::move(headBlock);
  p_.blocks.insert(p_.blocks.begin() + static_cast<long>(b) + 1, {std::move(loop), std::move(contBlock)});
  locs_[b] = std::move(headLocs);
  locs_.insert(locs_.begin() + static_cast<long>(b) + 1, {std::move(loopLocs), std::move(contLocs)});
  return Ok{};
}

std::vector<Instr> saveOps(const std::vector<std::pair<uint8_t, uint8_t>>& saved) {
  std::vector<Instr> out;
  for (auto [q, t] : saved) out.push_back(selp(t, I(1), I(0), q));
  return out;
}

std::vector<Instr> reloadOps(const std::vector<std::pair<uint8_t, uint8_t>>& saved) {
  std::vector<Instr> out;
  for (auto [q, t] : saved) out.push_back(cmp(Op::SetNe, q, R(t), I(0)));
  return out;
}

}  // namespace qgpu::lower::expand
