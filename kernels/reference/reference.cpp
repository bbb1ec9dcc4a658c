// qgpu/kernels/reference/reference.cpp — the reference registry and its runner.
#include "kernels/reference/reference.h"

#include "kernels/reference/tables.h"

namespace qgpu::kernels {

std::vector<int32_t>& RefArgs::a(std::string_view name) {
  auto it = arrays.find(name);
  if (it != arrays.end()) return it->second;
  if (missing.empty()) missing = "array '" + std::string(name) + "'";
  dummy_.assign(kGlobalWords, 0);
  return dummy_;
}

int32_t RefArgs::s(std::string_view name) {
  auto it = scalars.find(name);
  if (it != scalars.end()) return it->second;
  if (missing.empty()) missing = "scalar '" + std::string(name) + "'";
  return 0;
}

const std::map<std::string, ReferenceFn, std::less<>>& referenceTable() {
  static const ref::Table table = [] {
    ref::Table t;
    ref::addVectorKernels(t);
    ref::addReductionKernels(t);
    ref::addBitKernels(t);
    ref::addControlKernels(t);
    ref::addSyncKernels(t);
    ref::addIdiomKernels(t);
    ref::addSubwordKernels(t);
    ref::addArithKernels(t);
    ref::addPublicKernels(t);
    return t;
  }();
  return table;
}

Expected<std::vector<std::vector<uint32_t>>> runReference(const KernelSpec& spec) {
  auto it = referenceTable().find(spec.name);
  if (it == referenceTable().end()) {
    return makeDiag(ErrorKind::Internal, "no reference for kernel '" + spec.name + "'",
                    {spec.path, 1, 0});
  }
  RefArgs args;
  args.gridX = spec.gridX;
  args.blockX = spec.blockX;
  for (const ParamSpec& p : spec.params) {
    if (p.isArray()) {
      args.arrays[p.name] = std::vector<int32_t>(p.init.begin(), p.init.end());
    } else {
      args.scalars[p.name] = static_cast<int32_t>(p.init.at(0));
    }
  }
  it->second(args);
  if (!args.missing.empty()) {
    return makeDiag(ErrorKind::Internal, "reference of '" + spec.name + "' reads unknown " +
                                             args.missing, {spec.path, 1, 0});
  }
  std::vector<std::vector<uint32_t>> finals;
  for (const ParamSpec& p : spec.params) {
    std::vector<uint32_t> words;
    if (p.isArray()) {
      const std::vector<int32_t>& values = args.arrays.at(p.name);
      if (values.size() != p.init.size()) {
        return makeDiag(ErrorKind::Internal, "reference of '" + spec.name + "' resized '" +
                                                 p.name + "'", {spec.path, p.line, 0});
      }
      words.assign(values.begin(), values.end());
    }
    finals.push_back(std::move(words));
  }
  return finals;
}

Status fillExpectations(KernelSpec& spec) {
  QGPU_TRY(finals, runReference(spec));
  for (size_t i = 0; i < spec.params.size(); ++i) {
    ParamSpec& p = spec.params[i];
    if (!p.isOutput()) continue;
    p.hasExpect = true;
    p.expect = finals[i];
  }
  return Ok{};
}

}  // namespace qgpu::kernels
