// qgpu/circuit/tests/kind_writers.h — the writers of a build's fields of kinds (weights.h
// Field::kinds), from its unit log (CircuitWeights::logUnits): per kinds, how many units write
// such a field and how many of those have no guard (units.h UnitGuard). An unguarded writer would
// overwrite another kind's field on the same dims (docs/circuit.md §3.2 "Exclusive fields").
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "circuit/weights.h"

namespace qgpu::circuit {

struct KindWriters {
  int units = 0;
  int unguarded = 0;
};

inline std::map<uint32_t, KindWriters> kindWriters(
    const std::vector<Field>& taken, const std::vector<CircuitWeights::UnitRecord>& units) {
  std::map<int, uint32_t> kindsOf;  // dim → the kinds of the field on it
  for (const Field& f : taken)
    for (int i = 0; i < f.dims && f.kinds != 0; ++i) kindsOf[f.at(i)] = f.kinds;
  std::map<uint32_t, KindWriters> n;
  for (const CircuitWeights::UnitRecord& u : units) {
    uint32_t kinds = 0;
    for (int d : u.writes)
      if (auto it = kindsOf.find(d); it != kindsOf.end()) kinds = it->second;
    if (kinds == 0) continue;
    ++n[kinds].units;
    if (u.guardDim < 0) ++n[kinds].unguarded;
  }
  return n;
}

}  // namespace qgpu::circuit
