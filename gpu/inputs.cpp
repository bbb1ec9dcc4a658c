// qgpu/gpu/inputs.cpp — the exported GPU inputs format (see inputs.h).
#include "gpu/inputs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file.h"
#include "gpu/recording.h"

namespace qgpu::gpu {

namespace {

bool isName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string words(const std::vector<uint32_t>& ws) {
  std::string out;
  char buf[16];
  for (uint32_t w : ws) {
    std::snprintf(buf, sizeof buf, " %08x", w);
    out += buf;
  }
  return out;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) out.push_back(tok);
  return out;
}

// An out-parameter rather than std::optional: GCC 12 misreports optional<uint32_t> as
// maybe-uninitialized here under -O2 -Werror.
bool parseU32(const std::string& s, int base, uint32_t& out) {
  if (s.empty() || s.size() > (base == 16 ? 8u : 10u)) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    v = v * base + d;
  }
  if (v > 0xFFFFFFFFull) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// The manifest and the PTX files it names; the PTX front end reads at most 4 MiB
// (ptx::kMaxInputBytes), and no manifest comes near it.
constexpr size_t kMaxInputFileBytes = size_t{4} << 20;

Expected<std::string> readFile(const std::string& path) {
  return readInputFile(path, kMaxInputFileBytes, "GPU input file");
}

}  // namespace

std::optional<ErrorKind> parseKindName(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(ErrorKind::Internal); ++k) {
    if (name == kindName(static_cast<ErrorKind>(k))) return static_cast<ErrorKind>(k);
  }
  return std::nullopt;
}

Expected<std::vector<uint32_t>> GpuCase::expectation() const {
  if (expected) return *expected;
  if (expectedError) return *expectedError;
  return makeDiag(ErrorKind::Internal, "case has neither an expected image nor an error");
}

std::string writeManifest(const Inputs& inputs) {
  std::string o;
  o += "# qgpu GPU inputs, written by `qgpu gpu export`; run by ci/gpu-record.sh (docs/gpu.md).\n";
  o += std::string(kInputsMagic) + " " + std::to_string(kInputsVersion) + "\n";
  o += "commit " + inputs.commit + "\n";
  for (const GpuCase& c : inputs.cases) {
    o += "\ncase " + c.kernel + " " + c.compiler + "\n";
    o += "entry " + c.launch.entry + "\n";
    o += "ptx " + c.ptxFile + "\n";
    o += "digest " + c.digest + "\n";
    o += "launch " + std::to_string(c.launch.gridX) + " " + std::to_string(c.launch.blockX) + "\n";
    if (c.launch.dynamicSharedBytes != 0)  // only then: older manifests stay byte-identical
      o += "shared " + std::to_string(c.launch.dynamicSharedBytes) + "\n";
    o += "params";
    for (size_t i = 0; i < c.launch.params.size(); ++i) {
      o += (c.launch.paramIsPointer[i] ? " p:" : " s:") + std::to_string(c.launch.params[i]);
    }
    o += "\nunordered";
    for (const WordRange& r : c.launch.unordered) {
      o += " " + std::to_string(r.first) + ":" + std::to_string(r.count);
    }
    o += "\nglobal" + words(c.launch.global) + "\n";
    if (c.expected) {
      o += "expect" + words(*c.expected) + "\n";
    } else {
      Diag d = c.expectedError.value_or(makeDiag(ErrorKind::Internal, "no expectation"));
      std::string msg = d.loc.str().empty() ? d.message : d.loc.str() + ": " + d.message;
      for (char& ch : msg) {
        if (ch == '\n' || ch == '\r') ch = ' ';
      }
      o += std::string("expect-error ") + kindName(d.kind) + " " + msg + "\n";
    }
    o += "end\n";
  }
  return o;
}

Status writeInputs(const Inputs& inputs, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return makeDiag(ErrorKind::Io, "cannot create folder: " + ec.message(), SourceLoc{dir});
  for (const GpuCase& c : inputs.cases) {
    if (!isName(c.kernel) || !isName(c.compiler) || !isName(c.ptxFile) || !isName(c.launch.entry)) {
      return makeDiag(ErrorKind::Usage, "case names must match [A-Za-z0-9_.-]+: kernel '" +
                                            c.kernel + "' compiler '" + c.compiler + "'");
    }
    std::string path = dir + "/" + c.ptxFile;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << c.launch.ptx;
    out.close();
    if (!out) return makeDiag(ErrorKind::Io, "cannot write", SourceLoc{path});
  }
  std::string path = dir + "/manifest.txt";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << writeManifest(inputs);
  out.close();
  if (!out) return makeDiag(ErrorKind::Io, "cannot write", SourceLoc{path});
  return Ok{};
}

Expected<Inputs> parseManifest(const std::string& text, const std::string& manifestPath,
                               const std::string& dir) {
  Inputs inputs;
  std::istringstream in(text);
  std::string line;
  uint32_t lineNo = 0;
  bool sawMagic = false;
  std::optional<GpuCase> cur;
  // Which keys the current case has seen, in manifest order.
  std::vector<std::string> seen;
  auto err = [&](const std::string& what) {
    return makeDiag(ErrorKind::Io, "invalid GPU inputs manifest: " + what,
                    SourceLoc{manifestPath, lineNo, 0});
  };
  auto parseWords = [&](const std::vector<std::string>& tok,
                        std::vector<uint32_t>& out) -> Status {
    for (size_t k = 1; k < tok.size(); ++k) {
      uint32_t w = 0;
      if (!parseU32(tok[k], 16, w)) return err("'" + tok[k] + "' is not a hex word");
      out.push_back(w);
    }
    return Ok{};
  };
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> tok = split(line);
    if (tok.empty()) continue;
    const std::string& key = tok[0];
    if (!sawMagic) {
      if (tok.size() != 2 || key != kInputsMagic) {
        return err(std::string("first line must be '") + kInputsMagic + " " +
                   std::to_string(kInputsVersion) + "'");
      }
      if (tok[1] != std::to_string(kInputsVersion)) {
        return err("version " + tok[1] + " is not " + std::to_string(kInputsVersion));
      }
      sawMagic = true;
      continue;
    }
    if (!cur) {
      if (key == "commit" && tok.size() == 2) {
        inputs.commit = tok[1];
      } else if (key == "case") {
        if (tok.size() != 3 || !isName(tok[1]) || !isName(tok[2])) {
          return err("expected 'case <kernel> <compiler>'");
        }
        cur.emplace();
        cur->kernel = tok[1];
        cur->compiler = tok[2];
        seen.clear();
      } else {
        return err("unexpected '" + key + "' outside a case");
      }
      continue;
    }
    if (key == "end") {
      for (const char* need : {"entry", "ptx", "digest", "launch", "params", "unordered", "global"}) {
        bool has = false;
        for (const auto& s : seen) has = has || s == need;
        if (!has) return err(std::string("case ") + cur->kernel + "/" + cur->compiler + " has no '" + need + "' line");
      }
      if (!cur->expected && !cur->expectedError) {
        return err("case " + cur->kernel + "/" + cur->compiler + " has no 'expect' line");
      }
      if (cur->expected && cur->expected->size() != cur->launch.global.size()) {
        return err("case " + cur->kernel + "/" + cur->compiler + ": 'expect' has " +
                   std::to_string(cur->expected->size()) + " words, 'global' " +
                   std::to_string(cur->launch.global.size()));
      }
      for (const WordRange& r : cur->launch.unordered) {
        if (uint64_t{r.first} + r.count > cur->launch.global.size()) {
          return err("case " + cur->kernel + "/" + cur->compiler + ": unordered range " +
                     std::to_string(r.first) + ":" + std::to_string(r.count) +
                     " lies outside the image");
        }
      }
      auto ptx = readFile(dir + "/" + cur->ptxFile);
      if (!ptx.ok()) return ptx.error();
      cur->launch.ptx = std::move(*ptx);
      std::string actual = ptxDigest(cur->launch.ptx);
      if (actual != cur->digest) {
        return err("PTX file " + cur->ptxFile + " has digest " + actual + ", manifest says " +
                   cur->digest + " (edited after export? re-run `qgpu gpu export`)");
      }
      inputs.cases.push_back(std::move(*cur));
      cur.reset();
      continue;
    }
    for (const auto& s : seen) {
      if (s == key) return err("second '" + key + "' line in one case");
    }
    seen.push_back(key);
    if (key == "entry" && tok.size() == 2 && isName(tok[1])) {
      cur->launch.entry = tok[1];
    } else if (key == "ptx" && tok.size() == 2 && isName(tok[1])) {
      cur->ptxFile = tok[1];
    } else if (key == "digest" && tok.size() == 2) {
      if (!isPtxDigest(tok[1])) return err("'" + tok[1] + "' is not fnv1a64:<16 hex digits>");
      cur->digest = tok[1];
    } else if (key == "launch" && tok.size() == 3) {
      uint32_t g = 0, b = 0;
      if (!parseU32(tok[1], 10, g) || !parseU32(tok[2], 10, b) || g == 0 || b == 0) {
        return err("expected 'launch <grid> <block>', both >= 1");
      }
      cur->launch.gridX = g;
      cur->launch.blockX = b;
    } else if (key == "shared" && tok.size() == 2) {
      uint32_t bytes = 0;
      if (!parseU32(tok[1], 10, bytes) || bytes == 0 || bytes % 4 != 0 || bytes > 4 * 126)
        return err("expected 'shared <bytes>': a multiple of 4 in 4..504");
      cur->launch.dynamicSharedBytes = bytes;
    } else if (key == "params") {
      for (size_t k = 1; k < tok.size(); ++k) {
        const std::string& t = tok[k];
        uint32_t v = 0;
        bool prefix = t.size() > 2 && (t.compare(0, 2, "p:") == 0 || t.compare(0, 2, "s:") == 0);
        if (!prefix || !parseU32(t.substr(2), 10, v)) {
          return err("parameter '" + t + "' is not p:<byte offset> or s:<value>");
        }
        cur->launch.params.push_back(v);
        cur->launch.paramIsPointer.push_back(t[0] == 'p');
      }
    } else if (key == "unordered") {
      for (size_t k = 1; k < tok.size(); ++k) {
        size_t colon = tok[k].find(':');
        WordRange r;
        if (colon == std::string::npos || !parseU32(tok[k].substr(0, colon), 10, r.first) ||
            !parseU32(tok[k].substr(colon + 1), 10, r.count) || r.count == 0) {
          return err("range '" + tok[k] + "' is not <first word>:<count>");
        }
        cur->launch.unordered.push_back(r);
      }
    } else if (key == "global") {
      QGPU_CHECK(parseWords(tok, cur->launch.global));
      if (cur->launch.global.empty()) return err("empty global image");
    } else if (key == "expect") {
      std::vector<uint32_t> ws;
      QGPU_CHECK(parseWords(tok, ws));
      cur->expected = std::move(ws);
    } else if (key == "expect-error") {
      auto kind = tok.size() >= 3 ? parseKindName(tok[1]) : std::nullopt;
      if (!kind) return err("expected 'expect-error <Kind> <message>'");
      size_t at = line.find(tok[1], line.find("expect-error") + 12) + tok[1].size();
      size_t start = line.find_first_not_of(' ', at);
      cur->expectedError = makeDiag(*kind, line.substr(start));
    } else {
      return err("malformed or unknown line '" + key + "'");
    }
  }
  if (!sawMagic) return err("empty manifest");
  if (cur) return err("case " + cur->kernel + "/" + cur->compiler + " has no 'end' line");
  return inputs;
}

Expected<Inputs> readInputs(const std::string& dir) {
  std::string path = dir + "/manifest.txt";
  QGPU_TRY(text, readFile(path));
  return parseManifest(text, path, dir);
}

}  // namespace qgpu::gpu
