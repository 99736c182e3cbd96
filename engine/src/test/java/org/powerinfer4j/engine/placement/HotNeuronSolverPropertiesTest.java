package org.powerinfer4j.engine.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/** Budget safety, monotonicity and optimality of the hot-neuron choice and the full placement plan. */
class HotNeuronSolverPropertiesTest {

    /** A small random instance: counts per layer and per-neuron bytes per layer. */
    record Instance(long[][] counts, long[] bytes) {
        long maxGroupValue(int tile) {
            long m = 0;
            for (long[] c : counts) {
                int[] o = HotNeuronSolver.sortedByCount(c);
                for (int f = 0; f < o.length; f += tile) {
                    long v = 0;
                    for (int j = f; j < Math.min(o.length, f + tile); j++) v += c[o[j]];
                    m = Math.max(m, v);
                }
            }
            return m;
        }
    }

    private static Arbitrary<Instance> instances(int maxLayers, int maxFf, boolean uniformBytes) {
        Arbitrary<long[]> layer = Arbitraries.longs().between(0, 1000).array(long[].class).ofMinSize(1).ofMaxSize(maxFf);
        Arbitrary<long[][]> counts = layer.array(long[][].class).ofMinSize(1).ofMaxSize(maxLayers);
        return counts.flatMap(c -> {
            Arbitrary<long[]> bytes = uniformBytes
                    ? Arbitraries.longs().between(1, 500).map(b -> { long[] a = new long[c.length]; java.util.Arrays.fill(a, b); return a; })
                    : Arbitraries.longs().between(1, 500).array(long[].class).ofSize(c.length);
            return bytes.map(b -> new Instance(c, b));
        });
    }

    @Provide Arbitrary<Instance> uniform() { return instances(3, 4, true); }
    @Provide Arbitrary<Instance> mixed() { return instances(3, 4, false); }
    @Provide Arbitrary<Instance> larger() { return instances(6, 40, false); }

    @Property(tries = 300)
    void neverExceedsCapacity(@ForAll("larger") Instance in, @ForAll @LongRange(min = 0, max = 200_000) long cap,
                              @ForAll @IntRange(min = 1, max = 9) int tile) {
        HotNeuronSolver.Solution s = HotNeuronSolver.solve(in.counts, in.bytes, cap, tile);
        assertThat(s.bytes()).isLessThanOrEqualTo(cap);
        long bytes = 0, covered = 0;
        for (int l = 0; l < in.counts.length; l++) {
            int k = s.count(l);
            assertThat(k % tile == 0 || k == in.counts[l].length).as("layer %d hot count %d is whole tiles", l, k).isTrue();
            bytes += k * in.bytes[l];
            for (int r : s.neurons()[l]) covered += in.counts[l][r];
            assertThat(java.util.Arrays.stream(s.neurons()[l]).distinct().count()).isEqualTo(k);
        }
        assertThat(bytes).isEqualTo(s.bytes());
        assertThat(covered).isEqualTo(s.covered());
    }

    @Property(tries = 300)
    void coverageIsMonotoneInBudget(@ForAll("larger") Instance in, @ForAll @LongRange(min = 0, max = 100_000) long cap,
                                    @ForAll @LongRange(min = 0, max = 50_000) long extra, @ForAll @IntRange(min = 1, max = 9) int tile) {
        long a = HotNeuronSolver.solve(in.counts, in.bytes, cap, tile).covered();
        long b = HotNeuronSolver.solve(in.counts, in.bytes, cap + extra, tile).covered();
        assertThat(b).isGreaterThanOrEqualTo(a);
    }

    @Property(tries = 400)
    void tileOneUniformBytesIsOptimal(@ForAll("uniform") Instance in, @ForAll @LongRange(min = 0, max = 6000) long cap) {
        HotNeuronSolver.Solution s = HotNeuronSolver.solve(in.counts, in.bytes, cap, 1);
        assertThat(s.covered()).isEqualTo(bruteForceSubsets(in, cap));
    }

    @Property(tries = 400)
    void tileOneMixedBytesIsWithinStatedBound(@ForAll("mixed") Instance in, @ForAll @LongRange(min = 0, max = 6000) long cap) {
        HotNeuronSolver.Solution s = HotNeuronSolver.solve(in.counts, in.bytes, cap, 1);
        long opt = bruteForceSubsets(in, cap);
        assertThat(s.covered()).isLessThanOrEqualTo(opt);
        assertThat(s.covered() + s.gapBound()).isGreaterThanOrEqualTo(opt);
        assertThat(s.gapBound()).isLessThanOrEqualTo(in.maxGroupValue(1));
    }

    @Property(tries = 400)
    void tiledIsWithinStatedBound(@ForAll("larger") Instance in, @ForAll @LongRange(min = 0, max = 60_000) long cap,
                                  @ForAll @IntRange(min = 2, max = 16) int tile) {
        if (in.counts.length > 4) return; // keeps the brute force small
        HotNeuronSolver.Solution s = HotNeuronSolver.solve(in.counts, in.bytes, cap, tile);
        long opt = bruteForceTiled(in, cap, tile);
        assertThat(s.covered()).isLessThanOrEqualTo(opt);
        assertThat(s.covered() + s.gapBound()).isGreaterThanOrEqualTo(opt);
        assertThat(s.gapBound()).isLessThanOrEqualTo(in.maxGroupValue(tile));
    }

    /** Best coverage over every subset of neurons (no tile constraint). */
    private static long bruteForceSubsets(Instance in, long cap) {
        int n = 0;
        for (long[] c : in.counts) n += c.length;
        long[] v = new long[n], w = new long[n];
        int i = 0;
        for (int l = 0; l < in.counts.length; l++)
            for (long c : in.counts[l]) { v[i] = c; w[i++] = in.bytes[l]; }
        long best = 0;
        for (int mask = 0; mask < (1 << n); mask++) {
            long val = 0, wt = 0;
            for (int j = 0; j < n; j++) if ((mask >> j & 1) != 0) { val += v[j]; wt += w[j]; }
            if (wt <= cap) best = Math.max(best, val);
        }
        return best;
    }

    /** Best coverage when each layer's hot count is a multiple of the tile or the whole layer (top-k is best for a given k). */
    private static long bruteForceTiled(Instance in, long cap, int tile) {
        return tiled(in, cap, tile, 0);
    }

    private static long tiled(Instance in, long cap, int tile, int layer) {
        return tiled(in, new long[in.counts.length], cap, tile, layer);
    }

    /** Setup bytes per layer for an instance (a routed expert's own predictor: charged only if it gets hot neurons). */
    @Provide Arbitrary<long[]> setups() {
        return Arbitraries.longs().between(0, 3000).array(long[].class).ofSize(6);
    }

    private static long[] setupFor(Instance in, long[] s) {
        return java.util.Arrays.copyOf(s, in.counts.length);
    }

    @Property(tries = 300)
    void setupIsChargedExactlyForUnitsWithHotNeurons(@ForAll("larger") Instance in, @ForAll("setups") long[] s,
                                                    @ForAll @LongRange(min = 0, max = 200_000) long cap, @ForAll @IntRange(min = 1, max = 9) int tile) {
        long[] setup = setupFor(in, s);
        HotNeuronSolver.Solution sol = HotNeuronSolver.solve(in.counts, in.bytes, setup, cap, tile);
        long bytes = 0, setupBytes = 0;
        for (int l = 0; l < in.counts.length; l++) {
            int k = sol.count(l);
            assertThat(k % tile == 0 || k == in.counts[l].length).isTrue();
            bytes += k * in.bytes[l];
            if (k > 0) setupBytes += setup[l];
        }
        assertThat(sol.setupBytes()).isEqualTo(setupBytes);
        assertThat(sol.neuronBytes()).isEqualTo(bytes);
        assertThat(sol.bytes()).isEqualTo(bytes + setupBytes).isLessThanOrEqualTo(cap);
    }

    @Property(tries = 300)
    void withSetupCoverageIsMonotoneInBudget(@ForAll("larger") Instance in, @ForAll("setups") long[] s,
                                             @ForAll @LongRange(min = 0, max = 100_000) long cap, @ForAll @LongRange(min = 0, max = 50_000) long extra,
                                             @ForAll @IntRange(min = 1, max = 9) int tile) {
        long[] setup = setupFor(in, s);
        long a = HotNeuronSolver.solve(in.counts, in.bytes, setup, cap, tile).covered();
        long b = HotNeuronSolver.solve(in.counts, in.bytes, setup, cap + extra, tile).covered();
        assertThat(b).isGreaterThanOrEqualTo(a);
    }

    @Property(tries = 400)
    void withSetupIsWithinStatedBound(@ForAll("larger") Instance in, @ForAll("setups") long[] s, @ForAll @LongRange(min = 0, max = 60_000) long cap,
                                      @ForAll @IntRange(min = 1, max = 16) int tile) {
        if (in.counts.length > 4) return; // keeps the brute force small
        long[] setup = setupFor(in, s);
        HotNeuronSolver.Solution sol = HotNeuronSolver.solve(in.counts, in.bytes, setup, cap, tile);
        long opt = tiled(in, setup, cap, tile, 0);
        assertThat(sol.covered()).isLessThanOrEqualTo(opt);
        assertThat(sol.covered() + sol.gapBound()).as("optimum %d", opt).isGreaterThanOrEqualTo(opt);
    }

    /** Zero setup is the plain solver, neuron for neuron. */
    @Property(tries = 200)
    void zeroSetupIsThePlainSolver(@ForAll("larger") Instance in, @ForAll @LongRange(min = 0, max = 100_000) long cap,
                                   @ForAll @IntRange(min = 1, max = 9) int tile) {
        HotNeuronSolver.Solution a = HotNeuronSolver.solve(in.counts, in.bytes, cap, tile);
        HotNeuronSolver.Solution b = HotNeuronSolver.solve(in.counts, in.bytes, new long[in.counts.length], cap, tile);
        assertThat(b.neurons()).isDeepEqualTo(a.neurons());
        assertThat(b.gapBound()).isEqualTo(a.gapBound());
    }

    /**
     * The case setup costs are for: a unit whose own predictor costs more than its few hot neurons are worth is
     * left out, and its bytes buy the other unit's neurons. Charged up front (the old way), the predictor always
     * took its bytes.
     */
    @org.junit.jupiter.api.Test
    void aRarelyUsedUnitDoesNotTakeItsPredictorsBytes() {
        long[][] counts = {{100, 90, 80, 70}, {3, 2, 1, 0}};
        long[] bytes = {10, 10}, setup = {50, 50};
        HotNeuronSolver.Solution sol = HotNeuronSolver.solve(counts, bytes, setup, 90, 1);
        assertThat(sol.neurons()[0]).containsExactly(0, 1, 2, 3);
        assertThat(sol.neurons()[1]).isEmpty();
        assertThat(sol.bytes()).isEqualTo(90);
        assertThat(sol.setupBytes()).isEqualTo(50);
        assertThat(sol.covered()).isEqualTo(340);
    }

    /** Best coverage with tiled prefixes and each layer's setup paid when it takes any neuron. */
    private static long tiled(Instance in, long[] setup, long cap, int tile, int layer) {
        if (layer == in.counts.length) return 0;
        long[] c = in.counts[layer];
        int[] o = HotNeuronSolver.sortedByCount(c);
        long best = Long.MIN_VALUE;
        long prefix = 0;
        for (int k = 0; ; ) {
            long cost = k * in.bytes[layer] + (k > 0 ? setup[layer] : 0);
            if (cost <= cap) best = Math.max(best, prefix + tiled(in, setup, cap - cost, tile, layer + 1));
            if (k == c.length) break;
            int next = Math.min(c.length, k + tile);
            for (int j = k; j < next; j++) prefix += c[o[j]];
            k = next;
        }
        return best;
    }

    @Property(tries = 200)
    void planNeverExceedsBudgetAndIsMonotone(@ForAll("larger") Instance in, @ForAll @LongRange(min = 0, max = 300_000) long budget,
                                            @ForAll @LongRange(min = 0, max = 100_000) long extra, @ForAll @IntRange(min = 1, max = 8) int tile,
                                            @ForAll @LongRange(min = 0, max = 20_000) long ws, @ForAll @LongRange(min = 0, max = 40_000) long attn) {
        int[] ff = new int[in.counts.length];
        long[] overhead = new long[ff.length];
        for (int l = 0; l < ff.length; l++) { ff[l] = in.counts[l].length; overhead[l] = 100; }
        GpuFootprint fp = GpuFootprint.synthetic(List.of(new GpuFootprint.Item("attention", "all", attn),
                new GpuFootprint.Item("KV cache", "all", attn / 3)), ws, in.bytes, overhead, ff);
        for (GpuFootprint f : List.of(fp, fp.withUnitSetup(java.util.Arrays.stream(ff).mapToLong(x -> 7L * x + 300).toArray()))) {
            PlacementPlanner.Plan p = PlacementPlanner.plan(f, in.counts, budget, tile);
            assertThat(p.usedBytes()).isLessThanOrEqualTo(budget);
            PlacementPlanner.Plan q = PlacementPlanner.plan(f, in.counts, budget + extra, tile);
            assertThat(q.hot().covered()).isGreaterThanOrEqualTo(p.hot().covered());
            assertThat(q.usedBytes()).isLessThanOrEqualTo(budget + extra);
        }
    }

    @Property(tries = 50)
    void exactProductComparison(@ForAll @LongRange(min = 0, max = Long.MAX_VALUE / 2) long a, @ForAll @LongRange(min = 0, max = 1L << 40) long b,
                                @ForAll @LongRange(min = 0, max = Long.MAX_VALUE / 2) long c, @ForAll @LongRange(min = 0, max = 1L << 40) long d) {
        int expected = java.math.BigInteger.valueOf(a).multiply(java.math.BigInteger.valueOf(b))
                .compareTo(java.math.BigInteger.valueOf(c).multiply(java.math.BigInteger.valueOf(d)));
        assertThat(Integer.signum(HotNeuronSolver.compareProducts(a, b, c, d))).isEqualTo(expected);
    }

}
