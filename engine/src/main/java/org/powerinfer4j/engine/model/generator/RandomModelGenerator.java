package org.powerinfer4j.engine.model.generator;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFValueType;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.gguf.MetadataValue;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Quantizer;

/**
 * Writes a llama, Falcon or OPT GGUF ({@link ModelArch}) with random weights, for benchmarks and tests: matrices
 * N(0, σ²) (σ = 0.02 by default) stored "pure" in one type, norms 1.0 and LayerNorm biases 0 in F32, linear biases
 * (OPT) N(0, σ²) in F32, tensor names, shapes and hyperparameter keys as llama.cpp's converter writes them (OPT:
 * as PowerInfer's), and the tokenizer keys ({@code tokenizer.*}) copied from a vocabulary GGUF, whose token count
 * becomes the model's vocabulary size.
 *
 * <p>The output is a pure function of shape, type, vocabulary, name and seed: every chunk of rows has its own
 * generator seeded from (seed, tensor index, chunk index), so the bytes do not depend on the thread count.
 * Weights are generated and quantized per chunk on {@code threads} threads and streamed to the file in order;
 * memory use is a few chunks, whatever the model size.
 *
 * <p>A matrix whose row length is not a multiple of the type's block size (for example a 64-wide model in
 * a K-quant, whose blocks are 256 wide) is stored in Q8_0 when its rows are a multiple of 32, else F16,
 * the way llama-quantize falls back to a compatible type.
 */
public final class RandomModelGenerator {
    /** Elements per generated chunk (about 4 MiB of floats). */
    private static final int CHUNK_ELEMENTS = 1 << 20;

    private final ModelShape shape;
    private final GGMLType type;
    private final Map<String, MetadataValue> vocab;
    private final int vocabSize;
    private long seed = 42;
    private int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
    private float stddev = 0.02f;
    private String name;
    private ModelArch arch = ModelArch.LLAMA;
    private PlantedSparsity.Spec sparse;
    private int experts, expertsUsed;   // 0: a dense FFN

    /** Summary of a written model. */
    public record Result(Path path, long bytes, long parameters, int vocabSize, double seconds) {}

    /**
     * @param vocabFrom a GGUF whose {@code tokenizer.*} keys (with {@code tokenizer.ggml.tokens}) are copied
     */
    public RandomModelGenerator(ModelShape shape, GGMLType type, Path vocabFrom) throws IOException {
        this(shape, type, readVocab(vocabFrom));
    }

    /** With tokenizer metadata already read (keys {@code tokenizer.*}, including {@code tokenizer.ggml.tokens}). */
    public RandomModelGenerator(ModelShape shape, GGMLType type, Map<String, MetadataValue> tokenizerMetadata) {
        this.shape = Objects.requireNonNull(shape, "shape");
        this.type = Objects.requireNonNull(type, "type");
        if (!Quantizer.supports(type)) throw new IllegalArgumentException("cannot write " + type + " weights");
        this.vocab = new LinkedHashMap<>(tokenizerMetadata);
        MetadataValue tokens = vocab.get("tokenizer.ggml.tokens");
        if (tokens == null || !tokens.isArray() || tokens.elementType() != GGUFValueType.STRING || tokens.arrayLength() == 0)
            throw new IllegalArgumentException("the vocabulary has no tokenizer.ggml.tokens string array");
        this.vocabSize = tokens.arrayLength();
    }

    /** The {@code tokenizer.*} keys of a GGUF, in file order. */
    public static Map<String, MetadataValue> readVocab(Path gguf) throws IOException {
        try (GGUFFile f = GGUFFile.open(gguf)) {
            Map<String, MetadataValue> m = new LinkedHashMap<>();
            f.metadata().forEach((k, v) -> {
                if (k.startsWith("tokenizer.")) m.put(k, v);
            });
            if (!m.containsKey("tokenizer.ggml.tokens"))
                throw new IllegalArgumentException(gguf + " has no tokenizer.ggml.tokens: not a vocabulary");
            return m;
        }
    }

    public RandomModelGenerator seed(long seed) {
        this.seed = seed;
        return this;
    }

    public RandomModelGenerator threads(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1");
        this.threads = threads;
        return this;
    }

    public RandomModelGenerator stddev(float stddev) {
        if (!(stddev >= 0) || Float.isInfinite(stddev)) throw new IllegalArgumentException("stddev must be finite and >= 0");
        this.stddev = stddev;
        return this;
    }

    public RandomModelGenerator name(String name) {
        this.name = Objects.requireNonNull(name);
        return this;
    }

    /** The architecture to write (default llama). */
    public RandomModelGenerator architecture(ModelArch arch) {
        Objects.requireNonNull(arch, "arch");
        if (arch != ModelArch.LLAMA && experts > 0) throw new IllegalArgumentException("experts are written for llama only, not " + arch.ggufName());
        if (arch == ModelArch.OPT && shape.kvHeads() != shape.heads())
            throw new IllegalArgumentException("opt has no grouped-query attention: kv-heads " + shape.kvHeads() + " must equal heads " + shape.heads());
        if (sparse != null) arch.checkSparseActivation(sparse.activation());
        this.arch = arch;
        return this;
    }

    /**
     * Write a PowerInfer ({@code PWRI}) ReLU-family model with a planted activation structure and working
     * predictors instead of a dense one (see {@link PlantedSparsity}); null returns to dense. Falcon and OPT take
     * only ReGLU (their FFN is a plain ReLU of the up projection).
     */
    public RandomModelGenerator sparseRelu(PlantedSparsity.Spec spec) {
        if (spec != null) arch.checkSparseActivation(spec.activation());
        this.sparse = spec;
        return this;
    }

    /**
     * Mixtral-style mixture-of-experts FFNs (llama only): a router {@code ffn_gate_inp} and {@code experts} experts in
     * 3-D {@code ffn_{gate,up,down}_exps}, {@code used} of them per token, as llama.cpp's converter writes Mixtral. With
     * {@link #sparseRelu} each expert gets its own planted power law and its own predictor {@code fc1.E}/{@code fc2.E}
     * (the file is PWRI, so the engine runs its experts as ReLU — our extension, PowerInfer itself runs no MoE); 0
     * experts returns to a dense FFN.
     */
    public RandomModelGenerator experts(int experts, int used) {
        if (experts < 0 || (experts > 0 && (used < 1 || used > experts)))
            throw new IllegalArgumentException("experts-used must be between 1 and the expert count " + experts + ", not " + used);
        if (experts > 0 && arch != ModelArch.LLAMA) throw new IllegalArgumentException("experts are written for llama only, not " + arch.ggufName());
        this.experts = experts;
        this.expertsUsed = experts == 0 ? 0 : used;
        return this;
    }

    /** general.name: as set, else derived from architecture, FFN, shape and type. */
    public String name() {
        if (name != null) return name;
        String a = sparse == null ? arch.ggufName()
                : sparse.activation() == FfnActivation.DRELU ? "bamboo-drelu" : arch.ggufName() + "-" + arch.sparseLabel(sparse.activation());
        if (experts > 0) a += "-moe" + experts + "x" + expertsUsed;
        return "random-" + a + "-d" + shape.dim() + "-l" + shape.layers() + "-" + type.name().toLowerCase(java.util.Locale.ROOT);
    }

    public int vocabSize() {
        return vocabSize;
    }

    /** Parameters written, predictors included. */
    long parameterCount() {
        long p = shape.parameters(vocabSize, arch);
        if (experts > 0) p += (long) shape.layers() * ((experts - 1) * 3L * shape.dim() * shape.ff() + (long) shape.dim() * experts);
        if (sparse != null) p += (long) shape.layers() * Math.max(1, experts) * sparse.hidden(shape.dim()) * (shape.dim() + shape.ff());
        return p;
    }

    /** llama.cpp's {@code llama_ftype} for a model whose matrices are all {@code t}. */
    public static int fileType(GGMLType t) {
        return switch (t) {
            case F32 -> 0;
            case F16 -> 1;
            case Q4_0 -> 2;
            case Q4_1 -> 3;
            case Q8_0 -> 7;
            case Q4_K -> 15; // Q4_K_M, what llama-quantize records for --pure q4_k_m
            case Q5_K -> 17; // Q5_K_M
            case Q6_K -> 18;
            case BF16 -> 32;
            default -> throw new IllegalArgumentException("no llama file type for " + t);
        };
    }

    /** The type a matrix with rows of {@code rowLength} is stored in. */
    public GGMLType matrixType(long rowLength) {
        if (rowLength % type.blockSize == 0) return type;
        return rowLength % GGMLType.Q8_0.blockSize == 0 ? GGMLType.Q8_0 : GGMLType.F16;
    }

    /** Writes the model to {@code out}. */
    public Result write(Path out) throws IOException {
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "model-generator");
            t.setDaemon(true);
            return t;
        });
        try {
            GGUFWriter w = writer(pool);
            w.write(out);
            return new Result(out, w.fileSize(), parameterCount(), vocabSize, (System.nanoTime() - t0) / 1e9);
        } finally {
            pool.shutdownNow();
        }
    }

    private GGUFWriter writer(ExecutorService pool) {
        GGUFWriter w = new GGUFWriter();
        String a = arch == ModelArch.LLAMA && sparse != null && sparse.activation() == FfnActivation.DRELU ? "bamboo" : arch.ggufName();
        if (sparse != null) w.magic(GGUFFile.MAGIC_PWRI);
        w.putString("general.architecture", a);
        w.putString("general.name", name());
        // OPT (PowerInfer's layout): the context is the learned position table, which has HF's two offset rows
        w.putUInt32(a + ".context_length", arch == ModelArch.OPT ? shape.contextLength() + 2 : shape.contextLength());
        if (arch == ModelArch.FALCON) w.putString(a + ".tensor_data_layout", "jploski");
        w.putUInt32(a + ".embedding_length", shape.dim());
        w.putUInt32(a + ".block_count", shape.layers());
        w.putUInt32(a + ".feed_forward_length", shape.ff());
        w.putUInt32(a + ".attention.head_count", shape.heads());
        w.putUInt32(a + ".attention.head_count_kv", shape.kvHeads());
        if (experts > 0) {
            w.putUInt32(a + ".expert_count", experts);
            w.putUInt32(a + ".expert_used_count", expertsUsed);
        }
        if (arch.layerNorm()) w.putFloat32(a + ".attention.layer_norm_epsilon", shape.rmsEps());
        else {
            w.putFloat32(a + ".attention.layer_norm_rms_epsilon", shape.rmsEps());
            w.putUInt32(a + ".rope.dimension_count", shape.headDim());
            w.putFloat32(a + ".rope.freq_base", shape.ropeFreqBase());
            w.putUInt32(a + ".vocab_size", vocabSize);
        }
        vocab.forEach(w::put);
        if (type.isQuantized()) w.putUInt32("general.quantization_version", 2);
        w.putUInt32("general.file_type", fileType(type));
        if (sparse != null) w.putFloat32("powerinfer.sparse_threshold", 0f);

        int d = shape.dim();
        PlantedSparsity plant = sparse == null ? null : new PlantedSparsity(sparse, d, shape.ff(), stddev, stddev, seed);
        Tensors t = new Tensors(w, pool);
        int embIndex = t.index++;
        t.matrix("token_embd.weight", d, vocabSize, null,
                plant == null ? gaussian(embIndex, d, stddev) : (chunk, r0, n) -> plant.embeddingRows(mix(seed, embIndex, chunk), n));
        if (arch == ModelArch.OPT) {
            // small next to the embeddings in a planted model, so the residual stays the token's embedding
            float sd = plant == null ? stddev : (float) (PlantedSparsity.ATTN_SHARE * stddev);
            t.matrix("position_embd.weight", d, shape.contextLength() + 2, null, gaussian(t.index++, d, sd));
        }
        for (int l = 0; l < shape.layers(); l++) {
            PlanRef plan = plant == null ? null : new PlanRef(plant, l);
            switch (arch) {
                case LLAMA -> {
                    if (experts > 0) moeLayer(t, "blk." + l + ".", plant, l);
                    else llamaLayer(t, "blk." + l + ".", plant, plan);
                }
                case FALCON -> falconLayer(t, "blk." + l + ".", plant, plan);
                case OPT -> optLayer(t, "blk." + l + ".", plant, plan);
            }
        }
        t.constant("output_norm.weight", d, 1f);
        if (arch.layerNorm()) t.constant("output_norm.bias", d, 0f);
        if (!shape.tiedEmbeddings()) t.matrix("output.weight", d, vocabSize, null, gaussian(t.index++, d, stddev));
        return w;
    }

    /** Constant LayerNorm bias of a planted Falcon model: the FFN's bias input (see {@link PlantedSparsity}). */
    static final float FALCON_NORM_BIAS = 1f;

    private void llamaAttention(Tensors t, String p, PlantedSparsity plant) {
        int d = shape.dim(), kv = shape.kvDim();
        t.constant(p + "attn_norm.weight", d, 1f);
        t.matrix(p + "attn_q.weight", d, d, null, gaussian(t.index++, d, stddev));
        t.matrix(p + "attn_k.weight", d, kv, null, gaussian(t.index++, d, stddev));
        t.matrix(p + "attn_v.weight", d, kv, null, gaussian(t.index++, d, stddev));
        t.matrix(p + "attn_output.weight", d, d, null, gaussian(t.index++, d, plant == null ? stddev : plant.attnOutputStddev()));
        t.constant(p + "ffn_norm.weight", d, 1f);
    }

    /**
     * A Mixtral block: llama attention, then the router (F32, as llama-quantize leaves it) and the experts' 3-D
     * matrices; planted: every expert's gate rows by its own plan, the down projection at the layer's spread.
     */
    private void moeLayer(Tensors t, String p, PlantedSparsity plant, int layer) {
        int d = shape.dim(), ff = shape.ff();
        llamaAttention(t, p, plant);
        t.matrix(p + "ffn_gate_inp.weight", d, experts, GGMLType.F32, gaussian(t.index++, d, stddev));
        long[] in = {d, ff, experts}, out = {ff, d, experts};
        if (plant == null) {
            t.matrix(p + "ffn_gate_exps.weight", in, null, gaussian(t.index++, d, stddev));
            t.matrix(p + "ffn_up_exps.weight", in, null, gaussian(t.index++, d, stddev));
            t.matrix(p + "ffn_down_exps.weight", out, null, gaussian(t.index++, ff, stddev));
            return;
        }
        PlanRef[] plans = new PlanRef[experts];
        for (int e = 0; e < experts; e++) plans[e] = new PlanRef(plant, layer, e);
        t.matrix(p + "ffn_gate_exps.weight", in, null, perExpert(ff, d, (e, r0, n) -> plans[e].get().gateRows(r0, n)));
        if (sparse.activation() == FfnActivation.DRELU)
            t.matrix(p + "ffn_up_exps.weight", in, null, perExpert(ff, d, (e, r0, n) -> plans[e].get().dreluUpRows(r0, n)));
        else t.matrix(p + "ffn_up_exps.weight", in, null, gaussian(t.index, d, stddev));
        t.index++;
        t.matrix(p + "ffn_down_exps.weight", out, null, gaussian(t.index++, ff, plans[0].get().downStddev()));
        for (int e = 0; e < experts; e++) predictor(t, p, "." + e, plant, plans[e]);
    }

    /** Rows of an experts' 3-D matrix ({@code rowsPerExpert} rows of {@code cols} each) from a per-expert source, across chunk boundaries. */
    private static RowSource perExpert(int rowsPerExpert, int cols, ExpertRowSource source) {
        return (chunk, r0, n) -> {
            float[] out = new float[n * cols];
            for (int done = 0; done < n; ) {
                int r = r0 + done, e = r / rowsPerExpert, local = r % rowsPerExpert, take = Math.min(n - done, rowsPerExpert - local);
                System.arraycopy(source.rows(e, local, take), 0, out, done * cols, take * cols);
                done += take;
            }
            return out;
        };
    }

    @FunctionalInterface
    private interface ExpertRowSource {
        float[] rows(int expert, int r0, int n);
    }

    private void llamaLayer(Tensors t, String p, PlantedSparsity plant, PlanRef plan) {
        int d = shape.dim(), ff = shape.ff();
        llamaAttention(t, p, plant);
        if (plant == null) {
            t.matrix(p + "ffn_gate.weight", d, ff, null, gaussian(t.index++, d, stddev));
            t.matrix(p + "ffn_up.weight", d, ff, null, gaussian(t.index++, d, stddev));
            t.matrix(p + "ffn_down.weight", ff, d, null, gaussian(t.index++, ff, stddev));
            return;
        }
        t.matrix(p + "ffn_gate.weight", d, ff, null, (chunk, r0, n) -> plan.get().gateRows(r0, n));
        if (sparse.activation() == FfnActivation.DRELU)
            t.matrix(p + "ffn_up.weight", d, ff, null, (chunk, r0, n) -> plan.get().dreluUpRows(r0, n));
        else t.matrix(p + "ffn_up.weight", d, ff, null, gaussian(t.index, d, stddev));
        t.index++;
        int downIndex = t.index++;
        t.matrix(p + "ffn_down_t.weight", d, ff, null, (chunk, r0, n) -> gaussianRows(downIndex, chunk, n * d, plan.get().downStddev()));
        predictor(t, p, plant, plan);
    }

    /** Falcon-7B's block: one LayerNorm feeding fused QKV attention and the MLP in parallel; no linear biases. */
    private void falconLayer(Tensors t, String p, PlantedSparsity plant, PlanRef plan) {
        int d = shape.dim(), ff = shape.ff();
        t.constant(p + "attn_norm.weight", d, 1f);
        t.constant(p + "attn_norm.bias", d, plant == null ? 0f : FALCON_NORM_BIAS);
        t.matrix(p + "attn_qkv.weight", d, d + 2 * shape.kvDim(), null, gaussian(t.index++, d, stddev));
        float outSd = plant == null ? stddev : plant.attnOutputStddev(Math.sqrt(1 + FALCON_NORM_BIAS * FALCON_NORM_BIAS));
        t.matrix(p + "attn_output.weight", d, d, null, gaussian(t.index++, d, outSd));
        plainMlp(t, p, plant, plan, FALCON_NORM_BIAS);
    }

    /** OPT's block: pre-LayerNorm attention and MLP, each LayerNorm and linear with a bias, learned positions outside. */
    private void optLayer(Tensors t, String p, PlantedSparsity plant, PlanRef plan) {
        int d = shape.dim(), kv = shape.kvDim();
        t.constant(p + "attn_norm.weight", d, 1f);
        t.constant(p + "attn_norm.bias", d, 0f);
        t.matrix(p + "attn_q.weight", d, d, null, gaussian(t.index++, d, stddev));
        t.vector(p + "attn_q.bias", d, gaussian(t.index++, d, stddev));
        t.matrix(p + "attn_k.weight", d, kv, null, gaussian(t.index++, d, stddev));
        t.vector(p + "attn_k.bias", kv, gaussian(t.index++, kv, stddev));
        t.matrix(p + "attn_v.weight", d, kv, null, gaussian(t.index++, d, stddev));
        t.vector(p + "attn_v.bias", kv, gaussian(t.index++, kv, stddev));
        t.matrix(p + "attn_output.weight", d, d, null, gaussian(t.index++, d, plant == null ? stddev : plant.attnOutputStddev()));
        // a planted model's output biases would move the residual off its token's embedding: zero there
        t.vector(p + "attn_output.bias", d, gaussian(t.index++, d, plant == null ? stddev : 0f));
        t.constant(p + "ffn_norm.weight", d, 1f);
        t.constant(p + "ffn_norm.bias", d, 0f);
        plainMlp(t, p, plant, plan, 0);
        t.vector(p + "ffn_down.bias", d, gaussian(t.index++, d, plant == null ? stddev : 0f));
    }

    /**
     * A non-gated MLP: ffn_up (OPT: + bias), then ffn_down, or for a planted model the up rows that decide which
     * neurons fire, the neuron-major ffn_down_t and the predictor. {@code normBias} is Falcon's constant LayerNorm
     * bias (0: the up bias carries the firing thresholds, as OPT).
     */
    private void plainMlp(Tensors t, String p, PlantedSparsity plant, PlanRef plan, float normBias) {
        int d = shape.dim(), ff = shape.ff();
        boolean upBias = arch == ModelArch.OPT;
        if (plant == null) {
            t.matrix(p + "ffn_up.weight", d, ff, null, gaussian(t.index++, d, stddev));
            if (upBias) t.vector(p + "ffn_up.bias", ff, gaussian(t.index++, ff, stddev));
            t.matrix(p + "ffn_down.weight", ff, d, null, gaussian(t.index++, ff, stddev));
            return;
        }
        t.matrix(p + "ffn_up.weight", d, ff, null, (chunk, r0, n) -> plan.get().lnUpRows(r0, n, normBias));
        if (upBias) t.vector(p + "ffn_up.bias", ff, (chunk, r0, n) -> plan.get().lnUpBias());
        int downIndex = t.index++;
        t.matrix(p + "ffn_down_t.weight", d, ff, null, (chunk, r0, n) -> gaussianRows(downIndex, chunk, n * d, plan.get().lnDownStddev()));
        predictor(t, p, plant, plan);
    }

    private void predictor(Tensors t, String p, PlantedSparsity plant, PlanRef plan) {
        predictor(t, p, "", plant, plan);
    }

    /** {@code fc1<suffix>} and {@code fc2<suffix>} (suffix "" for a dense layer's, ".E" for expert E's). */
    private void predictor(Tensors t, String p, String suffix, PlantedSparsity plant, PlanRef plan) {
        int h = plant.hidden(), d = shape.dim(), ff = shape.ff();
        t.matrix(p + "fc1" + suffix + ".weight", d, h, GGMLType.F16, (chunk, r0, n) -> plan.get().fc1Rows(r0, n));
        t.matrix(p + "fc2" + suffix + ".weight", h, ff, GGMLType.F16, (chunk, r0, n) -> plan.get().fc2Rows(r0, n));
    }

    /** A layer's plan, built when its first tensor is written (on a pool thread) and shared by the rest. */
    private static final class PlanRef {
        final PlantedSparsity plant;
        private final int layer, expert;
        private PlantedSparsity.Layer value;

        PlanRef(PlantedSparsity plant, int layer) {
            this(plant, layer, 0);
        }

        PlanRef(PlantedSparsity plant, int layer, int expert) {
            this.plant = plant;
            this.layer = layer;
            this.expert = expert;
        }

        synchronized PlantedSparsity.Layer get() {
            if (value == null) value = plant.layer(layer, expert);
            return value;
        }
    }

    /** Rows [r0, r0+n) of one matrix, as floats; called for chunk {@code chunk} from pool threads. */
    @FunctionalInterface
    private interface RowSource {
        float[] rows(int chunk, int r0, int n);
    }

    /** N(0, sd²) entries, one generator per chunk seeded from (seed, tensor index, chunk). */
    private RowSource gaussian(int tensorIndex, int cols, float sd) {
        return (chunk, r0, n) -> gaussianRows(tensorIndex, chunk, n * cols, sd);
    }

    private float[] gaussianRows(int tensorIndex, int chunk, int count, float sd) {
        SplittableRandom r = new SplittableRandom(mix(seed, tensorIndex, chunk));
        float[] x = new float[count];
        for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextGaussian() * sd);
        return x;
    }

    /** Adds tensors to one writer; {@code index} numbers the random tensors, each one's chunks seeded from it. */
    private final class Tensors {
        final GGUFWriter w;
        final ExecutorService pool;
        int index;

        Tensors(GGUFWriter w, ExecutorService pool) {
            this.w = w;
            this.pool = pool;
        }

        /** An F32 vector of {@code n} copies of {@code value} (norm weights, LayerNorm biases). */
        void constant(String name, int n, float value) {
            float[] v = new float[n];
            java.util.Arrays.fill(v, value);
            vector(name, n, (chunk, r0, count) -> v);
        }

        /** An F32 vector of {@code n} values, {@code source}'s one row (chunk 0). */
        void vector(String name, int n, RowSource source) {
            w.addTensor(name, GGMLType.F32, new long[] {n}, out -> {
                float[] v = source.rows(0, 0, 1);
                ByteBuffer b = ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < n; i++) b.putFloat(v[i]);
                out.write(b.flip());
            });
        }

        /**
         * A {@code rows × cols} matrix ({@code ne = {cols, rows}}) generated in chunks of whole rows, stored in
         * {@code forced} or else {@link #matrixType}.
         */
        void matrix(String name, int cols, int rows, GGMLType forced, RowSource source) {
            matrix(name, new long[] {cols, rows}, forced, source);
        }

        /** The same for any shape {@code ne} ({@code ne[0]} = row length; e.g. experts' 3-D matrices, rows of all experts in order). */
        void matrix(String name, long[] ne, GGMLType forced, RowSource source) {
            int cols = (int) ne[0];
            long allRows = 1;
            for (int i = 1; i < ne.length; i++) allRows *= ne[i];
            int rows = Math.toIntExact(allRows);
            GGMLType t = forced != null ? forced : matrixType(cols);
            int chunkRows = Math.max(1, CHUNK_ELEMENTS / cols);
            int chunks = (rows + chunkRows - 1) / chunkRows;
            w.addTensor(name, t, ne, out -> {
                // keep a bounded window of chunks in flight; write them back in order
                ArrayDeque<Future<byte[]>> window = new ArrayDeque<>();
                int next = 0;
                try {
                    for (int c = 0; c < chunks; c++) {
                        while (next < chunks && window.size() < 2 * threads) {
                            int chunk = next++;
                            int r0 = chunk * chunkRows, n = Math.min(chunkRows, rows - r0);
                            window.add(pool.submit(() -> Quantizer.quantize(t, source.rows(chunk, r0, n))));
                        }
                        byte[] bytes = window.poll().get();
                        out.write(bytes, 0, bytes.length);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while generating " + name);
                } catch (ExecutionException e) {
                    throw new IOException("generating " + name + " failed", e.getCause());
                } finally {
                    for (Future<byte[]> f : window) f.cancel(true);
                }
            });
        }
    }

    /** A well-spread 64-bit seed for one chunk (SplitMix64 finalizer over the three inputs). */
    static long mix(long seed, int tensor, int chunk) {
        long z = seed + 0x9E3779B97F4A7C15L * (1 + ((long) tensor << 32 | (chunk & 0xFFFFFFFFL)));
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
