// qgpu/oracle/semantics.h — the value semantics of the machine's operations, as pure functions.
//
// The one definition of what each op of oracle/isa.def computes. The interpreter calls these for
// every lane; the lowering folds constants with them; the circuit compiler and the random-program
// generators build and check against them. Nobody re-implements an op.
//
// Contract: each evaluator takes the op and its 32-bit source values and returns the result, or
// std::nullopt when `op` is not of the evaluator's class (oracle_semantics_test walks the table
// and fails for an op of a class whose evaluator has no case for it). They are total: every
// input, including division by zero and shifts of 32 or more, has the documented result
// (isa.def's comments, docs/machine.md §4); there is no undefined behaviour.
//
// Inline, so the interpreter's per-lane loop pays no call (the two hot ones forced: see evalAlu).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>

#include "oracle/machine.h"

namespace qgpu::oracle {

namespace detail {

// PTX bfe.{u,s}32: bit i of the result is a[pos+i] for i < len and pos+i <= 31, else the sign
// bit of the field (0 for unsigned); pos = b & 0xff, len = c & 0xff.
constexpr uint32_t bfe(uint32_t a, uint32_t b, uint32_t c, bool isSigned) {
  const uint32_t pos = b & 0xff, len = c & 0xff;
  uint32_t sbit = 0;
  if (isSigned && len != 0) sbit = (a >> std::min<uint32_t>(pos + len - 1, 31)) & 1u;
  const uint32_t eff = pos >= 32 ? 0 : std::min<uint32_t>(len, 32 - pos);
  const uint32_t mask = eff >= 32 ? 0xffffffffu : ((1u << eff) - 1u);
  const uint32_t field = eff == 0 ? 0 : (a >> pos) & mask;
  return sbit ? (field | ~mask) : field;
}

// PTX prmt.b32 default mode: result byte i is byte (c >> 4i) & 7 of {b, a} (a is bytes 0..3),
// replaced by its sign replicated when bit 3 of that selector is set.
constexpr uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  const uint64_t bytes = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t sel = (c >> (4 * i)) & 0xf;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (sel & 7))) & 0xff;
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
    d |= byte << (8 * i);
  }
  return d;
}

}  // namespace detail

// Class Alu: dst = f(a, b, c), 32-bit two's complement, wrap-around (isa.def's comment per op).
// always_inline: inlined into the interpreter's per-lane loop the switch folds into its caller's
// dispatch (measured: 78 -> 136 M lane-instructions/s without the trace, qgpu_bench).
[[gnu::always_inline]] constexpr std::optional<uint32_t> evalAlu(machine::Op op, uint32_t a,
                                                                 uint32_t b, uint32_t c) {
  using machine::Op;
  const auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  switch (op) {
    case Op::Mov: return a;
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::MulHiU: return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
    case Op::MulHiS:
      return static_cast<uint32_t>(static_cast<uint64_t>(static_cast<int64_t>(sa) * sb) >> 32);
    case Op::Mad: return a * b + c;
    case Op::DivU: return b == 0 ? 0xffffffffu : a / b;
    case Op::DivS:
      if (b == 0) return sa < 0 ? 1u : 0xffffffffu;
      if (sa == INT32_MIN && sb == -1) return a;
      return static_cast<uint32_t>(sa / sb);
    case Op::RemU: return b == 0 ? a : a % b;
    case Op::RemS:
      if (b == 0) return a;
      if (sa == INT32_MIN && sb == -1) return 0u;
      return static_cast<uint32_t>(sa % sb);
    case Op::Neg: return 0u - a;
    case Op::Abs: return sa < 0 ? 0u - a : a;
    case Op::MinS: return sa < sb ? a : b;
    case Op::MinU: return a < b ? a : b;
    case Op::MaxS: return sa > sb ? a : b;
    case Op::MaxU: return a > b ? a : b;
    case Op::And: return a & b;
    case Op::Or: return a | b;
    case Op::Xor: return a ^ b;
    case Op::Not: return ~a;
    case Op::Shl: return b >= 32 ? 0u : a << b;
    case Op::ShrU: return b >= 32 ? 0u : a >> b;
    case Op::ShrS: return static_cast<uint32_t>(sa >> (b >= 32 ? 31 : b));
    case Op::Popc: return static_cast<uint32_t>(std::popcount(a));
    case Op::Clz: return static_cast<uint32_t>(std::countl_zero(a));
    case Op::Brev: {
      uint32_t r = 0;
      for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
      return r;
    }
    case Op::Bfind: return a == 0 ? 0xffffffffu : 31u - static_cast<uint32_t>(std::countl_zero(a));
    case Op::BfeU: return detail::bfe(a, b, c, false);
    case Op::BfeS: return detail::bfe(a, b, c, true);
    case Op::Prmt: return detail::prmt(a, b, c);
    case Op::ShfLW: {
      const uint32_t n = c & 31;
      return n == 0 ? b : (b << n) | (a >> (32 - n));
    }
    case Op::ShfRW: {
      const uint32_t n = c & 31;
      return n == 0 ? a : (a >> n) | (b << (32 - n));
    }
    default: return std::nullopt;
  }
}

// Class Cmp: dstPred = a OP b (.s: as int32, .u: as uint32).
[[gnu::always_inline]] constexpr std::optional<bool> evalCmp(machine::Op op, uint32_t a,
                                                             uint32_t b) {
  using machine::Op;
  const auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  switch (op) {
    case Op::SetEq: return a == b;
    case Op::SetNe: return a != b;
    case Op::SetLtS: return sa < sb;
    case Op::SetLeS: return sa <= sb;
    case Op::SetGtS: return sa > sb;
    case Op::SetGeS: return sa >= sb;
    case Op::SetLtU: return a < b;
    case Op::SetLeU: return a <= b;
    case Op::SetGtU: return a > b;
    case Op::SetGeU: return a >= b;
    default: return std::nullopt;
  }
}

// Class Pred, on lane masks (bit l = lane l): p and q are the predicate sources' masks (0 where
// the op has fewer), `imm` is PConst's immediate. The result is a full 4-lane mask; the caller
// keeps the lanes the op acts in.
constexpr std::optional<uint32_t> evalPred(machine::Op op, uint32_t p, uint32_t q, uint32_t imm) {
  using machine::Op;
  constexpr uint32_t kAll = (1u << machine::kLanes) - 1;
  switch (op) {
    case Op::PAnd: return p & q;
    case Op::POr: return p | q;
    case Op::PXor: return p ^ q;
    case Op::PNot: return ~p & kAll;
    case Op::PMov: return p;
    case Op::PConst: return imm ? kAll : 0u;
    default: return std::nullopt;
  }
}

// Atomics (class Mem, MemEffect::ReadWrite): the new memory word, given the old one and the
// sources b, c; the op's destination receives `old`.
constexpr std::optional<uint32_t> evalAtomic(machine::Op op, uint32_t old, uint32_t b, uint32_t c) {
  using machine::Op;
  switch (op) {
    case Op::AtomAdd: return old + b;
    case Op::AtomMinS: return static_cast<int32_t>(old) < static_cast<int32_t>(b) ? old : b;
    case Op::AtomMaxS: return static_cast<int32_t>(old) > static_cast<int32_t>(b) ? old : b;
    case Op::AtomMinU: return old < b ? old : b;
    case Op::AtomMaxU: return old > b ? old : b;
    case Op::AtomAnd: return old & b;
    case Op::AtomOr: return old | b;
    case Op::AtomXor: return old ^ b;
    case Op::AtomExch: return b;
    case Op::AtomInc: return old >= b ? 0u : old + 1;
    case Op::AtomDec: return (old == 0 || old > b) ? b : old - 1;
    case Op::AtomCas: return old == b ? c : old;
    default: return std::nullopt;
  }
}

// Memory ops (class Mem): the bytes one lane's access covers, which its byte address must be a
// multiple of (docs/machine.md §4): 1 for st.b8, 2 for st.b16, 4 for every word access; 0 for an
// op that accesses no global or shared memory.
inline int accessBytes(machine::Op op) {
  using machine::Op;
  if (op == Op::StB8) return 1;
  if (op == Op::StB16) return 2;
  return machine::opInfo(op).cls == machine::OpClass::Mem ? 4 : 0;
}

// Sub-word stores (StB8, StB16): the new memory word, given the old word, the lane's byte address
// and its value: the field at byte (addr & 3) for a byte, at byte (addr & 2) for a halfword, is
// replaced by the value's low 8 or 16 bits; the other bytes keep their old value (little-endian:
// byte k of a word is bits 8k..8k+7). std::nullopt for any other op.
constexpr std::optional<uint32_t> evalSubwordStore(machine::Op op, uint32_t old, uint32_t addr,
                                                   uint32_t value) {
  using machine::Op;
  uint32_t mask = 0, shift = 0;
  switch (op) {
    case Op::StB8: mask = 0xffu, shift = 8 * (addr & 3u); break;
    case Op::StB16: mask = 0xffffu, shift = 8 * (addr & 2u); break;
    default: return std::nullopt;
  }
  return (old & ~(mask << shift)) | ((value & mask) << shift);
}

// Shuffles (PTX shfl.sync, ptx-subset.md §7, on a 4-lane warp): the lane whose value `lane`
// receives, from b (lane or offset, b[4:0]) and c (clamp c[4:0], segment mask c[12:8]); -1 when
// the source is out of the segment and the lane keeps its own value. The caller also keeps its
// own value when the source lane is inactive. std::nullopt for an op that is not a shuffle.
constexpr std::optional<int> shuffleSource(machine::Op op, int lane, uint32_t b, uint32_t c) {
  using machine::Op;
  const int segmask = static_cast<int>((c >> 8) & 0x1f);
  const int clamp = static_cast<int>(c & 0x1f);
  const int maxLane = (lane & segmask) | (clamp & ~segmask);
  const int minLane = lane & segmask;
  b &= 0x1f;
  int64_t j = 0;
  bool valid = false;
  switch (op) {
    case Op::ShflUp:
      j = static_cast<int64_t>(lane) - b;
      valid = j >= maxLane;
      break;
    case Op::ShflDown:
      j = static_cast<int64_t>(lane) + b;
      valid = j <= maxLane;
      break;
    case Op::ShflBfly:
      j = lane ^ static_cast<int64_t>(b);
      valid = j <= maxLane;
      break;
    case Op::ShflIdx:
      j = minLane | static_cast<int64_t>(b & ~static_cast<uint32_t>(segmask));
      valid = j <= maxLane;
      break;
    default: return std::nullopt;
  }
  if (!valid || j < 0 || j >= machine::kLanes) return -1;
  return static_cast<int>(j);
}

// Votes (VoteAny, VoteAll, Ballot) over `votes` = the predicate's mask in the active lanes
// `active`: Ballot gives the mask itself as a value, VoteAny/VoteAll a uniform bool (1 or 0).
constexpr std::optional<uint32_t> evalVote(machine::Op op, uint32_t votes, uint32_t active) {
  using machine::Op;
  votes &= active;
  switch (op) {
    case Op::Ballot: return votes;
    case Op::VoteAny: return votes != 0 ? 1u : 0u;
    case Op::VoteAll: return votes == active ? 1u : 0u;
    default: return std::nullopt;
  }
}

}  // namespace qgpu::oracle
