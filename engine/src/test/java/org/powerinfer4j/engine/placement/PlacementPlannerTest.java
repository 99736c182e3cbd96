package org.powerinfer4j.engine.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.tensor.GGMLType;

/** The planner on the sparse test model with its shipped activation counts. */
class PlacementPlannerTest {
    @TempDir
    Path dir;

    private static GpuFootprint footprint(GGUFFile f, int ctx, GGMLType kv, int batch) {
        return GpuFootprint.of(f, ModelConfig.fromGGUF(f), ctx, kv, batch);
    }

    @Test
    void accountsTheSparseTestModelExactly() throws Exception {
        try (GGUFFile f = GGUFFile.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"))) {
            GpuFootprint fp = footprint(f, 256, GGMLType.F16, 32);
            // attention per layer, each allocation padded to 256: norm 256 + q 8192 + k 4096 + v 4096 + o 8192 (F16)
            assertThat(fp.fixedItems().get(0)).isEqualTo(new GpuFootprint.Item("attention", "layer 0", 24_832));
            // predictors: fc1 64×64 F16 = 8192, fc2 64×172 F16 = 22016 → padded 22016
            assertThat(fp.fixedItems().get(5).bytes()).isEqualTo(8192 + 22_016);
            // KV: 256 positions × 32 kv dims × 2 bytes per layer, K and V, 5 layers
            assertThat(fp.fixedItems().getLast()).isEqualTo(new GpuFootprint.Item("KV cache", "256 × 32 F16 × K,V × 5 layers", 163_840));
            // a neuron: gate, up, down_t rows of 64 F16 (128 bytes each) + a 4-byte bucket entry
            assertThat(fp.neuronBytes()).containsOnly(3 * 128 + 4);
            assertThat(GpuFootprint.of(f, ModelConfig.fromGGUF(f), 256, GGMLType.F32, 32).fixedItems().getLast().bytes()).isEqualTo(2 * 163_840);
        }
        try (GGUFFile dense = GGUFFile.open(TestData.file("sparse/stories260K-relu.gguf"))) {
            // dense F32 file: ffn_down {172, 64} F32 → a transposed neuron row is 64 F32
            assertThat(footprint(dense, 256, GGMLType.F16, 32).neuronBytes()).containsOnly(3 * 256 + 4);
        }
    }

    @Test
    void planStaysWithinBudgetAndPrefersFrequentNeurons() throws Exception {
        ActivationStats stats = ActivationStats.read(TestData.file("sparse/activation_counts.json"));
        try (GGUFFile f = GGUFFile.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"))) {
            GpuFootprint fp = footprint(f, 256, GGMLType.F16, 32);
            long fixed = fp.workspace();
            for (GpuFootprint.Item it : fp.fixedItems()) fixed += it.bytes();
            for (long o : fp.layerOverhead()) fixed += o;
            long budget = fixed + 100 * 388 + 17; // room for exactly 100 neurons
            PlacementPlanner.Plan p = PlacementPlanner.plan(fp, stats.counts(), budget, 1);
            assertThat(p.usedBytes()).isLessThanOrEqualTo(budget);
            // one F16 neuron costs 388 bytes; the hot rows fit exactly and are accounted exactly
            assertThat(p.hot().bytes()).isEqualTo(100 * 388);
            assertThat(budget - p.usedBytes()).isEqualTo(17);
            assertThat(p.gpuIndex().totalNeurons()).isEqualTo(100);
            // the 100 chosen neurons are the 100 most frequent of the whole model
            long minChosen = Long.MAX_VALUE, maxOther = 0;
            for (int l = 0; l < 5; l++) {
                long[] c = stats.counts(l);
                java.util.Set<Integer> chosen = new java.util.HashSet<>();
                for (int r : p.hot().neurons()[l]) { chosen.add(r); minChosen = Math.min(minChosen, c[r]); }
                for (int r = 0; r < c.length; r++) if (!chosen.contains(r)) maxOther = Math.max(maxOther, c[r]);
            }
            assertThat(minChosen).isGreaterThanOrEqualTo(maxOther);
            // a budget below the workspace places nothing; the table still renders
            PlacementPlanner.Plan none = PlacementPlanner.plan(fp, stats.counts(), 1000, 32);
            assertThat(none.usedBytes()).isZero();
            assertThat(none.gpuIndex().totalNeurons()).isZero();
            assertThat(none.table()).contains("workspace").contains("total");
            // written index reads back identically
            Path idx = dir.resolve("m.generated.gpuidx");
            p.gpuIndex().write(idx);
            assertThat(GpuIndex.read(idx)).isEqualTo(p.gpuIndex());
            assertThat(GpuIndex.read(idx).vramCapacity()).isEqualTo(budget);
        }
    }
}
