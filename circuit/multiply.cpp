// qgpu/circuit/multiply.cpp — see multiply.h for the maths.
#include "circuit/multiply.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

namespace qgpu::circuit {
namespace {

constexpr int kBits = 32;

Diag multiplyUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "multiply gadget: " + message);
}

bool isHigh(MulOp op) {
  return op == MulOp::HiU || op == MulOp::HiS;
}
int matrixWidth(MulOp op) {
  return isHigh(op) ? 2 * kBits : kBits;
}

// A bit matrix: column c holds ±u sign dims of weight 2^c and `ones` constant 1-bits.
struct Matrix {
  std::vector<std::vector<int>> dims;
  std::vector<int> ones;
  explicit Matrix(int width) : dims(static_cast<size_t>(width)), ones(static_cast<size_t>(width)) {}
  int width() const { return static_cast<int>(dims.size()); }
  int height(int c) const {
    return static_cast<int>(dims[static_cast<size_t>(c)].size()) + ones[static_cast<size_t>(c)];
  }
  int maxHeight() const {
    int h = 0;
    for (int c = 0; c < width(); ++c) h = std::max(h, height(c));
    return h;
  }
};

// One partial product a_i·b_j at bus dim `dim` of region X; `complement`: the dim holds 1 − p.
struct Product {
  int i, j, dim;
  bool complement;
};

std::vector<Product> products(MulOp op, int base) {
  std::vector<Product> ps;
  const int width = matrixWidth(op);
  for (int i = 0; i < kBits; ++i)
    for (int j = 0; j < kBits && i + j < width; ++j) {
      const bool complement = op == MulOp::HiS && ((i == kBits - 1) != (j == kBits - 1));
      ps.push_back({i, j, base + static_cast<int>(ps.size()), complement});
    }
  return ps;
}

Matrix initialMatrix(MulOp op, const std::vector<Product>& ps, const Field& c) {
  Matrix m(matrixWidth(op));
  for (const Product& p : ps) m.dims[static_cast<size_t>(p.i + p.j)].push_back(p.dim);
  if (op == MulOp::Mad)
    for (int k = 0; k < kBits; ++k) m.dims[static_cast<size_t>(k)].push_back(c.at(k));
  if (op == MulOp::HiS) {  // −2·(2^62 − 2^31) ≡ 2^63 + 2^32 (mod 2^64)
    m.ones[kBits] += 1;
    m.ones[2 * kBits - 1] += 1;
  }
  return m;
}

// A window of `w` columns from `first`: S = Σ 2^(c−first)·(bits + ones) ∈ [smin, smax], its
// bits 0..bits−1 land at columns first + l (those below the width).
struct Window {
  int first = 0, w = 1;
  int smin = 0, smax = 0;
  int bits = 0;
};

std::vector<Window> windows(const Matrix& m, int w) {
  std::vector<Window> ws;
  for (int first = 0; first < m.width(); first += w) {
    Window win{first, std::min(w, m.width() - first), 0, 0, 0};
    for (int c = first; c < first + win.w; ++c) {
      win.smin += m.ones[static_cast<size_t>(c)] << (c - first);
      win.smax += m.height(c) << (c - first);
    }
    while (win.bits < 31 && (win.smax >> win.bits) > 0 && first + win.bits < m.width()) ++win.bits;
    if (win.bits > 0) ws.push_back(win);
  }
  return ws;
}

int outputBits(const std::vector<Window>& ws) {
  int n = 0;
  for (const Window& w : ws) n += w.bits;
  return n;
}

// The output matrix of a stage whose window bit l of window k goes to dim dimOf(k, l).
template <typename DimOf>
Matrix place(const Matrix& m, const std::vector<Window>& ws, DimOf dimOf) {
  Matrix out(m.width());
  for (size_t k = 0; k < ws.size(); ++k)
    for (int l = 0; l < ws[k].bits; ++l)
      out.dims[static_cast<size_t>(ws[k].first + l)].push_back(dimOf(k, l));
  return out;
}

Status add(GadgetReport& total, Expected<GadgetReport> r) {
  if (!r.ok()) return r.error();
  total += r.value();
  return Ok{};
}

// Writes one compression stage: every output dim replaced, then the constant and one step pair
// per threshold θ ∈ (smin, smax] of each window.
Status emitStage(const MulStage& st, const Matrix& m, const std::vector<Window>& ws,
                 const std::vector<std::vector<int>>& outDims, const Field& replaced,
                 const std::vector<int>& zeroDims, GadgetReport& total) {
  QGPU_CHECK(add(total, buildCancel(*st.units, replaced, st.ctx)));
  std::vector<Output> constants;
  for (size_t k = 0; k < ws.size(); ++k)
    for (int l = 0; l < ws[k].bits; ++l)
      constants.push_back(
          {outDims[k][static_cast<size_t>(l)], ((ws[k].smin >> l) & 1) ? 1.0 : -1.0});
  for (int d : zeroDims) constants.push_back({d, -1.0});
  QGPU_CHECK(add(total, addConstant(*st.units, st.ctx, constants)));
  const std::vector<Term> up = {{st.ctx.ballast.at(0), 1.0f}};
  for (size_t k = 0; k < ws.size(); ++k) {
    const Window& win = ws[k];
    if (win.smax - win.smin > 256)
      return makeDiag(ErrorKind::Internal, "multiply gadget: a window spans " +
                                               std::to_string(win.smax - win.smin) +
                                               " > 256 (bf16 gate)");
    // S in units of x̂: a bit (x̂ + 1)/2 of weight 2^(c−first).
    LinearForm s;
    for (int c = win.first; c < win.first + win.w; ++c) {
      const double weight = std::ldexp(1.0, c - win.first);
      for (int d : m.dims[static_cast<size_t>(c)]) {
        s.terms.push_back({d, weight / 2});
        s.constant += weight / 2;
      }
      s.constant += weight * m.ones[static_cast<size_t>(c)];
    }
    for (int theta = win.smin + 1; theta <= win.smax; ++theta) {
      std::vector<Output> flips;
      for (int l = 0; l < win.bits; ++l)
        if (theta % (1 << l) == 0)
          flips.push_back({outDims[k][static_cast<size_t>(l)], ((theta >> l) & 1) ? 2.0 : -2.0});
      LinearForm n = s;
      n.constant += 1 - theta;
      QGPU_CHECK(add(total, addStep(*st.units, st.ctx, n, up, flips)));
    }
  }
  return Ok{};
}

// gatedAddend: stage 0 writes the gated copy of c after the products (header, "gates").
MultiplyBusDims regions(MulOp op, bool gatedAddend) {
  MultiplyBusDims r;
  r.products = static_cast<int>(products(op, 0).size()) + (gatedAddend ? kBits : 0);
  r.counts = outputBits(windows(initialMatrix(op, products(op, 0), {"c", 0, kBits}), 1));
  r.rows = 2 * matrixWidth(op) + (isHigh(op) ? kBits + 1 : 0);
  r.adder = adderBusDims(kBits) * (isHigh(op) ? 2 : 1);
  return r;
}

// The dims the regions cover (a union: in one field they overlap).
int distinctDims(const MultiplyBus& b) {
  std::set<int> dims;
  for (const Field* f : {&b.products, &b.counts, &b.rows, &b.adder})
    for (int i = 0; i < f->dims; ++i) dims.insert(f->at(i));
  return static_cast<int>(dims.size());
}

}  // namespace

const char* mulOpName(MulOp op) {
  switch (op) {
    case MulOp::Lo:
      return "mul";
    case MulOp::HiU:
      return "mulhi.u";
    case MulOp::HiS:
      return "mulhi.s";
    case MulOp::Mad:
      return "mad";
  }
  return "?";
}

MultiplyBusDims multiplyBusRegions(MulOp op, bool gatedAddend) {
  return regions(op, gatedAddend);
}

int multiplyBusDims(MulOp op, bool gatedAddend) {
  const MultiplyBusDims r = regions(op, gatedAddend);
  return std::max(r.products, r.rows) + std::max(r.counts, r.adder);
}

Expected<MultiplyBus> multiplyBusIn(const Field& bus, MulOp op, bool gatedAddend) {
  const MultiplyBusDims r = regions(op, gatedAddend);
  const int x = std::max(r.products, r.rows);
  if (bus.dims != x + std::max(r.counts, r.adder))
    return multiplyUsage("the bus needs " + std::to_string(multiplyBusDims(op, gatedAddend)) +
                         " dims, got " + std::to_string(bus.dims));
  return MultiplyBus{bus.slice(0, r.products, "products"), bus.slice(x, r.counts, "counts"),
                     bus.slice(0, r.rows, "rows"), bus.slice(x, r.adder, "adder")};
}

Expected<MultiplyReport> buildMultiply(std::span<const MulStage> stages, const MultiplySpec& s) {
  const MulOp op = s.op;
  if (static_cast<int>(stages.size()) != multiplyLayers(op))
    return multiplyUsage(std::string(mulOpName(op)) + " needs " +
                         std::to_string(multiplyLayers(op)) + " stages, got " +
                         std::to_string(stages.size()));
  for (const MulStage& st : stages)
    if (st.units == nullptr) return multiplyUsage("a stage has no unit writer");
  if (s.a.dims != kBits || s.b.dims != kBits || s.out.dims != kBits)
    return multiplyUsage("a, b and out need 32 dims each");
  if ((op == MulOp::Mad) != (s.c.dims == kBits) || (op != MulOp::Mad && s.c.dims != 0))
    return multiplyUsage("the addend c has 32 dims for mad and none otherwise");
  const bool gatedAddend = !s.addendEnable.empty();
  if (gatedAddend && op != MulOp::Mad) return multiplyUsage("addendEnable gates mad's c only");
  const bool passes = s.pass.dims != 0;
  if (passes != !s.passEnable.empty())
    return multiplyUsage("a pass-through needs both its word and its passEnable literals");
  if (passes && (!gatedAddend || s.pass.dims != kBits))
    return multiplyUsage("a pass-through needs a gated mad (addendEnable) and 32 dims");
  const auto excludesProducts = [&] {
    for (const Literal& p : s.passEnable)
      for (const Literal& e : s.enable)
        if (p.dim == e.dim && p.sign == -e.sign) return true;
    return false;
  };
  if (passes && !excludesProducts())
    return multiplyUsage(
        "passEnable must hold the negation of an enable literal (else the pass "
        "and the products could add up)");
  const MultiplyBusDims want = regions(op, gatedAddend);
  const MultiplyBus& bus = s.bus;
  if (bus.products.dims != want.products || bus.counts.dims != want.counts ||
      bus.rows.dims != want.rows || bus.adder.dims != want.adder)
    return multiplyUsage(
        "the bus's regions need " + std::to_string(want.products) + ", " +
        std::to_string(want.counts) + ", " + std::to_string(want.rows) + " and " +
        std::to_string(want.adder) + " dims (products, counts, rows, adder), got " +
        std::to_string(bus.products.dims) + ", " + std::to_string(bus.counts.dims) + ", " +
        std::to_string(bus.rows.dims) + " and " + std::to_string(bus.adder.dims));
  const int width = matrixWidth(op);

  MultiplyReport rep;
  rep.partialProducts = want.products - (gatedAddend ? kBits : 0);
  rep.countBits = want.counts;
  rep.busDims = distinctDims(bus);
  std::vector<int> before;
  for (const MulStage& st : stages) before.push_back(st.units->used());
  GadgetReport& total = rep.gadget;

  // Stage 0: the partial products (and the gated addend after them).
  const MulStage& s0 = stages[0];
  const std::vector<Product> ps = products(op, bus.products.offset);
  const Field addend =
      gatedAddend ? bus.products.slice(static_cast<int>(ps.size()), kBits, "addend") : s.c;
  // N = Σ literals − (k − 1) over k literals: +1 iff all hold, else ≤ −1 (a detector's decision).
  auto all = [](std::vector<Literal> lits) {
    LinearForm n;
    for (const Literal& l : lits) n.terms.push_back({l.dim, static_cast<double>(l.sign)});
    n.constant = 1.0 - static_cast<double>(lits.size());
    return n;
  };
  QGPU_CHECK(add(total, buildCancel(*s0.units, bus.products, s0.ctx)));
  {
    std::vector<Output> constants;
    for (const Product& p : ps) constants.push_back({p.dim, p.complement ? 1.0 : -1.0});
    if (gatedAddend)
      for (int k = 0; k < kBits; ++k) constants.push_back({addend.at(k), -1.0});
    QGPU_CHECK(add(total, addConstant(*s0.units, s0.ctx, constants)));
    for (const Product& p : ps) {
      std::vector<Literal> lits = s.enable;
      lits.push_back({s.a.at(p.i), 1});
      const std::vector<Term> up = {{s.b.at(p.j), 1.0f}, {s0.ctx.ballast.at(0), 1.0f}};
      QGPU_CHECK(add(total, addDetector(*s0.units, s0.ctx, all(std::move(lits)), up,
                                        {{p.dim, p.complement ? -1.0 : 1.0}})));
    }
    // The addend's copies: word_k ∧ when, one detector per bit (c's, then the pass-through's).
    auto copyOntoAddend = [&](const Field& word, const std::vector<Literal>& when) -> Status {
      const std::vector<Term> two = {{s0.ctx.ballast.at(0), 2.0f}};
      for (int k = 0; k < kBits; ++k) {
        std::vector<Literal> lits = when;
        lits.push_back({word.at(k), 1});
        QGPU_CHECK(add(total, addDetector(*s0.units, s0.ctx, all(std::move(lits)), two,
                                          {{addend.at(k), 1.0}})));
      }
      return Ok{};
    };
    if (gatedAddend) QGPU_CHECK(copyOntoAddend(s.c, s.enable + s.addendEnable));
    if (passes) QGPU_CHECK(copyOntoAddend(s.pass, s.passEnable));
  }

  // Stage 1: column counts.
  const Matrix m0 = initialMatrix(op, ps, addend);
  rep.maxHeight.push_back(m0.maxHeight());
  const std::vector<Window> w1 = windows(m0, 1);
  std::vector<std::vector<int>> dims1;
  int next = bus.counts.offset;
  for (const Window& w : w1) {
    dims1.emplace_back();
    for (int l = 0; l < w.bits; ++l) dims1.back().push_back(next++);
  }
  QGPU_CHECK(emitStage(stages[1], m0, w1, dims1, bus.counts, {}, total));
  const Matrix m1 =
      place(m0, w1, [&](size_t k, int l) { return dims1[k][static_cast<size_t>(l)]; });
  rep.maxHeight.push_back(m1.maxHeight());

  // Stage 2: windows of three columns into two rows (row A then row B).
  const Field rowA = bus.rows.slice(0, width, "rowA"), rowB = bus.rows.slice(width, width, "rowB");
  const std::vector<Window> w2 = windows(m1, 3);
  std::vector<std::vector<int>> dims2(w2.size());
  std::vector<int> used(static_cast<size_t>(width), 0);
  for (size_t k = 0; k < w2.size(); ++k)
    for (int l = 0; l < w2[k].bits; ++l) {
      const int col = w2[k].first + l;
      int& slot = used[static_cast<size_t>(col)];
      if (slot >= 2)
        return makeDiag(ErrorKind::Internal, "multiply gadget: column " + std::to_string(col) +
                                                 " has more than 2 bits after stage 2");
      dims2[k].push_back((slot == 0 ? rowA : rowB).at(col));
      ++slot;
    }
  std::vector<int> zeroDims;  // row slots no window bit fills: a constant 0 bit
  for (int col = 0; col < width; ++col)
    for (int slot = used[static_cast<size_t>(col)]; slot < 2; ++slot)
      zeroDims.push_back((slot == 0 ? rowA : rowB).at(col));
  QGPU_CHECK(emitStage(stages[2], m1, w2, dims2, bus.rows.slice(0, 2 * width), zeroDims, total));
  rep.maxHeight.push_back(2);

  // Stages 3–5: the adder(s).
  AdderSpec add1;
  add1.busPrior = Prior::Replace;
  if (!isHigh(op)) {
    add1.a = rowA;
    add1.b = rowB;
    add1.bus = bus.adder;
    add1.out = s.out;
    add1.outPrior = s.outPrior;
    QGPU_CHECK(add(
        total, buildAdder(*stages[3].units, stages[3].ctx, *stages[4].units, stages[4].ctx, add1)));
  } else {
    // The low half's carry out c32 (its sum discarded after the rows), then the high half.
    add1.a = rowA.slice(0, kBits, "lo");
    add1.b = rowB.slice(0, kBits, "lo");
    add1.bus = bus.adder.slice(0, adderBusDims(kBits), "lo");
    add1.out = bus.rows.slice(2 * width, kBits, "discard");
    add1.cout = bus.rows.slice(2 * width + kBits, 1, "c32");
    add1.outPrior = Prior::Replace;
    QGPU_CHECK(add(
        total, buildAdder(*stages[3].units, stages[3].ctx, *stages[4].units, stages[4].ctx, add1)));
    AdderSpec add2;
    add2.a = rowA.slice(kBits, kBits, "hi");
    add2.b = rowB.slice(kBits, kBits, "hi");
    add2.cin = add1.cout;
    add2.bus = bus.adder.slice(adderBusDims(kBits), adderBusDims(kBits), "hi");
    add2.out = s.out;
    add2.busPrior = Prior::Replace;
    add2.outPrior = s.outPrior;
    QGPU_CHECK(add(
        total, buildAdder(*stages[3].units, stages[3].ctx, *stages[5].units, stages[5].ctx, add2)));
  }
  for (size_t i = 0; i < stages.size(); ++i)
    rep.unitsPerLayer.push_back(stages[i].units->used() - before[i]);
  return rep;
}

}  // namespace qgpu::circuit
