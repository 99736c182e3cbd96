package org.powerinfer4j.engine.model;

import java.util.Arrays;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Mixture-of-experts FFN (Mixtral, Qwen3-MoE): the router {@code ffn_gate_inp} scores every expert per token,
 * the top {@code k} are chosen with their weights by {@link ExpertRouter} (per the GGUF's {@code expert_gating_func}
 * and {@code expert_weights_norm}),
 * and y = Σ_chosen w_e · expert_e(x) (+ a shared expert, gated by {@code sigmoid(ffn_gate_inp_shexp · x)} where
 * present). Only the chosen experts' weights are read: the tokens of a chunk are grouped per expert, and each
 * expert runs once over its group (matrix–matrix for a prompt). Experts are summed in index order, so the result
 * does not depend on the thread count. Layers without a router run {@code dense}. Each routed expert runs through
 * an {@link ExpertFeedForward}: densely, or over its neurons that fire (ReLU experts, {@code --sparse exact}, or
 * {@code predict} with a predictor per expert).
 */
public final class MoeFeedForward implements FeedForward {
    private final ModelConfig c;
    private final FeedForward dense;
    private final ExpertFeedForward expertFfn;
    private volatile FfnObserver observer;   // profiling: sees each routed expert's activations

    public MoeFeedForward(ModelConfig c) {
        this(c, ExpertFeedForward.DENSE);
    }

    public MoeFeedForward(ModelConfig c, ExpertFeedForward expertFfn) {
        this.c = c;
        this.dense = new DenseFeedForward(c.activation());
        this.expertFfn = expertFfn;
    }

    /** Installs (null removes) the observer told about each routed expert's activations ({@link FfnObserver#onExpertFfn}). */
    void setObserver(FfnObserver observer) {
        this.observer = observer;
    }

    /** Per-session buffers. */
    private static final class Scratch {
        final float[] logits, gathered, gatheredResidual, out, hb, hb2, shared;
        final int[] chosen;
        final float[] weights;
        final int[] members, tokens;
        final ExpertRouter router;
        final Object expertScratch;

        Scratch(int batch, int dim, int ff, ArchParams a, int sharedFf, ExpertFeedForward expertFfn) {
            int experts = a.experts(), k = a.expertsUsed();
            logits = new float[batch * experts];
            gathered = new float[batch * dim];
            gatheredResidual = new float[batch * dim];
            out = new float[batch * dim];
            int h = Math.max(ff, sharedFf);
            hb = new float[batch * h];
            hb2 = new float[batch * h];
            shared = new float[batch];
            chosen = new int[batch * k];
            weights = new float[batch * k];
            members = new int[batch * k];
            tokens = new int[batch * k];
            router = new ExpertRouter(a);
            expertScratch = expertFfn.newScratch(batch, ff);
        }
    }

    /** Decode steps of several sequences: each token is routed and its experts computed per token where the state says so. */
    @Override
    public boolean supportsSequenceBatches() {
        return expertFfn.supportsSequenceBatches();
    }

    @Override
    public void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch) {
        Tensor router = w.get("ffn_gate_inp.weight");
        if (router == null) {
            dense.compute(pool, layer, w, s, batch);
            return;
        }
        ArchParams a = c.params();
        int dim = c.dim(), experts = a.experts(), k = a.expertsUsed();
        Tensor shUp = w.get("ffn_up_shexp.weight");
        int sharedFf = shUp == null ? 0 : shUp.rows();
        Scratch sc = s.ffnScratch(() -> new Scratch(s.maxBatch(), dim, c.ffDim(), a, sharedFf, expertFfn));
        float[] x = s.ffnInput(), y = s.ffnOutput();

        Transformer.project(pool, router, x, batch, sc.logits, s.perTokenFor(router));
        Tensor rb = w.get("ffn_gate_inp.bias");
        if (rb != null) DenseFeedForward.addBias(sc.logits, rb, experts, batch);
        for (int b = 0; b < batch; b++) sc.router.route(sc.logits, b * experts, sc.chosen, sc.weights, b * k);

        Arrays.fill(y, 0, batch * dim, 0f);
        if (expertFfn.needsResidual()) expertFfn.beginLayer(pool, layer, w, s.residual(), batch, sc.expertScratch, s);
        for (int e = 0; e < experts; e++) {
            int n = 0;
            for (int b = 0; b < batch; b++)
                for (int j = 0; j < k; j++) if (sc.chosen[b * k + j] == e) sc.members[n++] = b * k + j;
            if (n == 0) continue;   // this expert's weights are not read at all
            FfnObserver obs = observer;
            boolean residual = obs != null || expertFfn.needsResidual();
            for (int i = 0; i < n; i++) {
                sc.tokens[i] = sc.members[i] / k;
                System.arraycopy(x, sc.tokens[i] * dim, sc.gathered, i * dim, dim);
                if (residual) System.arraycopy(s.residual(), sc.tokens[i] * dim, sc.gatheredResidual, i * dim, dim);
            }
            expertFfn.compute(pool, c.activation(), layer, e, w, sc.gathered, residual ? sc.gatheredResidual : null, sc.tokens, n, sc.hb, sc.hb2,
                    sc.out, sc.expertScratch, s);
            if (obs != null) obs.onExpertFfn(layer, e, n, sc.gatheredResidual, dim, sc.hb, w.expert("up", e).rows());
            for (int i = 0; i < n; i++) {
                int slot = sc.members[i], b = slot / k;
                float wt = sc.weights[slot];
                for (int d = 0; d < dim; d++) y[b * dim + d] += wt * sc.out[i * dim + d];
            }
        }
        if (shUp != null) {
            DenseFeedForward.compute(pool, c.activation(), w.get("ffn_gate_shexp.weight"), shUp, w.get("ffn_down_shexp.weight"), null,
                    null, null, null, x, batch, sc.hb, sc.hb2, sc.out, s);
            Tensor g = w.get("ffn_gate_inp_shexp.weight");
            if (g != null) Transformer.project(pool, g, x, batch, sc.shared, s.perTokenFor(g));
            for (int b = 0; b < batch; b++) {
                float gate = g == null ? 1f : (float) (1.0 / (1.0 + Math.exp(-sc.shared[b])));
                for (int d = 0; d < dim; d++) y[b * dim + d] += gate * sc.out[b * dim + d];
            }
        }
    }

}
