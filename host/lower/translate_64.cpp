// qgpu/host/lower/translate_64.cpp — 64-bit arithmetic on (low, high) vreg pairs. The low half is
// always computed; the high half only where the destination wants it (Dest::wantsHi), and then
// exactly, or not at all (ValueMap::finish refuses the instruction). Every result is built in
// temporaries and moved into the destination last, so a destination that is also a source is
// never read after it has been written.
//
// The building blocks (the Wide class below), with the identities they rely on; a, b are
// (low : high) pairs of 32-bit words, n a 32-bit shift amount, PTX clamps n > 64 to 64:
//   add/sub     carry out of the low word: (al + bl) < bl; borrow: al < bl
//   neg         (-al : ~ah + (al == 0))
//   compare     a OP b = (ah OP' bh) or (ah == bh and al OPu bl), OP' the strict form of OP at
//               the signedness of the type, OPu the unsigned form of OP on the low words
//   shl by n    lo = al << n (the machine's shl gives 0 for n >= 32); hi = n < 32 ?
//               shf.l(al, ah, n) : al << (n - 32) (n - 32 wraps above 32 for n < 32; n >= 64
//               gives 0 either way)
//   shr by n    hi = ah >> n (shr.s gives the sign for n >= 32); lo = n < 32 ? shf.r(al, ah, n)
//               : ah >> (n - 32)
//   mul.lo      (al*bl : mulhi.u(al, bl) + al*bh + ah*bl)
//   mul.hi.u    the four 32x32 products summed by columns with their carries
//   mul.hi.s    mul.hi.u(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0) (mod 2^64)
//   mad.hi      mul.hi(a, b) + c with the carry out of the low word
//   bfe (reg)   (a << (64 - e)) >> (64 - e + pos), e = min(pos + len, 64), logical or arithmetic
//   bfind.s     bfind.u(a < 0 ? ~a : a)
//   div/rem     a 64-step shift-and-subtract loop on the magnitudes (two VIR blocks of its own)
#include <algorithm>
#include <optional>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {
namespace {

using machine::Op;
using ptx::Opcode;
using ptx::OperandKind;

struct Pair {
  VOperand lo, hi;
};

VOperand imm(uint32_t v) { return VOperand::i(v); }

// 64-bit building blocks: each returns fresh temporaries (or immediates), never a destination.
class Wide {
 public:
  explicit Wide(Emitter& em) : em_(em) {}

  VOperand op(Op o, VOperand a, VOperand b = {}, VOperand c = {}) {
    int x = em_.tmp();
    em_.alu(o, x, a, b, c);
    return VOperand::r(x);
  }
  int cmp(Op o, VOperand a, VOperand b) {
    int p = em_.newPred();
    em_.cmp(o, p, a, b);
    return p;
  }
  VOperand sel(int p, VOperand a, VOperand b) {
    int x = em_.tmp();
    em_.selp(x, a, b, p);
    return VOperand::r(x);
  }
  VOperand bit(int p) { return sel(p, imm(1), imm(0)); }

  Pair sub(Pair a, Pair b) {
    VOperand c = bit(cmp(Op::SetLtU, a.lo, b.lo));
    VOperand lo = op(Op::Sub, a.lo, b.lo);
    return {lo, op(Op::Sub, op(Op::Sub, a.hi, b.hi), c)};
  }
  // a + (0 : v), for accumulating a column's carry-outs.
  Pair addLow(Pair a, VOperand v) {
    VOperand lo = op(Op::Add, a.lo, v);
    VOperand c = bit(cmp(Op::SetLtU, lo, v));
    return {lo, op(Op::Add, a.hi, c)};
  }
  Pair neg(Pair a) {
    VOperand c = bit(cmp(Op::SetEq, a.lo, imm(0)));
    return {op(Op::Neg, a.lo), op(Op::Add, op(Op::Not, a.hi), c)};
  }
  Pair select(int p, Pair a, Pair b) { return {sel(p, a.lo, b.lo), sel(p, a.hi, b.hi)}; }

  // The predicate a OP b for a 32-bit compare op OP (its signedness is the type's).
  int compare(Op mop, Pair a, Pair b, int dst = kNone) {
    Op strict = mop, low = mop;
    switch (mop) {
      case Op::SetLtS: case Op::SetLeS: strict = Op::SetLtS; break;
      case Op::SetGtS: case Op::SetGeS: strict = Op::SetGtS; break;
      case Op::SetLtU: case Op::SetLeU: strict = Op::SetLtU; break;
      case Op::SetGtU: case Op::SetGeU: strict = Op::SetGtU; break;
      default: break;
    }
    switch (mop) {
      case Op::SetLtS: low = Op::SetLtU; break;
      case Op::SetLeS: low = Op::SetLeU; break;
      case Op::SetGtS: low = Op::SetGtU; break;
      case Op::SetGeS: low = Op::SetGeU; break;
      default: break;
    }
    int above = cmp(strict, a.hi, b.hi);
    int same = cmp(Op::SetEq, a.hi, b.hi);
    int lowHolds = cmp(low, a.lo, b.lo);
    int both = em_.newPred();
    em_.pop(Op::PAnd, both, same, lowHolds);
    int p = dst == kNone ? em_.newPred() : dst;
    em_.pop(Op::POr, p, above, both);
    return p;
  }

  Pair shl(Pair a, VOperand n) {
    VOperand lo = op(Op::Shl, a.lo, n);
    int small = cmp(Op::SetLtU, n, imm(32));
    VOperand within = op(Op::ShfLW, a.lo, a.hi, n);
    VOperand across = op(Op::Shl, a.lo, op(Op::Sub, n, imm(32)));
    return {lo, sel(small, within, across)};
  }
  Pair shr(Pair a, VOperand n, bool sgn) {
    Op sh = sgn ? Op::ShrS : Op::ShrU;
    VOperand hi = op(sh, a.hi, n);
    int small = cmp(Op::SetLtU, n, imm(32));
    VOperand within = op(Op::ShfRW, a.lo, a.hi, n);
    VOperand across = op(sh, a.hi, op(Op::Sub, n, imm(32)));
    return {sel(small, within, across), hi};
  }
  Pair shlConst(Pair a, uint64_t k) {
    if (k == 0) return a;
    if (k >= 64) return {imm(0), imm(0)};
    auto s = static_cast<uint32_t>(k);
    if (k >= 32) return {imm(0), s == 32 ? a.lo : op(Op::Shl, a.lo, imm(s - 32))};
    return {op(Op::Shl, a.lo, imm(s)), op(Op::ShfLW, a.lo, a.hi, imm(s))};
  }
  Pair shrConst(Pair a, uint64_t k, bool sgn) {
    Op sh = sgn ? Op::ShrS : Op::ShrU;
    if (k == 0) return a;
    VOperand fill = sgn ? op(Op::ShrS, a.hi, imm(31)) : imm(0);
    if (k >= 64) return {fill, fill};
    auto s = static_cast<uint32_t>(k);
    if (k >= 32) return {s == 32 ? a.hi : op(sh, a.hi, imm(s - 32)), fill};
    return {op(Op::ShfRW, a.lo, a.hi, imm(s)), op(sh, a.hi, imm(s))};
  }

  // The high 64 bits of the unsigned 128-bit product: words 1, 2 and 3 of the sum of
  // a.lo*b.lo, a.lo*b.hi << 32, a.hi*b.lo << 32 and a.hi*b.hi << 64, column by column.
  Pair mulHiU(Pair a, Pair b) {
    VOperand h00 = op(Op::MulHiU, a.lo, b.lo);
    VOperand l01 = op(Op::Mul, a.lo, b.hi), h01 = op(Op::MulHiU, a.lo, b.hi);
    VOperand l10 = op(Op::Mul, a.hi, b.lo), h10 = op(Op::MulHiU, a.hi, b.lo);
    VOperand l11 = op(Op::Mul, a.hi, b.hi), h11 = op(Op::MulHiU, a.hi, b.hi);
    // Word 1: h00 + l01 + l10; only its carries (0..2) matter.
    VOperand x = op(Op::Add, h00, l01);
    VOperand cx = bit(cmp(Op::SetLtU, x, l01));
    VOperand y = op(Op::Add, x, l10);
    VOperand cy = bit(cmp(Op::SetLtU, y, l10));
    VOperand carry1 = op(Op::Add, cx, cy);
    // Words 2 and 3: (l11 : h11) + h01 + h10 + carry1.
    Pair acc{l11, h11};
    acc = addLow(acc, h01);
    acc = addLow(acc, h10);
    return addLow(acc, carry1);
  }
  Pair mulHiS(Pair a, Pair b) {
    Pair r = mulHiU(a, b);
    int aNeg = cmp(Op::SetLtS, a.hi, imm(0));
    int bNeg = cmp(Op::SetLtS, b.hi, imm(0));
    r = sub(r, select(aNeg, b, {imm(0), imm(0)}));
    return sub(r, select(bNeg, a, {imm(0), imm(0)}));
  }

 private:
  Emitter& em_;
};

}  // namespace

void compare64(Ctx& c, machine::Op mop, int dstPred, VOperand al, VOperand ah, VOperand bl, VOperand bh) {
  Wide(c.em).compare(mop, {al, ah}, {bl, bh}, dstPred);
}

void addConstant64(Ctx& c, Dest& d, VOperand xl, VOperand xh, uint64_t k) {
  Emitter& em = c.em;
  auto kl = static_cast<uint32_t>(k);
  auto kh = static_cast<uint32_t>(k >> 32);
  if (!d.wantsHi()) {
    em.alu(Op::Add, d.lo, xl, VOperand::i(kl));
    return;
  }
  if (kl == 0) {
    int h = d.hi();  // written first: d may be x, whose low half is still to be read
    if (kh == 0) em.alu(Op::Mov, h, xh);
    else em.alu(Op::Add, h, xh, VOperand::i(kh));
    em.alu(Op::Mov, d.lo, xl);
    return;
  }
  int sum = em.tmp(), cv = em.tmp();
  int carry = em.newPred();
  em.alu(Op::Add, sum, xl, VOperand::i(kl));
  em.cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::i(kl));
  em.selp(cv, VOperand::i(kh + 1), VOperand::i(kh), carry);
  em.alu(Op::Add, d.hi(), xh, VOperand::r(cv));
  em.alu(Op::Mov, d.lo, VOperand::r(sum));
}

Status translate64(Ctx& c, Dest& d, const std::vector<VOperand>& s) {
  const auto& in = *c.in;
  const auto& m = in.mods;
  const Opcode op = in.op;
  Emitter& em = c.em;
  Wide w(em);
  bool sgn = typeSigned(in.types[0]);
  auto nsrc = [&](size_t n) -> Status {
    if (s.size() != n) return c.invalid("wrong operand count");
    return Ok{};
  };
  auto hiOf = [&](size_t k) { return c.valHi(in.srcs[k]); };
  auto pairOf = [&](size_t k) -> Expected<Pair> {
    QGPU_TRY(h, hiOf(k));
    return Pair{s[k], h};
  };
  // The result into the destination: the high half first (if wanted), then the low half. A
  // half may be a source's own vreg (a shift by 32 moves one word); when the destination is that
  // source, the low result must not be read after the high half was written over it.
  auto write = [&](Pair r) {
    if (d.wantsHi()) {
      int h = d.hi();
      if (r.lo.isReg() && r.lo.reg == h) r.lo = w.op(Op::Mov, r.lo);
      em.alu(Op::Mov, h, r.hi);
    }
    em.alu(Op::Mov, d.lo, r.lo);
  };
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
        QGPU_TRY(xh, hiOf(x));
        addConstant64(c, d, s[x], xh, op == Opcode::Add ? *k : ~*k + 1);
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
    case Opcode::Neg: {
      QGPU_CHECK(nsrc(1));
      if (!d.wantsHi()) {
        em.alu(Op::Neg, d.lo, s[0]);  // the low half of -a is -al
        return Ok{};
      }
      QGPU_TRY(a, pairOf(0));
      write(w.neg(a));
      return Ok{};
    }
    case Opcode::Abs: {
      QGPU_CHECK(nsrc(1));
      QGPU_TRY(a, pairOf(0));
      write(w.select(w.cmp(Op::SetLtS, a.hi, imm(0)), w.neg(a), a));  // abs(INT64_MIN) = INT64_MIN
      return Ok{};
    }
    case Opcode::Min: case Opcode::Max: {
      QGPU_CHECK(nsrc(2));
      QGPU_TRY(a, pairOf(0));
      QGPU_TRY(b, pairOf(1));
      int less = w.compare(sgn ? Op::SetLtS : Op::SetLtU, a, b);
      write(op == Opcode::Min ? w.select(less, a, b) : w.select(less, b, a));
      return Ok{};
    }
    case Opcode::Mul: {
      QGPU_CHECK(nsrc(2));
      if (m.wide) return c.unsupported("64-bit mul.wide (PTX has none)");
      if (m.hi) {
        QGPU_TRY(a, pairOf(0));
        QGPU_TRY(b, pairOf(1));
        write(sgn ? w.mulHiS(a, b) : w.mulHiU(a, b));
        return Ok{};
      }
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
      QGPU_CHECK(nsrc(3));
      if (m.hi) {  // mad.hi.{u,s}64: the product's high 64 bits, plus c mod 2^64
        QGPU_TRY(a, pairOf(0));
        QGPU_TRY(b, pairOf(1));
        Pair t = sgn ? w.mulHiS(a, b) : w.mulHiU(a, b);
        if (!d.wantsHi()) {
          em.alu(Op::Add, d.lo, t.lo, s[2]);
          return Ok{};
        }
        QGPU_TRY(ch, hiOf(2));
        VOperand lo = w.op(Op::Add, t.lo, s[2]);
        VOperand carry = w.bit(w.cmp(Op::SetLtU, lo, t.lo));
        write({lo, w.op(Op::Add, w.op(Op::Add, t.hi, ch), carry)});
        return Ok{};
      }
      if (!m.lo) return c.unsupported("64-bit mad.wide (PTX has none)");
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
        if (!d.wantsHi()) {
          em.alu(Op::Shl, d.lo, s[0], s[1]);  // exact for the low half: the machine's shl clamps at 32
          return Ok{};
        }
        QGPU_TRY(a, pairOf(0));
        write(w.shl(a, s[1]));
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
      if (in.srcs[1].kind != OperandKind::Imm) {
        QGPU_TRY(a, pairOf(0));
        write(w.shr(a, s[1], sgn));
        return Ok{};
      }
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
    case Opcode::Bfe: {
      // bfe.u64/.s64 a, pos, len (PTX: pos = b & 0xff, len = c & 0xff; result bit i is a[pos + i]
      // for i < len and pos + i <= 63, else the fill bit: 0, or for .s64 a[min(pos + len - 1, 63)]
      // (0 if len = 0)). With a constant pos and len: a shift right by pos, then the low
      // L = min(len, 64 - pos) bits zero- or sign-extended.
      QGPU_CHECK(nsrc(3));
      if (in.srcs[1].kind != OperandKind::Imm || in.srcs[2].kind != OperandKind::Imm) {
        // A register position or length: with e = min(pos + len, 64), the field is
        // (a << (64 - e)) >> (64 - e + pos), the right shift logical (.u64) or arithmetic (.s64).
        // pos + len <= 64: the len bits from pos, zero- or sign-extended from bit pos + len - 1;
        // pos < 64 < pos + len: a >> pos (the fill bit a[63]); pos >= 64: 0 or a[63] everywhere.
        // The 64-bit shifts by a register give 0 (or the sign) from 64 on. len = 0 gives 0: so
        // does the logical shift (by 64 - e + pos >= 64); the arithmetic one is replaced by 0.
        QGPU_TRY(a, pairOf(0));
        VOperand pos = w.op(Op::And, s[1], imm(0xff)), len = w.op(Op::And, s[2], imm(0xff));
        VOperand end = w.op(Op::Add, pos, len);
        VOperand e = w.sel(w.cmp(Op::SetLtU, end, imm(64)), end, imm(64));
        VOperand up = w.op(Op::Sub, imm(64), e);
        Pair r = w.shr(w.shl(a, up), w.op(Op::Add, up, pos), sgn);
        if (sgn) r = w.select(w.cmp(Op::SetEq, len, imm(0)), {imm(0), imm(0)}, r);
        write(r);
        return Ok{};
      }
      uint64_t pos = static_cast<uint64_t>(in.srcs[1].imm) & 0xff, len = static_cast<uint64_t>(in.srcs[2].imm) & 0xff;
      QGPU_TRY(a, pairOf(0));
      if (len == 0 || (pos >= 64 && !sgn)) {
        write({imm(0), imm(0)});
        return Ok{};
      }
      if (pos >= 64) {  // every bit is the fill bit a[63]
        VOperand fill = w.op(Op::ShrS, a.hi, imm(31));
        write({fill, fill});
        return Ok{};
      }
      Pair x = w.shrConst(a, pos, false);
      auto field = static_cast<uint32_t>(std::min<uint64_t>(len, 64 - pos));
      Op ext = sgn ? Op::BfeS : Op::BfeU;
      if (field >= 32) {
        write({x.lo, field == 32 ? (sgn ? w.op(Op::ShrS, x.lo, imm(31)) : imm(0)) : w.op(ext, x.hi, imm(0), imm(field - 32))});
      } else {
        VOperand lo = w.op(ext, x.lo, imm(0), imm(field));
        write({lo, sgn ? w.op(Op::ShrS, lo, imm(31)) : imm(0)});
      }
      return Ok{};
    }
    case Opcode::Bfi: {
      // bfi.b64 d, f, b, pos, len: d = (b & ~m) | ((f << pos) & m), m = ((1 << len) - 1) << pos
      // on 64 bits, pos = c & 0xff, len = d & 0xff; the 64-bit shifts give 0 for amounts >= 64,
      // so len >= 64 makes the field all ones and pos >= 64 makes m 0, as PTX says.
      QGPU_CHECK(nsrc(4));
      QGPU_TRY(f, pairOf(0));
      QGPU_TRY(b, pairOf(1));
      Pair mask, moved;
      if (in.srcs[2].kind == OperandKind::Imm && in.srcs[3].kind == OperandKind::Imm) {
        uint64_t pos = static_cast<uint64_t>(in.srcs[2].imm) & 0xff, len = static_cast<uint64_t>(in.srcs[3].imm) & 0xff;
        uint64_t field = len >= 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1;
        uint64_t m64 = pos >= 64 ? 0 : field << pos;
        mask = {imm(static_cast<uint32_t>(m64)), imm(static_cast<uint32_t>(m64 >> 32))};
        moved = w.shlConst(f, pos);
      } else {
        VOperand pos = w.op(Op::And, s[2], imm(0xff)), len = w.op(Op::And, s[3], imm(0xff));
        Pair one{imm(1), imm(0)};
        mask = w.shl(w.sub(w.shl(one, len), one), pos);
        moved = w.shl(f, pos);
      }
      auto merge = [&](VOperand x, VOperand keepFrom, VOperand m) {
        if (m.isImm() && m.imm == 0) return keepFrom;
        if (m.isImm() && m.imm == 0xffffffffu) return x;
        return w.op(Op::Or, w.op(Op::And, x, m), w.op(Op::And, keepFrom, w.op(Op::Not, m)));
      };
      write({merge(moved.lo, b.lo, mask.lo), merge(moved.hi, b.hi, mask.hi)});
      return Ok{};
    }
    case Opcode::Popc: case Opcode::Clz: case Opcode::Brev: case Opcode::Bfind: {
      QGPU_CHECK(nsrc(1));
      QGPU_TRY(a, pairOf(0));
      if (op == Opcode::Popc) {  // a 32-bit result
        em.alu(Op::Add, d.lo, w.op(Op::Popc, a.lo), w.op(Op::Popc, a.hi));
        return Ok{};
      }
      if (op == Opcode::Brev) {
        write({w.op(Op::Brev, a.hi), w.op(Op::Brev, a.lo)});
        return Ok{};
      }
      int highZero = w.cmp(Op::SetEq, a.hi, imm(0));
      if (op == Opcode::Clz) {  // ah == 0 ? 32 + clz(al) : clz(ah); clz(0) = 64
        em.selp(d.lo, w.op(Op::Add, w.op(Op::Clz, a.lo), imm(32)), w.op(Op::Clz, a.hi), highZero);
        return Ok{};
      }
      // bfind.u64: the index of the highest 1, 0xffffffff for 0 (bfind.u(0) = 0xffffffff).
      if (sgn) {  // bfind.s64: the most significant non-sign bit = bfind.u64(a < 0 ? ~a : a)
        int neg = w.cmp(Op::SetLtS, a.hi, imm(0));
        a = w.select(neg, {w.op(Op::Not, a.lo), w.op(Op::Not, a.hi)}, a);
        highZero = w.cmp(Op::SetEq, a.hi, imm(0));
      }
      VOperand idx = w.sel(highZero, w.op(Op::Bfind, a.lo), w.op(Op::Add, w.op(Op::Bfind, a.hi), imm(32)));
      if (!m.shiftamt) {
        em.alu(Op::Mov, d.lo, idx);
        return Ok{};
      }
      // .shiftamt: 63 - index, or 0xffffffff when a == 0.
      int zero = w.cmp(Op::SetEq, idx, imm(0xffffffffu));
      em.selp(d.lo, imm(0xffffffffu), w.op(Op::Sub, imm(63), idx), zero);
      return Ok{};
    }
    case Opcode::Div: case Opcode::Rem: {
      // Shift-and-subtract division of the magnitudes, a loop of 64 steps on register pairs:
      // (r : q) starts as (0 : |a|) and is shifted left one bit per step; when r >= |b| (or the
      // bit shifted out of r was set: r then exceeds 2^64 > |b|), r -= |b| and q's low bit is
      // set. The quotient is q, the remainder r; signed results take the sign of a ^ b (quotient)
      // or of a (remainder). The machine's conventions fall out: by 0 every step subtracts 0, so
      // q = all ones and r = a (signed: a < 0 ? 1 : -1, and a), and INT64_MIN / -1 = INT64_MIN,
      // INT64_MIN % -1 = 0, as ptxeval and docs/machine.md give them at 32 bits.
      QGPU_CHECK(nsrc(2));
      QGPU_TRY(a, pairOf(0));
      QGPU_TRY(b, pairOf(1));
      int aNeg = kNone, bNeg = kNone;
      if (sgn) {
        aNeg = w.cmp(Op::SetLtS, a.hi, imm(0));
        bNeg = w.cmp(Op::SetLtS, b.hi, imm(0));
        a = w.select(aNeg, w.neg(a), a);
        b = w.select(bNeg, w.neg(b), b);
      }
      // The loop state, in vregs of its own (updated in place by every step).
      Pair q{w.op(Op::Mov, a.lo), w.op(Op::Mov, a.hi)}, r{w.op(Op::Mov, imm(0)), w.op(Op::Mov, imm(0))};
      Pair dv{w.op(Op::Mov, b.lo), w.op(Op::Mov, b.hi)};
      VOperand count = w.op(Op::Mov, imm(64));
      const int loop = em.newBlock(), after = em.newBlock();
      em.terminate(VTerm{machine::TermKind::Jump, kNone, false, kNone, loop});
      em.setCurrent(loop);
      VOperand top = w.op(Op::ShrU, r.hi, imm(31));
      em.alu(Op::ShfLW, r.hi.reg, r.lo, r.hi, imm(1));
      em.alu(Op::ShfLW, r.lo.reg, q.hi, r.lo, imm(1));
      em.alu(Op::ShfLW, q.hi.reg, q.lo, q.hi, imm(1));
      em.alu(Op::Shl, q.lo.reg, q.lo, imm(1));
      int fits = w.compare(Op::SetGeU, r, dv);
      int over = w.cmp(Op::SetNe, top, imm(0));
      int take = em.newPred();
      em.pop(Op::POr, take, fits, over);
      Pair diff = w.sub(r, dv);
      em.selp(r.lo.reg, diff.lo, r.lo, take);
      em.selp(r.hi.reg, diff.hi, r.hi, take);
      em.alu(Op::Or, q.lo.reg, q.lo, w.bit(take));
      em.alu(Op::Sub, count.reg, count, imm(1));
      int more = w.cmp(Op::SetNe, count, imm(0));
      em.terminate(VTerm{machine::TermKind::Branch, more, false, loop, after});
      em.setCurrent(after);  // the rest of the PTX block continues here
      Pair res = op == Opcode::Div ? q : r;
      if (sgn) {
        int flip = aNeg;
        if (op == Opcode::Div) {
          flip = em.newPred();
          em.pop(Op::PXor, flip, aNeg, bNeg);
        }
        res = w.select(flip, w.neg(res), res);
      }
      write(res);
      return Ok{};
    }
    default:
      return c.unsupported(std::string("64-bit ") + ptx::spelling(op));
  }
}

}  // namespace qgpu::lower::tr
