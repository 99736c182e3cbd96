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
        if (layer == in.counts.length) return 0;
        long[] c = in.counts[layer];
        int[] o = HotNeuronSolver.sortedByCount(c);
        long best = Long.MIN_VALUE;
        long prefix = 0;
        for (int k = 0; ; ) {
            long cost = k * in.bytes[layer];
            if (cost <= cap) best = Math.max(best, prefix + tiled(in, cap - cost, tile, layer + 1));
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
        PlacementPlanner.Plan p = PlacementPlanner.plan(fp, in.counts, budget, tile);
        assertThat(p.usedBytes()).isLessThanOrEqualTo(budget);
        PlacementPlanner.Plan q = PlacementPlanner.plan(fp, in.counts, budget + extra, tile);
        assertThat(q.hot().covered()).isGreaterThanOrEqualTo(p.hot().covered());
        assertThat(q.usedBytes()).isLessThanOrEqualTo(budget + extra);
    }

    @Property(tries = 50)
    void exactProductComparison(@ForAll @LongRange(min = 0, max = Long.MAX_VALUE / 2) long a, @ForAll @LongRange(min = 0, max = 1L << 40) long b,
                                @ForAll @LongRange(min = 0, max = Long.MAX_VALUE / 2) long c, @ForAll @LongRange(min = 0, max = 1L << 40) long d) {
        int expected = java.math.BigInteger.valueOf(a).multiply(java.math.BigInteger.valueOf(b))
                .compareTo(java.math.BigInteger.valueOf(c).multiply(java.math.BigInteger.valueOf(d)));
        assertThat(Integer.signum(HotNeuronSolver.compareProducts(a, b, c, d))).isEqualTo(expected);
    }

}
