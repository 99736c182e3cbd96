package org.powerinfer4j.engine.model;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFFormatException;
import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedMatrix;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * All weights of a model as slices of the mapped file (nothing is copied): the global tensors and, per layer, a
 * {@link LayerWeights} map of named tensors with fused tensors split into views. Which tensors a layer needs, and
 * their shapes, the architecture's {@link GraphBuilder} checks when the graph is built at load; types are checked
 * here, so that the forward pass can trust both.
 *
 * @param outputNormBias {@code output_norm.bias} (LayerNorm families), or null
 * @param positionEmbd   {@code position_embd.weight}, learned absolute positions (OPT), or null
 * @param ropeFreqs      per-dimension RoPE frequency divisors ({@code rope_freqs.weight}: Llama 3.1; Phi-3's
 *                       {@code rope_factors_long/short}), or null
 */
public record ModelWeights(Tensor tokenEmbd, Tensor outputNorm, Tensor output, boolean tiedOutput, LayerWeights[] layers,
                           Tensor outputNormBias, Tensor positionEmbd, Tensor ropeFreqs) {

    public ModelWeights(Tensor tokenEmbd, Tensor outputNorm, Tensor output, boolean tiedOutput, LayerWeights[] layers) {
        this(tokenEmbd, outputNorm, output, tiedOutput, layers, null, null, null);
    }

    /** Expert tensors: 3-D {@code ffn_X_exps} ({@code [in, out, experts]}), split per expert into {@code ffn_X.E}. */
    private static final String[] EXPERT_PARTS = {"gate", "up", "down"};

    public static ModelWeights load(GGUFFile f, ModelConfig c) {
        try {
            Tensor emb = matrix(f, "token_embd.weight", c.dim(), c.vocabSize());
            Tensor outNorm = vector(f, "output_norm.weight", c.dim());
            Tensor outNormBias = f.hasTensor("output_norm.bias") ? vector(f, "output_norm.bias", c.dim()) : null;
            Tensor out = f.tensorOrNull("output.weight");
            boolean tied = out == null;
            if (tied) out = emb;
            else checkShape(out, c.dim(), c.vocabSize());
            Tensor pos = f.tensorOrNull("position_embd.weight");
            if (pos != null && (pos.ne().length != 2 || pos.ne()[0] != c.dim()))
                throw new ModelException("tensor 'position_embd.weight' has shape " + pos.shapeString() + ", expected [" + c.dim() + ", positions]");
            Tensor freqs = ropeFactors(f, c);
            List<Map<String, Tensor>> byLayer = tensorsByLayer(f);
            // a corrupt block_count must not make the loader walk (and allocate) millions of empty layers
            if (c.layers() > byLayer.size())
                throw new ModelException(f.path().getFileName() + ": metadata block_count is " + c.layers() + ", but the file has tensors for "
                        + byLayer.size() + (byLayer.isEmpty() ? " layers" : " layers (blk.0 .. blk." + (byLayer.size() - 1) + ")"));
            LayerWeights[] layers = new LayerWeights[c.layers()];
            for (int i = 0; i < c.layers(); i++) {
                Map<String, Tensor> m = byLayer.get(i);
                split(m, c, "blk." + i + ".");
                layers[i] = new LayerWeights(m);
            }
            ModelWeights w = new ModelWeights(emb, outNorm, out, tied, layers, outNormBias, pos, freqs);
            w.checkTypes();
            return w;
        } catch (GGUFFormatException e) {
            throw new ModelException(e.getMessage());
        }
    }

    /**
     * The {@code blk.N.*} tensors by layer, names without the prefix, in file order; as many entries as the highest
     * layer index present plus one (a layer without tensors is an empty map). One pass over the names.
     */
    private static List<Map<String, Tensor>> tensorsByLayer(GGUFFile f) throws GGUFFormatException {
        List<Map<String, Tensor>> layers = new ArrayList<>();
        List<String> names = f.tensorNames();
        for (String n : names) {
            if (!n.startsWith("blk.")) continue;
            int dot = n.indexOf('.', 4);
            if (dot < 0) continue;
            int layer;
            try {
                layer = Integer.parseInt(n, 4, dot, 10);
            } catch (NumberFormatException e) {
                continue;   // not a layer tensor (nothing reads it)
            }
            // "blk.01." is not layer 1's; an index past the tensor count belongs to no layer the model can have
            if (layer < 0 || layer >= names.size() || dot - 4 != Integer.toString(layer).length()) continue;
            while (layers.size() <= layer) layers.add(new LinkedHashMap<>());
            layers.get(layer).put(n.substring(dot + 1), f.tensor(n));
        }
        return layers;
    }

    /** Llama 3's {@code rope_freqs}, or Phi-3's long/short factors (long when the context exceeds the original). */
    private static Tensor ropeFactors(GGUFFile f, ModelConfig c) throws GGUFFormatException {
        Tensor t = f.tensorOrNull("rope_freqs.weight");
        if (t == null) {
            boolean longCtx = c.trainedContext() > c.params().scaling().originalContext() && c.params().scaling().originalContext() > 0;
            t = f.tensorOrNull(longCtx ? "rope_factors_long.weight" : "rope_factors_short.weight");
        }
        if (t == null) return null;
        return vector(f, t.name(), c.ropeDim() / 2);
    }

    /** Replaces fused tensors by the views the graph uses (see {@link LayerWeights}). */
    private static void split(Map<String, Tensor> m, ModelConfig c, String prefix) {
        int q = c.qDim(), kv = c.kvDim();
        for (String kind : new String[]{"weight", "bias"}) {
            Tensor qkv = m.remove("attn_qkv." + kind);
            if (qkv == null) continue;
            if (qkv.rows() != q + 2 * kv || (kind.equals("bias") && qkv.ne().length != 1))
                throw new ModelException("tensor '" + prefix + "attn_qkv." + kind + "' has shape " + qkv.shapeString() + ", expected "
                        + (kind.equals("bias") ? "[" + (q + 2 * kv) + "]" : "[" + c.dim() + ", " + (q + 2 * kv) + "]"));
            m.put("attn_q." + kind, slice(qkv, prefix + "attn_q." + kind, 0, q));
            m.put("attn_k." + kind, slice(qkv, prefix + "attn_k." + kind, q, kv));
            m.put("attn_v." + kind, slice(qkv, prefix + "attn_v." + kind, q + kv, kv));
        }
        Tensor up = m.get("ffn_up.weight");
        if (up != null && !m.containsKey("ffn_gate.weight") && up.ne().length == 2 && up.rows() == 2 * c.ffDim() && !c.params().moe()) {
            // Phi-3's fused gate–up: the first n_ff rows are the gate, the rest the up projection
            m.put("ffn_gate.weight", slice(up, prefix + "ffn_gate.weight", 0, c.ffDim()));
            m.put("ffn_up.weight", slice(up, prefix + "ffn_up.weight", c.ffDim(), c.ffDim()));
        }
        for (String part : EXPERT_PARTS) {
            for (String kind : new String[]{"weight", "bias"}) {
                Tensor e = m.remove("ffn_" + part + "_exps." + kind);
                if (e == null) continue;
                int experts = c.params().experts();
                long[] ne = e.ne();
                boolean matrix = kind.equals("weight");
                if (experts == 0 || ne.length != (matrix ? 3 : 2) || ne[ne.length - 1] != experts)
                    throw new ModelException("tensor '" + prefix + "ffn_" + part + "_exps." + kind + "' has shape " + e.shapeString()
                            + ", expected " + experts + " experts in its last dimension");
                for (int x = 0; x < experts; x++) {
                    Tensor v = matrix ? slice3(e, prefix + "ffn_" + part + "." + x + ".weight", x)
                            : new Tensor(prefix + "ffn_" + part + "." + x + ".bias", e.type(), new long[]{ne[0]},
                                    e.data().asSlice(e.type().byteSize(ne[0]) * x, e.type().byteSize(ne[0])));
                    m.put("ffn_" + part + "." + x + "." + kind, v);
                }
            }
        }
        Tensor fc1 = m.get("fc1.weight"), fc2 = m.get("fc2.weight");
        if (c.params().moe() && m.containsKey("ffn_up.0.weight") && fc1 != null && fc2 != null) {
            // one predictor over all experts' neurons (fc2 {H, n_expert·n_ff}): each expert gets the shared fc1 and its
            // block of fc2's rows as its own predictor fc1.E / fc2.E, so the sparse experts run it as they run theirs
            int experts = c.params().experts(), ff = m.get("ffn_up.0.weight").rows();
            if (fc2.ne().length != 2 || fc2.rows() != (long) experts * ff || fc1.ne().length != 2 || fc2.rowLength() != fc1.rows())
                throw new ModelException("layer-wide predictor '" + prefix + "fc2.weight' has shape " + fc2.shapeString() + ", expected ["
                        + fc1.rows() + ", " + (long) experts * ff + "] for fc1 " + fc1.shapeString() + " and " + experts + " experts of " + ff + " neurons");
            m.remove("fc1.weight");
            m.remove("fc2.weight");
            for (int x = 0; x < experts; x++) {
                m.putIfAbsent("fc1." + x + ".weight", fc1);
                m.putIfAbsent("fc2." + x + ".weight", slice(fc2, prefix + "fc2." + x + ".weight", x * ff, ff));
            }
        }
    }

    /** Rows {@code [from, from + count)} of a matrix (or elements of a vector) as a tensor of its own. */
    static Tensor slice(Tensor t, String name, int from, int count) {
        if (t.ne().length == 1) {
            long es = t.type().byteSize(t.type().blockSize);
            return new Tensor(name, t.type(), new long[]{count}, t.data().asSlice(from / t.type().blockSize * es, t.type().byteSize(count)));
        }
        long rb = t.rowBytes();
        return new Tensor(name, t.type(), new long[]{t.ne()[0], count}, t.data().asSlice(rb * from, rb * count));
    }

    /** Matrix {@code e} of a 3-D tensor {@code [in, out, n]}. */
    private static Tensor slice3(Tensor t, String name, int e) {
        int out = Math.toIntExact(t.ne()[1]);
        return slice(new Tensor(t.name(), t.type(), new long[]{t.ne()[0], (long) out * t.ne()[2]}, t.data()), name, e * out, out);
    }

    private void checkTypes() {
        for (Tensor t : allTensors())
            if (!t.type().computeSupported())
                throw new ModelException("tensor '" + t.name() + "' has type " + t.type()
                        + ", which this engine cannot compute (supported: " + String.join(", ", supportedTypes()) + ")");
    }

    private static List<String> supportedTypes() {
        List<String> s = new ArrayList<>();
        for (GGMLType t : GGMLType.values()) if (t.computeSupported()) s.add(t.name());
        return s;
    }

    /** Every distinct tensor the model computes with. */
    public List<Tensor> allTensors() {
        List<Tensor> all = new ArrayList<>(List.of(tokenEmbd, outputNorm, output));
        for (Tensor t : new Tensor[]{outputNormBias, positionEmbd, ropeFreqs}) if (t != null) all.add(t);
        for (LayerWeights l : layers) all.addAll(l.tensors().values());
        return all;
    }

    private static Tensor matrix(GGUFFile f, String name, long in, long out) throws GGUFFormatException {
        Tensor t = f.tensor(name);
        checkShape(t, in, out);
        return t;
    }

    private static Tensor vector(GGUFFile f, String name, long n) throws GGUFFormatException {
        Tensor t = f.tensor(name);
        if (t.ne().length != 1 || t.ne()[0] != n) throw new ModelException("tensor '" + name + "' has shape " + t.shapeString() + ", expected [" + n + "]");
        if (t.type() != GGMLType.F32) throw new ModelException("norm tensor '" + name + "' must be F32, is " + t.type());
        return t;
    }

    static void checkShape(Tensor t, long in, long out) {
        if (t.ne().length != 2 || t.ne()[0] != in || t.ne()[1] != out)
            throw new ModelException("tensor '" + t.name() + "' has shape " + t.shapeString() + ", expected [" + in + ", " + out + "]");
    }

    /** Which FFN matrices the dense products read, and so get a repacked copy. */
    public enum FfnRepack {
        /** None: the FFN runs on predicted rows only (the mapped file's rows). */
        NONE,
        /** The matrix whose ReLU decides which neurons fire (gate, else up; experts' too): computed densely by {@code --sparse exact}. */
        SELECTOR,
        /** All of them: the FFN runs dense. */
        ALL
    }

    /** Whether the tensor {@code name} of layer {@code l} is a matrix the dense products read (attention, and the FFN per {@code ffn}). */
    private static boolean denseProduct(LayerWeights l, String name, FfnRepack ffn) {
        if (name.startsWith("attn_") && name.endsWith(".weight") && !name.contains("norm") && !name.equals("attn_sinks.weight")) return true;
        boolean ffnMatrix = name.startsWith("ffn_") && name.endsWith(".weight") && !name.contains("norm") && !name.startsWith("ffn_down_t")
                && !name.startsWith("ffn_gate_inp");
        return switch (ffn) {
            case NONE -> false;
            case ALL -> ffnMatrix;
            case SELECTOR -> ffnMatrix && (name.startsWith("ffn_gate.") || (name.startsWith("ffn_up.") && l.ffnGate() == null && l.expert("gate", 0) == null));
        };
    }

    /**
     * These weights with a {@link RepackedMatrix} copy (allocated in {@code arena}) attached to every Q4_0, Q4_K, Q5_K, Q6_K and Q8_0 matrix the
     * dense products read: attention projections, the output head, and the FFN matrices {@code ffn} names. Sparse FFN
     * paths read single rows of the mapped file and keep the original layout. The copy runs on {@code pool}'s threads.
     */
    public ModelWeights repackedForCpu(Arena arena, WorkerPool pool, FfnRepack ffn, java.util.function.LongConsumer bytesDone) {
        java.util.IdentityHashMap<Tensor, Tensor> copies = new java.util.IdentityHashMap<>();
        long done = 0;
        for (Tensor x : toRepack(ffn)) {
            RepackedMatrix r = RepackedMatrix.allocate(arena, x.type(), x.rowLength(), x.rows());
            pool.forRange(x.rows(), 64, (from, to, thread) -> r.repackRows(x, from, to));
            copies.put(x, x.withRepacked(r));
            bytesDone.accept(done += x.data().byteSize());
        }
        java.util.function.UnaryOperator<Tensor> rp = t -> t == null ? null : copies.getOrDefault(t, t);
        LayerWeights[] ls = new LayerWeights[layers.length];
        for (int i = 0; i < layers.length; i++) {
            LayerWeights l = layers[i];
            ls[i] = l.map((name, t) -> denseProduct(l, name, ffn) ? rp.apply(t) : t);
        }
        // a tied output head keeps token_embd's mapped rows for the embedding lookup and gets its own repacked copy
        return new ModelWeights(tokenEmbd, outputNorm, rp.apply(output), tiedOutput, ls, outputNormBias, positionEmbd, ropeFreqs);
    }

    /** Bytes of the matrices {@link #repackedForCpu} copies (its progress runs up to this). */
    public long repackBytes(FfnRepack ffn) {
        return toRepack(ffn).stream().mapToLong(t -> t.data().byteSize()).sum();
    }

    /** The matrices {@link #repackedForCpu} copies, each once (a tensor shared by two names is one copy). */
    private java.util.List<Tensor> toRepack(FfnRepack ffn) {
        java.util.Set<Tensor> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        java.util.List<Tensor> list = new java.util.ArrayList<>();
        java.util.function.Consumer<Tensor> want = t -> {
            if (t != null && RepackedMatrix.repackable(t) && MatrixOps.readsRepacked(t.type())
                    && t.repacked() == null && seen.add(t)) list.add(t);
        };
        for (LayerWeights l : layers) l.tensors().forEach((name, t) -> { if (denseProduct(l, name, ffn)) want.accept(t); });
        want.accept(output);
        return list;
    }

    /** Bytes of weights read per generated token by a dense model (every matrix once; the embedding row is negligible). */
    public long bytesPerToken() {
        return bytesPerToken(1.0);
    }

    /**
     * Bytes of weights read per generated token when each MoE layer reads {@code expertFraction} of its experts
     * (experts used ÷ experts); predictors are not counted.
     */
    public long bytesPerToken(double expertFraction) {
        long b = output.data().byteSize() + outputNorm.data().byteSize();
        double experts = 0;
        for (LayerWeights l : layers)
            for (var e : l.tensors().entrySet()) {
                String n = e.getKey();
                if (n.startsWith("fc1.") || n.startsWith("fc2.")) continue;
                if (EXPERT_NAME.matcher(n).matches()) experts += e.getValue().data().byteSize();
                else b += e.getValue().data().byteSize();
            }
        return b + Math.round(experts * expertFraction);
    }

    private static final java.util.regex.Pattern EXPERT_NAME = java.util.regex.Pattern.compile("ffn_(gate|up|down)\\.\\d+\\.(weight|bias)");
}
