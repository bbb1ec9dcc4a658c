// qgpu/oracle/tests/builder.h — terse constructors for hand-built machine programs in tests.
//
// Only builds IR; it computes nothing, so expected values in tests stay hand-worked.
#pragma once

#include <initializer_list>

#include "oracle/machine.h"

namespace qgpu::machine::build {

inline Operand R(uint8_t r) {
  return Operand::r(r);
}
inline Operand I(int64_t v) {
  return Operand::i(static_cast<uint32_t>(v));
}
inline Operand S(Special s) {
  return Operand::s(s);
}
inline Operand Tid() {
  return Operand::s(Special::TidX);
}

inline Instr alu(Op op, uint8_t dst, Operand a, Operand b = {}, Operand c = {}) {
  Instr in;
  in.op = op;
  in.dst = dst;
  in.src = {a, b, c};
  return in;
}
inline Instr cmp(Op op, uint8_t p, Operand a, Operand b) {
  Instr in;
  in.op = op;
  in.dstPred = p;
  in.src = {a, b, Operand{}};
  return in;
}
inline Instr selp(uint8_t dst, Operand a, Operand b, uint8_t p) {
  Instr in;
  in.op = Op::Selp;
  in.dst = dst;
  in.src = {a, b, Operand{}};
  in.psrc = {p, kNoPred};
  return in;
}
inline Instr pop(Op op, uint8_t dst, uint8_t a = kNoPred, uint8_t b = kNoPred) {
  Instr in;
  in.op = op;
  in.dstPred = dst;
  in.psrc = {a, b};
  return in;
}
inline Instr pconst(uint8_t dst, bool value) {
  Instr in;
  in.op = Op::PConst;
  in.dstPred = dst;
  in.src[0] = I(value ? 1 : 0);
  return in;
}
inline Instr ld(Space space, uint8_t dst, Operand addr, int32_t offset = 0) {
  Instr in;
  in.op = Op::Ld;
  in.dst = dst;
  in.src[0] = addr;
  in.space = space;
  in.offset = offset;
  return in;
}
inline Instr st(Space space, Operand addr, Operand value, int32_t offset = 0) {
  Instr in;
  in.op = Op::St;
  in.src = {addr, value, Operand{}};
  in.space = space;
  in.offset = offset;
  return in;
}
// A sub-word store (Op::StB8 or Op::StB16) of `value`'s low bits at byte address addr + offset.
inline Instr stSub(Op op, Space space, Operand addr, Operand value, int32_t offset = 0) {
  Instr in = st(space, addr, value, offset);
  in.op = op;
  return in;
}
inline Instr atom(Op op, Space space, uint8_t dst, Operand addr, Operand b, Operand c = {}) {
  Instr in;
  in.op = op;
  in.dst = dst;
  in.src = {addr, b, c};
  in.space = space;
  return in;
}
inline Instr ldl(uint8_t dst, int32_t slot) {
  Instr in;
  in.op = Op::LdLocal;
  in.dst = dst;
  in.offset = slot;
  return in;
}
inline Instr stl(int32_t slot, Operand value) {
  Instr in;
  in.op = Op::StLocal;
  in.src[0] = value;
  in.offset = slot;
  return in;
}
inline Instr shfl(Op op, uint8_t dst, Operand a, Operand b, Operand c) {
  return alu(op, dst, a, b, c);
}
inline Instr ballot(uint8_t dst, uint8_t p) {
  Instr in;
  in.op = Op::Ballot;
  in.dst = dst;
  in.psrc[0] = p;
  return in;
}
inline Instr vote(Op op, uint8_t dstPred, uint8_t p) {
  Instr in;
  in.op = op;
  in.dstPred = dstPred;
  in.psrc[0] = p;
  return in;
}
inline Instr guard(Instr in, uint8_t p, bool negate = false) {
  in.guard = Guard{p, negate};
  return in;
}

inline Terminator jmp(uint8_t next) {
  return {TermKind::Jump, kNoPred, false, 0, next};
}
inline Terminator br(uint8_t p, uint8_t taken, uint8_t next, bool negate = false) {
  return {TermKind::Branch, p, negate, taken, next};
}
inline Terminator bar(uint8_t next) {
  return {TermKind::Barrier, kNoPred, false, 0, next};
}
inline Terminator exitTerm() {
  return {};
}

inline Block block(std::initializer_list<Instr> ops, Terminator term) {
  return Block{std::vector<Instr>(ops), term};
}

inline Launch launch(uint32_t gridX, uint32_t blockX) {
  Launch l;
  l.gridX = gridX;
  l.blockX = blockX;
  return l;
}

}  // namespace qgpu::machine::build
