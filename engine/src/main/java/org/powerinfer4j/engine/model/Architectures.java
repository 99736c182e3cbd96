package org.powerinfer4j.engine.model;

import java.util.List;
import java.util.Map;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFFormatException;
import org.powerinfer4j.engine.model.ArchParams.Family;
import org.powerinfer4j.engine.model.ArchParams.Gating;
import org.powerinfer4j.engine.model.ArchParams.RopeScaling;

/**
 * The architectures this engine runs ({@code general.architecture}) and how each one's GGUF keys become a
 * {@link ModelConfig}: sizes, RoPE pairing, FFN activation and the {@link ArchParams} its graph builder
 * ({@link GraphBuilder}) needs. Defaults per family follow llama.cpp's loader where the file is silent.
 */
public final class Architectures {
    private Architectures() {}

    private record Spec(Family family, RopeType rope, FfnActivation activation) {}

    private static final Map<String, Spec> SPECS = Map.ofEntries(
            Map.entry("llama", new Spec(Family.LLAMA, RopeType.NORMAL, FfnActivation.SWIGLU)),
            Map.entry("mistral", new Spec(Family.LLAMA, RopeType.NORMAL, FfnActivation.SWIGLU)),
            Map.entry("bamboo", new Spec(Family.LLAMA, RopeType.NORMAL, FfnActivation.DRELU)),
            Map.entry("qwen2", new Spec(Family.QWEN2, RopeType.NEOX, FfnActivation.SWIGLU)),
            Map.entry("qwen3", new Spec(Family.QWEN3, RopeType.NEOX, FfnActivation.SWIGLU)),
            Map.entry("qwen3moe", new Spec(Family.QWEN3, RopeType.NEOX, FfnActivation.SWIGLU)),
            Map.entry("gemma2", new Spec(Family.GEMMA2, RopeType.NEOX, FfnActivation.GELU_TANH)),
            Map.entry("gemma3", new Spec(Family.GEMMA3, RopeType.NEOX, FfnActivation.GELU_TANH)),
            Map.entry("phi3", new Spec(Family.PHI3, RopeType.NEOX, FfnActivation.SWIGLU)),
            Map.entry("falcon", new Spec(Family.FALCON, RopeType.NEOX, FfnActivation.GELU)),
            Map.entry("opt", new Spec(Family.OPT, RopeType.NEOX, FfnActivation.REGLU)),
            Map.entry("gpt-oss", new Spec(Family.GPT_OSS, RopeType.NEOX, FfnActivation.SWIGLU_OAI)));

    /** Supported {@code general.architecture} values, sorted (what the unknown-architecture error lists). */
    public static final List<String> SUPPORTED = SPECS.keySet().stream().sorted().toList();

    public static boolean supported(String arch) {
        return SPECS.containsKey(arch);
    }

    public static ModelConfig config(GGUFFile f) {
        String arch = f.getString("general.architecture", null);
        if (arch == null) throw new ModelException(f.path().getFileName() + ": no general.architecture in metadata");
        Spec spec = SPECS.get(arch);
        if (spec == null)
            throw new ModelException(f.path().getFileName() + ": unsupported architecture '" + GGUFFormatException.printable(arch, 64) + "' (supported: " + String.join(", ", SUPPORTED) + ")");
        int dim = required(f, arch + ".embedding_length");
        int layers = required(f, arch + ".block_count");
        int heads = required(f, arch + ".attention.head_count");
        int kvHeads = f.getInt(arch + ".attention.head_count_kv", heads);
        if (dim % heads != 0 && !f.has(arch + ".attention.key_length"))
            throw new ModelException("embedding_length " + dim + " is not divisible by head_count " + heads);
        int headDim = f.getInt(arch + ".attention.key_length", dim / Math.max(1, heads));
        int valueDim = f.getInt(arch + ".attention.value_length", headDim);
        if (valueDim != headDim)
            throw new ModelException(f.path().getFileName() + ": attention.value_length " + valueDim + " differs from key_length " + headDim + ", which this engine does not support");
        if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
            throw new ModelException("head_count " + heads + " must be a positive multiple of head_count_kv " + kvHeads);
        int ropeDim = spec.family == Family.OPT ? 0 : f.getInt(arch + ".rope.dimension_count", headDim);
        if (ropeDim > headDim || ropeDim % 2 != 0) throw new ModelException("rope.dimension_count " + ropeDim + " is invalid for head size " + headDim);
        String[] tokens = f.getArray("tokenizer.ggml.tokens", String[].class);
        int vocab = f.hasTensor("token_embd.weight") ? (int) f.tensorInfo("token_embd.weight").ne()[1] : tokens != null ? tokens.length : 0;
        boolean layerNorm = spec.family == Family.FALCON || spec.family == Family.OPT;
        float eps = layerNorm ? f.getFloat(arch + ".attention.layer_norm_epsilon", 1e-5f)
                : f.getFloat(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
        float base = f.getFloat(arch + ".rope.freq_base", 10000f);
        int ctx = f.getInt(arch + ".context_length", 2048);
        int experts = f.getInt(arch + ".expert_count", 0), used = f.getInt(arch + ".expert_used_count", 0);
        if (experts < 0 || experts > 4096 || (experts > 0 && (used <= 0 || used > experts)))
            throw new ModelException(f.path().getFileName() + ": expert_used_count " + used + " is invalid for expert_count " + experts);
        int ff = experts > 0 && f.has(arch + ".expert_feed_forward_length") ? required(f, arch + ".expert_feed_forward_length")
                : required(f, arch + ".feed_forward_length");
        FfnActivation act = spec.activation;
        // PowerInfer's files (ReluLLaMA, ReluFalcon, ProSparse) are ReLU models; Bamboo's dReLU is its own
        if (f.isPowerInfer() && !arch.equals("bamboo")) act = FfnActivation.REGLU;
        ArchParams p = params(f, arch, spec.family, layerNorm, dim, headDim, base, experts, used, ff);
        return new ModelConfig(arch, dim, layers, heads, kvHeads, headDim, ff, vocab, ctx, eps, base, ropeDim, spec.rope, act, p);
    }

    private static ArchParams params(GGUFFile f, String arch, Family family, boolean layerNorm, int dim, int headDim, float base,
                                     int experts, int used, int ff) {
        float scale = (float) (1.0 / Math.sqrt(headDim));
        boolean gemma = family == Family.GEMMA2 || family == Family.GEMMA3;
        float embScale = gemma ? (float) Math.sqrt(dim) : 1f;
        float attnCap = f.getFloat(arch + ".attn_logit_softcapping", 0f);
        float finalCap = f.getFloat(arch + ".final_logit_softcapping", 0f);
        int window = f.getInt(arch + ".attention.sliding_window", 0);
        // llama.cpp's fixed patterns (the GGUF stores no per-layer types): Gemma 2 alternates, Gemma 3 has 5 local + 1 global
        int pattern = switch (family) {
            case GEMMA2, GPT_OSS -> 2;
            case GEMMA3 -> 6;
            default -> window > 0 ? 1 : 0;
        };
        float baseSwa = f.getFloat(arch + ".rope.freq_base_swa", base);
        RopeScaling scaling = scaling(f, arch);
        boolean gptOss = family == Family.GPT_OSS;
        // gpt-oss: llama.cpp hard-codes softmax over the chosen experts' logits (the GGUF has no gating key)
        boolean norm = f.getBoolean(arch + ".expert_weights_norm", !gptOss);
        Gating gating = switch (f.getInt(arch + ".expert_gating_func", gptOss ? 3 : 1)) {
            case 2 -> Gating.SIGMOID;
            case 3 -> Gating.SOFTMAX_WEIGHT;
            default -> Gating.SOFTMAX;
        };
        int shared = f.getInt(arch + ".expert_shared_feed_forward_length", 0);
        int posOffset = family == Family.OPT ? 2 : -1;
        return new ArchParams(family, layerNorm, embScale, scale, attnCap, finalCap, window, pattern, baseSwa, scaling,
                experts, used, ff, norm, gating, shared, posOffset);
    }

    private static RopeScaling scaling(GGUFFile f, String arch) {
        String type = f.getString(arch + ".rope.scaling.type", "none");
        float factor = f.getFloat(arch + ".rope.scaling.factor", 0f);
        if (factor == 0f) {
            float linear = f.getFloat(arch + ".rope.scale_linear", 0f);   // the older key
            if (linear > 0f) {
                type = "linear";
                factor = linear;
            }
        }
        int orig = f.getInt(arch + ".rope.scaling.original_context_length", 0);
        float betaFast = f.getFloat(arch + ".rope.scaling.yarn_beta_fast", 32f);
        float betaSlow = f.getFloat(arch + ".rope.scaling.yarn_beta_slow", 1f);
        float attnFactor = f.getFloat(arch + ".rope.scaling.attn_factor", 1f);
        switch (type) {
            case "none", "linear", "yarn" -> { }
            default -> throw new ModelException(f.path().getFileName() + ": rope.scaling.type '" + GGUFFormatException.printable(type, 64) + "' is not supported (none, linear, yarn)");
        }
        if (factor <= 0f || type.equals("none")) return new RopeScaling("none", 1f, orig, betaFast, betaSlow, 0f, 1f);
        return new RopeScaling(type, factor, orig, betaFast, betaSlow, type.equals("yarn") ? 1f : 0f, attnFactor);
    }

    private static int required(GGUFFile f, String key) {
        long v = f.getLong(key, -1);
        if (v <= 0 || v > (1 << 24)) throw new ModelException(f.path().getFileName() + ": metadata " + key + (v == -1 ? " is missing" : " = " + v + " is out of range"));
        return (int) v;
    }
}
