package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.placement.GpuIndex;
import org.powerinfer4j.engine.sparse.SparsityStats;

/**
 * Index maps (every neuron computed exactly once, on one side), budget accounting against real allocations, and
 * degradation to the CPU when the device runs out of memory at load or fails during a forward pass.
 */
class HybridRobustnessTest {
    private static SimulatedBackend device;
    private static HybridHarness h0;

    @BeforeAll
    static void open() throws Exception {
        device = new SimulatedBackend();
        h0 = new HybridHarness(0f);
    }

    @AfterAll
    static void close() {
        h0.close();
        device.close();
    }

    /** The reference sequence of prompt "tom_and_lily" at threshold 0, cut to {@code n} tokens, for teacher forcing. */
    private static int[] sequence(int n) {
        int[] p = h0.prompts().get(1), e = h0.expected().get(1);
        int[] s = Arrays.copyOf(p, p.length + e.length);
        System.arraycopy(e, 0, s, p.length, e.length);
        return Arrays.copyOf(s, n);
    }

    @Test
    void placementPartitionsEveryLayer() {
        for (double f : new double[]{0, 0.3, 0.6, 1}) {
            HybridPlacement p = h0.planned(f);
            for (int l = 0; l < p.layers(); l++) {
                int[] all = new int[p.ff(l)];
                for (int r : p.hot(l)) all[r]++;
                for (int r : p.cold(l)) all[r]++;
                assertThat(all).as("layer %d at %.1f", l, f).containsOnly(1);
                assertThat(p.hot(l)).isSorted();
                assertThat(p.cold(l)).isSorted();
            }
        }
    }

    /** Random non-contiguous hot sets through a .gpuidx file: same logits as the CPU, and each predicted neuron served once. */
    @ParameterizedTest(name = "seed {0}")
    @ValueSource(ints = {1, 2})
    void randomHotSetsFromGpuIndexMatchCpu(int seed, @TempDir Path dir) throws Exception {
        Random rnd = new Random(seed);
        int[] ff = h0.ffSizes();
        int[][] hot = new int[ff.length][];
        for (int l = 0; l < ff.length; l++) {
            List<Integer> ids = new ArrayList<>();
            double share = rnd.nextDouble();
            for (int r = 0; r < ff[l]; r++) if (rnd.nextDouble() < share) ids.add(r);
            hot[l] = ids.stream().mapToInt(Integer::intValue).toArray();
        }
        Path idx = dir.resolve("model.generated.gpuidx");
        GpuIndex.of(123, ff, hot).write(idx);
        HybridPlacement p = HybridUnits.ofLayers(h0.weights(), h0.downT()).fromGpuIndex(GpuIndex.read(idx), null, "test index");
        for (int l = 0; l < ff.length; l++) assertThat(p.hot(l)).containsExactly(hot[l]);

        int[] seq = sequence(24);
        SparsityStats cpuStats = new SparsityStats(ff.length, ff[0]), hybStats = new SparsityStats(ff.length, ff[0]);
        float[][] want = h0.logits(h0.cpuOnly(cpuStats), seq);
        try (HybridFeedForward ffn = h0.hybrid(device, p, ColdMaskSource.GPU_EVENT, hybStats, null)) {
            float[][] got = h0.logits(ffn, seq);
            for (int i = 0; i < seq.length; i++)
                for (int v = 0; v < want[i].length; v++)
                    assertThat(Math.abs(got[i][v] - want[i][v])).as("position %d logit %d", i, v).isLessThan(2e-3f);
            for (int l = 0; l < ff.length; l++) {
                long predicted = Math.round(cpuStats.predictedFraction(l) * cpuStats.tokens(l) * ff[l]);
                long hybridPredicted = Math.round(hybStats.predictedFraction(l) * hybStats.tokens(l) * ff[l]);
                assertThat(hybridPredicted).as("layer %d predicted", l).isEqualTo(predicted);
                assertThat(ffn.gpuComputed(l) + ffn.cpuComputed(l)).as("layer %d served once", l).isEqualTo(predicted);
                if (hot[l].length == 0) assertThat(ffn.gpuComputed(l)).isZero();
                if (hot[l].length == ff[l]) assertThat(ffn.cpuComputed(l)).isZero();
            }
        }
    }

    /** Whatever the planner charges is really enough: a device with exactly the budget never refuses an allocation. */
    @ParameterizedTest(name = "{0} of FFN bytes")
    @ValueSource(doubles = {0.1, 0.5, 1.0})
    void plannedBudgetCoversEveryAllocation(double fraction) {
        long budget = h0.budgetFor(fraction);
        HybridPlacement p = HybridPlacement.planned(h0.footprint(), HybridHarness.counts, budget, GpuOptions.DEFAULT_TILE, "test");
        FaultyBackend limited = new FaultyBackend(device, budget - HybridPlacement.streamScratch(h0.config().dim()));
        List<String> warnings = new ArrayList<>();
        try (HybridFeedForward ffn = h0.hybrid(limited, p, ColdMaskSource.GPU_EVENT, null, warnings)) {
            assertThat(limited.refused()).isZero();
            assertThat(warnings).isEmpty();
            assertThat(ffn.placement().totalHot()).isEqualTo(p.totalHot());
            assertThat(GpuFootprint.pad(ffn.deviceBytes())).isLessThanOrEqualTo(budget);
        }
    }

    /** Device memory runs out at various points of loading: one warning, the rest on the CPU, the reference tokens. */
    @ParameterizedTest(name = "device limit {0} of the needed bytes")
    @ValueSource(doubles = {0.0, 0.02, 0.3, 0.7})
    void allocationFailureAtLoadFallsBackToCpu(double share) {
        HybridPlacement p = h0.planned(1.0);
        long needed = h0.budgetFor(1.0) - HybridPlacement.streamScratch(h0.config().dim());
        FaultyBackend limited = new FaultyBackend(device, (long) (share * needed));
        List<String> warnings = new ArrayList<>();
        try (HybridFeedForward ffn = h0.hybrid(limited, p, ColdMaskSource.GPU_EVENT, null, warnings)) {
            assertThat(limited.refused()).isPositive();
            assertThat(warnings).hasSize(1);
            assertThat(warnings.get(0)).startsWith("warning: hybrid FFN:").contains("out of device memory");
            assertThat(ffn.placement().totalHot()).isLessThan(p.totalHot());
            assertThat(ffn.loadNotes()).isNotEmpty();
            int[] prompt = h0.prompts().get(1), expected = h0.expected().get(1);
            assertThat(h0.greedy(ffn, prompt, 24)).containsExactly(Arrays.copyOf(expected, 24));
            assertThat(warnings).hasSize(1);
            double overlap = ffn.overlapStats().snapshot().overlap();
            assertThat(overlap).isBetween(0.0, 1.0);
        }
    }

    /** A device operation fails mid-run (at issue, or asynchronously on the stream): one warning, CPU from then on, right answer. */
    @ParameterizedTest(name = "failure at row-sparse product {0}, asynchronous {1}")
    @CsvSource({"7, false", "7, true", "40, true"})
    void deviceFailureDuringForwardFallsBackToCpu(int at, boolean async) {
        FaultyBackend faulty = new FaultyBackend(device, Long.MAX_VALUE, at, async);
        List<String> warnings = new ArrayList<>();
        try (HybridFeedForward ffn = h0.hybrid(faulty, h0.planned(0.5), ColdMaskSource.GPU_EVENT, null, warnings)) {
            assertThat(ffn.gpuActive()).isTrue();
            int[] prompt = h0.prompts().get(1), expected = h0.expected().get(1);
            assertThat(h0.greedy(ffn, prompt, 24)).containsExactly(Arrays.copyOf(expected, 24));
            assertThat(ffn.gpuActive()).isFalse();
            assertThat(warnings).hasSize(1);
            assertThat(warnings.get(0)).contains("device operation failed");
            assertThat(ffn.summary()).contains("GPU disabled after a device failure");
        }
    }

    @Test
    void uniformPlacementWithoutStatistics() {
        HybridPlacement p = HybridPlacement.planned(h0.footprint(), null, h0.budgetFor(0.5), 32, "uniform");
        assertThat(p.hasCounts()).isFalse();
        assertThat(p.coverage()).isNaN();
        for (int l = 0; l < p.layers(); l++) {
            int k = p.hotCount(l);
            assertThat(k % 32 == 0 || k == p.ff(l)).isTrue();
            for (int j = 0; j < k; j++) assertThat(p.hot(l)[j]).isEqualTo(j);   // ties broken by id: lowest ids first
        }
    }
}
