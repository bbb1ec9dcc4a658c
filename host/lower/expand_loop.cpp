// qgpu/host/lower/expand_loop.cpp — see expand_loop.h.
#include "host/lower/expand_loop.h"

#include <algorithm>
#include <iterator>

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

void Splicer::useSpillSlots(int slots) {
  p_.spillSlots = static_cast<uint8_t>(std::max<int>(p_.spillSlots, slots));
}

void Splicer::replace(size_t b, size_t i, std::vector<Instr> ops) {
  const SourceLoc at = locs_[b][i];
  erase(b, i);
  p_.blocks[b].ops.insert(p_.blocks[b].ops.begin() + static_cast<long>(i), ops.begin(), ops.end());
  locs_[b].insert(locs_[b].begin() + static_cast<long>(i), ops.size(), at);
}

Status Splicer::roomForLoop(size_t b, size_t i, const std::string& loopName) const {
  return roomForBlocks(b, i, loopName, 2);
}

Status Splicer::roomForBlocks(size_t b, size_t i, const std::string& name, size_t extra) const {
  if (p_.blocks.size() + extra > static_cast<size_t>(machine::kMaxBlocks))
    return overLimit(b, i, name,
                     "the program would need " + std::to_string(p_.blocks.size() + extra) +
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

Diag Splicer::tooManyRecords(size_t b, size_t i, const std::string& name, const std::string& what,
                             int records) const {
  // A block holds kMaxOpsPerBlock trace records (records(): an atomic or a multiply into a
  // register writes two).
  return overLimit(b, i, name,
                   what + " need " + std::to_string(records) +
                       " records in one block; a block holds " +
                       std::to_string(machine::kMaxOpsPerBlock));
}

void Splicer::insertAfter(size_t b, std::vector<Block> extra,
                          std::vector<std::vector<SourceLoc>> extraLocs) {
  const size_t n = extra.size();
  // A target b stays b: the block's first part keeps its index.
  auto shift = [&](uint8_t& t) {
    if (t != kExitTarget && t > b) t = static_cast<uint8_t>(t + n);
  };
  auto shiftTargets = [&](Block& x) {
    if (x.term.kind == TermKind::Exit) return;
    shift(x.term.next);
    if (x.term.kind == TermKind::Branch) shift(x.term.taken);
  };
  std::ranges::for_each(p_.blocks, shiftTargets);
  std::ranges::for_each(extra, shiftTargets);
  p_.blocks.insert(p_.blocks.begin() + static_cast<long>(b) + 1,
                   std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  locs_.insert(locs_.begin() + static_cast<long>(b) + 1, std::make_move_iterator(extraLocs.begin()),
               std::make_move_iterator(extraLocs.end()));
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
  if (const int n = records(head); n > machine::kMaxOpsPerBlock)
    return tooManyRecords(b, i, loopName, "the ops before it and its setup", n);
  if (const int n = records(cont); n > machine::kMaxOpsPerBlock)
    return tooManyRecords(b, i, loopName, "its result and the ops after it", n);

  // The loop at b + 1, the continuation at b + 2 (targets written as they will be: insertAfter
  // moves only the targets past b, and these are set after it).
  std::vector<SourceLoc> headLocs(locs_[b].begin(), locs_[b].begin() + static_cast<long>(i));
  headLocs.resize(head.size(), at);
  std::vector<SourceLoc> contLocs(added, at);
  for (size_t k = i + 1; k < locs_[b].size(); ++k)
    if (k != skip) contLocs.push_back(locs_[b][k]);
  std::vector<SourceLoc> loopLocs(loop.ops.size(), at);
  const Terminator term = blk.term;
  Block contBlock{std::move(cont), term};
  p_.blocks[b] = Block{std::move(head), Terminator{TermKind::Jump, kNoPred, false, 0, 0}};
  locs_[b] = std::move(headLocs);
  insertAfter(b, {std::move(loop), std::move(contBlock)},
              {std::move(loopLocs), std::move(contLocs)});
  const auto loopIndex = static_cast<uint8_t>(b + 1);
  p_.blocks[b].term.next = loopIndex;
  p_.blocks[b + 1].term =
      Terminator{TermKind::Branch, loopPred, false, loopIndex, static_cast<uint8_t>(b + 2)};
  return Ok{};
}

Status Splicer::splitStraight(size_t b, size_t i, std::vector<Instr> setup, std::vector<Instr> body,
                              std::vector<Instr> finish, const std::string& name) {
  const Block& blk = p_.blocks[b];
  const SourceLoc at = locs_[b][i];
  std::vector<Instr> head(blk.ops.begin(), blk.ops.begin() + static_cast<long>(i));
  head.insert(head.end(), setup.begin(), setup.end());
  std::vector<Instr> tail = std::move(finish);  // the continuation after the body's rest
  const size_t added = tail.size();
  tail.insert(tail.end(), blk.ops.begin() + static_cast<long>(i) + 1, blk.ops.end());
  if (const int n = records(head); n > machine::kMaxOpsPerBlock)
    return tooManyRecords(b, i, name, "the ops before it and its setup", n);
  if (const int n = records(tail); n > machine::kMaxOpsPerBlock)
    return tooManyRecords(b, i, name, "its result and the ops after it", n);

  // Fill the head, then whole blocks, while the rest and the tail do not fit one block.
  std::vector<std::vector<Instr>> parts{std::move(head)};
  size_t next = 0;
  auto fill = [&](std::vector<Instr>& part) {
    for (int used = records(part); next < body.size(); ++next) {
      used += records({body[next]});
      if (used > machine::kMaxOpsPerBlock) break;
      part.push_back(body[next]);
    }
  };
  fill(parts.back());
  const int tailRecords = records(tail);
  auto restRecords = [&] {
    return records(std::vector<Instr>(body.begin() + static_cast<long>(next), body.end()));
  };
  while (restRecords() + tailRecords > machine::kMaxOpsPerBlock) {
    parts.emplace_back();
    fill(parts.back());
  }
  std::vector<Instr> cont(body.begin() + static_cast<long>(next), body.end());
  const size_t contBody = cont.size();
  cont.insert(cont.end(), tail.begin(), tail.end());
  parts.push_back(std::move(cont));
  QGPU_CHECK(roomForBlocks(b, i, name, parts.size() - 1));

  std::vector<std::vector<SourceLoc>> partLocs;
  for (const std::vector<Instr>& part : parts) partLocs.emplace_back(part.size(), at);
  std::copy(locs_[b].begin(), locs_[b].begin() + static_cast<long>(i), partLocs.front().begin());
  std::copy(locs_[b].begin() + static_cast<long>(i) + 1, locs_[b].end(),
            partLocs.back().begin() + static_cast<long>(contBody + added));
  const Terminator term = blk.term;
  std::vector<Block> extra;
  for (size_t k = 1; k < parts.size(); ++k)
    extra.push_back(Block{std::move(parts[k]), Terminator{TermKind::Jump, kNoPred, false, 0, 0}});
  extra.back().term = term;
  const size_t n = extra.size();
  p_.blocks[b] = Block{std::move(parts.front()), Terminator{TermKind::Jump, kNoPred, false, 0, 0}};
  locs_[b] = std::move(partLocs.front());
  partLocs.erase(partLocs.begin());
  insertAfter(b, std::move(extra), std::move(partLocs));
  for (size_t k = 0; k < n; ++k) p_.blocks[b + k].term.next = static_cast<uint8_t>(b + k + 1);
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
