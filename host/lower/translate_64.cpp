// qgpu/host/lower/translate_64.cpp — 64-bit arithmetic on (low, high) vreg pairs. The low half is
// always computed; the high half only where the destination wants it (Dest::wantsHi), and then
// exactly, or not at all (ValueMap::finish refuses the instruction).
#include <algorithm>
#include <optional>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {

using machine::Op;
using ptx::Opcode;
using ptx::OperandKind;

Status translate64(Ctx& c, Dest& d, const std::vector<VOperand>& s) {
  const auto& in = *c.in;
  const auto& m = in.mods;
  const Opcode op = in.op;
  Emitter& em = c.em;
  bool sgn = typeSigned(in.types[0]);
  auto nsrc = [&](size_t n) -> Status {
    if (s.size() != n) return c.invalid("wrong operand count");
    return Ok{};
  };
  auto hiOf = [&](size_t k) { return c.valHi(in.srcs[k]); };
  switch (op) {
    case Opcode::Add: case Opcode::Sub: {
      QGPU_CHECK(nsrc(2));
      Op aop = op == Opcode::Add ? Op::Add : Op::Sub;
      if (!d.wantsHi()) {
        em.alu(aop, d.lo, s[0], s[1]);
        return Ok{};
      }
      // A constant addend (a parameter's address, above all): its halves are immediates, so the
      // carry is one compare and a zero low half needs none.
      std::optional<uint64_t> k = c.constant(in.srcs[1]);
      size_t x = 0;  // the other operand
      if (!k && op == Opcode::Add) {
        k = c.constant(in.srcs[0]);
        x = 1;
      }
      if (k && (op == Opcode::Add || x == 0)) {
        // x + K = (xh + Kh + carry : xl + Kl); x - K = x + (-K).
        uint64_t add = op == Opcode::Add ? *k : ~*k + 1;
        auto kl = static_cast<uint32_t>(add);
        auto kh = static_cast<uint32_t>(add >> 32);
        QGPU_TRY(xh, hiOf(x));
        if (kl == 0) {
          int h = d.hi();  // written first: d may be x, whose low half is still to be read
          if (kh == 0) em.alu(Op::Mov, h, xh);
          else em.alu(Op::Add, h, xh, VOperand::i(kh));
          em.alu(Op::Mov, d.lo, s[x]);
          return Ok{};
        }
        int sum = em.tmp(), cv = em.tmp();
        int carry = em.newPred();
        em.alu(Op::Add, sum, s[x], VOperand::i(kl));
        em.cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::i(kl));
        em.selp(cv, VOperand::i(kh + 1), VOperand::i(kh), carry);
        em.alu(Op::Add, d.hi(), xh, VOperand::r(cv));
        em.alu(Op::Mov, d.lo, VOperand::r(sum));
        return Ok{};
      }
      QGPU_TRY(ah, hiOf(0));
      QGPU_TRY(bh, hiOf(1));
      int carry = em.newPred();
      if (op == Opcode::Add) {  // carry iff b > ~a
        int na = em.tmp();
        em.alu(Op::Not, na, s[0]);
        em.cmp(Op::SetGtU, carry, s[1], VOperand::r(na));
      } else {  // borrow iff a < b
        em.cmp(Op::SetLtU, carry, s[0], s[1]);
      }
      em.alu(aop, d.lo, s[0], s[1]);
      int h1 = em.tmp();
      int cv = em.tmp();
      em.alu(aop, h1, ah, bh);
      em.selp(cv, VOperand::i(1), VOperand::i(0), carry);
      em.alu(aop, d.hi(), VOperand::r(h1), VOperand::r(cv));
      return Ok{};
    }
    case Opcode::Mul: {
      if (!m.lo) return c.unsupported("64-bit mul.hi/mul.wide");
      QGPU_CHECK(nsrc(2));
      if (d.wantsHi()) {  // hi = mulhi(al, bl) + al*bh + ah*bl, written before lo (aliasing)
        QGPU_TRY(ah, hiOf(0));
        QGPU_TRY(bh, hiOf(1));
        int t1 = em.tmp();
        int t2 = em.tmp();
        em.alu(Op::MulHiU, t1, s[0], s[1]);
        em.alu(Op::Mad, t2, s[0], bh, VOperand::r(t1));
        em.alu(Op::Mad, d.hi(), ah, s[1], VOperand::r(t2));
      }
      em.alu(Op::Mul, d.lo, s[0], s[1]);
      return Ok{};
    }
    case Opcode::Mad: {
      if (!m.lo) return c.unsupported("64-bit mad.hi/mad.wide");
      QGPU_CHECK(nsrc(3));
      if (d.wantsHi()) {  // the mul.lo.u64 product plus c with carry, into temporaries first
        QGPU_TRY(ah, hiOf(0));
        QGPU_TRY(bh, hiOf(1));
        QGPU_TRY(ch, hiOf(2));
        int t1 = em.tmp(), t2 = em.tmp(), t3 = em.tmp(), prod = em.tmp(), sum = em.tmp(), cv = em.tmp(), h1 = em.tmp();
        int carry = em.newPred();
        em.alu(Op::MulHiU, t1, s[0], s[1]);
        em.alu(Op::Mad, t2, s[0], bh, VOperand::r(t1));
        em.alu(Op::Mad, t3, ah, s[1], VOperand::r(t2));
        em.alu(Op::Mul, prod, s[0], s[1]);
        em.alu(Op::Add, sum, VOperand::r(prod), s[2]);
        em.cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::r(prod));
        em.selp(cv, VOperand::i(1), VOperand::i(0), carry);
        em.alu(Op::Add, h1, VOperand::r(t3), ch);
        em.alu(Op::Add, d.hi(), VOperand::r(h1), VOperand::r(cv));
        em.alu(Op::Mov, d.lo, VOperand::r(sum));
        return Ok{};
      }
      em.alu(Op::Mad, d.lo, s[0], s[1], s[2]);
      return Ok{};
    }
    case Opcode::And: case Opcode::Or: case Opcode::Xor: {
      QGPU_CHECK(nsrc(2));
      Op mop = op == Opcode::And ? Op::And : op == Opcode::Or ? Op::Or : Op::Xor;
      if (d.wantsHi()) {
        QGPU_TRY(ah, hiOf(0));
        QGPU_TRY(bh, hiOf(1));
        em.alu(mop, d.hi(), ah, bh);
      }
      em.alu(mop, d.lo, s[0], s[1]);
      return Ok{};
    }
    case Opcode::Not: {
      QGPU_CHECK(nsrc(1));
      if (d.wantsHi()) {
        QGPU_TRY(ah, hiOf(0));
        em.alu(Op::Not, d.hi(), ah);
      }
      em.alu(Op::Not, d.lo, s[0]);
      return Ok{};
    }
    case Opcode::Shl: {
      QGPU_CHECK(nsrc(2));
      if (in.srcs[1].kind != OperandKind::Imm) {
        em.alu(Op::Shl, d.lo, s[0], s[1]);  // exact for the low half: the machine's shl clamps at 32
        return Ok{};
      }
      uint64_t k = static_cast<uint64_t>(in.srcs[1].imm);
      if (k >= 32) {
        if (d.wantsHi()) em.alu(Op::Shl, d.hi(), s[0], VOperand::i(static_cast<uint32_t>(std::min<uint64_t>(k - 32, 32))));
        em.alu(Op::Mov, d.lo, VOperand::i(0));
        return Ok{};
      }
      if (d.wantsHi()) {
        QGPU_TRY(ah, hiOf(0));
        em.alu(Op::ShfLW, d.hi(), s[0], ah, VOperand::i(static_cast<uint32_t>(k)));
      }
      em.alu(Op::Shl, d.lo, s[0], VOperand::i(static_cast<uint32_t>(k)));
      return Ok{};
    }
    case Opcode::Shr: {
      QGPU_CHECK(nsrc(2));
      if (in.srcs[1].kind != OperandKind::Imm)
        return c.unsupported("64-bit shift right by a register amount (the upper half is used)");
      uint64_t k = static_cast<uint64_t>(in.srcs[1].imm);
      if (k == 0) {
        // A copy: the source's high half is read (and kept by demandedHigh) only when the
        // destination's is wanted (corpus/bugs/shr64-by-zero).
        em.alu(Op::Mov, d.lo, s[0]);
        if (d.wantsHi()) {
          QGPU_TRY(ah0, hiOf(0));
          c.writeHi(d, ah0);
        }
        return Ok{};
      }
      QGPU_TRY(ah, hiOf(0));
      Op sh = sgn ? Op::ShrS : Op::ShrU;
      if (k < 32) {
        em.alu(Op::ShfRW, d.lo, s[0], ah, VOperand::i(static_cast<uint32_t>(k)));
        if (d.wantsHi()) em.alu(sh, d.hi(), ah, VOperand::i(static_cast<uint32_t>(k)));
      } else {
        uint32_t k2 = static_cast<uint32_t>(std::min<uint64_t>(k - 32, 32));
        if (k2 == 0) em.alu(Op::Mov, d.lo, ah);
        else em.alu(sh, d.lo, ah, VOperand::i(k2));
        if (d.wantsHi()) {
          if (sgn) em.alu(Op::ShrS, d.hi(), ah, VOperand::i(31));
          else em.alu(Op::Mov, d.hi(), VOperand::i(0));
        }
      }
      return Ok{};
    }
    default:
      return c.unsupported(std::string("64-bit ") + ptx::spelling(op) + " (the upper half is used)");
  }
}

}  // namespace qgpu::lower::tr
