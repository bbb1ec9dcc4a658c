// qgpu/harness/report/json_fields.h — typed field access into a parsed JSON document that names
// what is wrong: every error has the reader's ErrorKind, "path.key: message" and the file as its
// location. Used by the report reader (json_report.cpp) and the audit's manifest and trace
// readers (harness/audit.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/diag.h"

namespace qgpu::report {

class JsonFields {
 public:
  using Json = nlohmann::json;

  JsonFields(ErrorKind kind, std::string file) : kind_(kind), file_(std::move(file)) {}

  Diag error(const std::string& path, const std::string& message) const {
    return makeDiag(kind_, (path.empty() ? "" : path + ": ") + message, SourceLoc{file_, 0, 0});
  }

  // obj[key] of the given type (an unsigned field takes any integer ≥ 0, a float any number).
  Expected<const Json*> field(const Json& obj, const std::string& path, const char* key,
                              Json::value_t type) const {
    const std::string where = at(path, key);
    auto it = obj.find(key);
    if (it == obj.end()) return error(where, "missing");
    const bool ok = it->type() == type ||
                    (type == Json::value_t::number_unsigned && it->is_number_integer() &&
                     it->get<int64_t>() >= 0) ||
                    (type == Json::value_t::number_float && it->is_number());
    if (!ok)
      return error(where,
                   std::string("expected ") + Json(type).type_name() + ", found " + it->type_name());
    return &*it;
  }
  Expected<std::string> str(const Json& obj, const std::string& path, const char* key) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::string));
    return v->get<std::string>();
  }
  Expected<uint64_t> u64(const Json& obj, const std::string& path, const char* key,
                         uint64_t max) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::number_unsigned));
    const uint64_t value = v->get<uint64_t>();
    if (value > max)
      return error(at(path, key), std::to_string(value) + " is over " + std::to_string(max));
    return value;
  }
  Expected<double> seconds(const Json& obj, const std::string& path, const char* key) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::number_float));
    const double value = v->get<double>();
    if (!std::isfinite(value) || value < 0 || value > 1e9)
      return error(at(path, key), "not a duration in seconds");
    return value;
  }
  Expected<bool> boolean(const Json& obj, const std::string& path, const char* key) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::boolean));
    return v->get<bool>();
  }
  Expected<std::vector<std::string>> strings(const Json& obj, const std::string& path,
                                             const char* key) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::array));
    std::vector<std::string> out;
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string())
        return error(at(path, key) + "[" + std::to_string(i) + "]", "expected string");
      out.push_back((*v)[i].get<std::string>());
    }
    return out;
  }

 private:
  static std::string at(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
  }

  ErrorKind kind_;
  std::string file_;
};

}  // namespace qgpu::report
