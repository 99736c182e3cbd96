package org.powerinfer4j.engine.placement;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * One mixture-of-experts layer's profile: how many tokens the router sent to each expert, and how often each neuron of
 * each expert fired over the tokens it received — the two levels of skew a MoE placement works with (hot experts, and
 * hot neurons within an expert).
 *
 * <p>In the side file (our extension of the {@code activation_stats} GGUF, in its style): {@code blk.N.expert_token_counts}
 * I32 [n_expert] and {@code blk.N.expert_activation_counts} I32 [n_ff, n_expert] (ggml order: the neurons of expert 0
 * first). The layer's {@code blk.N.activation_counts} holds the per-neuron sums over the experts.
 *
 * @param neurons [expert][ff] firing counts
 * @param tokens  [expert] tokens routed to the expert
 */
public record ExpertCounts(long[][] neurons, long[] tokens) {
    static final String NEURONS = ".expert_activation_counts", TOKENS = ".expert_token_counts";

    public ExpertCounts {
        if (neurons.length != tokens.length) throw new IllegalArgumentException(neurons.length + " experts' neurons but " + tokens.length + " token counts");
        neurons = Arrays.stream(neurons).map(long[]::clone).toArray(long[][]::new);
        tokens = tokens.clone();
    }

    public int experts() {
        return tokens.length;
    }

    /** Per-neuron sums over the experts (the layer's {@code activation_counts}). */
    public long[] summedOverExperts() {
        long[] sum = new long[neurons.length == 0 ? 0 : neurons[0].length];
        for (long[] e : neurons) for (int i = 0; i < sum.length; i++) sum[i] += e[i];
        return sum;
    }

    /** Share of the routed tokens taken by the most used {@code k} experts. */
    public double topExpertsShare(int k) {
        long[] s = tokens.clone();
        Arrays.sort(s);
        long total = 0, top = 0;
        for (long t : s) total += t;
        for (int i = 0; i < Math.min(k, s.length); i++) top += s[s.length - 1 - i];
        return total == 0 ? 0 : (double) top / total;
    }

    /** Mean fraction of an expert's neurons that fire per token it receives (over all routed tokens). */
    public double meanActiveFraction() {
        long fired = 0, routed = 0;
        for (int e = 0; e < experts(); e++) {
            for (long c : neurons[e]) fired += c;
            routed += tokens[e] * neurons[e].length;
        }
        return routed == 0 ? Double.NaN : (double) fired / routed;
    }

    /** e.g. "8 experts: the top 2 take 41% of routed tokens, the least used 6%; 52.3% of an expert's neurons fire per token". */
    String summary(int used) {
        long min = Arrays.stream(tokens).min().orElse(0), total = Arrays.stream(tokens).sum();
        return String.format(Locale.ROOT, "%d experts: the top %d take %.0f%% of routed tokens, the least used %.0f%%; %.1f%% of an expert's neurons fire per token",
                experts(), used, 100 * topExpertsShare(used), total == 0 ? 0 : 100.0 * min / total, 100 * meanActiveFraction());
    }

    void write(GGUFWriter w, int layer) throws IOException {
        int ff = neurons.length == 0 ? 0 : neurons[0].length;
        long[] flat = new long[experts() * ff];
        for (int e = 0; e < experts(); e++) System.arraycopy(neurons[e], 0, flat, e * ff, ff);
        w.addTensor("blk." + layer + NEURONS, GGMLType.I32, new long[] {ff, experts()}, i32(flat, layer));
        w.addTensor("blk." + layer + TOKENS, GGMLType.I32, new long[] {experts()}, i32(tokens, layer));
    }

    /** Layer {@code layer}'s expert counts in {@code f}, or null when it has none (a dense layer). */
    static ExpertCounts read(GGUFFile f, int layer, String file) throws IOException {
        TensorInfo n = f.tensorInfo("blk." + layer + NEURONS), t = f.tensorInfo("blk." + layer + TOKENS);
        if (n == null && t == null) return null;
        if (n == null || t == null) throw new IOException(file + ": layer " + layer + " has only one of " + NEURONS.substring(1) + " and " + TOKENS.substring(1));
        if (n.type() != GGMLType.I32 || n.ne().length != 2 || t.type() != GGMLType.I32 || t.ne().length != 1 || n.ne()[1] != t.ne()[0])
            throw new IOException(file + ": layer " + layer + "'s expert counts must be I32 [n_ff, n_expert] and I32 [n_expert]");
        int experts = Math.toIntExact(t.ne()[0]), ff = Math.toIntExact(n.ne()[0]);
        long[] flat = readI32(f, n, experts * ff), tokens = readI32(f, t, experts);
        long[][] neurons = new long[experts][];
        for (int e = 0; e < experts; e++) neurons[e] = Arrays.copyOfRange(flat, e * ff, (e + 1) * ff);
        return new ExpertCounts(neurons, tokens);
    }

    private static final ValueLayout.OfInt LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static MemorySegment i32(long[] v, int layer) throws IOException {
        MemorySegment s = MemorySegment.ofArray(new byte[4 * v.length]);
        for (int i = 0; i < v.length; i++) {
            if (v[i] > Integer.MAX_VALUE) throw new IOException("layer " + layer + ": expert count " + v[i] + " exceeds I32");
            s.set(LE, 4L * i, (int) v[i]);
        }
        return s;
    }

    private static long[] readI32(GGUFFile f, TensorInfo ti, int n) {
        MemorySegment s = f.segment().asSlice(f.dataOffset() + ti.offset(), ti.byteSize());
        long[] v = new long[n];
        for (int i = 0; i < n; i++) v[i] = Integer.toUnsignedLong(s.get(LE, 4L * i));
        return v;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExpertCounts c && Arrays.deepEquals(neurons, c.neurons) && Arrays.equals(tokens, c.tokens);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.deepHashCode(neurons) + Arrays.hashCode(tokens);
    }
}
