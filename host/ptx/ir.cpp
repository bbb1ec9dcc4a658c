// qgpu/host/ptx/ir.cpp — names and properties of the PTX IR enums (ir.h, names.h).
#include "host/ptx/ir.h"

#include "host/ptx/names.h"

#include <iterator>

namespace qgpu::ptx {

const char* spelling(Opcode op) {
  switch (op) {
#define QGPU_PTX_OP(name, text) \
  case Opcode::name:            \
    return text;
#include "host/ptx/ops.def"
#undef QGPU_PTX_OP
  }
  return "?";
}

std::optional<Opcode> opcodeFromSpelling(std::string_view text) {
#define QGPU_PTX_OP(name, spelling) \
  if (text == spelling) return Opcode::name;
#include "host/ptx/ops.def"
#undef QGPU_PTX_OP
  return std::nullopt;
}

// One name table per selector enum, indexed by the enum value (index 0: None, no name).
namespace {
constexpr const char* kAtomOpNames[] = {"", "add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"};
constexpr const char* kShflModeNames[] = {"", "up", "down", "bfly", "idx"};
constexpr const char* kVoteModeNames[] = {"", "ballot", "any", "all", "uni"};
static_assert(std::size(kAtomOpNames) == static_cast<size_t>(AtomOp::Dec) + 1);
static_assert(std::size(kShflModeNames) == static_cast<size_t>(ShflMode::Idx) + 1);
static_assert(std::size(kVoteModeNames) == static_cast<size_t>(VoteMode::Uni) + 1);

template <class E, size_t N>
std::optional<E> fromName(const char* const (&names)[N], std::string_view text) {
  for (size_t i = 1; i < N; ++i)
    if (text == names[i]) return static_cast<E>(i);
  return std::nullopt;
}
}  // namespace

const char* atomOpName(AtomOp op) { return kAtomOpNames[static_cast<size_t>(op)]; }
const char* shflModeName(ShflMode mode) { return kShflModeNames[static_cast<size_t>(mode)]; }
const char* voteModeName(VoteMode mode) { return kVoteModeNames[static_cast<size_t>(mode)]; }
std::optional<AtomOp> atomOpFromName(std::string_view text) { return fromName<AtomOp>(kAtomOpNames, text); }
std::optional<ShflMode> shflModeFromName(std::string_view text) { return fromName<ShflMode>(kShflModeNames, text); }
std::optional<VoteMode> voteModeFromName(std::string_view text) { return fromName<VoteMode>(kVoteModeNames, text); }

int bits(Type t) {
  switch (t) {
    case Type::None: return 0;
    case Type::Pred: return 1;
    case Type::B8: case Type::U8: case Type::S8: return 8;
    case Type::B16: case Type::U16: case Type::S16: return 16;
    case Type::B32: case Type::U32: case Type::S32: return 32;
    case Type::B64: case Type::U64: case Type::S64: return 64;
  }
  return 0;
}

bool isSigned(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }

const char* typeName(Type t) {
  switch (t) {
    case Type::None: return "";
    case Type::Pred: return "pred";
    case Type::B8: return "b8";
    case Type::B16: return "b16";
    case Type::B32: return "b32";
    case Type::B64: return "b64";
    case Type::U8: return "u8";
    case Type::U16: return "u16";
    case Type::U32: return "u32";
    case Type::U64: return "u64";
    case Type::S8: return "s8";
    case Type::S16: return "s16";
    case Type::S32: return "s32";
    case Type::S64: return "s64";
  }
  return "?";
}

std::optional<Type> typeFromName(std::string_view name) {
  static constexpr Type kAll[] = {Type::Pred, Type::B8,  Type::B16, Type::B32, Type::B64,
                                  Type::U8,   Type::U16, Type::U32, Type::U64, Type::S8,
                                  Type::S16,  Type::S32, Type::S64};
  for (Type t : kAll)
    if (name == typeName(t)) return t;
  return std::nullopt;
}

bool isFloatTypeName(std::string_view name) {
  static constexpr std::string_view kFloat[] = {"f16",  "f16x2", "f32",  "f64",  "bf16",
                                                "bf16x2", "tf32", "e4m3", "e5m2", "e4m3x2",
                                                "e5m2x2", "f8", "f4e2m1", "f6e2m3", "f6e3m2"};
  for (auto f : kFloat)
    if (name == f) return true;
  return false;
}

const char* cmpName(CmpOp cmp) {
  switch (cmp) {
    case CmpOp::None: return "";
    case CmpOp::Eq: return "eq";
    case CmpOp::Ne: return "ne";
    case CmpOp::Lt: return "lt";
    case CmpOp::Le: return "le";
    case CmpOp::Gt: return "gt";
    case CmpOp::Ge: return "ge";
    case CmpOp::Lo: return "lo";
    case CmpOp::Ls: return "ls";
    case CmpOp::Hi: return "hi";
    case CmpOp::Hs: return "hs";
  }
  return "?";
}

std::optional<CmpOp> cmpFromName(std::string_view name) {
  static constexpr CmpOp kAll[] = {CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt,
                                   CmpOp::Ge, CmpOp::Lo, CmpOp::Ls, CmpOp::Hi, CmpOp::Hs};
  for (CmpOp c : kAll)
    if (name == cmpName(c)) return c;
  return std::nullopt;
}

const char* spaceName(StateSpace space) {
  switch (space) {
    case StateSpace::None: return "";
    case StateSpace::Global: return "global";
    case StateSpace::Shared: return "shared";
    case StateSpace::Param: return "param";
    case StateSpace::Generic: return "generic";
    case StateSpace::Local: return "local";
    case StateSpace::Const: return "const";
  }
  return "?";
}

std::optional<StateSpace> spaceFromName(std::string_view name) {
  static constexpr StateSpace kAll[] = {StateSpace::Global, StateSpace::Shared, StateSpace::Param,
                                        StateSpace::Local, StateSpace::Const};
  for (StateSpace s : kAll)
    if (name == spaceName(s)) return s;
  return std::nullopt;
}

Expected<const Function*> findEntry(const Module& module, const std::string& name) {
  std::vector<const Function*> entries;
  for (const Function& f : module.functions)
    if (f.isEntry) entries.push_back(&f);
  if (entries.size() == 1) return entries[0];
  std::string mangled = "_Z" + std::to_string(name.size()) + name;
  for (const Function* f : entries)
    if (f->name == name) return f;
  for (const Function* f : entries)
    if (f->name.rfind(mangled, 0) == 0) return f;
  std::string found;
  for (const Function* f : entries) found += (found.empty() ? "" : ", ") + f->name;
  return makeDiag(ErrorKind::PtxInvalid, "no kernel entry for '" + name + "' among " +
                                             std::to_string(entries.size()) + " entries (" +
                                             found + ")");
}

}  // namespace qgpu::ptx
