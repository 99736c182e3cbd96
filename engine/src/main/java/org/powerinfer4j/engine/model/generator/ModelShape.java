package org.powerinfer4j.engine.model.generator;

import java.util.List;
import java.util.Locale;

/**
 * Hyperparameters of a generated model (any {@link ModelArch}). {@code tiedEmbeddings} means no {@code output.weight}:
 * the classifier reuses {@code token_embd.weight}, as llama.cpp does when the tensor is absent. {@code rmsEps} is the
 * norm epsilon (RMSNorm's, or LayerNorm's for Falcon and OPT); {@code ropeFreqBase} is unused by OPT.
 */
public record ModelShape(int dim, int layers, int ff, int heads, int kvHeads, boolean tiedEmbeddings,
                         int contextLength, float ropeFreqBase, float rmsEps) {

    public static final List<String> PRESETS = List.of("110m", "tinyllama-1.1b", "llama-7b", "mixtral-8x7b", "falcon-7b", "falcon-40b", "opt-6.7b", "opt-30b");

    public ModelShape {
        if (dim <= 0 || layers <= 0 || ff <= 0 || heads <= 0 || kvHeads <= 0 || contextLength <= 0)
            throw new IllegalArgumentException("all sizes must be positive: " + describe(dim, layers, ff, heads, kvHeads));
        if (dim % heads != 0) throw new IllegalArgumentException("dim " + dim + " is not a multiple of heads " + heads);
        if (heads % kvHeads != 0) throw new IllegalArgumentException("heads " + heads + " is not a multiple of kv-heads " + kvHeads);
        if ((dim / heads) % 2 != 0) throw new IllegalArgumentException("head dimension " + dim / heads + " must be even for RoPE");
    }

    /** A llama shape with context 2048, RoPE base 10000, RMS epsilon 1e-5. */
    public static ModelShape of(int dim, int layers, int ff, int heads, int kvHeads, boolean tied) {
        return new ModelShape(dim, layers, ff, heads, kvHeads, tied, 2048, 10000f, 1e-5f);
    }

    /**
     * The benchmark presets: {@code 110m} (stories110M's shape, tied embeddings), {@code tinyllama-1.1b}
     * (GQA 32/4, separate output), {@code llama-7b} (Llama-2-7B's shape), {@code falcon-7b} (multi-query: 71 heads,
     * one KV head), {@code falcon-40b} (ReluFalcon-40B's widths: 8192, 128/8 heads, n_ff 32768, written in the 7B block
     * layout: one LayerNorm feeds attention and the MLP), {@code opt-6.7b} (tied output, as OPT), {@code opt-30b} (7168,
     * 56 heads, n_ff 28672) and {@code mixtral-8x7b} (Mixtral's layer shape: GQA 32/8,
     * n_ff 14336 per expert; the experts themselves come from the generator's {@code experts}, the CLI's 8 by default). {@link #presetArch} gives each one's architecture.
     */
    public static ModelShape preset(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "110m" -> new ModelShape(768, 12, 2048, 12, 12, true, 1024, 10000f, 1e-5f);
            case "tinyllama-1.1b" -> new ModelShape(2048, 22, 5632, 32, 4, false, 2048, 10000f, 1e-5f);
            case "llama-7b" -> new ModelShape(4096, 32, 11008, 32, 32, false, 4096, 10000f, 1e-5f);
            case "mixtral-8x7b" -> new ModelShape(4096, 32, 14336, 32, 8, false, 4096, 1e6f, 1e-5f);
            case "falcon-7b" -> new ModelShape(4544, 32, 18176, 71, 1, false, 2048, 10000f, 1e-5f);
            case "falcon-40b" -> new ModelShape(8192, 60, 32768, 128, 8, false, 2048, 10000f, 1e-5f);
            case "opt-30b" -> new ModelShape(7168, 48, 28672, 56, 56, true, 2048, 10000f, 1e-5f);
            case "opt-6.7b" -> new ModelShape(4096, 32, 16384, 32, 32, true, 2048, 10000f, 1e-5f);
            default -> throw new IllegalArgumentException("unknown preset '" + name + "' (known: " + String.join(", ", PRESETS) + ")");
        };
    }

    /** The architecture a preset belongs to. */
    public static ModelArch presetArch(String name) {
        preset(name);
        String n = name.toLowerCase(Locale.ROOT);
        return n.startsWith("falcon-") ? ModelArch.FALCON : n.startsWith("opt-") ? ModelArch.OPT : ModelArch.LLAMA;
    }

    public int headDim() {
        return dim / heads;
    }

    /** Width of the K and V projections. */
    public int kvDim() {
        return headDim() * kvHeads;
    }

    public ModelShape withTiedEmbeddings(boolean tied) {
        return new ModelShape(dim, layers, ff, heads, kvHeads, tied, contextLength, ropeFreqBase, rmsEps);
    }

    public ModelShape withContextLength(int ctx) {
        return new ModelShape(dim, layers, ff, heads, kvHeads, tiedEmbeddings, ctx, ropeFreqBase, rmsEps);
    }

    /** Parameter count of a llama model for a vocabulary of {@code vocab} tokens. */
    public long parameters(int vocab) {
        return parameters(vocab, ModelArch.LLAMA);
    }

    /**
     * Parameter count of {@code arch} for a vocabulary of {@code vocab} tokens: norms (with LayerNorm biases),
     * matrices, linear biases (OPT) and learned positions (OPT: context + 2 rows).
     */
    public long parameters(int vocab, ModelArch arch) {
        long d = dim, attn = d * d * 2 + 2L * d * kvDim();
        long perLayer = switch (arch) {
            case LLAMA -> 2 * d + attn + 3L * d * ff;
            case FALCON -> 2 * d + attn + 2L * d * ff;
            case OPT -> 4 * d + attn + 2 * d + 2L * kvDim() + 2L * d * ff + ff + d;
        };
        long extra = switch (arch) {
            case LLAMA -> d;
            case FALCON -> 2 * d;
            case OPT -> 2 * d + (contextLength + 2L) * d;
        };
        return (long) vocab * dim * (tiedEmbeddings ? 1 : 2) + layers * perLayer + extra;
    }

    private static String describe(int dim, int layers, int ff, int heads, int kvHeads) {
        return "dim " + dim + ", layers " + layers + ", ff " + ff + ", heads " + heads + ", kv-heads " + kvHeads;
    }

    @Override
    public String toString() {
        return describe(dim, layers, ff, heads, kvHeads) + (tiedEmbeddings ? ", tied embeddings" : "") + ", ctx " + contextLength;
    }
}
