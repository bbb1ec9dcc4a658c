// qgpu/gpu/recording.cpp — recording writer, validating reader, comparison (see recording.h).
#include "gpu/recording.h"

#include "common/digest.h"
#include "common/file.h"
#include "common/text.h"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace qgpu::gpu {

namespace {

using Json = nlohmann::json;

// Nesting deeper than this is refused before it is built: nothing in a recording nests more than
// 3 levels, and a hostile file must not cost more than that.
constexpr int kMaxDepth = 64;

// A JSON string literal. Bytes that are not UTF-8 (a driver's JIT log may hold any) become U+FFFD
// instead of making the writer fail.
std::string quote(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Thrown by the parser callback for what nlohmann-json accepts but we do not; caught in parseJson.
struct Refused {
  std::string what;
};

// nlohmann-json in its strict mode (RFC 8259: no comments, no trailing text or commas, no control
// characters in strings, valid UTF-8 and surrogate pairs) plus two rules of ours: a key twice in
// one object and nesting deeper than kMaxDepth are errors too. Syntax errors carry line:column.
Expected<Json> parseJson(const std::string& text, const std::string& file) {
  std::vector<std::set<std::string>> keys;  // one per open object, innermost last
  Json::parser_callback_t check = [&keys](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= kMaxDepth) {
          throw Refused{"nesting deeper than " + std::to_string(kMaxDepth) + " levels"};
        }
        if (event == Json::parse_event_t::object_start) keys.emplace_back();
        break;
      case Json::parse_event_t::object_end: keys.pop_back(); break;
      case Json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second) {
          throw Refused{"duplicate key " + quote(parsed.get<std::string>())};
        }
        break;
      default: break;
    }
    return true;
  };
  try {
    return Json::parse(text, check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Refused& r) {
    return makeDiag(ErrorKind::Io, "invalid JSON: " + r.what, SourceLoc{file, 0, 0});
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based (the character that failed; size + 1 at the end of the text).
    size_t at = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    uint32_t line = 1, col = 1;
    for (size_t k = 0; k < at; ++k) {
      if (text[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    // what(): "[json.exception.parse_error.101] parse error at line 3, column 3: syntax error
    // while parsing value - unexpected '}'; ..." — the location is ours, the reason theirs.
    std::string why = e.what();
    size_t colon = why.find(": ");
    if (colon != std::string::npos) why = why.substr(colon + 2);
    return makeDiag(ErrorKind::Io, "invalid JSON: " + why, SourceLoc{file, line, col});
  }
}

// "number" for every kind of number, "boolean", "string", ...: the names the messages use.
const char* typeName(Json::value_t type) { return Json(type).type_name(); }

// Field-by-field validation with messages that name the path ("cases[2].grid").
class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}

  Diag error(const std::string& path, const std::string& what) const {
    return makeDiag(ErrorKind::Io, "invalid GPU recording: " + path + ": " + what,
                    SourceLoc{file_, 0, 0});
  }

  Expected<const Json*> field(const Json& obj, const std::string& path, const std::string& key,
                              Json::value_t type) const {
    std::string where = path.empty() ? key : path + "." + key;
    auto it = obj.find(key);
    if (it == obj.end()) return error(where, "missing");
    bool ok = type == Json::value_t::number_unsigned ? it->is_number() : it->type() == type;
    if (!ok) {
      return error(where, std::string("expected ") + typeName(type) + ", found " + it->type_name());
    }
    return &*it;
  }

  Expected<std::string> string(const Json& obj, const std::string& path,
                               const std::string& key) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::string));
    return v->get<std::string>();
  }

  Expected<uint32_t> u32(const Json& obj, const std::string& path, const std::string& key,
                         uint32_t min, uint32_t max) const {
    QGPU_TRY(v, field(obj, path, key, Json::value_t::number_unsigned));
    auto n = asU32(*v);
    std::string where = path.empty() ? key : path + "." + key;
    if (!n) return error(where, "expected a non-negative 32-bit integer, found " + v->dump());
    if (*n < min || *n > max) {
      return error(where, std::to_string(*n) + " is outside " + std::to_string(min) + ".." +
                              std::to_string(max));
    }
    return *n;
  }

  // Plain non-negative integers that fit (nlohmann-json reads "4", not "-4", "4.0" or "4e0", as
  // unsigned).
  static std::optional<uint32_t> asU32(const Json& v) {
    if (!v.is_number_unsigned()) return std::nullopt;
    uint64_t n = v.get<uint64_t>();
    if (n > 0xFFFFFFFFull) return std::nullopt;
    return static_cast<uint32_t>(n);
  }

 private:
  std::string file_;
};

}  // namespace

std::string ptxDigest(const std::string& ptx) { return digestString(fnv1a64(ptx)); }

bool isPtxDigest(const std::string& s) {
  if (s.size() != 8 + 16 || s.compare(0, 8, "fnv1a64:") != 0) return false;
  for (size_t k = 8; k < s.size(); ++k) {
    char c = s[k];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

const char* statusName(CaseStatus status) {
  switch (status) {
    case CaseStatus::Ok: return "ok";
    case CaseStatus::GuardViolation: return "guard-violation";
    case CaseStatus::Nondeterministic: return "nondeterministic";
    case CaseStatus::DeviceError: return "device-error";
  }
  return "unknown";
}

std::optional<CaseStatus> parseStatus(const std::string& name) {
  for (CaseStatus s : {CaseStatus::Ok, CaseStatus::GuardViolation, CaseStatus::Nondeterministic,
                       CaseStatus::DeviceError}) {
    if (name == statusName(s)) return s;
  }
  return std::nullopt;
}

std::string writeRecordingJson(const Recording& rec) {
  std::ostringstream o;
  const Provenance& p = rec.provenance;
  o << "{\n";
  o << "  \"magic\": " << quote(kRecordingMagic) << ",\n";
  o << "  \"version\": " << kRecordingVersion << ",\n";
  o << "  \"provenance\": {\n";
  o << "    \"gpu\": " << quote(p.gpu) << ",\n";
  o << "    \"computeCapability\": " << quote(p.computeCapability) << ",\n";
  o << "    \"driverVersion\": " << quote(p.driverVersion) << ",\n";
  o << "    \"cudaDriverApiVersion\": " << quote(p.cudaDriverApiVersion) << ",\n";
  o << "    \"cudaToolkitVersion\": " << quote(p.cudaToolkitVersion) << ",\n";
  o << "    \"date\": " << quote(p.date) << ",\n";
  o << "    \"commit\": " << quote(p.commit) << ",\n";
  o << "    \"host\": " << quote(p.host) << ",\n";
  o << "    \"tool\": " << quote(p.tool) << "\n";
  o << "  },\n";
  o << "  \"cases\": [";
  for (size_t c = 0; c < rec.cases.size(); ++c) {
    const RecordedCase& k = rec.cases[c];
    o << (c == 0 ? "\n" : ",\n");
    o << "    {\n";
    o << "      \"kernel\": " << quote(k.kernel) << ",\n";
    o << "      \"compiler\": " << quote(k.compiler) << ",\n";
    o << "      \"entry\": " << quote(k.entry) << ",\n";
    o << "      \"ptxDigest\": " << quote(k.ptxDigest) << ",\n";
    o << "      \"grid\": " << k.grid << ",\n";
    o << "      \"block\": " << k.block << ",\n";
    o << "      \"status\": " << quote(statusName(k.status)) << ",\n";
    o << "      \"detail\": " << quote(k.detail) << ",\n";
    o << "      \"global\": [";
    for (size_t w = 0; w < k.global.size(); ++w) {
      if (w > 0) o << ",";
      o << (w % 8 == 0 ? "\n        " : " ") << k.global[w];
    }
    o << (k.global.empty() ? "]\n" : "\n      ]\n");
    o << "    }";
  }
  o << (rec.cases.empty() ? "]\n" : "\n  ]\n");
  o << "}\n";
  return o.str();
}

Expected<Recording> parseRecordingJson(const std::string& text, const std::string& file) {
  QGPU_TRY(doc, parseJson(text, file));
  Checker ck(file);
  if (!doc.is_object()) {
    return ck.error("(top level)", std::string("expected object, found ") + doc.type_name());
  }
  QGPU_TRY(magic, ck.string(doc, "", "magic"));
  if (magic != kRecordingMagic) {
    return ck.error("magic", "\"" + magic + "\" is not \"" + kRecordingMagic + "\"");
  }
  QGPU_TRY(version, ck.u32(doc, "", "version", 0, 0xFFFFFFFFu));
  if (version != static_cast<uint32_t>(kRecordingVersion)) {
    return ck.error("version", "this qgpu reads version " + std::to_string(kRecordingVersion) +
                                   ", the file has version " + std::to_string(version));
  }
  Recording rec;
  QGPU_TRY(prov, ck.field(doc, "", "provenance", Json::value_t::object));
  struct {
    const char* key;
    std::string* out;
  } strings[] = {{"gpu", &rec.provenance.gpu},
                 {"computeCapability", &rec.provenance.computeCapability},
                 {"driverVersion", &rec.provenance.driverVersion},
                 {"cudaDriverApiVersion", &rec.provenance.cudaDriverApiVersion},
                 {"cudaToolkitVersion", &rec.provenance.cudaToolkitVersion},
                 {"date", &rec.provenance.date},
                 {"commit", &rec.provenance.commit},
                 {"host", &rec.provenance.host},
                 {"tool", &rec.provenance.tool}};
  for (auto& s : strings) {
    QGPU_TRY(v, ck.string(*prov, "provenance", s.key));
    *s.out = v;
  }
  if (rec.provenance.gpu.empty()) return ck.error("provenance.gpu", "empty");
  if (rec.provenance.date.empty()) return ck.error("provenance.date", "empty");

  QGPU_TRY(cases, ck.field(doc, "", "cases", Json::value_t::array));
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t c = 0; c < cases->size(); ++c) {
    const Json& item = (*cases)[c];
    std::string path = "cases[" + std::to_string(c) + "]";
    if (!item.is_object()) {
      return ck.error(path, std::string("expected object, found ") + item.type_name());
    }
    RecordedCase k;
    QGPU_TRY(kernel, ck.string(item, path, "kernel"));
    QGPU_TRY(compiler, ck.string(item, path, "compiler"));
    QGPU_TRY(entry, ck.string(item, path, "entry"));
    QGPU_TRY(digest, ck.string(item, path, "ptxDigest"));
    QGPU_TRY(grid, ck.u32(item, path, "grid", 1, 0xFFFFFFFFu));
    QGPU_TRY(block, ck.u32(item, path, "block", 1, 1024));
    QGPU_TRY(status, ck.string(item, path, "status"));
    QGPU_TRY(detail, ck.string(item, path, "detail"));
    QGPU_TRY(global, ck.field(item, path, "global", Json::value_t::array));
    if (kernel.empty()) return ck.error(path + ".kernel", "empty");
    if (compiler.empty()) return ck.error(path + ".compiler", "empty");
    if (!isPtxDigest(digest)) {
      return ck.error(path + ".ptxDigest", "\"" + digest + "\" is not fnv1a64:<16 hex digits>");
    }
    auto st = parseStatus(status);
    if (!st) return ck.error(path + ".status", "unknown status \"" + status + "\"");
    k.kernel = kernel;
    k.compiler = compiler;
    k.entry = entry;
    k.ptxDigest = digest;
    k.grid = grid;
    k.block = block;
    k.status = *st;
    k.detail = detail;
    bool hasImage = *st == CaseStatus::Ok || *st == CaseStatus::GuardViolation;
    if (hasImage && global->empty()) {
      return ck.error(path + ".global", std::string("status ") + status + " needs the final image");
    }
    if (!hasImage && !global->empty()) {
      return ck.error(path + ".global", std::string("status ") + status + " must have no image");
    }
    for (size_t w = 0; w < global->size(); ++w) {
      auto n = Checker::asU32((*global)[w]);
      if (!n) {
        return ck.error(path + ".global[" + std::to_string(w) + "]",
                        "expected a 32-bit unsigned integer");
      }
      k.global.push_back(*n);
    }
    if (!seen.emplace(kernel, compiler).second) {
      return ck.error(path, "second case for kernel \"" + kernel + "\" compiler \"" + compiler + "\"");
    }
    rec.cases.push_back(std::move(k));
  }
  return rec;
}

Expected<Recording> readRecording(const std::string& path) {
  // A recording is a few hundred bytes per case; 64 MiB leaves room for thousands of cases.
  QGPU_TRY(text, readInputFile(path, size_t{64} << 20, "GPU recording"));
  return parseRecordingJson(text, path);
}

Status writeRecording(const Recording& recording, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return makeDiag(ErrorKind::Io, "cannot write GPU recording", SourceLoc{path, 0, 0});
  out << writeRecordingJson(recording);
  out.close();
  if (!out) return makeDiag(ErrorKind::Io, "error writing GPU recording", SourceLoc{path, 0, 0});
  return Ok{};
}

CaseComparison compareCase(const RecordedCase& rec, const std::string& currentDigest,
                           const Expected<std::vector<uint32_t>>& interp,
                           const std::vector<WordRange>& unordered) {
  if (rec.ptxDigest != currentDigest) {
    return {Verdict::Inconclusive, true, "stale: recorded PTX " + rec.ptxDigest + ", host now produces " + currentDigest};
  }
  switch (rec.status) {
    case CaseStatus::DeviceError:
      return {caseVerdict(makeDiag(ErrorKind::Device, rec.detail)), false,
              "GPU run failed: " + rec.detail};
    case CaseStatus::Nondeterministic:
      return {Verdict::Mismatch, false, "GPU result nondeterministic: " + rec.detail};
    case CaseStatus::GuardViolation:
      return {Verdict::Mismatch, false, "GPU wrote outside global memory: " + rec.detail};
    case CaseStatus::Ok:
      break;
  }
  if (!interp.ok()) {
    // The host refusing a kernel (outside the subset, over the machine's limits, a tool missing)
    // leaves nothing to compare; the interpreter faulting on a kernel the GPU ran is a finding.
    Verdict v = caseVerdict(interp.error());
    return {v, false,
            std::string(v == Verdict::Inconclusive ? "host cannot run it: "
                                                   : "GPU ran, interpreter failed: ") +
                interp.error().str()};
  }
  const std::vector<uint32_t>& mine = *interp;
  auto diff = firstDifference(rec.global, mine, unordered);
  if (!diff) return {Verdict::Match, false, ""};
  size_t k = *diff;
  if (k >= rec.global.size() || k >= mine.size()) {
    return {Verdict::Mismatch, false, "image sizes differ: gpu " + std::to_string(rec.global.size()) +
                                   " words vs interpreter " + std::to_string(mine.size())};
  }
  for (const WordRange& r : unordered) {
    if (k == r.first) {
      return {Verdict::Mismatch, false, "words " + std::to_string(r.first) + ".." +
                                     std::to_string(r.first + r.count - 1) +
                                     " (compared as a multiset) differ: gpu has " +
                                     hexWord(rec.global[k]) + "... interpreter " + hexWord(mine[k]) +
                                     "..."};
    }
  }
  size_t count = 0;
  for (size_t w = 0; w < std::min(rec.global.size(), mine.size()); ++w) count += rec.global[w] != mine[w];
  return {Verdict::Mismatch, false, "word " + std::to_string(k) + " (byte " + std::to_string(4 * k) +
                                 "): gpu " + hexWord(rec.global[k]) + " vs interpreter " +
                                 hexWord(mine[k]) + " (" + std::to_string(count) +
                                 " words differ)"};
}

}  // namespace qgpu::gpu
