package org.powerinfer4j.engine.model;

import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFFormatException;
import java.lang.foreign.Arena;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedQ4_0;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * All weights of a llama-family model as slices of the mapped file (nothing is copied). Shapes and types are
 * validated here so that the forward pass can trust them.
 */
public record ModelWeights(Tensor tokenEmbd, Tensor outputNorm, Tensor output, boolean tiedOutput, LayerWeights[] layers) {

    public static ModelWeights load(GGUFFile f, ModelConfig c) {
        try {
            Tensor emb = matrix(f, "token_embd.weight", c.dim(), c.vocabSize());
            Tensor outNorm = vector(f, "output_norm.weight", c.dim());
            Tensor out = f.tensorOrNull("output.weight");
            boolean tied = out == null;
            if (tied) out = emb;
            else checkShape(out, c.dim(), c.vocabSize());
            LayerWeights[] layers = new LayerWeights[c.layers()];
            for (int i = 0; i < c.layers(); i++) {
                String p = "blk." + i + ".";
                Tensor down = f.tensorOrNull(p + "ffn_down.weight");
                Tensor downT = f.tensorOrNull(p + "ffn_down_t.weight");
                if (down == null && downT == null) throw new ModelException("tensor '" + p + "ffn_down.weight' is missing");
                if (down != null) checkShape(down, c.ffDim(), c.dim());
                if (downT != null) checkShape(downT, c.dim(), c.ffDim());
                Tensor fc1 = f.tensorOrNull(p + "fc1.weight"), fc2 = f.tensorOrNull(p + "fc2.weight");
                if (fc1 != null && fc2 != null) {
                    checkShape(fc1, c.dim(), fc1.ne()[1]);
                    checkShape(fc2, fc1.ne()[1], c.ffDim());
                }
                layers[i] = new LayerWeights(
                        vector(f, p + "attn_norm.weight", c.dim()),
                        matrix(f, p + "attn_q.weight", c.dim(), c.qDim()),
                        matrix(f, p + "attn_k.weight", c.dim(), c.kvDim()),
                        matrix(f, p + "attn_v.weight", c.dim(), c.kvDim()),
                        matrix(f, p + "attn_output.weight", c.qDim(), c.dim()),
                        vector(f, p + "ffn_norm.weight", c.dim()),
                        c.activation() == FfnActivation.SWIGLU || f.hasTensor(p + "ffn_gate.weight")
                                ? matrix(f, p + "ffn_gate.weight", c.dim(), c.ffDim()) : null,
                        matrix(f, p + "ffn_up.weight", c.dim(), c.ffDim()),
                        down, downT, fc1, fc2);
            }
            ModelWeights w = new ModelWeights(emb, outNorm, out, tied, layers);
            w.checkTypes();
            return w;
        } catch (GGUFFormatException e) {
            throw new ModelException(e.getMessage());
        }
    }

    private void checkTypes() {
        List<Tensor> all = new ArrayList<>(List.of(tokenEmbd, outputNorm, output));
        for (LayerWeights l : layers)
            for (Tensor t : new Tensor[]{l.attnNorm(), l.wq(), l.wk(), l.wv(), l.wo(), l.ffnNorm(), l.ffnGate(), l.ffnUp(),
                    l.ffnDown(), l.ffnDownT(), l.predictorFc1(), l.predictorFc2()})
                if (t != null) all.add(t);
        for (Tensor t : all)
            if (!t.type().computeSupported())
                throw new ModelException("tensor '" + t.name() + "' has type " + t.type()
                        + ", which this engine cannot compute (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)");
    }

    private static Tensor matrix(GGUFFile f, String name, long in, long out) throws GGUFFormatException {
        Tensor t = f.tensor(name);
        checkShape(t, in, out);
        return t;
    }

    private static Tensor vector(GGUFFile f, String name, long n) throws GGUFFormatException {
        Tensor t = f.tensor(name);
        if (t.ne().length != 1 || t.ne()[0] != n) throw new ModelException("tensor '" + name + "' has shape " + t.shapeString() + ", expected [" + n + "]");
        if (t.type() != org.powerinfer4j.engine.tensor.GGMLType.F32) throw new ModelException("norm tensor '" + name + "' must be F32, is " + t.type());
        return t;
    }

    private static void checkShape(Tensor t, long in, long out) {
        if (t.ne().length != 2 || t.ne()[0] != in || t.ne()[1] != out)
            throw new ModelException("tensor '" + t.name() + "' has shape " + t.shapeString() + ", expected [" + in + ", " + out + "]");
    }

    /**
     * These weights with a {@link RepackedQ4_0} copy (allocated in {@code arena}) attached to every Q4_0 matrix the
     * dense products read: attention projections, the output head, and — when {@code ffnToo} (the FFN runs dense)
     * — the FFN matrices. Sparse FFN paths read single rows of the mapped file and keep the original layout.
     * The copy runs on {@code pool}'s threads.
     */
    public ModelWeights repackedForCpu(Arena arena, WorkerPool pool, boolean ffnToo) {
        java.util.IdentityHashMap<Tensor, Tensor> done = new java.util.IdentityHashMap<>();
        java.util.function.UnaryOperator<Tensor> rp = t -> {
            if (t == null || t.type() != GGMLType.Q4_0 || t.repacked() != null) return t;
            return done.computeIfAbsent(t, x -> {
                RepackedQ4_0 r = RepackedQ4_0.allocate(arena, x.rowLength(), x.rows());
                pool.forRange(x.rows(), 64, (from, to, thread) -> r.repackRows(x, from, to));
                return x.withRepacked(r);
            });
        };
        LayerWeights[] ls = new LayerWeights[layers.length];
        for (int i = 0; i < layers.length; i++) {
            LayerWeights l = layers[i];
            ls[i] = new LayerWeights(l.attnNorm(), rp.apply(l.wq()), rp.apply(l.wk()), rp.apply(l.wv()), rp.apply(l.wo()), l.ffnNorm(),
                    ffnToo ? rp.apply(l.ffnGate()) : l.ffnGate(), ffnToo ? rp.apply(l.ffnUp()) : l.ffnUp(),
                    ffnToo ? rp.apply(l.ffnDown()) : l.ffnDown(), l.ffnDownT(), l.predictorFc1(), l.predictorFc2());
        }
        // a tied output head keeps token_embd's mapped rows for the embedding lookup and gets its own repacked copy
        return new ModelWeights(tokenEmbd, outputNorm, rp.apply(output), tiedOutput, ls);
    }

    /** Bytes of weights read per generated token (every matrix once; the embedding row is negligible). */
    public long bytesPerToken() {
        long b = output.data().byteSize() + outputNorm.data().byteSize();
        for (LayerWeights l : layers)
            for (Tensor t : new Tensor[]{l.attnNorm(), l.wq(), l.wk(), l.wv(), l.wo(), l.ffnNorm(), l.ffnGate(), l.ffnUp(), l.ffnDown(), l.ffnDownT()})
                if (t != null) b += t.data().byteSize();
        return b;
    }
}
