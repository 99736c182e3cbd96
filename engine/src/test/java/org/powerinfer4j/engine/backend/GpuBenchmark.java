package org.powerinfer4j.engine.backend;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Benchmark;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.generator.ModelShape;
import org.powerinfer4j.engine.model.generator.PlantedSparsity;
import org.powerinfer4j.engine.model.generator.RandomModelGenerator;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The GPU performance run of the GPU issue, for a machine with CUDA ({@code cuda-kernels/gpu-check.sh} runs it
 * after the tests): generates a 7B-shaped ReLU model ({@code llama-7b} dims, {@code -Dlayers} layers, default 4;
 * 90% planted sparsity with predictors) in Q4_0 and F16, and times decode side by side in one process:
 * CPU dense ({@code --sparse off}), CPU {@code predict}, hybrid predict with the FFN's hot neurons at 100/50/25%
 * of the FFN plus everything dense the placement puts on the device, and all layers dense on the GPU
 * ({@code -ngl all}). Prints a Markdown table (also to {@code OUT/gpu-bench.md}) with tok/s, speed-up over CPU
 * dense, and the hybrid overlap; then prompt processing (pp128) on the CPU and hybrid at 25% in chunks of 64 and 16,
 * with the hybrid FFN's dense batches and token by token.
 *
 * <pre>java ... -cp ... org.powerinfer4j.engine.backend.GpuBenchmark OUT_DIR [MODEL_DIR]</pre>
 */
public final class GpuBenchmark {
    private GpuBenchmark() {}

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args.length > 0 ? args[0] : "target/gpu-bench");
        Path models = Path.of(args.length > 1 ? args[1] : System.getProperty("java.io.tmpdir"));
        Files.createDirectories(out);
        Files.createDirectories(models);
        int layers = Integer.getInteger("layers", 4), tokens = Integer.getInteger("tokens", 32), reps = Integer.getInteger("reps", 3);
        int threads = Integer.getInteger("threads", Math.min(8, Runtime.getRuntime().availableProcessors()));
        GpuMode mode = GpuMode.valueOf(System.getProperty("gpu", "cuda").toUpperCase(Locale.ROOT));
        List<String> rows = new ArrayList<>();
        rows.add("| model | run | tok/s | × CPU dense | hybrid overlap | placement |");
        rows.add("|---|---|---:|---:|---:|---|");
        for (GGMLType type : new GGMLType[] {GGMLType.Q4_0, GGMLType.F16}) {
            Path model = models.resolve("relu7b-l" + layers + "-" + type.name().toLowerCase(Locale.ROOT) + ".powerinfer.gguf");
            if (!Files.isRegularFile(model)) {
                ModelShape s7 = ModelShape.preset("llama-7b");
                ModelShape shape = new ModelShape(s7.dim(), layers, s7.ff(), s7.heads(), s7.kvHeads(), false, 1024, s7.ropeFreqBase(), s7.rmsEps());
                RandomModelGenerator.Result r = new RandomModelGenerator(shape, type, TestData.file("vocab/ggml-vocab-llama-spm.gguf"))
                        .seed(7).threads(Runtime.getRuntime().availableProcessors()).sparseRelu(PlantedSparsity.Spec.defaults().withSparsity(0.9))
                        .write(model);
                System.err.printf(Locale.ROOT, "generated %s (%.1f s)%n", model, r.seconds());
            }
            ModelOptions base = ModelOptions.defaults().withThreads(threads).withContextLength(tokens + 16);
            profile(model, base);
            double dense = run(rows, model, type, "CPU dense (--sparse off)", base.withSparseMode(SparseMode.OFF), tokens, reps, -1);
            run(rows, model, type, "CPU predict", base.withSparseMode(SparseMode.PREDICT), tokens, reps, dense);
            long[] budget = budgets(model, tokens);
            String[] share = {"100%", "50%", "25%"};
            for (int i = 0; i < 3; i++)
                run(rows, model, type, "hybrid predict, " + share[i] + " of FFN hot", base.withSparseMode(SparseMode.PREDICT)
                        .withGpu(GpuOptions.budget(mode, budget[i])), tokens, reps, dense);
            run(rows, model, type, "all layers on the GPU (--sparse off -ngl " + (layers + 1) + ")",
                    base.withSparseMode(SparseMode.OFF).withGpu(GpuOptions.layers(mode, layers + 1)), tokens, reps, dense);
            // prompts (chunks of -b 64): the hybrid FFN's dense batches against the same placement token by token
            int pp = Integer.getInteger("promptTokens", 128);
            ModelOptions prompt = base.withContextLength(pp + 16).withSparseMode(SparseMode.PREDICT);
            double cpu = prompt(rows, model, type, "CPU predict, pp" + pp, prompt, pp, reps, -1);
            // chunks of 64 and of 16 (where the dense batches' F16 dequantization weighs most), each dense and token by token:
            // where -Dpowerinfer4j.gpu.hybridDenseFrom's crossover lies on this device
            for (int b : new int[] {64, 16})
                for (boolean gemms : new boolean[] {true, false}) {
                    System.setProperty("powerinfer4j.gpu.hybridDenseFrom", gemms ? "1" : String.valueOf(Integer.MAX_VALUE));
                    try {
                        prompt(rows, model, type, "hybrid predict, 25% of FFN hot, pp" + pp + " -b " + b + ", " + (gemms ? "dense batches" : "token by token"),
                                prompt.withBatchSize(b).withGpu(GpuOptions.budget(mode, budget[2])), pp, reps, cpu);
                    } finally {
                        System.clearProperty("powerinfer4j.gpu.hybridDenseFrom");
                    }
                }
        }
        try (PrintStream p = new PrintStream(Files.newOutputStream(out.resolve("gpu-bench.md")))) {
            p.printf("threads %d, %d decode tokens × %d runs, %s%n%n", threads, tokens, reps, mode);
            rows.forEach(p::println);
        }
        rows.forEach(System.out::println);
    }

    /**
     * Activation statistics next to the model ({@code .activations.gguf}, which the hybrid placement reads), from
     * 256 tokens of random ids through the dense model: the planted power law decides which neurons are hot.
     */
    private static void profile(Path model, ModelOptions base) throws Exception {
        String name = model.getFileName().toString().replaceAll("\\.gguf$", "");
        Path stats = model.resolveSibling(name + ".activations.gguf");
        if (Files.isRegularFile(stats)) return;
        try (Model m = Model.open(model, base.withSparseMode(SparseMode.OFF).withContextLength(80))) {
            java.util.Random r = new java.util.Random(11);
            List<int[]> chunks = new ArrayList<>();
            for (int c = 0; c < 4; c++) chunks.add(r.ints(64, 3, m.config().vocabSize()).toArray());
            org.powerinfer4j.engine.offline.ActivationProfiler.profile(m, chunks, 0f, (done, total, ns) -> {}).write(stats);
        }
    }

    /** Budgets holding the attention blocks, everything else the FFN placement fixes, and 100%, 50%, 25% of the FFN neurons. */
    private static long[] budgets(Path model, int tokens) throws Exception {
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            GpuFootprint fp = HybridPlacement.footprint(ModelWeights.load(f, c), 64);
            long fixed = fp.workspace();
            for (GpuFootprint.Item it : fp.fixedItems()) fixed += it.bytes();
            for (long o : fp.layerOverhead()) fixed += o;
            long ffn = fp.allNeuronBytes();
            ModelWeights w = ModelWeights.load(f, c);
            for (int l = 0; l < c.layers(); l++) fixed += GpuLayers.attentionBytes(org.powerinfer4j.engine.model.GraphBuilder.build(c, w), w, l, c, tokens + 16);   // attention + KV go first
            return new long[] {fixed + ffn + (1 << 20), fixed + ffn / 2, fixed + ffn / 4};
        }
    }

    /** Prompt tokens per second (the ratio column against {@code cpu}, the CPU's prompt rate). */
    private static double prompt(List<String> rows, Path model, GGMLType type, String label, ModelOptions o, int tokens, int reps, double cpu) {
        try (Model m = Model.open(model, o)) {
            Benchmark.prefill(m, tokens, 1);
            Benchmark.Result r = Benchmark.prefill(m, tokens, reps);
            HybridFeedForward h = m.hybridFeedForward();
            String overlap = h == null ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * h.overlapStats().snapshot().overlap());
            rows.add(String.format(Locale.ROOT, "| %s | %s | %.1f ± %.1f | %s (of CPU predict) | %s | |", type, label, r.meanTokensPerSecond(), r.stdTokensPerSecond(),
                    cpu > 0 ? String.format(Locale.ROOT, "%.2f×", r.meanTokensPerSecond() / cpu) : "1.00×", overlap));
            System.err.println(rows.getLast());
            return r.meanTokensPerSecond();
        } catch (Exception | Error e) {
            rows.add(String.format(Locale.ROOT, "| %s | %s | failed: %s | | | |", type, label, String.valueOf(e.getMessage()).replace('|', '/')));
            System.err.println(rows.getLast());
            return -1;
        }
    }

    private static double run(List<String> rows, Path model, GGMLType type, String label, ModelOptions o, int tokens, int reps, double dense) {
        try (Model m = Model.open(model, o)) {
            Benchmark.decode(m, Math.min(8, tokens), 1);                // JIT and device warm-up
            Benchmark.Result r = Benchmark.decode(m, tokens, reps);
            HybridFeedForward h = m.hybridFeedForward();
            String overlap = h == null ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * h.overlapStats().snapshot().overlap());
            String placement = m.placementSummary().isEmpty() ? "CPU" : String.join(" / ", m.placementSummary().strip().lines().toList()).replace('|', '/');
            rows.add(String.format(Locale.ROOT, "| %s | %s | %.2f ± %.2f | %s | %s | %s |", type, label, r.meanTokensPerSecond(),
                    r.stdTokensPerSecond(), dense > 0 ? String.format(Locale.ROOT, "%.2f×", r.meanTokensPerSecond() / dense) : "1.00×", overlap, placement));
            System.err.println(rows.get(rows.size() - 1));
            return r.meanTokensPerSecond();
        } catch (Exception | Error e) {
            rows.add(String.format(Locale.ROOT, "| %s | %s | failed: %s | | | |", type, label, String.valueOf(e.getMessage()).replace('|', '/')));
            System.err.println(rows.get(rows.size() - 1));
            return -1;
        }
    }
}
