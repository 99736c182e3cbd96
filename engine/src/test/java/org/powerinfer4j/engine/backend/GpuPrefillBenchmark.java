package org.powerinfer4j.engine.backend;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Benchmark;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuEvent;
import org.powerinfer4j.engine.gpu.GpuMatrix;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.model.generator.ModelShape;
import org.powerinfer4j.engine.model.generator.RandomModelGenerator;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The GPU issue's prefill numbers, for a machine with a GPU ({@code cuda-kernels/gpu-check.sh} runs it after
 * {@link GpuBenchmark}): {@link GpuBackend#matMul} of a 4096 × 4096 matrix over 512 tokens in F16 (cuBLAS GemmEx
 * alone: the peak to compare with), Q4_0 and Q4_K (with their dequantization), timed with device events; then
 * pp512 of a generated 1.1B-shaped model ({@code tinyllama-1.1b}, Q4_0 and Q4_K_M-like Q4_K) with every layer on the
 * device ({@code -ngl 23 -b 512}), against the CPU, and the model's GEMM rate as a fraction of that F16 peak; and a
 * chunk's causal attention, tiled against one block per query.
 * Writes {@code OUT/gpu-prefill.md}.
 *
 * <pre>java ... -cp ... org.powerinfer4j.engine.backend.GpuPrefillBenchmark OUT_DIR [MODEL_DIR]</pre>
 */
public final class GpuPrefillBenchmark {
    private GpuPrefillBenchmark() {}

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args.length > 0 ? args[0] : "target/gpu-bench");
        Path models = Path.of(args.length > 1 ? args[1] : System.getProperty("java.io.tmpdir"));
        Files.createDirectories(out);
        Files.createDirectories(models);
        int tokens = Integer.getInteger("tokens", 512), reps = Integer.getInteger("reps", 3);
        int threads = Integer.getInteger("threads", Math.min(8, Runtime.getRuntime().availableProcessors()));
        List<String> rows = new ArrayList<>();
        rows.add("| what | tokens | time | rate | of F16 GEMM peak |");
        rows.add("|---|---:|---:|---:|---:|");
        double peak = -1;
        if (!CudaBackend.isAvailable()) rows.add("| no CUDA device: " + CudaBackend.unavailableReason().replace('|', '/') + " | | | | |");
        else {
            try (GpuBackend gpu = CudaBackend.open(0); GpuStream s = gpu.createStream(); Arena a = Arena.ofConfined()) {
                for (GGMLType t : new GGMLType[] {GGMLType.F16, GGMLType.Q4_0, GGMLType.Q4_K}) {
                    for (String precision : new String[] {"f16", "split"}) {
                        System.setProperty("powerinfer4j.gpu.gemm", precision);
                        double tflops = gemm(gpu, s, a, t, 4096, 4096, tokens);
                        if (t == GGMLType.F16 && precision.equals("f16")) peak = tflops;
                        rows.add(String.format(Locale.ROOT, "| matMul %s 4096×4096, %s GEMM | %d | | %.1f TFLOPS | %.0f%% |", t, precision, tokens, tflops,
                                100 * tflops / peak));
                        System.err.println(rows.getLast());
                    }
                }
                System.clearProperty("powerinfer4j.gpu.gemm");
                // a chunk's causal attention over an F16 cache (32 heads of 128): tiled (flash) against one block per query
                for (int ctx : new int[] {tokens, 4 * tokens})
                    for (String kernel : new String[] {"tiled", "rows"}) {
                        System.setProperty("powerinfer4j.gpu.attention", kernel);
                        double ms = attention(gpu, s, tokens, ctx);
                        rows.add(String.format(Locale.ROOT, "| causalAttention %s, %d queries over %d positions, F16 cache | %d | %.2f ms | | |", kernel, tokens, ctx,
                                tokens, ms));
                        System.err.println(rows.getLast());
                    }
                System.clearProperty("powerinfer4j.gpu.attention");
            }
        }
        for (GGMLType type : new GGMLType[] {GGMLType.Q4_0, GGMLType.Q4_K}) {
            Path model = models.resolve("tinyllama-" + type.name().toLowerCase(Locale.ROOT) + ".gguf");
            ModelShape shape = ModelShape.preset("tinyllama-1.1b");
            if (!Files.isRegularFile(model)) {
                new RandomModelGenerator(shape, type, TestData.file("vocab/ggml-vocab-llama-spm.gguf")).seed(7)
                        .threads(Runtime.getRuntime().availableProcessors()).write(model);
            }
            ModelOptions base = ModelOptions.defaults().withThreads(threads).withContextLength(tokens + 16).withBatchSize(tokens).withSparseMode(SparseMode.OFF);
            double cpu = prefill(rows, model, type + " pp" + tokens + " CPU", base, tokens, reps, -1, peak);
            prefill(rows, model, type + " pp" + tokens + " -ngl " + (shape.layers() + 1), base.withGpu(GpuOptions.layers(GpuMode.CUDA, shape.layers() + 1)), tokens,
                    reps, cpu, peak);
        }
        try (PrintStream p = new PrintStream(Files.newOutputStream(out.resolve("gpu-prefill.md")))) {
            p.printf("threads %d, %d prompt tokens, %d runs%n%n", threads, tokens, reps);
            rows.forEach(p::println);
        }
        rows.forEach(System.out::println);
    }

    /** TFLOPS of matMul over a rows × cols matrix of type t, best of 10 after a warm-up, timed with device events. */
    private static double gemm(GpuBackend gpu, GpuStream s, Arena a, GGMLType t, int rows, int cols, int tokens) {
        // zero weights: neither the GEMM's nor the dequantization's time depends on the values
        Tensor w = new Tensor("w", t, new long[] {cols, rows}, a.allocate(t.byteSize(cols) * rows, 256));
        GpuMatrix m = gpu.uploadMatrix(s, w);
        try (GpuBuffer x = gpu.allocate(4L * tokens * cols); GpuBuffer y = gpu.allocate(4L * tokens * rows)) {
            gpu.zero(s, x);
            gpu.matMul(s, m, x, y, tokens);
            long best = Long.MAX_VALUE;
            for (int i = 0; i < 10; i++) {
                try (GpuEvent from = gpu.recordTimed(s)) {
                    gpu.matMul(s, m, x, y, tokens);
                    try (GpuEvent to = gpu.recordTimed(s)) {
                        gpu.synchronize(to);
                        best = Math.min(best, gpu.elapsedNanos(from, to));
                    }
                }
            }
            return 2.0 * rows * cols * tokens / best / 1e3;
        } finally {
            m.data().close();
        }
    }

    /** Milliseconds of one causalAttention of {@code tokens} queries at the end of a {@code ctx}-position F16 cache, best of 10. */
    private static double attention(GpuBackend gpu, GpuStream s, int tokens, int ctx) {
        int heads = 32, headDim = 128, stride = heads * headDim;
        try (GpuBuffer q = gpu.allocate(4L * tokens * stride); GpuBuffer k = gpu.allocate(2L * ctx * stride); GpuBuffer v = gpu.allocate(2L * ctx * stride);
             GpuBuffer out = gpu.allocate(4L * tokens * stride)) {
            for (GpuBuffer b : new GpuBuffer[] {q, k, v}) gpu.zero(s, b);
            float scale = (float) (1 / Math.sqrt(headDim));
            gpu.causalAttention(s, q, k, v, out, heads, heads, headDim, stride, ctx, tokens, 0, scale, 0f, null, GGMLType.F16);
            long best = Long.MAX_VALUE;
            for (int i = 0; i < 10; i++) {
                try (GpuEvent from = gpu.recordTimed(s)) {
                    gpu.causalAttention(s, q, k, v, out, heads, heads, headDim, stride, ctx, tokens, 0, scale, 0f, null, GGMLType.F16);
                    try (GpuEvent to = gpu.recordTimed(s)) {
                        gpu.synchronize(to);
                        best = Math.min(best, gpu.elapsedNanos(from, to));
                    }
                }
            }
            return best / 1e6;
        }
    }

    private static double prefill(List<String> rows, Path model, String label, ModelOptions o, int tokens, int reps, double cpu, double peak) {
        try (Model m = Model.open(model, o)) {
            Benchmark.prefill(m, tokens, 1);
            Benchmark.Result r = Benchmark.prefill(m, tokens, reps);
            long layerParams = 0;   // the products of the layers (not the embedding lookup, not the head: it sees one token)
            for (var t : m.file().tensorInfos()) if (t.name().startsWith("blk.") && t.ne().length == 2) layerParams += t.elementCount();
            double tps = r.meanTokensPerSecond(), flops = 2.0 * layerParams * tps / 1e12;
            rows.add(String.format(Locale.ROOT, "| %s | %d | %.1f ms | %.0f ± %.0f t/s%s | %s |", label, tokens, 1e3 * tokens / tps, tps, r.stdTokensPerSecond(),
                    cpu > 0 ? String.format(Locale.ROOT, " (%.1f× CPU)", tps / cpu) : "", peak > 0 && cpu > 0 ? String.format(Locale.ROOT, "%.0f%%", 100 * flops / peak) : ""));
            System.err.println(rows.getLast());
            return tps;
        } catch (Exception | Error e) {
            rows.add(String.format(Locale.ROOT, "| %s | %d | failed: %s | | |", label, tokens, String.valueOf(e.getMessage()).replace('|', '/')));
            System.err.println(rows.getLast());
            return -1;
        }
    }
}
