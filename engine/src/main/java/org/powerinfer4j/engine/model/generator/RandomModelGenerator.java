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
 * Writes a llama-architecture GGUF with random weights, for benchmarks and tests: matrices N(0, σ²) (σ = 0.02
 * by default) stored "pure" in one type, norms 1.0 in F32, tensor names, shapes and hyperparameter keys as
 * llama.cpp's converter writes them, and the tokenizer keys ({@code tokenizer.*}) copied from a vocabulary GGUF,
 * whose token count becomes the model's vocabulary size.
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
    private PlantedSparsity.Spec sparse;

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
        this.name = "random-llama-d" + shape.dim() + "-l" + shape.layers() + "-" + type.name().toLowerCase(java.util.Locale.ROOT);
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

    /**
     * Write a PowerInfer ({@code PWRI}) ReLU-family model with a planted activation structure and working
     * predictors instead of a dense one (see {@link PlantedSparsity}); null returns to dense.
     */
    public RandomModelGenerator sparseRelu(PlantedSparsity.Spec spec) {
        this.sparse = spec;
        if (spec != null && name.startsWith("random-llama-"))
            name = name.replace("random-llama-", spec.activation() == FfnActivation.DRELU ? "random-bamboo-drelu-" : "random-llama-reglu-");
        return this;
    }

    public int vocabSize() {
        return vocabSize;
    }

    /** Parameters written, predictors included. */
    long parameterCount() {
        long p = shape.parameters(vocabSize);
        if (sparse != null) p += (long) shape.layers() * sparse.hidden(shape.dim()) * (shape.dim() + shape.ff());
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
        String arch = sparse != null && sparse.activation() == FfnActivation.DRELU ? "bamboo" : "llama";
        if (sparse != null) w.magic(GGUFFile.MAGIC_PWRI);
        w.putString("general.architecture", arch);
        w.putString("general.name", name);
        w.putUInt32(arch + ".context_length", shape.contextLength());
        w.putUInt32(arch + ".embedding_length", shape.dim());
        w.putUInt32(arch + ".block_count", shape.layers());
        w.putUInt32(arch + ".feed_forward_length", shape.ff());
        w.putUInt32(arch + ".attention.head_count", shape.heads());
        w.putUInt32(arch + ".attention.head_count_kv", shape.kvHeads());
        w.putFloat32(arch + ".attention.layer_norm_rms_epsilon", shape.rmsEps());
        w.putUInt32(arch + ".rope.dimension_count", shape.headDim());
        w.putFloat32(arch + ".rope.freq_base", shape.ropeFreqBase());
        w.putUInt32(arch + ".vocab_size", vocabSize);
        vocab.forEach(w::put);
        if (type.isQuantized()) w.putUInt32("general.quantization_version", 2);
        w.putUInt32("general.file_type", fileType(type));
        if (sparse != null) w.putFloat32("powerinfer.sparse_threshold", 0f);

        int d = shape.dim(), kv = shape.kvDim(), ff = shape.ff();
        PlantedSparsity plant = sparse == null ? null : new PlantedSparsity(sparse, d, ff, stddev, stddev, seed);
        int index = 0;   // seeds each matrix's chunks
        int embIndex = index++;
        matrix(w, pool, "token_embd.weight", d, vocabSize, null,
                plant == null ? gaussian(embIndex, d, stddev) : (chunk, r0, n) -> plant.embeddingRows(mix(seed, embIndex, chunk), n));
        for (int l = 0; l < shape.layers(); l++) {
            String p = "blk." + l + ".";
            norm(w, p + "attn_norm.weight", d);
            matrix(w, pool, p + "attn_q.weight", d, d, null, gaussian(index++, d, stddev));
            matrix(w, pool, p + "attn_k.weight", d, kv, null, gaussian(index++, d, stddev));
            matrix(w, pool, p + "attn_v.weight", d, kv, null, gaussian(index++, d, stddev));
            matrix(w, pool, p + "attn_output.weight", d, d, null, gaussian(index++, d, plant == null ? stddev : plant.attnOutputStddev()));
            norm(w, p + "ffn_norm.weight", d);
            if (plant == null) {
                matrix(w, pool, p + "ffn_gate.weight", d, ff, null, gaussian(index++, d, stddev));
                matrix(w, pool, p + "ffn_up.weight", d, ff, null, gaussian(index++, d, stddev));
                matrix(w, pool, p + "ffn_down.weight", ff, d, null, gaussian(index++, ff, stddev));
            } else {
                // the layer's plan is built when its first tensor is written and shared by the rest
                int layer = l;
                var plan = new Object() {
                    private PlantedSparsity.Layer value;

                    synchronized PlantedSparsity.Layer get() {
                        if (value == null) value = plant.layer(layer);
                        return value;
                    }
                };
                matrix(w, pool, p + "ffn_gate.weight", d, ff, null, (chunk, r0, n) -> plan.get().gateRows(r0, n));
                if (sparse.activation() == FfnActivation.DRELU)
                    matrix(w, pool, p + "ffn_up.weight", d, ff, null, (chunk, r0, n) -> plan.get().dreluUpRows(r0, n));
                else matrix(w, pool, p + "ffn_up.weight", d, ff, null, gaussian(index, d, stddev));
                index++;
                int downIndex = index++;
                matrix(w, pool, p + "ffn_down_t.weight", d, ff, null, (chunk, r0, n) -> gaussianRows(downIndex, chunk, n * d, plan.get().downStddev()));
                int h = plant.hidden();
                matrix(w, pool, p + "fc1.weight", d, h, GGMLType.F16, (chunk, r0, n) -> plan.get().fc1Rows(r0, n));
                matrix(w, pool, p + "fc2.weight", h, ff, GGMLType.F16, (chunk, r0, n) -> plan.get().fc2Rows(r0, n));
            }
        }
        norm(w, "output_norm.weight", d);
        if (!shape.tiedEmbeddings()) matrix(w, pool, "output.weight", d, vocabSize, null, gaussian(index++, d, stddev));
        return w;
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

    private static void norm(GGUFWriter w, String name, int n) {
        w.addTensor(name, GGMLType.F32, new long[] {n}, out -> {
            ByteBuffer b = ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < n; i++) b.putFloat(1.0f);
            out.write(b.flip());
        });
    }

    /**
     * A {@code rows × cols} matrix ({@code ne = {cols, rows}}) generated in chunks of whole rows, stored in
     * {@code forced} or else {@link #matrixType}.
     */
    private void matrix(GGUFWriter w, ExecutorService pool, String name, int cols, int rows, GGMLType forced, RowSource source) {
        GGMLType t = forced != null ? forced : matrixType(cols);
        int chunkRows = Math.max(1, CHUNK_ELEMENTS / cols);
        int chunks = (rows + chunkRows - 1) / chunkRows;
        w.addTensor(name, t, new long[] {cols, rows}, out -> {
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

    /** A well-spread 64-bit seed for one chunk (SplitMix64 finalizer over the three inputs). */
    static long mix(long seed, int tensor, int chunk) {
        long z = seed + 0x9E3779B97F4A7C15L * (1 + ((long) tensor << 32 | (chunk & 0xFFFFFFFFL)));
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
