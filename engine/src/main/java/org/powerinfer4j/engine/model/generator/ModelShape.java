package org.powerinfer4j.engine.model.generator;

import java.util.List;
import java.util.Locale;

/**
 * Hyperparameters of a llama-architecture model. {@code tiedEmbeddings} means no {@code output.weight}: the
 * classifier reuses {@code token_embd.weight}, as llama.cpp does when the tensor is absent.
 */
public record ModelShape(int dim, int layers, int ff, int heads, int kvHeads, boolean tiedEmbeddings,
                         int contextLength, float ropeFreqBase, float rmsEps) {

    public static final List<String> PRESETS = List.of("110m", "tinyllama-1.1b", "llama-7b");

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
     * (GQA 32/4, separate output) and {@code llama-7b} (Llama-2-7B's shape).
     */
    public static ModelShape preset(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "110m" -> new ModelShape(768, 12, 2048, 12, 12, true, 1024, 10000f, 1e-5f);
            case "tinyllama-1.1b" -> new ModelShape(2048, 22, 5632, 32, 4, false, 2048, 10000f, 1e-5f);
            case "llama-7b" -> new ModelShape(4096, 32, 11008, 32, 32, false, 4096, 10000f, 1e-5f);
            default -> throw new IllegalArgumentException("unknown preset '" + name + "' (known: " + String.join(", ", PRESETS) + ")");
        };
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

    /** Parameter count for a vocabulary of {@code vocab} tokens. */
    public long parameters(int vocab) {
        long perLayer = 2L * dim + (long) dim * dim * 2 + 2L * dim * kvDim() + 3L * dim * ff;
        return (long) vocab * dim * (tiedEmbeddings ? 1 : 2) + layers * perLayer + dim;
    }

    private static String describe(int dim, int layers, int ff, int heads, int kvHeads) {
        return "dim " + dim + ", layers " + layers + ", ff " + ff + ", heads " + heads + ", kv-heads " + kvHeads;
    }

    @Override
    public String toString() {
        return describe(dim, layers, ff, heads, kvHeads) + (tiedEmbeddings ? ", tied embeddings" : "") + ", ctx " + contextLength;
    }
}
