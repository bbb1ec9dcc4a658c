// qgpu/host/lower/translate_convert.cpp — predicate logic, setp, cvt, cvta, mov and selp: the
// instructions that move or convert values between widths and between predicates and values.
#include "host/lower/translate.h"

namespace qgpu::lower::tr {
namespace {

using machine::Op;
using ptx::CmpOp;
using ptx::Opcode;
using ptx::OperandKind;

Status need(Ctx& c, size_t nd, size_t ns) {
  if (c.in->dsts.size() < nd || c.in->srcs.size() != ns) return c.invalid("wrong operand count");
  return Ok{};
}

Status predicateLogic(Ctx& c) {
  const auto& in = *c.in;
  const Opcode op = in.op;
  Emitter& em = c.em;
  QGPU_CHECK(need(c, 1, op == Opcode::Not || op == Opcode::Mov ? 1 : 2));
  QGPU_TRY(d, c.predOf(in.dsts[0]));
  if (op == Opcode::Mov && in.srcs[0].kind == OperandKind::Imm) {
    VInstr v;
    v.op = Op::PConst;
    v.dstPred = d;
    v.src[0] = VOperand::i(in.srcs[0].imm != 0 ? 1 : 0);
    em.emit(v);
    return Ok{};
  }
  QGPU_TRY(a, c.predOf(in.srcs[0]));
  switch (op) {
    case Opcode::Mov: em.pop(Op::PMov, d, a); return Ok{};
    case Opcode::Not: em.pop(Op::PNot, d, a); return Ok{};
    case Opcode::And: case Opcode::Or: case Opcode::Xor: {
      QGPU_TRY(b, c.predOf(in.srcs[1]));
      em.pop(op == Opcode::And ? Op::PAnd : op == Opcode::Or ? Op::POr : Op::PXor, d, a, b);
      return Ok{};
    }
    default:
      return c.unsupported(std::string(ptx::spelling(op)) + " on predicates");
  }
}

Status setp(Ctx& c, int w, bool sgn) {
  const auto& in = *c.in;
  Emitter& em = c.em;
  if (in.srcs.size() != 2 || in.dsts.empty() || in.dsts.size() > 2) return c.unsupported("setp with a boolean combination");
  QGPU_TRY(p, c.predOf(in.dsts[0]));
  auto cmp = in.mods.cmp;
  Op mop;
  bool unsignedCmp = !sgn || cmp == CmpOp::Lo || cmp == CmpOp::Ls || cmp == CmpOp::Hi || cmp == CmpOp::Hs;
  switch (cmp) {
    case CmpOp::Eq: mop = Op::SetEq; break;
    case CmpOp::Ne: mop = Op::SetNe; break;
    case CmpOp::Lt: case CmpOp::Lo: mop = unsignedCmp ? Op::SetLtU : Op::SetLtS; break;
    case CmpOp::Le: case CmpOp::Ls: mop = unsignedCmp ? Op::SetLeU : Op::SetLeS; break;
    case CmpOp::Gt: case CmpOp::Hi: mop = unsignedCmp ? Op::SetGtU : Op::SetGtS; break;
    case CmpOp::Ge: case CmpOp::Hs: mop = unsignedCmp ? Op::SetGeU : Op::SetGeS; break;
    default: return c.unsupported("setp comparison");
  }
  if (w == 64) {
    if (mop != Op::SetEq && mop != Op::SetNe) return c.unsupported("64-bit ordered comparison");
    QGPU_TRY(al, c.val(in.srcs[0], 64));
    QGPU_TRY(bl, c.val(in.srcs[1], 64));
    QGPU_TRY(ah, c.valHi(in.srcs[0]));
    QGPU_TRY(bh, c.valHi(in.srcs[1]));
    int p1 = em.newPred();
    int p2 = em.newPred();
    em.cmp(mop, p1, al, bl);
    em.cmp(mop, p2, ah, bh);
    em.pop(mop == Op::SetEq ? Op::PAnd : Op::POr, p, p1, p2);
  } else {
    QGPU_TRY(a, c.val(in.srcs[0], w));
    QGPU_TRY(b, c.val(in.srcs[1], w));
    if (w == 16 && sgn && mop != Op::SetEq && mop != Op::SetNe && !unsignedCmp) {
      a = em.sext16(a);
      b = em.sext16(b);
    }
    em.cmp(mop, p, a, b);
  }
  if (in.dsts.size() == 2) {
    QGPU_TRY(q, c.predOf(in.dsts[1]));
    em.pop(Op::PNot, q, p);
  }
  return Ok{};
}

Status cvta(Ctx& c) {
  const auto& in = *c.in;
  QGPU_CHECK(need(c, 1, 1));
  if (in.mods.space != ptx::StateSpace::Global)
    return c.unsupported("cvta of a non-global space (shared/local windows have no generic address here)");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  QGPU_TRY(a, c.val(in.srcs[0], 64));
  c.em.alu(Op::Mov, d.lo, a);
  if (d.wantsHi()) {
    QGPU_TRY(ah, c.valHi(in.srcs[0]));
    c.writeHi(d, ah);
  }
  return Ok{};
}

Status cvt(Ctx& c) {
  const auto& in = *c.in;
  Emitter& em = c.em;
  if (in.types.size() != 2) return c.unsupported("cvt form");
  QGPU_CHECK(need(c, 1, 1));
  int wd = typeBits(in.types[0]);
  int ws = typeBits(in.types[1]);
  if (wd < 16 || ws < 16) return c.unsupported("8-bit conversion");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  QGPU_TRY(a, c.val(in.srcs[0], ws == 16 ? 16 : 32));
  bool ssrc = typeSigned(in.types[1]);
  VOperand v32 = a;  // the source, extended to 32 bits per its type
  if (ws == 16 && ssrc && wd > 16) v32 = em.sext16(a);
  if (wd == 16) {
    if (ws == 16 && a.isReg() && in.srcs[0].kind == OperandKind::Reg && c.regBits(in.srcs[0]) == 16) em.alu(Op::Mov, d.lo, a);
    else em.alu(Op::And, d.lo, a, VOperand::i(0xffff));
    return Ok{};
  }
  em.alu(Op::Mov, d.lo, v32);
  if (wd == 64 && d.wantsHi()) {
    if (ws == 64) {
      QGPU_TRY(ah, c.valHi(in.srcs[0]));
      c.writeHi(d, ah);
    } else if (ssrc) {
      em.alu(Op::ShrS, d.hi(), v32, VOperand::i(31));
    } else {
      c.writeHi(d, VOperand::i(0));
    }
  }
  return Ok{};
}

Status selp(Ctx& c, int w) {
  const auto& in = *c.in;
  QGPU_CHECK(need(c, 1, 3));
  QGPU_TRY(d, c.dest(in.dsts[0]));
  QGPU_TRY(a, c.val(in.srcs[0], w));
  QGPU_TRY(b, c.val(in.srcs[1], w));
  QGPU_TRY(p, c.predOf(in.srcs[2]));
  if (w == 64 && d.wantsHi()) {
    QGPU_TRY(ah, c.valHi(in.srcs[0]));
    QGPU_TRY(bh, c.valHi(in.srcs[1]));
    c.em.selp(d.hi(), ah, bh, p);
  }
  c.em.selp(d.lo, a, b, p);
  return Ok{};
}

Status mov(Ctx& c, int w) {
  const auto& in = *c.in;
  QGPU_CHECK(need(c, 1, 1));
  QGPU_TRY(d, c.dest(in.dsts[0]));
  QGPU_TRY(a, c.val(in.srcs[0], w));
  if (w == 64 && d.wantsHi()) {
    QGPU_TRY(ah, c.valHi(in.srcs[0]));
    c.writeHi(d, ah);
  }
  c.em.alu(Op::Mov, d.lo, a);
  return Ok{};
}

}  // namespace

Expected<bool> translateConvert(Ctx& c) {
  const auto& in = *c.in;
  int w = typeBits(in.types[0]);
  bool sgn = typeSigned(in.types[0]);
  if (w == 1) {
    QGPU_CHECK(predicateLogic(c));
    return true;
  }
  switch (in.op) {
    case Opcode::Setp: QGPU_CHECK(setp(c, w, sgn)); return true;
    case Opcode::Cvta: QGPU_CHECK(cvta(c)); return true;
    case Opcode::Cvt: QGPU_CHECK(cvt(c)); return true;
    case Opcode::Selp: QGPU_CHECK(selp(c, w)); return true;
    case Opcode::Mov: QGPU_CHECK(mov(c, w)); return true;
    default: return false;
  }
}

}  // namespace qgpu::lower::tr
