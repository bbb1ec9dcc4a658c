// qgpu/host/lower/translate_emit.cpp — the Emitter: VIR ops into the current block, each carrying
// the guard and source location of the PTX instruction being translated.
#include "host/lower/translate.h"

namespace qgpu::lower::tr {

using machine::Op;

int Emitter::newBlock() {
  out_.blocks.emplace_back();
  open_.push_back(true);
  return static_cast<int>(out_.blocks.size() - 1);
}

void Emitter::terminateBlock(int block, VTerm t) {
  out_.blocks[static_cast<size_t>(block)].term = t;
  open_[static_cast<size_t>(block)] = false;
}

void Emitter::setContext(int guard, bool guardNeg, SourceLoc loc) {
  guard_ = guard;
  guardNeg_ = guardNeg;
  loc_ = std::move(loc);
}

void Emitter::emit(VInstr v) {
  v.guard = guard_;
  v.guardNeg = guardNeg_;
  v.loc = loc_;
  out_.blocks[static_cast<size_t>(cur_)].ops.push_back(v);
}

void Emitter::emitGuarded(VInstr v, int guard, bool guardNeg) {
  v.guard = guard;
  v.guardNeg = guard != kNone && guardNeg;
  v.loc = loc_;
  out_.blocks[static_cast<size_t>(cur_)].ops.push_back(v);
}

void Emitter::alu(Op op, int dst, VOperand a, VOperand b, VOperand c) {
  VInstr v;
  v.op = op;
  v.dst = dst;
  v.src = {a, b, c};
  emit(v);
}

void Emitter::cmp(Op op, int dstPred, VOperand a, VOperand b) {
  VInstr v;
  v.op = op;
  v.dstPred = dstPred;
  v.src = {a, b, {}};
  emit(v);
}

void Emitter::selp(int dst, VOperand a, VOperand b, int p) {
  VInstr v;
  v.op = Op::Selp;
  v.dst = dst;
  v.src = {a, b, {}};
  v.psrc = {p, kNone};
  emit(v);
}

void Emitter::pop(Op op, int dstPred, int a, int b) {
  VInstr v;
  v.op = op;
  v.dstPred = dstPred;
  v.psrc = {a, b};
  emit(v);
}

void Emitter::alu16(Op op, int dst, VOperand a, VOperand b, VOperand c) {
  int t = tmp();
  alu(op, t, a, b, c);
  alu(Op::And, dst, VOperand::r(t), VOperand::i(0xffff));
}

VOperand Emitter::sext16(VOperand a) {
  if (a.isImm()) return VOperand::i(static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(a.imm))));
  int t = tmp();
  alu(Op::BfeS, t, a, VOperand::i(0), VOperand::i(16));
  return VOperand::r(t);
}

}  // namespace qgpu::lower::tr
