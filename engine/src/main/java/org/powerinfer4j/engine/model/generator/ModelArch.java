package org.powerinfer4j.engine.model.generator;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.powerinfer4j.engine.model.FfnActivation;

/**
 * The architectures {@link RandomModelGenerator} writes, each with the tensor names, shapes and metadata keys the
 * engine's loader ({@code Architectures}, {@code GraphBuilder}) reads:
 * <ul>
 *   <li>{@link #LLAMA}: RMSNorm, separate Q/K/V, RoPE, SwiGLU (or ReGLU/dReLU under {@code --sparse-relu})</li>
 *   <li>{@link #FALCON}: llama.cpp's Falcon layout — fused {@code attn_qkv} (Q rows, then K, then V), attention and
 *       MLP in parallel from one LayerNorm with bias ({@code attn_norm}), non-gated GELU MLP ({@code ffn_up},
 *       {@code ffn_down}), no linear biases; ReLU MLP under {@code --sparse-relu} (as ReluFalcon)</li>
 *   <li>{@link #OPT}: PowerInfer's OPT layout — learned positions ({@code position_embd}, offset 2), pre-LayerNorm with
 *       biases, Q/K/V/output and MLP with biases, non-gated ReLU MLP, no RoPE</li>
 * </ul>
 */
public enum ModelArch {
    LLAMA, FALCON, OPT;

    public static final List<String> NAMES = Arrays.stream(values()).map(ModelArch::ggufName).toList();

    /** {@code llama}, {@code falcon} or {@code opt}; one error line naming the known ones otherwise. */
    public static ModelArch parse(String s) {
        for (ModelArch a : values()) if (a.ggufName().equals(s.toLowerCase(Locale.ROOT))) return a;
        throw new IllegalArgumentException("unknown architecture '" + s + "' (known: " + String.join(", ", NAMES) + ")");
    }

    /** {@code general.architecture} of the dense file (a dReLU llama is written as {@code bamboo}). */
    public String ggufName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** LayerNorm with bias instead of RMSNorm. */
    public boolean layerNorm() {
        return this != LLAMA;
    }

    /** A gated FFN (gate and up projections). */
    public boolean gated() {
        return this == LLAMA;
    }

    /** Rejects a planted activation this architecture's FFN cannot have (dReLU needs a gate). */
    public void checkSparseActivation(FfnActivation a) {
        if (!gated() && a != FfnActivation.REGLU)
            throw new IllegalArgumentException(ggufName() + " has a non-gated ReLU FFN: --activation " + a.name().toLowerCase(Locale.ROOT)
                    + " needs --arch llama");
    }

    /** What a planted ReLU FFN of this architecture is called in file names. */
    public String sparseLabel(FfnActivation a) {
        return gated() ? a.name().toLowerCase(Locale.ROOT) : "relu";
    }
}
