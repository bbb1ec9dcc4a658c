// qgpu/host/ptx/tests/typecheck_cases.h — hand-written operand-typing cases: for each rule of
// verify()'s kTypeRules one statement that ptxas accepts and its twin that ptxas rejects (each
// pair was run through `ptxas -arch=sm_75`; typecheck_ptxas_test.cpp re-runs them when ptxas is
// present, typecheck_test.cpp checks the front end agrees).
#pragma once

#include <string>
#include <vector>

namespace qgpu::ptx::testing {

struct TypeCase {
  const char* rule;      // what the pair pins down
  const char* accepted;  // one statement ptxas accepts
  const char* rejected;  // its twin ptxas rejects
  const char* mention;   // a substring of the front end's PtxInvalid message
  const char* at;        // the substring of `rejected` where the reported column points
};

// The kernel the statements are placed in: its registers, a .shared array `sm`, a .u64 param `p`.
// The statement is on line kTypeCaseLine, column 1.
inline std::string typeCaseModule(const std::string& statement) {
  return ".version 9.0\n.target sm_75\n.address_size 64\n"
         ".visible .entry k(.param .u64 p)\n{\n"
         ".reg .pred %p<3>;\n.reg .b16 %h<3>;\n.reg .b32 %r<5>;\n.reg .u32 %u<3>;\n"
         ".reg .s32 %s<3>;\n.reg .b64 %rd<5>;\n.shared .align 4 .b8 sm[16];\n" +
         statement + "\nret;\n}\n";
}
inline constexpr unsigned kTypeCaseLine = 13;

inline const std::vector<TypeCase>& typeCases() {
  static const std::vector<TypeCase> cases = {
      {"ld data register at least the type's width", "ld.global.u32 %rd1, [%rd2];",
       "ld.global.u32 %h1, [%rd2];", "needs a register of at least 32 bits", "%h1"},
      {"ld type not narrower than a register", "ld.global.u32 %r1, [%rd2];",
       "ld.global.u64 %r1, [%rd2];", "at least 64 bits", "%r1"},
      {"st data register at least the type's width", "st.global.u32 [%rd1], %rd2;",
       "st.global.u64 [%rd1], %r2;", "at least 64 bits", "%r2"},
      {"a 64-bit register in a 32-bit multiply", "mul.lo.s32 %r1, %u1, %s2;",
       "mul.lo.s32 %r1, %rd1, %r2;", "'%rd1' is .b64; this slot needs a 32-bit register", "%rd1"},
      {"a 64-bit destination of a 32-bit add", "add.s32 %r1, %r2, %r3;", "add.s32 %rd1, %r2, %r3;",
       "needs a 32-bit register", "%rd1"},
      {"global address register is 64-bit", "ld.global.u32 %r1, [%rd1];",
       "ld.global.u32 %r1, [%r2];", "needs a 64-bit register", "[%r2]"},
      {"generic address register is 64-bit", "st.u32 [%rd1], %r1;", "st.u32 [%r2], %r1;",
       "generic address in a 64-bit module", "[%r2]"},
      {"shared address may be 32-bit, global atom may not", "atom.shared.add.u32 %r1, [%r2], 1;",
       "atom.global.add.u32 %r1, [%r2], 1;", "needs a 64-bit register", "[%r2]"},
      {"a variable is addressed in its own space", "ld.shared.u32 %r1, [sm];",
       "ld.global.u32 %r1, [sm];", "'sm' is a .shared variable", "[sm]"},
      {"a param is read by ld.param", "ld.param.u64 %rd1, [p];", "ld.shared.u64 %rd1, [p];",
       "'p' is a .param variable", "[p]"},
      {"predicate where a value is expected", "add.s32 %r1, %r2, 1;", "add.s32 %r1, %p1, 1;",
       "predicate '%p1' where a value is expected", "%p1"},
      {"value where a predicate is expected", "selp.b32 %r1, %r2, %r3, %p1;",
       "selp.b32 %r1, %r2, %r3, %r4;", "'%r4' is .b32 where a predicate is expected", "%r4"},
      {"bitwise ops take .b or .pred types", "and.b32 %r1, %r2, %r3;", "and.u32 %r1, %r2, %r3;",
       "type .u32 is not allowed", "and.u32"},
      {"arithmetic takes no .b types", "add.u32 %r1, %r2, %r3;", "add.b32 %r1, %r2, %r3;",
       "type .b32 is not allowed", "add.b32"},
      {"shl takes only .b types", "shl.b32 %r1, %r2, 1;", "shl.u32 %r1, %r2, 1;",
       "type .u32 is not allowed", "shl.u32"},
      {"ordered setp takes no .b types", "setp.eq.b32 %p1, %r1, %r2;", "setp.lt.b32 %p1, %r1, %r2;",
       "type .b32 is not allowed", "setp.lt.b32"},
      {"unsigned setp comparisons take only .u types", "setp.lo.u32 %p1, %r1, %r2;",
       "setp.lo.s32 %p1, %r1, %r2;", "type .s32 is not allowed", "setp.lo.s32"},
      {"setp operands have the type's width", "setp.ne.s32 %p1, %r1, %r2;",
       "setp.ne.s32 %p1, %rd1, %r2;", "needs a 32-bit register", "%rd1"},
      {"abs/neg take only .s types", "abs.s32 %r1, %r2;", "abs.u32 %r1, %r2;",
       "type .u32 is not allowed", "abs.u32"},
      {"mul.wide result is twice the type", "mul.wide.s32 %rd1, %r1, %r2;",
       "mul.wide.s32 %r1, %r1, %r2;", "needs a 64-bit register", "%r1"},
      {"mul.wide takes no 64-bit type", "mul.wide.u32 %rd1, %r1, %r2;",
       "mul.wide.u64 %rd1, %rd1, %rd2;", "type .u64 is not allowed", "mul.wide.u64"},
      {"mad.wide addend is twice the type", "mad.wide.s32 %rd1, %r1, %r2, %rd1;",
       "mad.wide.s32 %rd1, %r1, %r2, %r1;", "needs a 64-bit register", "%r1;"},
      {"shift amount is 32-bit", "shl.b64 %rd1, %rd1, %r1;", "shl.b64 %rd1, %rd1, %rd2;",
       "needs a 32-bit register", "%rd2"},
      {"bfe position is 32-bit", "bfe.u64 %rd1, %rd1, %r2, %r3;", "bfe.u64 %rd1, %rd1, %rd2, %r3;",
       "needs a 32-bit register", "%rd2"},
      {"popc result is 32-bit", "popc.b64 %r1, %rd1;", "popc.b64 %rd1, %rd1;",
       "needs a 32-bit register", "%rd1"},
      {"cvt source at least the source type", "cvt.u32.u64 %r1, %rd1;", "cvt.u32.u64 %r1, %r1;",
       "at least 64 bits", "%r1;"},
      {"cvt destination at least the destination type", "cvt.u64.u32 %rd1, %r1;",
       "cvt.u64.u32 %r1, %r1;", "at least 64 bits", "%r1,"},
      {"mov is not relaxed", "mov.u32 %r1, %r2;", "mov.u32 %r1, %rd1;", "needs a 32-bit register",
       "%rd1"},
      {"mov.pred moves predicates", "mov.pred %p1, %p2;", "mov.pred %p1, %r1;",
       "where a predicate is expected", "%r1"},
      {"special registers have their width", "mov.u32 %r1, %tid.x;", "mov.u64 %rd1, %tid.x;",
       "special register '%tid.x' is 32-bit", "%tid.x"},
      {"special registers only in mov/cvt", "mov.u32 %r1, %ntid.x;", "add.s32 %r1, %r1, %ntid.x;",
       "special register '%ntid.x' outside mov/cvt", "%ntid.x"},
      {"cvta operands have the type's width", "cvta.to.global.u64 %rd1, %rd2;",
       "cvta.to.global.u64 %rd1, %r2;", "needs a 64-bit register", "%r2"},
      {"atom value has the type's width", "atom.global.add.u32 %r1, [%rd1], %r2;",
       "atom.global.add.u32 %r1, [%rd1], %rd2;", "needs a 32-bit register", "%rd2"},
      {"atom.add takes no .b type", "atom.global.exch.b32 %r1, [%rd1], %r2;",
       "atom.global.add.b32 %r1, [%rd1], %r2;", "type .b32 is not allowed", "atom.global.add.b32"},
      {"shfl lane is 32-bit", "shfl.sync.down.b32 %r1, %r2, %r3, 31, -1;",
       "shfl.sync.down.b32 %r1, %r2, %rd3, 31, -1;", "needs a 32-bit register", "%rd3"},
      {"vote.ballot result is 32-bit", "vote.sync.ballot.b32 %r1, %p1, -1;",
       "vote.sync.ballot.b32 %rd1, %p1, -1;", "needs a 32-bit register", "%rd1"},
      {"vote.all/any are .pred", "vote.sync.all.pred %p1, %p2, -1;", "vote.sync.any.b32 %p1, %p2, -1;",
       "type .b32 is not allowed", "vote.sync.any.b32"},
      {"bar.red.popc result is 32-bit", "bar.red.popc.u32 %r1, 0, %p1;",
       "bar.red.popc.u32 %rd1, 0, %p1;", "needs a 32-bit register", "%rd1"},
      {"barrier id is 32-bit", "bar.sync %r1;", "bar.sync %rd1;", "needs a 32-bit register", "%rd1"},
  };
  return cases;
}

}  // namespace qgpu::ptx::testing
