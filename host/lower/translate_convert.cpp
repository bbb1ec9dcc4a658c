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
  const bool logic = op == Opcode::And || op == Opcode::Or || op == Opcode::Xor;
  if (logic && (in.srcs[0].kind == OperandKind::Imm || in.srcs[1].kind == OperandKind::Imm)) {
    // A constant operand (clang-14 negates with `xor.pred %p, %q, -1`): 0 is false; 1 and -1 (all
    // bits set) are true on every reading of a predicate immediate; other values are refused.
    auto truth = [&](const ptx::Operand& o) -> Expected<bool> {
      if (o.imm != 0 && o.imm != 1 && o.imm != -1) return c.unsupported("a predicate constant other than 0, 1 or -1");
      return o.imm != 0;
    };
    auto constant = [&](bool value) -> Status {
      VInstr v;
      v.op = Op::PConst;
      v.dstPred = d;
      v.src[0] = VOperand::i(value ? 1 : 0);
      em.emit(v);
      return Ok{};
    };
    const bool constFirst = in.srcs[0].kind == OperandKind::Imm;
    const ptx::Operand& x = in.srcs[constFirst ? 1 : 0];
    QGPU_TRY(k, truth(in.srcs[constFirst ? 0 : 1]));
    if (x.kind == OperandKind::Imm) {  // both constant: fold
      QGPU_TRY(y, truth(x));
      return constant(op == Opcode::And ? (k && y) : op == Opcode::Or ? (k || y) : (k != y));
    }
    QGPU_TRY(a, c.predOf(x));
    if (op == Opcode::And && !k) return constant(false);
    if (op == Opcode::Or && k) return constant(true);
    em.pop(op == Opcode::Xor && k ? Op::PNot : Op::PMov, d, a);  // and 1, or 0, xor 0: a copy
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
    QGPU_TRY(al, c.val(in.srcs[0], 64));
    QGPU_TRY(bl, c.val(in.srcs[1], 64));
    QGPU_TRY(ah, c.valHi(in.srcs[0]));
    QGPU_TRY(bh, c.valHi(in.srcs[1]));
    if (mop != Op::SetEq && mop != Op::SetNe) {
      compare64(c, mop, p, al, ah, bl, bh);
    } else {
      int p1 = em.newPred();
      int p2 = em.newPred();
      em.cmp(mop, p1, al, bl);
      em.cmp(mop, p2, ah, bh);
      em.pop(mop == Op::SetEq ? Op::PAnd : Op::POr, p, p1, p2);
    }
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

// cvta: global addresses are generic addresses (the identity, either way); the shared window sits
// at kSharedWindow of the generic space (docs/lowering.md, "Generic addresses"): cvta.shared adds
// it, cvta.to.shared subtracts it, in the register's width (.u32 forms: mod 2^32). .local and
// .const have no window here.
Status cvta(Ctx& c) {
  const auto& in = *c.in;
  QGPU_CHECK(need(c, 1, 1));
  const auto space = in.mods.space;
  if (space != ptx::StateSpace::Global && space != ptx::StateSpace::Shared && space != ptx::StateSpace::Local)
    return c.unsupported(std::string("cvta of the .") + (space == ptx::StateSpace::Const ? "const" : "param") +
                         " space (only .global, .shared and .local have a generic window here)");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  QGPU_TRY(a, c.val(in.srcs[0], 64));
  QGPU_TRY(ah, c.valHi(in.srcs[0]));
  if (space == ptx::StateSpace::Global) {
    c.em.alu(Op::Mov, d.lo, a);
    if (d.wantsHi()) c.writeHi(d, ah);
    return Ok{};
  }
  // The window base of the space: shared 2^31, local kLocalWindow (docs/lowering.md, "Local memory").
  const uint32_t base = space == ptx::StateSpace::Local ? kLocalWindow : kSharedWindow;
  if (c.regBits(in.dsts[0]) != 64) {  // 32-bit generic addresses: the low word alone
    c.em.alu(Op::Add, d.lo, a, VOperand::i(in.mods.toSpace ? 0u - base : base));  // mod 2^32
    return Ok{};
  }
  const uint64_t k = in.mods.toSpace ? ~uint64_t{base} + 1 : uint64_t{base};
  addConstant64(c, d, a, ah, k);
  return Ok{};
}

// cvt.dtype.stype d, a: the source's low |stype| bits extended per stype, truncated to |dtype|
// bits and extended per dtype into d's register (ptxas lets d be wider than dtype and a wider
// than stype). 16-bit registers hold their value zero-extended to 32 bits; 8-bit values live in
// 16- or 32-bit registers (the front end has no 8-bit arithmetic).
Status cvt(Ctx& c) {
  const auto& in = *c.in;
  Emitter& em = c.em;
  if (in.types.size() != 2) return c.unsupported("cvt form");
  QGPU_CHECK(need(c, 1, 1));
  const int wd = typeBits(in.types[0]);
  const int ws = typeBits(in.types[1]);
  const bool sd = typeSigned(in.types[0]);
  const bool ss = typeSigned(in.types[1]);
  QGPU_TRY(d, c.dest(in.dsts[0]));
  const int rd = c.regBits(in.dsts[0]);
  QGPU_TRY(a, c.val(in.srcs[0], ws == 16 ? 16 : 32));
  if (wd == 16 && rd == 16 && ws >= 16) {  // the low 16 bits do not depend on the extension
    if (ws == 16 && a.isReg() && in.srcs[0].kind == OperandKind::Reg && c.regBits(in.srcs[0]) == 16) em.alu(Op::Mov, d.lo, a);
    else em.alu(Op::And, d.lo, a, VOperand::i(0xffff));
    return Ok{};
  }
  // v: the source extended per stype to 32 bits (for ws = 64: its low word).
  VOperand v = a;
  if (ws == 16 && ss) {
    v = em.sext16(a);
  } else if (ws == 8) {
    int t = em.tmp();
    if (ss) em.alu(Op::BfeS, t, a, VOperand::i(0), VOperand::i(8));
    else em.alu(Op::And, t, a, VOperand::i(0xff));
    v = VOperand::r(t);
  }
  if (wd < 32) {
    // Truncated to wd bits, extended per dtype into the register (zero-extended in a 16-bit one).
    const uint32_t mask = wd == 8 ? 0xffu : 0xffffu;
    if (!sd || (rd == 16 && wd == 16)) {
      em.alu(Op::And, d.lo, v, VOperand::i(mask));
    } else if (rd == 16) {  // cvt.s8.*: the byte sign-extended to 16 bits
      int t = em.tmp();
      em.alu(Op::BfeS, t, v, VOperand::i(0), VOperand::i(static_cast<uint32_t>(wd)));
      em.alu(Op::And, d.lo, VOperand::r(t), VOperand::i(0xffff));
    } else {
      em.alu(Op::BfeS, d.lo, v, VOperand::i(0), VOperand::i(static_cast<uint32_t>(wd)));
    }
    if (rd == 64 && d.wantsHi()) {
      if (sd) em.alu(Op::ShrS, d.hi(), VOperand::r(d.lo), VOperand::i(31));
      else c.writeHi(d, VOperand::i(0));
    }
    return Ok{};
  }
  if (rd == 64 && d.wantsHi()) {  // written before the low half: d may be the source
    if (wd == 64 && ws == 64) {
      QGPU_TRY(ah, c.valHi(in.srcs[0]));
      c.writeHi(d, ah);
    } else if (wd == 64 ? ss : sd) {  // extended per stype to 64 bits, or per dtype into the register
      em.alu(Op::ShrS, d.hi(), v, VOperand::i(31));
    } else {
      c.writeHi(d, VOperand::i(0));
    }
  }
  em.alu(Op::Mov, d.lo, v);
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
