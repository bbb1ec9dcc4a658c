// qgpu/host/lower/translate_32.cpp — 16- and 32-bit arithmetic. 16-bit registers hold their value
// zero-extended to 32 bits; ops whose 32-bit result on such inputs is not already the
// zero-extended 16-bit result re-normalise with `and 0xffff`, and signed ones sign-extend their
// inputs first. PTX opcodes that map to one machine op (per signedness) come from kDirect; the
// rest (mul, mad, shr, bfe, bfind, prmt, shf) have their own cases.
#include "host/lower/translate.h"

namespace qgpu::lower::tr {
namespace {

using machine::Op;
using ptx::Opcode;

// How a one-to-one op treats 16-bit operands.
enum class Narrow : uint8_t {
  Mask,        // compute on the zero-extended inputs, mask the result to 16 bits
  SignExtend,  // signed: sign-extend the inputs, compute, mask; unsigned: the result is exact
  Extend,      // signed: sign-extend the inputs; both: compute and mask (div.u16 by 0 is 0xffff)
  Exact,       // the result on zero-extended inputs is already zero-extended (and, or, xor)
  Only32,      // 32-bit only; refused on 16 bits
};

struct DirectOp {
  Opcode ptx;
  Op unsignedOp;  // for .u / .b types
  Op signedOp;    // for .s types
  int srcs;
  Narrow narrow;
};

constexpr DirectOp kDirect[] = {
    {Opcode::Add, Op::Add, Op::Add, 2, Narrow::Mask},
    {Opcode::Sub, Op::Sub, Op::Sub, 2, Narrow::Mask},
    {Opcode::Neg, Op::Neg, Op::Neg, 1, Narrow::Mask},
    {Opcode::Not, Op::Not, Op::Not, 1, Narrow::Mask},
    {Opcode::Shl, Op::Shl, Op::Shl, 2, Narrow::Mask},
    {Opcode::And, Op::And, Op::And, 2, Narrow::Exact},
    {Opcode::Or, Op::Or, Op::Or, 2, Narrow::Exact},
    {Opcode::Xor, Op::Xor, Op::Xor, 2, Narrow::Exact},
    {Opcode::Min, Op::MinU, Op::MinS, 2, Narrow::SignExtend},
    {Opcode::Max, Op::MaxU, Op::MaxS, 2, Narrow::SignExtend},
    {Opcode::Abs, Op::Abs, Op::Abs, 1, Narrow::SignExtend},
    {Opcode::Div, Op::DivU, Op::DivS, 2, Narrow::Extend},
    {Opcode::Rem, Op::RemU, Op::RemS, 2, Narrow::Extend},
    {Opcode::Popc, Op::Popc, Op::Popc, 1, Narrow::Only32},
    {Opcode::Clz, Op::Clz, Op::Clz, 1, Narrow::Only32},
    {Opcode::Brev, Op::Brev, Op::Brev, 1, Narrow::Only32},
};

const DirectOp* direct(Opcode op) {
  for (const auto& d : kDirect)
    if (d.ptx == op) return &d;
  return nullptr;
}

}  // namespace

Status translate32(Ctx& c, Dest& d, const std::vector<VOperand>& s) {
  const auto& in = *c.in;
  const auto& m = in.mods;
  const Opcode op = in.op;
  Emitter& em = c.em;
  const int w = typeBits(in.types[0]);
  const bool sgn = typeSigned(in.types[0]);
  const bool is16 = w == 16;
  auto nsrc = [&](size_t n) -> Status {
    if (s.size() != n) return c.invalid("wrong operand count");
    return Ok{};
  };
  auto src = [&](size_t k) { return k < s.size() ? s[k] : VOperand{}; };

  if (const DirectOp* t = direct(op)) {
    QGPU_CHECK(nsrc(static_cast<size_t>(t->srcs)));
    Op mop = sgn ? t->signedOp : t->unsignedOp;
    switch (t->narrow) {
      case Narrow::Mask:
        if (is16) em.alu16(mop, d.lo, src(0), src(1));
        else em.alu(mop, d.lo, src(0), src(1));
        break;
      case Narrow::SignExtend:
        if (is16 && sgn) em.alu16(mop, d.lo, em.sext16(src(0)), t->srcs > 1 ? em.sext16(src(1)) : VOperand{});
        else em.alu(mop, d.lo, src(0), src(1));
        break;
      case Narrow::Extend:
        // 16-bit division on the 32-bit values: exact, because |a| and |b| < 2^16 (no 32-bit
        // overflow: INT16_MIN / -1 is 32768, masked to 0x8000 = INT16_MIN, as PTX gives the
        // dividend there), and the machine's by-zero values masked to 16 bits are the 16-bit
        // ones: div.u 0xffff, div.s a < 0 ? 1 : 0xffff, rem a.
        if (is16 && sgn) em.alu16(mop, d.lo, em.sext16(src(0)), em.sext16(src(1)));
        else if (is16) em.alu16(mop, d.lo, src(0), src(1));
        else em.alu(mop, d.lo, src(0), src(1));
        break;
      case Narrow::Exact:
        em.alu(mop, d.lo, src(0), src(1));
        c.writeHi(d, VOperand::i(0));  // zero-extended inputs give a zero-extended result
        break;
      case Narrow::Only32:
        if (w != 32) return c.unsupported(std::to_string(w) + "-bit " + ptx::spelling(op));
        em.alu(mop, d.lo, src(0), src(1));
        break;
    }
    return Ok{};
  }

  switch (op) {
    case Opcode::Mul: {
      QGPU_CHECK(nsrc(2));
      if (m.wide) {
        if (is16) {
          if (sgn) em.alu(Op::Mul, d.lo, em.sext16(s[0]), em.sext16(s[1]));
          else em.alu(Op::Mul, d.lo, s[0], s[1]);
          return Ok{};
        }
        // the exact upper half, written first (the sources are 32-bit)
        if (d.wantsHi()) em.alu(sgn ? Op::MulHiS : Op::MulHiU, d.hi(), s[0], s[1]);
        em.alu(Op::Mul, d.lo, s[0], s[1]);
        return Ok{};
      }
      if (m.hi) {
        if (is16) {
          int t = em.tmp();
          if (sgn) {
            em.alu(Op::Mul, t, em.sext16(s[0]), em.sext16(s[1]));
            int t2 = em.tmp();
            em.alu(Op::ShrS, t2, VOperand::r(t), VOperand::i(16));
            em.alu(Op::And, d.lo, VOperand::r(t2), VOperand::i(0xffff));
          } else {  // zero-extended inputs: the product fits 32 bits, its top half is < 2^16
            em.alu(Op::Mul, t, s[0], s[1]);
            em.alu(Op::ShrU, d.lo, VOperand::r(t), VOperand::i(16));
          }
          return Ok{};
        }
        em.alu(sgn ? Op::MulHiS : Op::MulHiU, d.lo, s[0], s[1]);
        return Ok{};
      }
      if (is16) em.alu16(Op::Mul, d.lo, s[0], s[1]);
      else em.alu(Op::Mul, d.lo, s[0], s[1]);
      return Ok{};
    }
    case Opcode::Mad: {
      QGPU_CHECK(nsrc(3));
      if (is16) {
        if (m.wide) {  // a 32-bit result: the product of the extended inputs plus c
          if (sgn) em.alu(Op::Mad, d.lo, em.sext16(s[0]), em.sext16(s[1]), s[2]);
          else em.alu(Op::Mad, d.lo, s[0], s[1], s[2]);
          return Ok{};
        }
        if (m.hi) {  // (a*b)[31:16] + c on 16 bits: the product of the extended inputs fits 32 bits
          int t = em.tmp(), hi = em.tmp();
          if (sgn) em.alu(Op::Mul, t, em.sext16(s[0]), em.sext16(s[1]));
          else em.alu(Op::Mul, t, s[0], s[1]);
          em.alu(sgn ? Op::ShrS : Op::ShrU, hi, VOperand::r(t), VOperand::i(16));
          em.alu16(Op::Add, d.lo, VOperand::r(hi), s[2]);  // the sum's low 16 bits need only the low 16
          return Ok{};
        }
        em.alu16(Op::Mad, d.lo, s[0], s[1], s[2]);  // the low 16 bits depend only on the low 16 bits
        return Ok{};
      }
      if (m.wide) {
        if (d.wantsHi()) {  // (mulhi(a,b) : a*b) + (ch : cl), into temporaries first (d may be c)
          QGPU_TRY(ch, c.valHi(in.srcs[2]));
          int prod = em.tmp(), prodHi = em.tmp(), sum = em.tmp(), cv = em.tmp(), h1 = em.tmp();
          int carry = em.newPred();
          em.alu(Op::Mul, prod, s[0], s[1]);
          em.alu(sgn ? Op::MulHiS : Op::MulHiU, prodHi, s[0], s[1]);
          em.alu(Op::Add, sum, VOperand::r(prod), s[2]);
          em.cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::r(prod));
          em.selp(cv, VOperand::i(1), VOperand::i(0), carry);
          em.alu(Op::Add, h1, VOperand::r(prodHi), ch);
          em.alu(Op::Add, d.hi(), VOperand::r(h1), VOperand::r(cv));
          em.alu(Op::Mov, d.lo, VOperand::r(sum));
          return Ok{};
        }
        em.alu(Op::Mad, d.lo, s[0], s[1], s[2]);
        return Ok{};
      }
      if (m.hi) {
        int t = em.tmp();
        em.alu(sgn ? Op::MulHiS : Op::MulHiU, t, s[0], s[1]);
        em.alu(Op::Add, d.lo, VOperand::r(t), s[2]);
        return Ok{};
      }
      em.alu(Op::Mad, d.lo, s[0], s[1], s[2]);
      return Ok{};
    }
    case Opcode::Shr:
      QGPU_CHECK(nsrc(2));
      if (sgn) {
        if (is16) em.alu16(Op::ShrS, d.lo, em.sext16(s[0]), s[1]);
        else em.alu(Op::ShrS, d.lo, s[0], s[1]);
      } else {
        em.alu(Op::ShrU, d.lo, s[0], s[1]);  // a zero-extended input stays zero-extended
      }
      return Ok{};
    case Opcode::Bfe:
      QGPU_CHECK(nsrc(3));
      if (w != 32) return c.unsupported("non-32-bit bfe");
      em.alu(sgn ? Op::BfeS : Op::BfeU, d.lo, s[0], s[1], s[2]);
      return Ok{};
    case Opcode::Bfind: {
      QGPU_CHECK(nsrc(1));
      if (w != 32) return c.unsupported("bfind other than .u32/.s32");
      // bfind.s32 (PTX): the most significant non-sign bit, i.e. bfind.u32 of a < 0 ? ~a : a
      // (0xffffffff for 0 and -1).
      VOperand x = s[0];
      if (sgn) {
        int neg = em.newPred(), inv = em.tmp(), sel = em.tmp();
        em.cmp(Op::SetLtS, neg, s[0], VOperand::i(0));
        em.alu(Op::Not, inv, s[0]);
        em.selp(sel, VOperand::r(inv), s[0], neg);
        x = VOperand::r(sel);
      }
      if (!m.shiftamt) {
        em.alu(Op::Bfind, d.lo, x);
        return Ok{};
      }
      // shiftamt: 31 - msb = clz(x) for x != 0, and 0xffffffff (no bit found) for x == 0.
      int t = em.tmp();
      int p = em.newPred();
      em.alu(Op::Clz, t, x);
      em.cmp(Op::SetEq, p, x, VOperand::i(0));
      em.selp(d.lo, VOperand::i(0xffffffffu), VOperand::r(t), p);
      return Ok{};
    }
    case Opcode::Mul24: {
      // mul24.lo: the low 32 bits of the product of the low 24 bits of each input (sign-extended
      // from bit 23 for .s32). The product's low 32 bits do not depend on the signedness of the
      // multiplication, so one mul of the extended inputs is exact.
      QGPU_CHECK(nsrc(2));
      if (w != 32) return c.unsupported("non-32-bit mul24");
      if (!m.lo) return c.unsupported("mul24.hi");
      int a = em.tmp(), b = em.tmp();
      em.alu(sgn ? Op::BfeS : Op::BfeU, a, s[0], VOperand::i(0), VOperand::i(24));
      em.alu(sgn ? Op::BfeS : Op::BfeU, b, s[1], VOperand::i(0), VOperand::i(24));
      em.alu(Op::Mul, d.lo, VOperand::r(a), VOperand::r(b));
      return Ok{};
    }
    case Opcode::Sad: {
      // sad: c + |a - b|, the difference taken in the type's order, the sum modulo 2^32.
      QGPU_CHECK(nsrc(3));
      if (w != 32) return c.unsupported("non-32-bit sad");
      int ab = em.tmp(), ba = em.tmp(), diff = em.tmp();
      int less = em.newPred();
      em.alu(Op::Sub, ab, s[0], s[1]);
      em.alu(Op::Sub, ba, s[1], s[0]);
      em.cmp(sgn ? Op::SetLtS : Op::SetLtU, less, s[0], s[1]);
      em.selp(diff, VOperand::r(ba), VOperand::r(ab), less);
      em.alu(Op::Add, d.lo, s[2], VOperand::r(diff));
      return Ok{};
    }
    case Opcode::Bfi: {
      // bfi.b32 d, f, b, pos, len: d = (b & ~m) | ((f << pos) & m) with the field mask
      // m = ((1 << len) - 1) << pos, pos = c & 0xff, len = d & 0xff. The machine's shl gives 0
      // for amounts >= 32, so len >= 32 makes (1 << len) - 1 all ones and pos >= 32 makes m 0:
      // exactly PTX's "bits pos + i <= 31 only".
      QGPU_CHECK(nsrc(4));
      if (w != 32) return c.unsupported("non-32-bit bfi");
      VOperand pos = s[2], len = s[3];
      if (!pos.isImm() || pos.imm > 0xff) {
        int t = em.tmp();
        em.alu(Op::And, t, pos, VOperand::i(0xff));
        pos = VOperand::r(t);
      }
      if (!len.isImm() || len.imm > 0xff) {
        int t = em.tmp();
        em.alu(Op::And, t, len, VOperand::i(0xff));
        len = VOperand::r(t);
      }
      int one = em.tmp(), field = em.tmp(), mask = em.tmp(), moved = em.tmp(), ins = em.tmp(), keep = em.tmp(), kept = em.tmp();
      em.alu(Op::Shl, one, VOperand::i(1), len);
      em.alu(Op::Sub, field, VOperand::r(one), VOperand::i(1));
      em.alu(Op::Shl, mask, VOperand::r(field), pos);
      em.alu(Op::Shl, moved, s[0], pos);
      em.alu(Op::And, ins, VOperand::r(moved), VOperand::r(mask));
      em.alu(Op::Not, keep, VOperand::r(mask));
      em.alu(Op::And, kept, s[1], VOperand::r(keep));
      em.alu(Op::Or, d.lo, VOperand::r(ins), VOperand::r(kept));
      return Ok{};
    }
    case Opcode::Prmt:
      QGPU_CHECK(nsrc(3));
      em.alu(Op::Prmt, d.lo, s[0], s[1], s[2]);
      return Ok{};
    case Opcode::Shf:
      QGPU_CHECK(nsrc(3));
      if (!m.wrap || m.clamp) return c.unsupported("shf.clamp");
      em.alu(m.left ? Op::ShfLW : Op::ShfRW, d.lo, s[0], s[1], s[2]);
      return Ok{};
    default:
      return c.unsupported(std::string("opcode ") + ptx::spelling(op));
  }
}

}  // namespace qgpu::lower::tr
