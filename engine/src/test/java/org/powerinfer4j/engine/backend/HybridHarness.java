package org.powerinfer4j.engine.backend;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.FeedForward;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.Transformer;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.sparse.SparseFeedForward;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The sparse stories260K student with any FFN implementation plugged into the forward pass, a greedy loop, and the
 * expected ids of {@code sparse/reference.json}.
 */
final class HybridHarness implements AutoCloseable {
    static final int BATCH = 3, CONTEXT = 128, THREADS = 2;
    private static JsonNode reference;
    static long[][] counts;

    final float threshold;
    final Model model;
    final WorkerPool pool = new WorkerPool(THREADS);

    HybridHarness(float threshold) throws IOException {
        this.threshold = threshold;
        ModelOptions o = ModelOptions.defaults().withThreads(THREADS).withContextLength(CONTEXT).withBatchSize(BATCH)
                .withKvCacheType(GGMLType.F32).withSparseMode(SparseMode.PREDICT).withSparseThreshold(threshold);
        model = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o);
        synchronized (HybridHarness.class) {
            if (reference == null) reference = new ObjectMapper().readTree(Files.readString(TestData.file("sparse/reference.json")));
            if (counts == null) counts = ActivationStats.read(TestData.file("sparse/activation_counts.json")).counts();
        }
    }

    ModelConfig config() { return model.config(); }
    ModelWeights weights() { return model.weights(); }

    Tensor[] downT() {
        Tensor[] d = new Tensor[config().layers()];
        for (int l = 0; l < d.length; l++) d[l] = weights().layers()[l].ffnDownT();
        return d;
    }

    int[] ffSizes() {
        int[] ff = new int[config().layers()];
        java.util.Arrays.fill(ff, config().ffDim());
        return ff;
    }

    GpuFootprint footprint() {
        return HybridPlacement.footprint(weights(), BATCH);
    }

    /** A budget that leaves {@code fraction} of all FFN neuron bytes for hot rows after everything fixed. */
    long budgetFor(double fraction) {
        GpuFootprint fp = footprint();
        long b = fp.workspace();
        for (GpuFootprint.Item it : fp.fixedItems()) b += it.bytes();
        for (long o : fp.layerOverhead()) b += o;
        return b + (long) Math.floor(fraction * fp.allNeuronBytes());
    }

    HybridPlacement planned(double fraction) {
        return HybridPlacement.planned(footprint(), counts, budgetFor(fraction), GpuOptions.DEFAULT_TILE, "test " + fraction);
    }

    HybridFeedForward hybrid(GpuBackend gpu, HybridPlacement p, ColdMaskSource mask, SparsityStats stats, List<String> warnings) {
        return new HybridFeedForward(gpu, false, p, weights(), config().activation(), threshold, downT(), BATCH, mask, stats,
                warnings == null ? m -> {} : warnings::add);
    }

    SparseFeedForward cpuOnly(SparsityStats stats) {
        return new SparseFeedForward(SparseMode.PREDICT, config().activation(), threshold, downT(), 64, stats, false);
    }

    /**
     * Two of the reference prompts, to keep the CPU-only CI fast: "bos" (one-token prompt, decode only) and
     * "tom_and_lily" (12 tokens: prefill in chunks of {@link #BATCH}, so the batched path is exercised).
     */
    static final String[] PROMPTS = {"bos", "tom_and_lily"};

    List<int[]> prompts() {
        List<int[]> r = new ArrayList<>();
        for (JsonNode p : selected()) r.add(ints(p.get("prompt_ids")));
        return r;
    }

    List<int[]> expected() {
        String key = threshold == 0f ? "sparse_predictor_thr0" : "sparse_predictor_thr1";
        List<int[]> r = new ArrayList<>();
        for (JsonNode p : selected()) r.add(ints(p.get(key).get("ids")));
        return r;
    }

    private List<JsonNode> selected() {
        List<JsonNode> r = new ArrayList<>();
        for (JsonNode p : reference.get("prompts"))
            if (java.util.Arrays.asList(PROMPTS).contains(p.get("name").asText())) r.add(p);
        if (r.size() != PROMPTS.length) throw new IllegalStateException("reference.json lacks one of " + java.util.Arrays.toString(PROMPTS));
        return r;
    }

    /** Greedy generation of {@code n} tokens after the prompt (prefill in chunks of {@link #BATCH}). */
    int[] greedy(FeedForward ffn, int[] prompt, int n) {
        Transformer t = new Transformer(config(), weights(), ffn);
        try (InferenceState s = new InferenceState(config(), CONTEXT, BATCH, THREADS, GGMLType.F32)) {
            int[] out = new int[n];
            t.forward(pool, s, prompt, 0, prompt.length, 0, true);
            for (int i = 0; i < n; i++) {
                out[i] = argmax(s.logits());
                if (i + 1 < n) t.forward(pool, s, out, i, 1, prompt.length + i, true);
            }
            return out;
        }
    }

    /** Logits after every position of {@code seq}, fed one token at a time (teacher forcing). */
    float[][] logits(FeedForward ffn, int[] seq) {
        Transformer t = new Transformer(config(), weights(), ffn);
        try (InferenceState s = new InferenceState(config(), CONTEXT, BATCH, THREADS, GGMLType.F32)) {
            float[][] r = new float[seq.length][];
            for (int i = 0; i < seq.length; i++) {
                t.forward(pool, s, seq, i, 1, i, true);
                r[i] = s.logits().clone();
            }
            return r;
        }
    }

    static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    static int[] ints(JsonNode arr) {
        int[] r = new int[arr.size()];
        for (int i = 0; i < r.length; i++) r[i] = arr.get(i).asInt();
        return r;
    }

    @Override
    public void close() {
        pool.close();
        model.close();
    }
}
