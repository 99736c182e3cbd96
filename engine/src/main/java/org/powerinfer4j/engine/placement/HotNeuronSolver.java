package org.powerinfer4j.engine.placement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Chooses which FFN neurons go to the GPU: maximise covered activations (the sum of the chosen neurons' firing
 * counts) subject to the bytes their rows take.
 *
 * <p>Each layer's neurons are sorted by count (descending, ties by id) and cut into groups of {@code tile}
 * neurons (GPU kernels work on whole tiles; the last group of a layer may be shorter so a layer can be fully
 * resident). A layer's hot set is always a prefix of its sorted groups. Groups of all layers are then taken in
 * order of density (count per byte), highest first, until the first one that does not fit.
 *
 * <p>Optimality: densities never increase along a layer's groups, so this order also solves the fractional
 * relaxation (take whole groups in density order, then a fraction of the first that does not fit). Hence
 * {@code OPT ≤ covered + value(first group that did not fit)}, reported as {@link Solution#gapBound()}. With
 * {@code tile = 1} and the same bytes per neuron in every layer (the usual case: one type per tensor role),
 * every item costs the same, the chosen set is exactly the globally most frequent neurons that fit, and the
 * result is optimal. Stopping at the first misfit (instead of skipping it and packing smaller groups) keeps
 * the solution monotone: more budget only lengthens the taken prefix, so coverage never decreases.
 *
 * <p>A layer (unit) may also have a setup cost: bytes it needs on the GPU only once it has any hot neuron (a routed
 * expert's own predictor). It is charged with the unit's first group, which can make that group less dense than
 * the next; so each unit's groups are merged into blocks along the upper concave hull of its cumulative
 * (bytes, count) curve, whose densities never increase again, and the blocks are taken in density order as groups
 * were. Every prefix a unit can take lies under its hull, so the fractional bound above still holds, with the
 * first block that did not fit as the gap.
 */
public final class HotNeuronSolver {
    private HotNeuronSolver() {}

    /**
     * @param neurons   per layer, the chosen neuron ids, most frequent first
     * @param covered   sum of the chosen neurons' counts
     * @param bytes     bytes of the chosen neurons
     * @param gapBound  upper bound on (optimal coverage − covered) under the same byte capacity
     */
    public record Solution(int[][] neurons, long covered, long bytes, long gapBound, long setupBytes) {
        public Solution(int[][] neurons, long covered, long bytes, long gapBound) {
            this(neurons, covered, bytes, gapBound, 0);
        }

        public int count(int layer) {
            return neurons[layer].length;
        }

        /** Bytes of the chosen neurons alone, without the setup of the units that got any. */
        public long neuronBytes() {
            return bytes - setupBytes;
        }
    }

    /** Groups {@code index..} of a layer, neurons {@code [from, to)} of its sorted order, setup included in the first's cost. */
    private record Group(int layer, int index, int from, int to, long value, long cost) {
        Group merge(Group next) {
            return new Group(layer, index, from, next.to, value + next.value, Math.addExact(cost, next.cost));
        }

        /** Strictly denser than {@code o}. */
        boolean denserThan(Group o) {
            return compareProducts(value, o.cost, o.value, cost) > 0;
        }
    }

    /**
     * @param counts      per layer, per neuron firing counts (non-negative)
     * @param neuronBytes per layer, the bytes one neuron costs on the GPU (> 0)
     * @param capacity    bytes available for hot neurons
     * @param tile        neurons per group (≥ 1)
     */
    public static Solution solve(long[][] counts, long[] neuronBytes, long capacity, int tile) {
        return solve(counts, neuronBytes, new long[counts.length], capacity, tile);
    }

    /**
     * The same with {@code setupBytes[l]} charged once for each layer that gets any hot neuron (0: none).
     */
    public static Solution solve(long[][] counts, long[] neuronBytes, long[] setupBytes, long capacity, int tile) {
        if (tile < 1) throw new IllegalArgumentException("tile must be >= 1, is " + tile);
        if (counts.length != neuronBytes.length || counts.length != setupBytes.length)
            throw new IllegalArgumentException("counts, neuronBytes and setupBytes differ in layers");
        int layers = counts.length;
        int[][] order = new int[layers][];
        List<Group> blocks = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            if (neuronBytes[l] <= 0) throw new IllegalArgumentException("layer " + l + ": neuron bytes must be > 0");
            if (setupBytes[l] < 0) throw new IllegalArgumentException("layer " + l + ": negative setup bytes " + setupBytes[l]);
            long[] c = counts[l];
            for (long v : c) if (v < 0) throw new IllegalArgumentException("layer " + l + ": negative count " + v);
            order[l] = sortedByCount(c);
            List<Group> hull = new ArrayList<>();
            for (int from = 0, g = 0; from < c.length; from += tile, g++) {
                int size = Math.min(tile, c.length - from);
                long value = 0;
                for (int j = from; j < from + size; j++) value += c[order[l][j]];
                long cost = Math.multiplyExact(size, neuronBytes[l]) + (from == 0 ? setupBytes[l] : 0);
                Group next = new Group(l, g, from, from + size, value, cost);
                // a group denser than the block before it joins that block (only a setup cost makes this happen)
                while (!hull.isEmpty() && next.denserThan(hull.getLast())) next = hull.removeLast().merge(next);
                hull.add(next);
            }
            blocks.addAll(hull);
        }
        blocks.sort(BY_DENSITY);
        int[] taken = new int[layers];
        long covered = 0, bytes = 0, gap = 0, setup = 0;
        for (Group g : blocks) {
            if (bytes + g.cost > capacity) {
                gap = g.value;
                break;
            }
            bytes += g.cost;
            covered += g.value;
            if (g.from == 0) setup += setupBytes[g.layer];
            taken[g.layer] = g.to;
        }
        int[][] chosen = new int[layers][];
        for (int l = 0; l < layers; l++) chosen[l] = Arrays.copyOf(order[l], taken[l]);
        return new Solution(chosen, covered, bytes, gap, setup);
    }

    /** Higher count per byte first; exact 128-bit cross-multiplication; ties by layer then position. */
    private static final Comparator<Group> BY_DENSITY = (a, b) -> {
        int c = compareProducts(b.value, a.cost, a.value, b.cost);
        if (c != 0) return c;
        if (a.layer != b.layer) return Integer.compare(a.layer, b.layer);
        return Integer.compare(a.index, b.index);
    };

    /** Compares x1·y1 with x2·y2 for non-negative longs without overflow. */
    static int compareProducts(long x1, long y1, long x2, long y2) {
        long hi1 = Math.multiplyHigh(x1, y1), hi2 = Math.multiplyHigh(x2, y2);
        if (hi1 != hi2) return Long.compare(hi1, hi2);
        return Long.compareUnsigned(x1 * y1, x2 * y2);
    }

    /** Neuron ids sorted by count descending, ties by id ascending (deterministic). */
    static int[] sortedByCount(long[] c) {
        Integer[] idx = new Integer[c.length];
        for (int i = 0; i < idx.length; i++) idx[i] = i;
        Arrays.sort(idx, (a, b) -> c[a] != c[b] ? Long.compare(c[b], c[a]) : Integer.compare(a, b));
        int[] out = new int[idx.length];
        for (int i = 0; i < out.length; i++) out[i] = idx[i];
        return out;
    }
}
