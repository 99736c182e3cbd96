package org.powerinfer4j.engine.model;

import static org.powerinfer4j.engine.model.LayerGraph.Buf.ATT;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.ATT_OUT;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.FFN_OUT;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.K;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.Q;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.V;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.X;
import static org.powerinfer4j.engine.model.LayerGraph.Buf.XB;

import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.model.ArchParams.Family;
import org.powerinfer4j.engine.model.LayerGraph.Add;
import org.powerinfer4j.engine.model.LayerGraph.Attention;
import org.powerinfer4j.engine.model.LayerGraph.Buf;
import org.powerinfer4j.engine.model.LayerGraph.Ffn;
import org.powerinfer4j.engine.model.LayerGraph.HeadNorm;
import org.powerinfer4j.engine.model.LayerGraph.Linear;
import org.powerinfer4j.engine.model.LayerGraph.Norm;
import org.powerinfer4j.engine.model.LayerGraph.Op;
import org.powerinfer4j.engine.model.LayerGraph.Rope;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Builds the {@link ModelGraph} of a model from its config and named weights, checking on the way that every
 * tensor the graph needs is there with the shape it needs (one error line naming the tensor and the shape
 * expected). One builder covers every family; what differs per family is which optional pieces exist:
 * <ul>
 *   <li>llama / mistral / bamboo / Mixtral-style MoE in a llama file: RMSNorm, Q/K/V (biases if present), RoPE, attention, out, residual; RMSNorm, FFN, residual</li>
 *   <li>qwen2: + q/k/v biases; qwen3 / qwen3moe: + per-head q/k RMSNorm before RoPE</li>
 *   <li>gemma2 / gemma3: √dim embedding scale, post-attention and post-FFN norms, sliding-window layers, soft-caps (Gemma 2), q/k norms and a local RoPE base (Gemma 3), GeGLU</li>
 *   <li>phi3: fused QKV and gate–up (split into views at load), partial RoPE, LongRoPE factors</li>
 *   <li>falcon: LayerNorm, attention and FFN in parallel from the layer input (one norm for 7B, two for 40B), GELU MLP</li>
 *   <li>opt: learned positions, LayerNorm, biases everywhere, ReLU MLP, no RoPE</li>
 *   <li>gpt-oss: q/k/v/o biases, a learned sink logit per head, alternating sliding-window and global layers, YaRN,
 *       experts with biases and the clamped SwiGLU, chosen by a softmax over the top-k router logits</li>
 * </ul>
 */
public final class GraphBuilder {
    private GraphBuilder() {}

    public static ModelGraph build(ModelConfig c, ModelWeights w) {
        ArchParams a = c.params();
        List<RopeTables> ropes = new ArrayList<>();
        if (c.ropeDim() > 0) {
            ropes.add(RopeTables.of(c.ropeType(), c.ropeDim(), c.ropeFreqBase(), a.scaling(), w.ropeFreqs()));
            if (a.slidingWindow() > 0 && a.ropeBaseSwa() != c.ropeFreqBase())
                ropes.add(RopeTables.of(c.ropeType(), c.ropeDim(), a.ropeBaseSwa(), null, null));
        }
        LayerGraph[] layers = new LayerGraph[c.layers()];
        for (int il = 0; il < c.layers(); il++) layers[il] = layer(c, w.layers()[il], il, ropes.size() > 1);
        Norm out = new Norm(X, XB, w.outputNorm(), w.outputNormBias(), a.layerNorm(), c.rmsEps());
        if (a.positionOffset() >= 0 && w.positionEmbd() == null) throw missing("position_embd.weight", "[" + c.dim() + ", positions]");
        return new ModelGraph(layers, ropes.toArray(RopeTables[]::new), a.embeddingScale(), a.positionOffset() >= 0 ? w.positionEmbd() : null,
                a.positionOffset(), out, w.output(), a.finalSoftcap());
    }

    private static LayerGraph layer(ModelConfig c, LayerWeights lw, int il, boolean swaRope) {
        ArchParams a = c.params();
        String p = "blk." + il + ".";
        Checker t = new Checker(lw, p);
        int dim = c.dim(), q = c.qDim(), kv = c.kvDim();
        float eps = c.rmsEps();
        boolean ln = a.layerNorm();
        List<Op> ops = new ArrayList<>();
        boolean parallel = a.family() == Family.FALCON;
        boolean twoNorms = parallel && lw.has("attn_norm_2.weight");

        // attention input norm: Falcon-40B normalises its attention input with attn_norm_2 and the MLP's with attn_norm
        String attnNormName = twoNorms ? "attn_norm_2" : "attn_norm";
        ops.add(new Norm(X, XB, t.vector(attnNormName + ".weight", dim), ln ? t.vector(attnNormName + ".bias", dim) : t.optVector(attnNormName + ".bias", dim), ln, eps));
        ops.add(t.linear(XB, Q, "attn_q", dim, q));
        ops.add(t.linear(XB, K, "attn_k", dim, kv));
        ops.add(t.linear(XB, V, "attn_v", dim, kv));
        Tensor qNorm = t.optVector("attn_q_norm.weight", c.headDim()), kNorm = t.optVector("attn_k_norm.weight", c.headDim());
        if (qNorm != null) ops.add(new HeadNorm(Q, c.heads(), qNorm, eps));
        if (kNorm != null) ops.add(new HeadNorm(K, c.kvHeads(), kNorm, eps));
        boolean sliding = a.slidingLayer(il);
        if (c.ropeDim() > 0) {
            int rope = sliding && swaRope ? 1 : 0;
            ops.add(new Rope(Q, c.heads(), rope));
            ops.add(new Rope(K, c.kvHeads(), rope));
        }
        Tensor sinks = t.optVector("attn_sinks.weight", c.heads());
        ops.add(new Attention(sliding ? a.slidingWindow() : 0, a.attnScale(), a.attnSoftcap(), sinks));
        ops.add(t.linear(ATT, ATT_OUT, "attn_output", q, dim));
        // gpt-oss names its pre-FFN norm post_attention_norm (it has no ffn_norm): that one is not a Gemma post-norm
        boolean gptOss = a.family() == Family.GPT_OSS;
        String ffnNorm = gptOss ? "post_attention_norm" : "ffn_norm";
        Tensor postAttn = gptOss ? null : t.optVector("post_attention_norm.weight", dim);
        if (postAttn != null) ops.add(new Norm(ATT_OUT, ATT_OUT, postAttn, null, false, eps));

        int attentionEnd = -1;
        if (parallel) {
            // both branches read the layer input: the MLP's norm (its own for 40B; 7B reuses the attention's in XB)
            if (twoNorms) ops.add(new Norm(X, XB, t.vector("attn_norm.weight", dim), t.vector("attn_norm.bias", dim), ln, eps));
        } else {
            ops.add(new Add(X, ATT_OUT));
            attentionEnd = ops.size();
            ops.add(new Norm(X, XB, t.vector(ffnNorm + ".weight", dim), ln ? t.vector(ffnNorm + ".bias", dim) : t.optVector(ffnNorm + ".bias", dim), ln, eps));
        }
        checkFfn(c, t, lw);
        ops.add(new Ffn());
        Tensor postFfn = t.optVector("post_ffw_norm.weight", dim);
        if (postFfn != null) ops.add(new Norm(FFN_OUT, FFN_OUT, postFfn, null, false, eps));
        if (parallel) ops.add(new Add(X, ATT_OUT));
        ops.add(new Add(X, FFN_OUT));

return new LayerGraph(ops, attentionEnd);
    }

    /** The FFN's tensors for its kind: experts and router, or a (gated) MLP with optional biases, plus predictors. */
    private static void checkFfn(ModelConfig c, Checker t, LayerWeights lw) {
        int dim = c.dim(), ff = c.ffDim();
        if (lw.has("ffn_gate_inp.weight")) {
            int e = c.params().experts();
            if (e == 0) throw new ModelException("tensor '" + t.prefix + "ffn_gate_inp.weight' needs " + c.architecture() + ".expert_count in the metadata");
            t.matrix("ffn_gate_inp.weight", dim, e);
            t.optVector("ffn_gate_inp.bias", e);
            for (int x = 0; x < e; x++) {
                t.matrix("ffn_gate." + x + ".weight", dim, ff);
                t.matrix("ffn_up." + x + ".weight", dim, ff);
                t.matrix("ffn_down." + x + ".weight", ff, dim);
                t.optVector("ffn_gate." + x + ".bias", ff);
                t.optVector("ffn_up." + x + ".bias", ff);
                t.optVector("ffn_down." + x + ".bias", dim);
                Tensor fc1 = lw.expertPredictorFc1(x), fc2 = lw.expertPredictorFc2(x);
                if (fc1 != null || fc2 != null) {   // per-expert predictors: both or neither
                    t.matrix("fc1." + x + ".weight", dim, fc1 != null && fc1.ne().length == 2 ? fc1.ne()[1] : -1);
                    t.matrix("fc2." + x + ".weight", fc1.ne()[1], ff);
                }
            }
            if (lw.has("ffn_up_shexp.weight")) {
                int sff = lw.get("ffn_up_shexp.weight").rows();
                t.matrix("ffn_gate_shexp.weight", dim, sff);
                t.matrix("ffn_up_shexp.weight", dim, sff);
                t.matrix("ffn_down_shexp.weight", sff, dim);
                if (lw.has("ffn_gate_inp_shexp.weight")) t.matrix("ffn_gate_inp_shexp.weight", dim, 1);
            }
            return;
        }
        Family f = c.params().family();
        boolean plain = f == Family.FALCON || f == Family.OPT;
        if (!plain || lw.has("ffn_gate.weight")) t.matrix("ffn_gate.weight", dim, ff);
        t.matrix("ffn_up.weight", dim, ff);
        t.optVector("ffn_up.bias", ff);
        t.optVector("ffn_gate.bias", ff);
        t.optVector("ffn_down.bias", dim);
        if (lw.has("ffn_down_t.weight")) t.matrix("ffn_down_t.weight", dim, ff);
        if (!lw.has("ffn_down_t.weight") || lw.has("ffn_down.weight")) t.matrix("ffn_down.weight", ff, dim);
        Tensor fc1 = lw.predictorFc1(), fc2 = lw.predictorFc2();
        if (fc1 != null && fc2 != null) {
            t.matrix("fc1.weight", dim, fc1.ne().length == 2 ? fc1.ne()[1] : -1);
            t.matrix("fc2.weight", fc1.ne()[1], ff);
        }
    }

    private static ModelException missing(String name, String shape) {
        return new ModelException("tensor '" + name + "' is missing (expected shape " + shape + ")");
    }

    /** Looks up a layer's tensors, checking shapes; errors name the full tensor name. */
    private record Checker(LayerWeights lw, String prefix) {
        Tensor matrix(String name, long in, long out) {
            Tensor t = lw.get(name);
            if (t == null) throw missing(prefix + name, "[" + in + ", " + out + "]");
            if (t.ne().length != 2 || t.ne()[0] != in || t.ne()[1] != out)
                throw new ModelException("tensor '" + t.name() + "' has shape " + t.shapeString() + ", expected [" + in + ", " + out + "]");
            return t;
        }

        Tensor vector(String name, long n) {
            Tensor t = lw.get(name);
            if (t == null) throw missing(prefix + name, "[" + n + "]");
            return checkVector(t, n);
        }

        Tensor optVector(String name, long n) {
            Tensor t = lw.get(name);
            return t == null ? null : checkVector(t, n);
        }

        private static Tensor checkVector(Tensor t, long n) {
            if (t.ne().length != 1 || t.ne()[0] != n)
                throw new ModelException("tensor '" + t.name() + "' has shape " + t.shapeString() + ", expected [" + n + "]");
            if (t.type() != org.powerinfer4j.engine.tensor.GGMLType.F32)
                throw new ModelException("tensor '" + t.name() + "' must be F32, is " + t.type());
            return t;
        }

        Linear linear(Buf in, Buf out, String base, int inDim, int outDim) {
            return new Linear(in, out, matrix(base + ".weight", inDim, outDim), optVector(base + ".bias", outDim));
        }
    }
}
