// qgpu/harness/reduce.cpp — the reducer (contract and passes: reduce.h).
#include "harness/reduce.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "harness/subprocess.h"

namespace qgpu::reduce {

namespace fs = std::filesystem;

Expected<FileKind> fileKindOf(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext == ".cu") return FileKind::Cuda;
  if (ext == ".ptx") return FileKind::Ptx;
  return makeDiag(ErrorKind::Usage,
                  "cannot reduce '" + path + "': the file must end in .cu or .ptx",
                  SourceLoc{path, 0, 0});
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

std::string joinLines(const std::vector<std::string>& lines, bool finalNewline) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    if (i + 1 < lines.size() || finalNewline) out += '\n';
  }
  return out;
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool containsWord(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    bool before = at == 0 || !isIdentChar(text[at - 1]);
    bool after = at + word.size() >= text.size() || !isIdentChar(text[at + word.size()]);
    if (before && after) return true;
  }
  return false;
}

}  // namespace

Expected<PredicateRun> runPredicate(const std::string& text, const PredicateOptions& options) {
  if (options.fileName.empty() || options.fileName.find('/') != std::string::npos)
    return makeDiag(ErrorKind::Usage, "the candidate's name must be a plain file name, not '" +
                                          options.fileName + "'");
  std::string tmpl = (fs::temp_directory_path() / "qgpu-reduce.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return makeDiag(ErrorKind::Io,
                    std::string("cannot make a scratch directory: ") + std::strerror(errno));
  const fs::path dir = tmpl;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  {
    std::ofstream f(dir / options.fileName, std::ios::binary);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!f) return makeDiag(ErrorKind::Io, "cannot write the candidate into " + dir.string());
  }
  ProcessOptions po;
  po.workDir = dir.string();
  po.logPath = (dir / ".predicate.log").string();
  po.env = {{"QGPU_REDUCE_FILE", options.fileName}};
  po.timeoutSeconds = options.timeoutSeconds;
  QGPU_TRY(p, runProcess({"/bin/sh", "-c", options.command}, po));
  PredicateRun run;
  run.timedOut = p.timedOut;
  run.exitCode = p.exitCode;
  run.signal = p.signal;
  run.interesting = p.exitedWith(0);
  run.logTail = logTail(po.logPath);
  return run;
}

bool sharedExchangesRaceFree(const std::string& candidate) {
  // The shared arrays the candidate declares.
  std::vector<std::string> lines = splitLines(candidate);
  std::vector<std::string> arrays;
  for (const std::string& l : lines) {
    size_t at = l.find("__shared__");
    if (at == std::string::npos) continue;
    size_t br = l.find('[', at);
    if (br == std::string::npos) continue;
    size_t e = br;
    while (e > at && !isIdentChar(l[e - 1])) --e;
    size_t b = e;
    while (b > at && isIdentChar(l[b - 1])) --b;
    if (b < e) arrays.push_back(l.substr(b, e - b));
  }
  if (arrays.empty()) return true;
  // Race-free exchange: every read of a shared array follows a store and a barrier after that
  // store, and a barrier separates a read from the next store (gen/cuda_gen.h's exchange: store,
  // __syncthreads, read, __syncthreads).
  bool storeSeen = false, barrierSinceStore = false, readPending = false;
  for (const std::string& raw : lines) {
    std::string l = trim(raw);
    if (l.find("__shared__") != std::string::npos) continue;
    if (l == "__syncthreads();") {
      barrierSinceStore = true;
      readPending = false;
      continue;
    }
    for (const std::string& a : arrays) {
      bool store = l.rfind(a + "[", 0) == 0 && l.find("] =") != std::string::npos &&
                   l.find("] ==") == std::string::npos;
      bool read = false;
      for (size_t at = l.find(a + "["); at != std::string::npos; at = l.find(a + "[", at + 1)) {
        if (at > 0 && isIdentChar(l[at - 1])) continue;
        if (store && at == 0) continue;
        read = true;
      }
      if (store) {
        if (readPending) return false;
        storeSeen = true;
        barrierSinceStore = false;
      }
      if (read) {
        if (!storeSeen || !barrierSinceStore) return false;
        readPending = true;
      }
    }
  }
  return true;
}

namespace {

// ---- The reducer ----

class Reducer {
 public:
  Reducer(const std::string& text, FileKind kind, const ReduceOptions& options)
      : kind_(kind),
        options_(options),
        lines_(splitLines(text)),
        finalNewline_(!text.empty() && text.back() == '\n') {}

  Expected<ReduceResult> run() {
    ReduceResult r;
    const std::string original = joinLines(lines_, finalNewline_);
    r.linesBefore = static_cast<int>(lines_.size());
    r.bytesBefore = original.size();
    tried_.insert(original);
    for (int i = 0; i < options_.determinismRuns; ++i) {
      QGPU_TRY(p, call(original));
      if (!p.interesting) {
        std::string why = p.timedOut ? "timed out after " +
                                           std::to_string(options_.predicate.timeoutSeconds) + " s"
                          : p.signal ? "killed by signal " + std::to_string(p.signal)
                                     : "exit " + std::to_string(p.exitCode);
        if (p.exitCode == 127 && !p.timedOut && p.signal == 0)
          return makeDiag(ErrorKind::Usage,
                          "the predicate command was not found (sh: exit 127): '" +
                              options_.predicate.command + "'" + logNote(p));
        if (i == 0)
          return makeDiag(ErrorKind::Usage,
                          "the predicate is not interesting on the original file (" + why +
                              "): nothing to reduce" + logNote(p));
        return makeDiag(ErrorKind::Usage,
                        "the predicate is nondeterministic: interesting on run 1, not on run " +
                            std::to_string(i + 1) + " (" + why + ") of the original" + logNote(p));
      }
    }
    static const char* const kPasses[] = {"lines", "blocks", "params", "exprs", "atoms"};
    for (const char* name : kPasses) stats_.push_back({name, 0, 0});
    bool changed = true;
    while (changed && !exhausted()) {
      changed = false;
      ++r.rounds;
      for (size_t i = 0; i < std::size(kPasses) && !exhausted(); ++i) {
        current_ = &stats_[i];
        size_t before = joinLines(lines_, finalNewline_).size();
        int accepted = stats_[i].accepted;
        runPass(i);
        if (stats_[i].accepted > accepted) changed = true;
        if (options_.progress)
          options_.progress("round " + std::to_string(r.rounds) + " pass " + kPasses[i] + ": " +
                            std::to_string(before) + " -> " +
                            std::to_string(joinLines(lines_, finalNewline_).size()) + " bytes, " +
                            std::to_string(lines_.size()) + " lines, " + std::to_string(calls_) +
                            "/" + std::to_string(options_.budget) + " predicate calls");
      }
    }
    r.text = joinLines(lines_, finalNewline_);
    r.linesAfter = static_cast<int>(lines_.size());
    r.bytesAfter = r.text.size();
    r.predicateCalls = calls_;
    r.cacheHits = cacheHits_;
    r.budgetExhausted = exhausted();
    r.passes = stats_;
    if (error_) return *error_;
    return r;
  }

 private:
  std::string logNote(const PredicateRun& p) const {
    return p.logTail.empty() ? "" : "; its output ends: " + trim(p.logTail);
  }

  void runPass(size_t i) {
    switch (i) {
      case 0:
        passLines();
        break;
      case 1:
        passBlocks();
        break;
      case 2:
        passParams();
        break;
      case 3:
        passExprs();
        break;
      default:
        passAtoms();
        break;
    }
  }

  bool exhausted() const { return calls_ >= options_.budget || error_.has_value(); }

  Expected<PredicateRun> call(const std::string& text) {
    ++calls_;
    return runPredicate(text, options_.predicate);
  }

  // Tries a candidate: true (and it becomes the current file) when it is interesting.
  bool attempt(std::vector<std::string> candidate) {
    if (exhausted()) return false;
    std::string text = joinLines(candidate, finalNewline_);
    if (!tried_.insert(text).second) {
      ++cacheHits_;
      return false;
    }
    if (kind_ == FileKind::Cuda && !sharedExchangesRaceFree(text)) return false;
    ++current_->tried;
    auto p = call(text);
    if (!p) {
      error_ = p.error();
      return false;
    }
    if (!p->interesting) return false;
    ++current_->accepted;
    lines_ = std::move(candidate);
    return true;
  }

  // The first line that passes may touch: after the leading `//` header.
  size_t bodyStart() const {
    size_t i = 0;
    while (i < lines_.size() && trim(lines_[i]).rfind("//", 0) == 0) ++i;
    return i;
  }
  bool fixedLine(size_t i) const {
    if (i < bodyStart()) return true;
    if (kind_ != FileKind::Ptx) return false;
    std::string t = trim(lines_[i]);
    return t.rfind(".version", 0) == 0 || t.rfind(".target", 0) == 0 ||
           t.rfind(".address_size", 0) == 0;
  }

  // ddmin over the removable lines: chunks of n/2, then n/4, ... 1.
  void passLines() {
    auto removable = [&] {
      std::vector<size_t> idx;
      for (size_t i = 0; i < lines_.size(); ++i)
        if (!fixedLine(i)) idx.push_back(i);
      return idx;
    };
    std::vector<size_t> idx = removable();
    size_t chunk = std::max<size_t>(1, idx.size() / 2);
    while (!idx.empty() && !exhausted()) {
      bool any = false;
      for (size_t start = 0; start < idx.size() && !exhausted();) {
        size_t end = std::min(idx.size(), start + chunk);
        std::set<size_t> drop(idx.begin() + static_cast<std::ptrdiff_t>(start),
                              idx.begin() + static_cast<std::ptrdiff_t>(end));
        std::vector<std::string> cand;
        for (size_t i = 0; i < lines_.size(); ++i)
          if (!drop.count(i)) cand.push_back(lines_[i]);
        if (attempt(std::move(cand))) {
          any = true;
          idx = removable();  // the same start now names the lines after the removed chunk
        } else {
          start = end;
        }
      }
      if (chunk == 1 && !any) break;
      if (!any)
        chunk = std::max<size_t>(1, chunk / 2);
      else
        chunk = std::min(chunk, std::max<size_t>(1, idx.size() / 2));
    }
  }

  // The line where the brace opened at the end of line `open` closes, or npos.
  size_t matchingClose(size_t open) const {
    int depth = 0;
    for (size_t i = open; i < lines_.size(); ++i) {
      const std::string& l = lines_[i];
      size_t from = 0;
      if (i == open) from = l.rfind('{');
      for (size_t c = from; c < l.size(); ++c) {
        if (l[c] == '{') ++depth;
        if (l[c] == '}' && --depth == 0) return i;
      }
    }
    return std::string::npos;
  }

  void passBlocks() {
    for (size_t i = bodyStart(); i < lines_.size() && !exhausted(); ++i) {
      std::string t = trim(lines_[i]);
      if (t.empty() || t.back() != '{' || fixedLine(i)) continue;
      size_t close = matchingClose(i);
      if (close == std::string::npos) continue;
      auto without = [&](std::vector<std::pair<size_t, size_t>> ranges) {  // inclusive ranges
        std::vector<std::string> cand;
        for (size_t k = 0; k < lines_.size(); ++k) {
          bool drop = false;
          for (auto [a, b] : ranges) drop |= k >= a && k <= b;
          if (!drop) cand.push_back(lines_[k]);
        }
        return cand;
      };
      std::string c = trim(lines_[close]);
      bool elseArm = c.rfind("}", 0) == 0 && c.find("else") != std::string::npos && c.back() == '{';
      if (elseArm) {
        size_t end = matchingClose(close);
        if (end == std::string::npos || trim(lines_[end]) != "}") continue;
        if (attempt(without({{i, end}}))) {
          --i;
          continue;
        }
        if (attempt(without({{i, i}, {close, end}}))) {
          --i;
          continue;
        }  // the then-arm alone
        if (attempt(without({{i, close}, {end, end}}))) {
          --i;
          continue;
        }  // the else-arm alone
        if (attempt(without({{close, end - 1}}))) {
          --i;
          continue;
        }  // no else
        continue;
      }
      if (attempt(without({{i, close}}))) {
        --i;
        continue;
      }
      if ((c == "}" || c == "};") && i + 1 < close && attempt(without({{i, i}, {close, close}}))) {
        --i;
        continue;
      }
    }
  }

  // ---- CUDA expression rewriting ----

  // Bracket depth at each character of a line (`[...]` contents are never rewritten).
  static std::vector<int> bracketDepth(const std::string& l) {
    std::vector<int> d(l.size(), 0);
    int depth = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] == ']') --depth;
      d[i] = depth;
      if (l[i] == '[') ++depth;
    }
    return d;
  }

  // The character before `pos`, skipping spaces and one `(int)`/`(unsigned)` cast: the operator a
  // group or literal is the right operand of.
  static std::string operatorBefore(const std::string& l, size_t pos) {
    size_t p = pos;
    while (p > 0 && l[p - 1] == ' ') --p;
    if (p > 0 && l[p - 1] == ')') {
      size_t open = l.rfind('(', p - 1);
      if (open != std::string::npos) {
        std::string inner = l.substr(open + 1, p - 2 - open);
        if (inner == "int" || inner == "unsigned") {
          p = open;
          while (p > 0 && l[p - 1] == ' ') --p;
        }
      }
    }
    if (p == 0) return "";
    if (p >= 2 && (l.substr(p - 2, 2) == "&&" || l.substr(p - 2, 2) == "||"))
      return l.substr(p - 2, 2);
    return std::string(1, l[p - 1]);
  }

  // Lines never rewritten in CUDA: declarations, preprocessor, the definitions of variables that
  // index a store or an atomic (the thread's own slot).
  std::set<size_t> protectedCudaLines() const {
    std::set<std::string> slotVars;
    for (size_t i = bodyStart(); i < lines_.size(); ++i) {
      const std::string& l = lines_[i];
      for (size_t b = l.find('['); b != std::string::npos; b = l.find('[', b + 1)) {
        size_t e = l.find(']', b);
        if (e == std::string::npos) break;
        std::string after = trim(l.substr(e + 1));
        bool store =
            !after.empty() &&
            (after[0] == '=' ? after.rfind("==", 0) != 0
                             : after.size() > 1 && after[1] == '=' &&
                                   std::string("+-*/%^&|").find(after[0]) != std::string::npos);
        size_t nb = b;
        while (nb > 0 && isIdentChar(l[nb - 1])) --nb;
        bool address = nb > 0 && l[nb - 1] == '&';
        if (!store && !address) continue;
        std::string inner = l.substr(b + 1, e - b - 1);
        for (size_t k = 0; k < inner.size();) {
          if (isIdentStart(inner[k])) {
            size_t s = k;
            while (k < inner.size() && isIdentChar(inner[k])) ++k;
            slotVars.insert(inner.substr(s, k - s));
          } else {
            ++k;
          }
        }
      }
    }
    std::set<size_t> prot;
    for (size_t i = bodyStart(); i < lines_.size(); ++i) {
      std::string t = trim(lines_[i]);
      if (t.rfind("#", 0) == 0 || t.find("__global__") != std::string::npos ||
          t.find("__device__") != std::string::npos || t.find("__shared__") != std::string::npos ||
          t.find("template") != std::string::npos)
        prot.insert(i);
      for (const std::string& v : slotVars)
        if (t.rfind("unsigned " + v + " =", 0) == 0 || t.rfind("int " + v + " =", 0) == 0 ||
            t.rfind(v + " =", 0) == 0)
          prot.insert(i);
    }
    return prot;
  }

  // The part of a line passes may rewrite: all of it, or a for-header's condition only (the
  // loop variable itself excluded by the caller).
  static std::pair<size_t, size_t> editableRange(const std::string& l, std::string* loopVar) {
    std::string t = trim(l);
    if (t.rfind("for (", 0) != 0) return {0, l.size()};
    size_t s1 = l.find(';'), s2 = s1 == std::string::npos ? s1 : l.find(';', s1 + 1);
    if (s2 == std::string::npos) return {0, 0};
    size_t f = l.find("for (") + 5;
    std::istringstream in(l.substr(f, s1 - f));
    std::string type, name;
    in >> type >> name;
    if (loopVar) *loopVar = name;
    return {s1 + 1, s2};
  }

  void passExprs() {
    if (kind_ != FileKind::Cuda) return;
    for (size_t li = bodyStart(); li < lines_.size() && !exhausted(); ++li) {
      if (protectedCudaLines().count(li)) continue;
      for (size_t pos = 0; !exhausted();) {
        const std::string l = lines_[li];
        auto [from, to] = editableRange(l, nullptr);
        size_t open = l.find('(', std::max(pos, from));
        if (open == std::string::npos || open >= to) break;
        pos = open + 1;
        std::vector<int> depth = bracketDepth(l);
        if (depth[open] > 0) continue;
        // Not a call or a control header: no identifier right before it.
        size_t p = open;
        while (p > 0 && l[p - 1] == ' ') --p;
        if (p > 0 && (isIdentChar(l[p - 1]) || l[p - 1] == ']')) continue;
        int d = 0;
        size_t close = std::string::npos;
        for (size_t c = open; c < l.size(); ++c) {
          if (l[c] == '(') ++d;
          if (l[c] == ')' && --d == 0) {
            close = c;
            break;
          }
        }
        if (close == std::string::npos || close > to) continue;
        std::string inner = l.substr(open + 1, close - open - 1);
        bool cast = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) {
          return isIdentChar(c) || c == ' ' || c == '*';
        }) && !std::all_of(inner.begin(), inner.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || c == 'u';
        });
        if (cast || inner.find(';') != std::string::npos) continue;
        std::string op = operatorBefore(l, open);
        std::vector<std::string> repl = (op == "/" || op == "%")
                                            ? std::vector<std::string>{"1u"}
                                            : std::vector<std::string>{"0u", "1u"};
        for (const std::string& r : repl) {
          std::vector<std::string> cand = lines_;
          cand[li] = l.substr(0, open) + r + l.substr(close + 1);
          if (attempt(std::move(cand))) {
            pos = open + r.size();
            break;
          }
        }
      }
    }
  }

  static bool isKeyword(const std::string& w) {
    static const std::set<std::string> k = {"unsigned",     "int",
                                            "signed",       "char",
                                            "short",        "long",
                                            "bool",         "void",
                                            "const",        "volatile",
                                            "static",       "extern",
                                            "inline",       "auto",
                                            "return",       "if",
                                            "else",         "for",
                                            "while",        "do",
                                            "break",        "continue",
                                            "struct",       "template",
                                            "typename",     "class",
                                            "true",         "false",
                                            "sizeof",       "__global__",
                                            "__device__",   "__shared__",
                                            "__noinline__", "__forceinline__",
                                            "__restrict__", "__syncthreads",
                                            "uint",         "uint32_t",
                                            "int32_t"};
    return k.count(w) > 0 || w.rfind("atomic", 0) == 0;
  }

  void passAtoms() {
    if (kind_ == FileKind::Ptx) {
      passPtxOperands();
      return;
    }
    for (size_t li = bodyStart(); li < lines_.size() && !exhausted(); ++li) {
      if (protectedCudaLines().count(li)) continue;
      for (size_t pos = 0; !exhausted();) {
        const std::string l = lines_[li];
        std::string loopVar;
        auto [from, to] = editableRange(l, &loopVar);
        pos = std::max(pos, from);
        while (pos < to && !(isIdentChar(l[pos]) && (pos == 0 || !isIdentChar(l[pos - 1])))) ++pos;
        if (pos >= to) break;
        size_t s = pos, e = pos;
        while (e < l.size() && isIdentChar(l[e])) ++e;
        pos = e;
        std::string w = l.substr(s, e - s);
        if (bracketDepth(l)[s] > 0 || w == loopVar || isKeyword(w)) continue;
        std::string op = operatorBefore(l, s);
        std::string after = trim(l.substr(e));
        size_t end = e;  // what the replacement covers
        if (std::isdigit(static_cast<unsigned char>(w[0]))) {
          if (w == "0" || w == "0u" || w == "1" || w == "1u") continue;
          if ((op == "&" || op == "|")) continue;  // a mask: UB guard
        } else {
          if (op == "." || (s >= 2 && (l.substr(s - 2, 2) == "++" || l.substr(s - 2, 2) == "--")) ||
              (s >= 2 && l.substr(s - 2, 2) == "->"))
            continue;
          if (!after.empty() &&
              (after[0] == '.' || after.rfind("++", 0) == 0 || after.rfind("--", 0) == 0))
            continue;
          bool assign = !after.empty() && after[0] == '=' && after.rfind("==", 0) != 0;
          bool compound = after.size() > 1 && after[1] == '=' &&
                          std::string("+-*/%^&|").find(after[0]) != std::string::npos;
          if (assign || compound) continue;
          // A declaration: a type word right before.
          size_t p = s;
          while (p > 0 && l[p - 1] == ' ') --p;
          size_t q = p;
          while (q > 0 && isIdentChar(l[q - 1])) --q;
          if (q < p && isKeyword(l.substr(q, p - q)) && l.substr(q, p - q) != "return") continue;
          if (!after.empty() && (after[0] == '(' || after[0] == '[')) {
            // A call or a load: the whole of it (unless it is stored to, or is a barrier).
            if (w.rfind("__syncthreads", 0) == 0) continue;
            char openC = after[0], closeC = openC == '(' ? ')' : ']';
            size_t o = l.find(openC, e);
            int d = 0;
            end = std::string::npos;
            for (size_t c = o; c < l.size(); ++c) {
              if (l[c] == openC) ++d;
              if (l[c] == closeC && --d == 0) {
                end = c + 1;
                break;
              }
            }
            if (end == std::string::npos || end > to) continue;
            std::string rest = trim(l.substr(end));
            bool stored =
                !rest.empty() && ((rest[0] == '=' && rest.rfind("==", 0) != 0) ||
                                  (rest.size() > 1 && rest[1] == '=' &&
                                   std::string("+-*/%^&|").find(rest[0]) != std::string::npos));
            if (stored || (s > 0 && operatorBefore(l, s) == "&" && l[s - 1] == '&')) continue;
            if (trim(l.substr(0, s)).empty())
              continue;  // a call statement: the lines pass removes it
          }
        }
        std::vector<std::string> repl = (op == "/" || op == "%")
                                            ? std::vector<std::string>{"1u"}
                                            : std::vector<std::string>{"0u", "1u"};
        for (const std::string& r : repl) {
          std::vector<std::string> cand = lines_;
          cand[li] = l.substr(0, s) + r + l.substr(end);
          if (attempt(std::move(cand))) {
            pos = s + r.size();
            break;
          }
        }
      }
    }
  }

  // PTX: source operands become 0 then 1; a guard is dropped (not on a branch: a loop could
  // become endless).
  void passPtxOperands() {
    for (size_t li = bodyStart(); li < lines_.size() && !exhausted(); ++li) {
      std::string t = trim(lines_[li]);
      if (t.empty() || t[0] == '.' || t[0] == '/' || t[0] == '{' || t[0] == '}' ||
          t.back() == ':' || t.back() != ';' || fixedLine(li))
        continue;
      size_t indent = lines_[li].find(t[0]);
      std::string guard, rest = t;
      if (rest[0] == '@') {
        size_t sp = rest.find_first_of(" \t");
        if (sp == std::string::npos) continue;
        guard = rest.substr(0, sp);
        rest = trim(rest.substr(sp));
      }
      size_t sp = rest.find_first_of(" \t");
      std::string opcode = rest.substr(0, sp == std::string::npos ? rest.size() : sp);
      if (opcode.rfind("bra", 0) == 0 || opcode.rfind("call", 0) == 0 ||
          opcode.rfind("ret", 0) == 0 || opcode.rfind("exit", 0) == 0 ||
          opcode.rfind("bar", 0) == 0 || sp == std::string::npos)
        continue;
      std::string operands = rest.substr(sp, rest.size() - sp - 1);
      std::vector<std::string> ops;
      int depth = 0;
      std::string cur;
      for (char c : operands) {
        if (c == '[' || c == '{') ++depth;
        if (c == ']' || c == '}') --depth;
        if (c == ',' && depth == 0) {
          ops.push_back(trim(cur));
          cur.clear();
        } else {
          cur += c;
        }
      }
      ops.push_back(trim(cur));
      bool storeLike = opcode.rfind("st.", 0) == 0 || opcode.rfind("red.", 0) == 0;
      auto rebuild = [&](const std::string& g, const std::vector<std::string>& o) {
        std::string line =
            lines_[li].substr(0, indent) + (g.empty() ? "" : g + " ") + opcode + "\t";
        for (size_t k = 0; k < o.size(); ++k) line += (k ? ", " : "") + o[k];
        return line + ";";
      };
      if (!guard.empty()) {
        std::vector<std::string> cand = lines_;
        cand[li] = rebuild("", ops);
        if (attempt(std::move(cand))) guard.clear();
      }
      for (size_t k = storeLike ? 0 : 1; k < ops.size() && !exhausted(); ++k) {
        const std::string& o = ops[k];
        if (o.empty() || o[0] == '[' || o[0] == '{' || o == "0" || o == "1") continue;
        bool reg = o[0] == '%';
        bool imm = std::isdigit(static_cast<unsigned char>(o[0])) || o[0] == '-';
        if (!reg && !imm) continue;
        for (const char* r : {"0", "1"}) {
          std::vector<std::string> o2 = ops;
          o2[k] = r;
          std::vector<std::string> cand = lines_;
          cand[li] = rebuild(guard, o2);
          if (attempt(std::move(cand))) {
            ops = o2;
            break;
          }
        }
      }
    }
  }

  // Unused kernel parameters leave the signature (and, for a kernel file, their header lines).
  void passParams() {
    if (kind_ == FileKind::Cuda) {
      for (size_t li = bodyStart(); li < lines_.size() && !exhausted(); ++li) {
        const std::string& l = lines_[li];
        size_t g = l.find("__global__");
        if (g == std::string::npos) continue;
        size_t open = l.find('(', g), close = l.find(')', open == std::string::npos ? g : open);
        if (open == std::string::npos || close == std::string::npos) continue;
        std::vector<std::string> params;
        std::string cur;
        for (char c : l.substr(open + 1, close - open - 1)) {
          if (c == ',') {
            params.push_back(trim(cur));
            cur.clear();
          } else {
            cur += c;
          }
        }
        if (!trim(cur).empty()) params.push_back(trim(cur));
        std::string body;
        for (size_t k = li + 1; k < lines_.size(); ++k) body += lines_[k] + "\n";
        body += l.substr(close + 1);
        for (size_t k = 0; k < params.size() && !exhausted(); ++k) {
          std::string decl = params[k].substr(0, params[k].find('='));
          size_t e = decl.find_last_not_of(" []");
          if (e == std::string::npos) continue;
          size_t b = e;
          while (b > 0 && isIdentChar(decl[b - 1])) --b;
          std::string name = decl.substr(b, e - b + 1);
          if (name.empty() || containsWord(body, name)) continue;
          std::string sig;
          for (size_t j = 0; j < params.size(); ++j)
            if (j != k) sig += (sig.empty() ? "" : ", ") + params[j];
          std::vector<std::string> cand;
          for (size_t j = 0; j < lines_.size(); ++j) {
            std::string t = trim(lines_[j]);
            if (j < bodyStart() && (t.rfind("// param: " + name + " ", 0) == 0 ||
                                    t.rfind("// expect: " + name + " ", 0) == 0))
              continue;
            cand.push_back(j == li ? l.substr(0, open + 1) + sig + l.substr(close) : lines_[j]);
          }
          if (attempt(std::move(cand))) return;  // the next round looks again
        }
      }
      return;
    }
    // PTX: `.param` lines between `.entry NAME(` and `)`.
    for (size_t li = bodyStart(); li < lines_.size() && !exhausted(); ++li) {
      std::string t = trim(lines_[li]);
      if (t.rfind(".param", 0) != 0) continue;
      std::string name = t;
      while (!name.empty() && (name.back() == ',' || name.back() == ' ')) name.pop_back();
      name = name.substr(name.find_last_of(" \t") + 1);
      std::string others;
      for (size_t k = 0; k < lines_.size(); ++k)
        if (k != li) others += lines_[k] + "\n";
      if (containsWord(others, name)) continue;
      std::vector<std::string> cand = lines_;
      bool last = t.back() != ',';
      cand.erase(cand.begin() + static_cast<std::ptrdiff_t>(li));
      if (last && li > 0) {
        std::string& prev = cand[li - 1];
        size_t comma = prev.find_last_of(',');
        if (trim(prev).rfind(".param", 0) == 0 && comma != std::string::npos) prev.erase(comma, 1);
      }
      if (attempt(std::move(cand))) --li;
    }
  }

  FileKind kind_;
  const ReduceOptions& options_;
  std::vector<std::string> lines_;
  bool finalNewline_;
  std::unordered_set<std::string> tried_;
  int calls_ = 0, cacheHits_ = 0;
  std::vector<PassStats> stats_;
  PassStats* current_ = nullptr;
  std::optional<Diag> error_;
};

}  // namespace

Expected<ReduceResult> reduce(const std::string& text, FileKind kind,
                              const ReduceOptions& options) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return makeDiag(ErrorKind::Usage, "nothing to reduce: the file is empty (or only blanks)");
  if (options.predicate.command.empty()) return makeDiag(ErrorKind::Usage, "no predicate command");
  if (options.determinismRuns < 1)
    return makeDiag(ErrorKind::Usage, "the determinism check needs at least 1 run");
  if (options.budget < options.determinismRuns)
    return makeDiag(ErrorKind::Usage, "the budget (" + std::to_string(options.budget) +
                                          " predicate calls) is below the determinism runs");
  if (!(options.predicate.timeoutSeconds > 0) || options.predicate.timeoutSeconds > 86400)
    return makeDiag(ErrorKind::Usage, "the predicate timeout must be in (0, 86400] seconds");
  Reducer r(text, kind, options);
  return r.run();
}

}  // namespace qgpu::reduce
