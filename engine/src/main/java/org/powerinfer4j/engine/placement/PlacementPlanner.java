package org.powerinfer4j.engine.placement;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Hot/cold placement under a VRAM budget: fills the budget in PowerInfer's priority order and then spends the rest
 * on the most frequently firing FFN neurons ({@link HotNeuronSolver}).
 *
 * <p>Order: the workspace reserve comes first, because nothing on the GPU can run without it (PowerInfer leaves it
 * out of its accounting, which is why its {@code --vram-budget} runs out of memory); then attention, predictors,
 * FFN norms, output head and KV cache as PowerInfer places them, stopping at the first that does not fit (a later
 * part is useless on the GPU without the earlier ones); then, only if all of those fit, the per-layer index maps
 * and the hot neuron rows. A unit's own predictor ({@link GpuFootprint#withUnitSetup}, a routed expert's) is charged
 * only if the unit gets hot rows, by the solver. The sum of everything placed never exceeds the budget.
 */
public final class PlacementPlanner {
    private PlacementPlanner() {}

    /** One accounted allocation group and whether it went to the GPU. */
    public record Step(String category, String label, long bytes, boolean placed) {}

    /** The result: what is on the GPU, the chosen neurons and their coverage. */
    public record Plan(long budget, int tile, List<Step> steps, HotNeuronSolver.Solution hot, long[][] counts,
                       GpuFootprint footprint) {
        /** Bytes of everything placed (≤ budget). */
        public long usedBytes() {
            long b = 0;
            for (Step s : steps) if (s.placed) b += s.bytes;
            return b;
        }

        public int layers() {
            return counts.length;
        }

        public long layerTotal(int l) {
            long t = 0;
            for (long c : counts[l]) t += c;
            return t;
        }

        public long layerCovered(int l) {
            long t = 0;
            for (int r : hot.neurons()[l]) t += counts[l][r];
            return t;
        }

        public long totalCount() {
            long t = 0;
            for (int l = 0; l < counts.length; l++) t += layerTotal(l);
            return t;
        }

        /** Share of all activations that fall on GPU-resident neurons. */
        public double coverage() {
            long t = totalCount();
            return t == 0 ? 0 : (double) hot.covered() / t;
        }

        public GpuIndex gpuIndex() {
            return GpuIndex.of(budget, footprint.ffSizes(), hot.neurons());
        }

        /** The per-layer table and totals printed by {@code plan}. */
        public String table() {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(Locale.ROOT, "VRAM budget %s (%,d bytes), %s, tile %d%n", human(budget), budget, footprint.description(), tile));
            sb.append(String.format(Locale.ROOT, "%-12s %-44s %14s  %s%n", "part", "detail", "bytes", "on GPU"));
            for (Step s : steps)
                sb.append(String.format(Locale.ROOT, "%-12s %-44s %,14d  %s%n", s.category, s.label, s.bytes, s.placed ? "yes" : "no"));
            sb.append(String.format(Locale.ROOT, "%n%-10s %11s %8s %10s %16s%n", "layer", "neurons", "share", "covered", "bytes"));
            long[] nb = footprint.neuronBytes();
            int[] ff = footprint.ffSizes();
            long neurons = 0, bytes = 0, totalFf = 0;
            for (int l = 0; l < layers(); l++) {
                int k = hot.count(l);
                long t = layerTotal(l);
                neurons += k;
                totalFf += ff[l];
                bytes += k * nb[l];
                sb.append(String.format(Locale.ROOT, "%-10s %5d/%-5d %7.1f%% %9.1f%% %,16d%n", footprint.unitLabel(l), k, ff[l], 100.0 * k / ff[l],
                        t == 0 ? 0 : 100.0 * layerCovered(l) / t, k * nb[l]));
            }
            sb.append(String.format(Locale.ROOT, "%-10s %5d/%-5d %7.1f%% %9.1f%% %,16d%n", "total", neurons, totalFf,
                    totalFf == 0 ? 0 : 100.0 * neurons / totalFf, 100.0 * coverage(), bytes));
            sb.append(String.format(Locale.ROOT, "GPU total %,d of %,d bytes (%s free); optimality gap ≤ %,d activations (%.3f%%)%n",
                    usedBytes(), budget, human(budget - usedBytes()), hot.gapBound(),
                    totalCount() == 0 ? 0 : 100.0 * hot.gapBound() / totalCount()));
            return sb.toString();
        }
    }

    /**
     * @param counts per layer, per neuron firing counts ({@code counts[l].length} must equal the layer's n_ff)
     * @param budget VRAM bytes available
     * @param tile   hot neurons come in multiples of this per layer (a whole layer may end in a shorter tile)
     */
    public static Plan plan(GpuFootprint fp, long[][] counts, long budget, int tile) {
        if (counts.length != fp.layers()) throw new IllegalArgumentException("statistics have " + counts.length + " layers, the model " + fp.layers());
        int[] ff = fp.ffSizes();
        for (int l = 0; l < counts.length; l++)
            if (counts[l].length != ff[l]) throw new IllegalArgumentException("layer " + l + ": statistics have " + counts[l].length + " neurons, the model " + ff[l]);
        if (budget < 0) throw new IllegalArgumentException("negative budget");
        List<Step> steps = new ArrayList<>();
        long used = 0;
        boolean open = fp.workspace() <= budget;
        steps.add(new Step("workspace", "activations, scores, logits, partials", fp.workspace(), open));
        if (open) used += fp.workspace();
        for (GpuFootprint.Item it : fp.fixedItems()) {
            boolean fits = open && used + it.bytes() <= budget;
            if (fits) used += it.bytes();
            else open = false;
            steps.add(new Step(it.category(), it.label(), it.bytes(), fits));
        }
        long overhead = 0;
        for (long o : fp.layerOverhead()) overhead += o;
        boolean mapsFit = open && used + overhead <= budget;
        steps.add(new Step("index maps", "gpu_idx masks + hot-row allocation padding", overhead, mapsFit));
        HotNeuronSolver.Solution sol;
        long[] setup = fp.unitSetup();
        if (mapsFit) {
            used += overhead;
            sol = HotNeuronSolver.solve(counts, fp.neuronBytes(), setup, budget - used, tile);
        } else {
            sol = HotNeuronSolver.solve(counts, fp.neuronBytes(), setup, 0, tile);
        }
        if (java.util.Arrays.stream(setup).anyMatch(b -> b > 0)) {
            int withSetup = 0, units = 0;
            for (int l = 0; l < setup.length; l++)
                if (setup[l] > 0) {
                    units++;
                    if (sol.count(l) > 0) withSetup++;
                }
            steps.add(new Step("predictors", String.format(Locale.ROOT, "own, of the %d of %d units with hot rows", withSetup, units),
                    sol.setupBytes(), sol.setupBytes() > 0));
        }
        steps.add(new Step("hot FFN rows", "gate + up + down_t rows + bucket entries", sol.neuronBytes(), mapsFit && sol.neuronBytes() > 0));
        return new Plan(budget, tile, List.copyOf(steps), sol, counts, fp);
    }

    static String human(long bytes) {
        double v = bytes;
        String[] u = {"B", "KiB", "MiB", "GiB", "TiB"};
        int i = 0;
        while (Math.abs(v) >= 1024 && i < u.length - 1) {
            v /= 1024;
            i++;
        }
        return String.format(Locale.ROOT, i == 0 ? "%.0f %s" : "%.2f %s", v, u[i]);
    }
}
