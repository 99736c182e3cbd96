package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.gguf.GGUFFile;

/**
 * Hyper-parameters of a decoder-only transformer, read from GGUF metadata ({@code <arch>.*} keys).
 *
 * @param headDim   per-head size of Q and K ({@code attention.key_length}, default dim / heads)
 * @param ropeDim   dimensions rotated per head ({@code rope.dimension_count}, default headDim)
 */
public record ModelConfig(String architecture, int dim, int layers, int heads, int kvHeads, int headDim, int ffDim,
                          int vocabSize, int trainedContext, float rmsEps, float ropeFreqBase, int ropeDim,
                          RopeType ropeType, FfnActivation activation) {

    /** Architectures whose layer graph this engine implements; value = rope pairing. */
    static RopeType ropeTypeFor(String arch) {
        return switch (arch) {
            case "llama", "mistral", "bamboo" -> RopeType.NORMAL;
            default -> null;
        };
    }

    public static ModelConfig fromGGUF(GGUFFile f) {
        String arch = f.getString("general.architecture", null);
        if (arch == null) throw new ModelException(f.path().getFileName() + ": no general.architecture in metadata");
        RopeType rope = ropeTypeFor(arch);
        if (rope == null)
            throw new ModelException(f.path().getFileName() + ": unsupported architecture '" + arch + "' (supported: llama, mistral, bamboo)");
        int dim = required(f, arch + ".embedding_length");
        int layers = required(f, arch + ".block_count");
        int heads = required(f, arch + ".attention.head_count");
        int kvHeads = f.getInt(arch + ".attention.head_count_kv", heads);
        int ff = required(f, arch + ".feed_forward_length");
        if (dim % heads != 0 && !f.has(arch + ".attention.key_length"))
            throw new ModelException("embedding_length " + dim + " is not divisible by head_count " + heads);
        int headDim = f.getInt(arch + ".attention.key_length", dim / Math.max(1, heads));
        if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
            throw new ModelException("head_count " + heads + " must be a positive multiple of head_count_kv " + kvHeads);
        int ropeDim = f.getInt(arch + ".rope.dimension_count", headDim);
        if (ropeDim > headDim || ropeDim % 2 != 0) throw new ModelException("rope.dimension_count " + ropeDim + " is invalid for head size " + headDim);
        String[] tokens = f.getArray("tokenizer.ggml.tokens", String[].class);
        int vocab = f.hasTensor("token_embd.weight") ? (int) f.tensorInfo("token_embd.weight").ne()[1] : tokens != null ? tokens.length : 0;
        float eps = f.getFloat(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
        float base = f.getFloat(arch + ".rope.freq_base", 10000f);
        int ctx = f.getInt(arch + ".context_length", 2048);
        FfnActivation act = arch.equals("bamboo") ? FfnActivation.DRELU : f.isPowerInfer() ? FfnActivation.REGLU : FfnActivation.SWIGLU;
        return new ModelConfig(arch, dim, layers, heads, kvHeads, headDim, ff, vocab, ctx, eps, base, ropeDim, rope, act);
    }

    private static int required(GGUFFile f, String key) {
        long v = f.getLong(key, -1);
        if (v <= 0 || v > (1 << 24)) throw new ModelException(f.path().getFileName() + ": metadata " + key + (v == -1 ? " is missing" : " = " + v + " is out of range"));
        return (int) v;
    }

    public int kvDim() {
        return kvHeads * headDim;
    }

    public int qDim() {
        return heads * headDim;
    }

    public ModelConfig withActivation(FfnActivation a) {
        return new ModelConfig(architecture, dim, layers, heads, kvHeads, headDim, ffDim, vocabSize, trainedContext, rmsEps,
                ropeFreqBase, ropeDim, ropeType, a);
    }
}
