// qgpu/circuit/pipeline.cpp — see pipeline.h: wiring only; each stage's maths is in its own file.
#include "circuit/pipeline.h"

#include <algorithm>
#include <string>

#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

Diag pipelineUsage(const std::string& m) { return makeDiag(ErrorKind::Usage, "execute pipeline: " + m); }

// The head word's opcode bits by their name in oracle/trace.cpp's table.
Expected<Field> opcodeBits(const Field& head) {
  for (const trace::PackedField& f : trace::packedLayout(trace::PackedWord::OpHead))
    if (std::string(f.name) == "opcode") {
      if (f.width != kOpcodeBits)
        return makeDiag(ErrorKind::Internal, "execute pipeline: the head word's opcode has " +
                                                 std::to_string(f.width) + " bits, the ALU reads " +
                                                 std::to_string(kOpcodeBits));
      return head.slice(f.offset, f.width, "opcode");
    }
  return makeDiag(ErrorKind::Internal, "execute pipeline: the head word has no opcode field");
}

// Lane l's raw bit (+u = true) of the front end's predicate port k: 0 guard, 1 psrc0, 2 psrc1,
// 3 dstPred (frontend.h predPort).
Field pipelinePredLane(const FrontEnd& fe, int k, int l) {
  return fe.predPort[static_cast<size_t>(k)].slice(l, 1, "lane " + std::to_string(l));
}

}  // namespace

std::vector<int> executePipelineHeads(int64_t keyHeadDim) {
  std::vector<int> h(static_cast<size_t>(kExecuteLayers), 0);
  const std::vector<int> front = operandStageHeads(keyHeadDim);
  for (size_t i = 0; i < front.size() && i < h.size(); ++i) h[i] = front[i];
  // The control stage's own heads (its per-layer count less the plain front end's).
  const std::vector<int> control = controlHeads(keyHeadDim), plain = frontEndHeads(keyHeadDim);
  for (size_t i = 0; i < control.size(); ++i)
    h[i] += control[i] - (i < plain.size() ? plain[i] : 0);
  const int r = 5 + kAluStageLayers + kResultStageLayers;
  h[static_cast<size_t>(r)] += 10;     // record_emit.h: 6 latches (no next) + 3 taps + 1 counter
  h[static_cast<size_t>(r + 1)] += 11; // 3 taps + 8 thresholds
  return h;
}

Expected<ExecutePipeline> buildExecutePipeline(CircuitWeights& w, FieldAllocator& alloc,
                                               const ExecuteSpec& s) {
  const int E = s.layer0;
  if (E < 0 || E + kExecuteLayers > w.config().numLayers())
    return pipelineUsage("layers " + std::to_string(E) + ".." + std::to_string(E + kExecuteLayers - 1) +
                         " outside the config's " + std::to_string(w.config().numLayers()));
  ExecutePipeline p;
  p.aluLayer = E + 5;
  p.resultLayer = p.aluLayer + kAluStageLayers;
  p.emitLayer = p.resultLayer + kResultStageLayers;
  p.heads.assign(static_cast<size_t>(kExecuteLayers), 0);
  p.units.assign(static_cast<size_t>(kExecuteLayers), 0);
  auto at = [&](int layer) -> int& { return p.units[static_cast<size_t>(layer - E)]; };

  // Front end and operand select: E .. E+4.
  FrontEndSpec fs;
  fs.tokens = s.tokens;
  fs.layer0 = E;
  fs.payloadBanks = true;
  QGPU_TRY(fe, buildFrontEnd(w, alloc, fs));
  p.fe = fe;
  OperandsSpec os;
  os.tokens = s.tokens;
  os.layer0 = E;
  QGPU_TRY(op, buildOperands(w, alloc, p.fe, os));
  p.operands = op;
  for (int i = 0; i < 5; ++i) {
    p.heads[static_cast<size_t>(i)] = p.fe.heads[i] + p.operands.heads[i];
    at(E + i) = p.fe.units[i] + p.operands.units[i];
  }

  // Control stage: its heads and units in E..E+4 after the operand select's, its scheduler in
  // E+5..E+12 (the ALU's and result stage's layers: they are MLP only, their units follow the
  // scheduler's), its emit at E+13 = R. The branch predicate is the front end's port 0 at the
  // terminator position, read before the predicate file's flip; no op here faults.
  ControlSpec cs;
  cs.tokens = s.tokens;
  cs.layer0 = E;
  cs.pred = p.fe.predPort[0];
  cs.predInverted = true;
  cs.stepLimit = s.stepLimit;
  for (int i = 0; i < 5; ++i) {
    cs.hostHeads[static_cast<size_t>(i)] = p.operands.heads[i];
    cs.hostUnits[static_cast<size_t>(i)] = p.operands.units[i];
  }
  QGPU_TRY(control, buildControl(w, alloc, p.fe, cs));
  p.control = control;
  for (int i = 0; i < kControlLayers; ++i) {
    p.heads[static_cast<size_t>(i)] += p.control.heads[static_cast<size_t>(i)];
    at(E + i) += p.control.units[static_cast<size_t>(i)];
  }
  auto controlUnits = [&](int layer) {
    const int i = layer - E;
    return i >= 5 && i < kControlLayers ? p.control.units[static_cast<size_t>(i)] : 0;
  };

  // ALU stage: A .. A+3, the opcode in the ROM's polarity.
  QGPU_TRY(opcode, opcodeBits(p.fe.headWord));
  p.opcode = opcode;
  AluStageSpec as;
  as.opcode = p.opcode;
  as.opcodeInverted = s.twin != ExecuteTwin::OpcodeWrongPolarity;
  as.busLayout = AluBusLayout::Liveness;
  for (int l = 0; l < kRecordLanes; ++l) {
    const auto port = [&](int k) { return p.operands.word[static_cast<size_t>(k)][static_cast<size_t>(l)]; };
    AluLane lane;
    const bool swap = s.twin == ExecuteTwin::OperandsSwapped;
    lane.a = port(swap ? 1 : 0);
    lane.b = port(swap ? 0 : 1);
    lane.c = port(2);
    lane.p = pipelinePredLane(p.fe, 1, l);  // psrc0
    lane.q = pipelinePredLane(p.fe, 2, l);  // psrc1
    QGPU_TRY(r, alloc.take("alu.r" + std::to_string(l), 32));
    QGPU_TRY(sp, alloc.take("alu.s" + std::to_string(l), 1));
    lane.r = r;
    lane.s = sp;
    as.lanes.push_back(lane);
  }
  QGPU_TRY(bus, alloc.take("alu.bus", aluStageBusDims(kRecordLanes, AluBusLayout::Liveness)));
  as.bus = bus;
  p.aluBus = bus;
  p.lanes = as.lanes;
  {
    std::vector<UnitWriter> writers;
    writers.reserve(kAluStageLayers);
    for (int i = 0; i < kAluStageLayers; ++i)
      writers.emplace_back(w, p.aluLayer + i, controlUnits(p.aluLayer + i));
    const MlpContext ctx{s.tokens.ballast, s.tokens.lambda, 128, s.tokens.unit};
    std::vector<AluLayer> layers;
    for (UnitWriter& u : writers) layers.push_back({&u, ctx});
    QGPU_TRY(report, buildAluStage(layers, as));
    p.alu = report;
    for (int i = 0; i < kAluStageLayers; ++i) at(p.aluLayer + i) += report.unitsPerLayer[static_cast<size_t>(i)];
  }

  // Result stage: F .. F+3, the head word in the ROM's polarity.
  ResultStageSpec rs;
  rs.tokens = s.tokens;
  rs.firstLayer = p.resultLayer;
  rs.head = p.fe.headWord;
  rs.headInverted = true;
  rs.mask = p.fe.mask;
  for (int l = 0; l < kRecordLanes; ++l) {
    const AluLane& lane = p.lanes[static_cast<size_t>(l)];
    const Field guard = pipelinePredLane(p.fe, s.twin == ExecuteTwin::GuardFromPsrc0Port ? 1 : 0, l);
    rs.lanes[static_cast<size_t>(l)] = {lane.r, lane.s, p.fe.oldDst[static_cast<size_t>(l)], guard,
                                        pipelinePredLane(p.fe, 3, l)};
  }
  p.resultIn = rs.lanes;
  for (int i = 0; i < kResultStageLayers; ++i)
    rs.firstUnit[static_cast<size_t>(i)] = controlUnits(p.resultLayer + i);
  // The result stage's fields reuse the ALU bus's dims: the bus is last read by S3 (layer
  // F − 1) and every result field is cancelled before it is written (result_stage.h), the
  // replace rule of circuit/layout.h.
  FieldAllocator onBus(p.aluBus.offset + p.aluBus.dims);
  QGPU_TRY(below, onBus.take("below the bus", p.aluBus.offset));
  (void)below;
  QGPU_TRY(result, buildResultStage(w, onBus, rs));
  p.result = result;
  for (int i = 0; i < kResultStageLayers; ++i) at(p.resultLayer + i) += result.units[static_cast<size_t>(i)];

  // Record emitter: R .. R+3, its buffer latching the result stage's outcome.
  RecordEmitSpec es;
  es.tokens = s.tokens;
  es.firstLayer = p.emitLayer;
  es.outcomeFrom = p.result.outcome;
  es.firstDim = alloc.used();
  es.execFrom = p.fe.exec;
  es.firstHead = 1;  // R is the control stage's emit layer: its fault latch is head 0
  es.overrideFrom = RecordEmitSpec::Override{p.control.emit, p.control.decides};
  QGPU_TRY(emitter, buildRecordEmitter(w, es));
  p.emitter = emitter;
  QGPU_CHECK(writeRecordExtras(w, p.emitter));
  QGPU_TRY(taken, alloc.take("rec", emitter.dims - alloc.used()));
  (void)taken;
  for (int i = 0; i < kRecordLayers; ++i) {
    p.heads[static_cast<size_t>(p.emitLayer - E + i)] += emitter.heads[static_cast<size_t>(i)];
    at(p.emitLayer + i) += emitter.units[static_cast<size_t>(i)];
  }
  return p;
}

}  // namespace qgpu::circuit
