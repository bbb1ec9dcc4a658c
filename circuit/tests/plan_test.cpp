// qgpu/circuit/tests/plan_test.cpp — the per-layer budget (circuit/plan.h): the stages built
// count-only give the hand counts of their own spec tests (frontend_spec_test, alu_stage_spec_test),
// the ALU's residual dims by liveness (worked by hand below), the shape table's 2b row, compact
// derived from the plan, and the refusals naming budget and layer.
#include <gtest/gtest.h>

#include "circuit/alu_stage.h"
#include "circuit/frontend.h"
#include "circuit/pipeline.h"
#include "circuit/plan.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

TEST(CountOnlyWeights, KeepShapesAndIndexChecksButNoArrays) {
  CircuitWeights w(linearConfig(64, 1, 8, 16), WeightStorage::CountOnly);
  const std::string gate = w.layerTensor(0, "mlp.gate_proj.weight");
  EXPECT_TRUE(w.set(gate, 7, 63, 2.0f).ok());
  EXPECT_EQ(w.get(gate, 7, 63).value(), 0.0f);  // discarded
  EXPECT_FALSE(w.set(gate, 8, 0, 1.0f).ok());   // the twin: outside [8, 64]
  EXPECT_FALSE(w.write("/nonexistent").ok());
}

TEST(CircuitPlan, StagesCountTheirSpecTestsHandSums) {
  auto plan = planCircuit(64);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->layers.size(), 9u);
  // Front end at dk 64 (frontend_spec_test's hand counts).
  const std::vector<int> heads = frontEndHeads(64);
  const int feUnits[] = {83, 467, 179, 168, 548};
  for (int l = 0; l < 5; ++l) {
    EXPECT_EQ(plan->layers[static_cast<size_t>(l)].stage, "front end");
    EXPECT_EQ(plan->layers[static_cast<size_t>(l)].heads, heads[static_cast<size_t>(l)]) << l;
    EXPECT_EQ(plan->layers[static_cast<size_t>(l)].units, feUnits[l]) << l;
  }
  // ALU stage (alu_stage_spec_test's hand sums, four lanes) and no heads.
  const int k = static_cast<int>(aluStageOps().size());
  const int aluUnits[] = {2 * k + 1 + 4 * 1066, 4 * 1075, 4 * 1236, 4 * 852};
  // Residual dims, by hand: inputs 4 + 7 + 4 · 98 = 403 into S3; the bus after S0 / S1 / S2
  // 42 + 4 · {258, 261, 134} (alu_stage_spec_test); the result words 4 · 32 = 128 from S1, the
  // predicate results 4 after S3. A layer needs the larger of its input and its output: S0 403 |
  // 1,477; S1 1,477 | 1,617; S2 1,617 | 1,109; S3 1,109 | 132.
  const int aluDims[] = {1477, 1617, 1617, 1109};
  for (int l = 0; l < 4; ++l) {
    const LayerBudget& b = plan->layers[static_cast<size_t>(5 + l)];
    EXPECT_EQ(b.stage, "alu");
    EXPECT_EQ(b.heads, 0);
    EXPECT_EQ(b.units, aluUnits[l]) << l;
    EXPECT_EQ(b.dims, aluDims[l]) << l;
  }
  EXPECT_EQ(plan->aluBusPeak, k + 4 * 261);
}

// The execute pipeline's plan is the pipeline as built: its heads and units per layer
// (pipeline_spec_test's hand counts at dk 64), its layout by liveness (3,341 dims: the span at
// every layer, the live dims per layer below it and highest in the ALU's layers), and 2b refused at
// the front end's heads: the residual fits it.
TEST(CircuitPlan, ThePipelinePlanIsTheBuiltPipeline) {
  auto plan = planExecutePipeline(64);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->layers.size(), static_cast<size_t>(kExecuteLayers));
  const std::vector<int> heads = executePipelineHeads(64);
  for (size_t l = 0; l < plan->layers.size(); ++l) {
    EXPECT_EQ(plan->layers[l].heads, heads[l]) << l;
    EXPECT_EQ(plan->layers[l].dims, plan->pipelineLayout.span) << l;
    EXPECT_GT(plan->layers[l].live, 0) << l;
    EXPECT_LE(plan->layers[l].live, plan->pipelineLayout.peak) << l;
    int groups = 0;
    for (const auto& [group, dims] : plan->layers[l].liveByGroup) groups += dims;
    EXPECT_EQ(groups, plan->layers[l].live) << l;
  }
  EXPECT_LT(plan->pipelineLayout.span, plan->pipelineLayout.oneFieldPerValue);
  EXPECT_EQ(plan->pipelineLayout.oneFieldPerValue,
            3795 + 391 + 18 - 512 - 248);  // pipeline_spec_test's hand count
  const auto widest = std::max_element(plan->layers.begin(), plan->layers.end(),
                                       [](const LayerBudget& a, const LayerBudget& b) { return a.live < b.live; });
  EXPECT_EQ(widest->stage, "control+alu");
  // The control stage's S and the ALU's S0, the scheduler's S+2 and the ALU's S2, beside the
  // layout's pad restores.
  EXPECT_EQ(plan->layers[5].units - plan->layers[5].padUnits, 278 + 4349);
  EXPECT_EQ(plan->layers[7].units - plan->layers[7].padUnits, 13 + 4944);
  EXPECT_EQ(plan->layers[0].stage, "front end+select+control");
  EXPECT_EQ(plan->layers[7].stage, "control+alu");
  EXPECT_EQ(plan->layers[7].stageLayer, 2);
  EXPECT_EQ(plan->layers[13].stage, "control+emitter");
  EXPECT_EQ(plan->layers[16].stage, "emitter");
  auto at128 = planExecutePipeline(128);
  ASSERT_TRUE(at128.ok()) << at128.error().message;
  EXPECT_TRUE(checkFits(*at128, compactShape(*at128)).ok());
  const Status st = checkFits(*at128, shapeByName("2b", *at128).value());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::OverLimit);
  EXPECT_LE(at128->pipelineLayout.span, 2048);  // 1,940 (1,992 before the wide fields went first)
  EXPECT_NE(st.error().message.find("layer 2 (front end+select+control layer 2) needs 28 heads"),
            std::string::npos)
      << st.error().message;
  EXPECT_FALSE(planExecutePipeline(96).ok());
  // With memory ops: 18 layers, the outcome select at E+13.
  auto memory = planExecutePipeline(64, {.memory = true});
  ASSERT_TRUE(memory.ok()) << memory.error().message;
  ASSERT_EQ(memory->layers.size(), static_cast<size_t>(kExecuteMemoryLayers));
  EXPECT_EQ(memory->layers[13].stage, "control+select");
  EXPECT_EQ(memory->layers[5].stage, "control+alu+memory");
  EXPECT_EQ(memory->layers[14].stage, "emitter");
  for (size_t l = 0; l < memory->layers.size(); ++l)
    EXPECT_EQ(memory->layers[l].heads, executePipelineHeads(64, {.memory = true})[l]) << l;
}

TEST(CircuitShapes, TwoBIsQwen35TwoB) {
  ASSERT_EQ(shapeTable().size(), 1u);
  const ShapeLimits& s = shapeTable()[0];
  EXPECT_EQ(s.name, "2b");
  EXPECT_EQ(s.hidden, 2048);
  EXPECT_EQ(s.heads, 16);
  EXPECT_EQ(s.keyHeadDim, 128);
  EXPECT_EQ(s.valueHeadDim, 128);
  EXPECT_EQ(s.mlpUnits, 6144);
}

TEST(CircuitShapes, CompactHoldsThePlanAndOneLessOfAnyBudgetDoesNot) {
  auto plan = planCircuit(128);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ShapeLimits c = compactShape(*plan);
  EXPECT_TRUE(checkFits(*plan, c).ok());
  EXPECT_EQ(c.heads, 26);      // the front end's L+2 at dk 128 (frontEndHeads)
  EXPECT_EQ(c.mlpUnits, 4 * 1236);  // the ALU's S2 (the window, the adder's level 2)
  EXPECT_EQ(c.hidden, 1617);        // the ALU's S1/S2 (above the front end's dims)
  struct Twin {
    ShapeLimits shape;
    const char* budget;
    const char* layer;
  };
  ShapeLimits h = c, u = c, d = c;
  --h.heads;
  --u.mlpUnits;
  --d.hidden;
  for (const Twin& t : {Twin{h, "heads", "layer 2 (front end layer 2)"},
                        Twin{u, "MLP units", "layer 7 (alu layer 2)"},
                        Twin{d, "residual dims", "layer 6 (alu layer 1)"}}) {
    const Status st = checkFits(*plan, t.shape);
    ASSERT_FALSE(st.ok()) << t.budget;
    EXPECT_EQ(st.error().kind, ErrorKind::OverLimit);
    EXPECT_NE(st.error().message.find(t.budget), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find(t.layer), std::string::npos) << st.error().message;
  }
}

TEST(CircuitShapes, TwoBIsRefusedAtTheFrontEndsHeads) {
  auto plan = planCircuit(128);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Status st = checkFits(*plan, shapeByName("2b", *plan).value());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(st.error().message.find("layer 2 (front end layer 2) needs 26 heads, the shape has 16"),
            std::string::npos)
      << st.error().message;
}

TEST(CircuitShapes, UnknownNamesAndHeadDimsAreRefused) {
  auto plan = planCircuit(128);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto s = shapeByName("7b", *plan);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::Usage);
  EXPECT_NE(s.error().message.find("compact, 2b"), std::string::npos) << s.error().message;
  ShapeLimits dk = compactShape(*plan);
  dk.keyHeadDim = 64;
  EXPECT_FALSE(checkFits(*plan, dk).ok());
  EXPECT_FALSE(planCircuit(96).ok());
}

}  // namespace
}  // namespace qgpu::circuit
