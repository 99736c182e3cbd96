package org.powerinfer4j.engine.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.powerinfer4j.bindings.cuda.CudaContext;
import org.powerinfer4j.bindings.cuda.CudaModule;
import org.powerinfer4j.bindings.cuda.CudaStream;
import org.powerinfer4j.bindings.cuda.DeviceBuffer;
import org.powerinfer4j.bindings.cuda.Dim3;
import org.powerinfer4j.bindings.cuda.Kernel;

/**
 * Catalog of the kernels in the {@code cuda-kernels} PTX resources ({@code org/powerinfer4j/kernels/<module>.ptx}):
 * for each, its module, its {@code extern "C"} name and its C signature, from which the parameter kinds are derived.
 * {@link Loaded} loads the modules into a context and launches kernels after checking the arguments against the
 * signature, so a Java/CUDA mismatch fails loudly instead of corrupting memory.
 */
public final class PtxKernels {
    private PtxKernels() {}

    /** Threads per block of the axpy kernels, and columns per block tile (2 per thread). */
    public static final int AXPY_THREADS = 256, AXPY_TILE = 512;
    /** Threads per block of attention_f32 (its __launch_bounds__) and the largest head size it handles. */
    public static final int ATTENTION_THREADS = 128, ATTENTION_MAX_HEAD_DIM = 256;
    /** Query tokens per block of the tiled (flash) attention kernels (FA_QT). */
    public static final int FLASH_QUERY_TILE = 16;
    /** Warps (rows in flight) per 256-thread block of the matvec kernels. */
    public static final int MATVEC_THREADS = 256;

    /** A kernel parameter kind as it appears in PTX: pointers are .u64, ints .u32, floats .f32. */
    public enum Param {
        PTR(".u64"), I32(".u32"), F32(".f32");
        public final String ptxType;
        Param(String t) { ptxType = t; }
    }

    public enum Spec {
        MATVEC_F32("ffn", "void matvec_f32(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        MATVEC_F16("ffn", "void matvec_f16(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        MATVEC_Q8_0("ffn", "void matvec_q8_0(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        MATVEC_Q4_0("ffn", "void matvec_q4_0(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        MATVEC_Q4_K("ffn", "void matvec_q4_k(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        MATVEC_Q5_K("ffn", "void matvec_q5_k(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        MATVEC_Q6_K("ffn", "void matvec_q6_k(const uint8_t* W, const float* x, float* out, int rows, int n, const uint8_t* mask, const int* rowmap, int relu)"),
        AXPY_F32("ffn", "void axpy_f32(const uint8_t* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate)"),
        AXPY_F16("ffn", "void axpy_f16(const uint8_t* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate)"),
        AXPY_Q8_0("ffn", "void axpy_q8_0(const uint8_t* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate)"),
        AXPY_Q4_0("ffn", "void axpy_q4_0(const uint8_t* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate)"),
        AXPY_REDUCE("ffn", "void axpy_reduce(const float* partial, int splits, int dim, float* y, int accumulate)"),
        THRESHOLD_MASK("ffn", "void threshold_mask(const float* logits, int n, float threshold, uint8_t* mask, int* count)"),
        FFN_ACT_F32("ffn", "void ffn_act_f32(const float* gate, const float* up, float* out, int n, int mode)"),
        GATHER_F32("ffn", "void gather_f32(const float* src, const int* idx, float* dst, int n)"),
        MASKED_ADD_F32("ffn", "void masked_add_f32(float* y, const float* x, const uint8_t* mask, const int* rowmap, int n)"),
        SCATTER_ADD_F32("ffn", "void scatter_add_f32(const float* src, const int* idx, float* dst, int n)"),
        RMS_NORM_F32("layer", "void rms_norm_f32(const float* x, const float* w, float* out, int n, int rows, float eps)"),
        LAYER_NORM_F32("layer", "void layer_norm_f32(const float* x, const float* w, const float* b, float* out, int n, int rows, float eps)"),
        ROPE_F32("layer", "void rope_f32(float* v, int n_tokens, int token_stride, int n_heads, int head_dim, int n_rot, int pos0, const float* inv_freq, float freq_base, float mscale, int neox)"),
        ADD_F32("layer", "void add_f32(float* y, const float* x, int n)"),
        SCALE_ADD_F32("layer", "void scale_add_f32(float* y, const float* x, float alpha, int n)"),
        CONVERT_F32_F16("layer", "void convert_f32_f16(const float* src, half* dst, int n)"),
        CONVERT_F16_F32("layer", "void convert_f16_f32(const half* src, float* dst, int n)"),
        ATTENTION_F32("layer", "void attention_f32(const float* q, const float* k, const float* v, float* out, float* partial, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap, const float* sinks, int splits, int n_tokens, int window)"),
        ATTENTION_F16KV("layer", "void attention_f16kv(const float* q, const half* k, const half* v, float* out, float* partial, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap, const float* sinks, int splits, int n_tokens, int window)"),
        FLASH_ATTENTION_F32("layer", "void flash_attention_f32(const float* q, const float* k, const float* v, float* out, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap, const float* sinks, int n_tokens, int window)"),
        FLASH_ATTENTION_F16KV("layer", "void flash_attention_f16kv(const float* q, const half* k, const half* v, float* out, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap, const float* sinks, int n_tokens, int window)"),
        ATTENTION_COMBINE_F32("layer", "void attention_combine_f32(const float* partial, float* out, int n_heads, int head_dim, const float* sinks, int splits)"),
        DEQUANT_F16_F32("prefill", "void dequant_f16_f32(const uint8_t* W, half* dst, half* lo, int rows, int n)"),
        DEQUANT_F16_Q8_0("prefill", "void dequant_f16_q8_0(const uint8_t* W, half* dst, half* lo, int rows, int n)"),
        DEQUANT_F16_Q4_0("prefill", "void dequant_f16_q4_0(const uint8_t* W, half* dst, half* lo, int rows, int n)"),
        DEQUANT_F16_Q4_K("prefill", "void dequant_f16_q4_k(const uint8_t* W, half* dst, half* lo, int rows, int n)"),
        DEQUANT_F16_Q5_K("prefill", "void dequant_f16_q5_k(const uint8_t* W, half* dst, half* lo, int rows, int n)"),
        DEQUANT_F16_Q6_K("prefill", "void dequant_f16_q6_k(const uint8_t* W, half* dst, half* lo, int rows, int n)"),
        SCALED_F32_F16("prefill", "void scaled_f32_f16(const float* src, half* hi, half* lo, float* scale, int cols, int tokens)"),
        SCALE_ROWS_F32("prefill", "void scale_rows_f32(float* out, const float* scale, int rows, int tokens)"),
        ADD_ROWS_F32("prefill", "void add_rows_f32(float* y, const float* b, int n, int rows)"),
        MASK_ROWS_F32("prefill", "void mask_rows_f32(float* h, const uint8_t* mask, const int* rowmap, int k, int tokens, int ff)");

        public final String module;
        public final String signature;
        public final String kernelName;
        public final List<Param> params;

        Spec(String module, String signature) {
            this.module = module;
            this.signature = signature;
            Matcher m = Pattern.compile("void (\\w+)\\((.*)\\)").matcher(signature);
            if (!m.matches()) throw new IllegalArgumentException(signature);
            kernelName = m.group(1);
            List<Param> p = new ArrayList<>();
            for (String decl : m.group(2).split(",")) {
                String d = decl.trim();
                p.add(d.contains("*") ? Param.PTR : d.startsWith("float ") ? Param.F32 : d.startsWith("int ") ? Param.I32 : null);
                if (p.getLast() == null) throw new IllegalArgumentException("unsupported parameter '" + d + "' in " + signature);
            }
            params = List.copyOf(p);
        }
    }

    /** Module names, in load order. */
    public static List<String> modules() {
        return List.of("ffn", "layer", "prefill");
    }

    /** PTX text of a module, from the class path. */
    public static byte[] ptx(String module) {
        String path = "/org/powerinfer4j/kernels/" + module + ".ptx";
        try (InputStream in = PtxKernels.class.getResourceAsStream(path)) {
            if (in == null) throw new IllegalStateException("PTX resource " + path + " is missing from the class path (cuda-kernels jar)");
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static final Pattern ENTRY = Pattern.compile("\\.visible\\s+\\.entry\\s+(\\w+)\\s*\\(([^)]*)\\)");
    private static final Pattern PARAM = Pattern.compile("\\.param\\s+(\\.\\w+)");

    /** The entry points of PTX text and their parameter types (e.g. {@code .u64}), in declaration order. */
    public static Map<String, List<String>> entries(String ptx) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        Matcher m = ENTRY.matcher(ptx);
        while (m.find()) {
            List<String> types = new ArrayList<>();
            Matcher p = PARAM.matcher(m.group(2));
            while (p.find()) types.add(p.group(1));
            out.put(m.group(1), types);
        }
        return out;
    }

    public static Map<String, List<String>> entries(byte[] ptx) {
        return entries(new String(ptx, StandardCharsets.US_ASCII));
    }

    /** The modules loaded into one context, with argument-checked launches. */
    public static final class Loaded implements AutoCloseable {
        private final List<CudaModule> modules = new ArrayList<>();
        private final EnumMap<Spec, Kernel> kernels = new EnumMap<>(Spec.class);

        public Loaded(CudaContext ctx) {
            Map<String, CudaModule> byName = new LinkedHashMap<>();
            try {
                for (String m : modules()) {
                    CudaModule mod = ctx.loadModule(ptx(m));
                    modules.add(mod);
                    byName.put(m, mod);
                }
                for (Spec s : Spec.values()) kernels.put(s, byName.get(s.module).kernel(s.kernelName));
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        public Kernel kernel(Spec s) {
            return kernels.get(s);
        }

        /**
         * Launches {@code s}; each argument must match its parameter: pointers as {@link DeviceBuffer}, {@code Long}
         * device address or null; ints as {@code Integer}; floats as {@code Float}.
         */
        public void launch(Spec s, Dim3 grid, Dim3 block, CudaStream stream, Object... args) {
            check(s, args);
            kernels.get(s).launch(grid, block, 0, stream, args);
        }

        @Override
        public void close() {
            for (CudaModule m : modules) m.close();
            modules.clear();
        }
    }

    static void check(Spec s, Object... args) {
        if (args.length != s.params.size())
            throw new IllegalArgumentException(s.kernelName + " takes " + s.params.size() + " arguments, got " + args.length);
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            boolean ok = switch (s.params.get(i)) {
                case PTR -> a == null || a instanceof Long || a instanceof DeviceBuffer;
                case I32 -> a instanceof Integer;
                case F32 -> a instanceof Float;
            };
            if (!ok) throw new IllegalArgumentException(s.kernelName + " argument " + i + " must be " + s.params.get(i) + ", got " + a);
        }
    }
}
