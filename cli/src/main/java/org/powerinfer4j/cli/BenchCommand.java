package org.powerinfer4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.powerinfer4j.engine.api.Benchmark;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.sparse.SparsityStats;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench}: llama-bench's tests. {@code -o md} prints our table (model, size, params, backend, threads, test,
 * t/s); {@code -o json} and {@code -o csv} print llama-bench's own fields under its names
 * ({@link #LLAMA_BENCH_FIELDS}), so our rows sit next to {@code llama-bench -o json|csv} output in the same tools;
 * our own fields follow, prefixed {@code pi4j_}.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmark prefill (ppN) and decode (tgN) like llama-bench.")
public final class BenchCommand implements Callable<Integer> {
    /** llama-bench's {@code -o json} fields, in its order; its csv has all but the two sample arrays. */
    static final List<String> LLAMA_BENCH_FIELDS = List.of(
            "build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type", "model_size",
            "model_n_params", "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll", "type_k", "type_v",
            "n_gpu_layers", "split_mode", "main_gpu", "no_kv_offload", "flash_attn", "tensor_split", "use_mmap", "embeddings",
            "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts");

    /** Our fields, after llama-bench's (null where they do not apply: no sparsity statistics, no GPU). */
    static final List<String> PI4J_FIELDS = List.of(
            "pi4j_test", "pi4j_n_parallel", "pi4j_sparse", "pi4j_ffn_computed", "pi4j_backend", "pi4j_gpu_overlap", "pi4j_gpu_budget_bytes");

    /** The csv header: llama-bench's (its csv leaves out samples_ns and samples_ts), then ours. */
    static final List<String> CSV_FIELDS = Stream.concat(
            LLAMA_BENCH_FIELDS.stream().filter(f -> !f.startsWith("samples_")), PI4J_FIELDS.stream()).toList();

    static final List<String> FORMATS = List.of("md", "csv", "json");

    @Mixin ModelOptionsMixin model;

    @Option(names = {"-p", "--n-prompt"}, split = ",", defaultValue = "512", description = "Prompt sizes for pp tests (default: ${DEFAULT-VALUE}; 0 = none).")
    List<Integer> prompts;

    @Option(names = {"-n", "--n-gen"}, split = ",", defaultValue = "128", description = "Generation lengths for tg tests (default: ${DEFAULT-VALUE}; 0 = none).")
    List<Integer> gens;

    @Option(names = {"-np", "--parallel"}, split = ",", defaultValue = "1",
            description = "Concurrent decode streams for the tg tests (default: ${DEFAULT-VALUE}); N > 1 reports the total t/s of N sessions decoding at once (batched passes, like llama-batched-bench's S_TG).")
    List<Integer> parallel;

    @Option(names = {"-r", "--repetitions"}, defaultValue = "5", description = "Timed repetitions per test (default: ${DEFAULT-VALUE}); untimed warm-up runs come first (at least 2 s, until the JIT is done).")
    int reps;

    @Option(names = {"-o", "--output"}, defaultValue = "md",
            description = "md, csv or json (default: ${DEFAULT-VALUE}); csv and json use llama-bench's field names, then ours (pi4j_*).")
    String output;

    /** One test's result: what the md table shows, and the llama-bench fields (then ours) for json and csv. */
    record Row(String model, long sizeBytes, long params, String backend, int threads, String sparse, Double ffnComputed,
               Long gpuBudgetBytes, String test, double tpsMean, double tpsStd, Map<String, Object> fields) {}

    @Override
    public Integer call() throws Exception {
        if (!FORMATS.contains(output)) throw new IllegalArgumentException("-o must be md, csv or json, not '" + output + "'");
        if (reps < 1) throw new IllegalArgumentException("-r must be >= 1");
        for (int np : parallel) if (np < 1) throw new IllegalArgumentException("-np must be >= 1, is " + np);
        model.allowThreadList = true;
        List<Integer> threads = !model.threadCounts().isEmpty() ? model.threadCounts() : List.of(model.toOptions().threads());
        List<Row> rows = new ArrayList<>();
        int maxTokens = 0;
        for (int p : prompts) maxTokens = Math.max(maxTokens, p);
        for (int g : gens) maxTokens = Math.max(maxTokens, g);
        Path path = model.checkedPath();
        for (int t : threads) {
            ModelOptions o = model.toOptions().withThreads(t);
            if (o.contextLength() == 0 || o.contextLength() < maxTokens) o = o.withContextLength(Math.max(maxTokens, 16));
            try (Model m = Model.open(path, o)) {
                if (!m.placementSummary().isEmpty()) System.err.println(m.placementSummary().strip());
                for (int p : prompts)
                    if (p > 0) {
                        Instant start = Instant.now();   // llama-bench's test_time: when the test began
                        rows.add(row(m, path, t, p, 0, 1, start, Benchmark.prefill(m, p, reps)));
                    }
                for (int g : gens)
                    if (g > 0) for (int np : parallel) {
                        Instant start = Instant.now();
                        rows.add(row(m, path, t, 0, g, np, start, Benchmark.decodeParallel(m, g, np, reps)));
                    }
                // the overlap over everything just measured (the summary above was printed before any token)
                if (m.hybridFeedForward() != null) System.err.println(m.hybridFeedForward().overlapStats().snapshot().format());
            }
        }
        print(rows);
        return 0;
    }

    private Row row(Model m, Path path, int threads, int nPrompt, int nGen, int streams, Instant start, Benchmark.Result r) {
        long bytes = m.file().tensorInfos().stream().mapToLong(ti -> ti.byteSize()).sum();
        long params = m.file().tensorInfos().stream().mapToLong(ti -> ti.elementCount()).sum();
        String sparse = m.sparseMode().name().toLowerCase(Locale.ROOT);
        SparsityStats st = m.sparsityStats();
        Double ffnComputed = st == null ? null : st.meanPredictedFraction();
        if (st != null) st.reset();
        var hybrid = m.hybridFeedForward();
        var layers = m.gpuLayers();
        boolean deviceLayers = layers != null && !layers.failed();
        String backend = hybrid != null ? "CPU+" + m.options().gpu().mode().name().toLowerCase()
                : deviceLayers ? "CPU+" + m.options().gpu().mode().name().toLowerCase() + " ngl=" + layers.deviceLayers() + (layers.outputHeadOnDevice() ? "+head" : "")
                : "CPU";
        Double overlap = hybrid == null ? null : hybrid.overlapStats().snapshot().overlap();
        // the budget given, or the one planned with when it was defaulted from the device's free memory
        Long budget = hybrid == null ? null : m.options().gpu().hasBudget() ? Long.valueOf(m.options().gpu().vramBudget())
                : hybrid.placement().plan() != null ? Long.valueOf(hybrid.placement().plan().budget()) : null;
        String device = hybrid != null ? hybrid.deviceName() : deviceLayers ? layers.summary() : null;
        String gpuInfo = gpuInfo(device);
        String kvType = m.options().kvCacheType().name().toLowerCase(Locale.ROOT);

        // llama-bench's values for a run like ours; settings we do not have get what llama-bench prints by default
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("build_commit", BUILD);
        f.put("build_number", 0);
        f.put("cpu_info", cpuInfo());
        f.put("gpu_info", gpuInfo);
        f.put("backends", CUDA_NAME.matcher(device == null ? "" : device).find() ? "CUDA" : "CPU");
        f.put("model_filename", path.toString());
        f.put("model_type", modelType(m));
        f.put("model_size", bytes);
        f.put("model_n_params", params);
        f.put("n_batch", m.options().batchSize());     // -b: prompt tokens per forward chunk
        f.put("n_ubatch", m.options().batchSize());
        f.put("n_threads", threads);
        f.put("cpu_mask", "0x0");
        f.put("cpu_strict", false);
        f.put("poll", 50);
        f.put("type_k", kvType);
        f.put("type_v", kvType);
        f.put("n_gpu_layers", m.options().gpu().gpuLayers());   // -ngl as given (pi4j_backend says what was placed)
        f.put("split_mode", "layer");
        f.put("main_gpu", 0);
        f.put("no_kv_offload", false);
        f.put("flash_attn", false);
        f.put("tensor_split", "0.00");
        f.put("use_mmap", true);
        f.put("embeddings", false);
        f.put("n_prompt", nPrompt);
        f.put("n_gen", nGen);
        f.put("n_depth", 0);
        f.put("test_time", start.truncatedTo(ChronoUnit.SECONDS).toString());
        long[] ns = r.samplesNs();
        f.put("avg_ns", meanNs(ns));
        f.put("stddev_ns", stddevNs(ns));
        f.put("avg_ts", r.meanTokensPerSecond());     // tokens of all -np streams per second
        f.put("stddev_ts", r.stdTokensPerSecond());
        f.put("samples_ns", ns.clone());
        f.put("samples_ts", r.samples().clone());
        f.put("pi4j_test", r.test());
        f.put("pi4j_n_parallel", streams);
        f.put("pi4j_sparse", sparse);
        f.put("pi4j_ffn_computed", ffnComputed);
        f.put("pi4j_backend", backend);
        f.put("pi4j_gpu_overlap", overlap);
        f.put("pi4j_gpu_budget_bytes", budget);
        return new Row(describe(m), bytes, params, backend, threads, sparse, ffnComputed, budget, r.test(),
                r.meanTokensPerSecond(), r.stdTokensPerSecond(), f);
    }

    /** What llama-bench's build_commit holds for us: our name and version (no commit is built into the jar). */
    static final String BUILD = Main.class.getAnnotation(Command.class).version()[0];

    private static final Pattern CUDA_NAME = Pattern.compile("cuda:\\d+ \\((.+?), sm_\\w+\\)");

    /** llama-bench's gpu_info: the device's description ("NVIDIA H200"); empty when nothing ran on one. */
    static String gpuInfo(String device) {
        if (device == null) return "";
        Matcher cuda = CUDA_NAME.matcher(device);
        if (cuda.find()) return cuda.group(1);
        return device.contains("simulated") ? "simulated" : "";
    }

    private static String cpuInfo;

    /** llama-bench's cpu_info on Linux: /proc/cpuinfo's model name. */
    static synchronized String cpuInfo() {
        if (cpuInfo == null) {
            String name = null;
            try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
                name = lines.filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst().orElse(null);
            } catch (IOException | RuntimeException e) {
                // not Linux: the architecture is all we know
            }
            cpuInfo = name != null && !name.isEmpty() ? name : System.getProperty("os.arch", "unknown");
        }
        return cpuInfo;
    }

    /** llama-bench's avg_ns: the integer mean. */
    static long meanNs(long[] ns) {
        if (ns.length == 0) return 0;
        long sum = 0;
        for (long v : ns) sum += v;
        return sum / ns.length;
    }

    /** llama-bench's stddev_ns: the sample standard deviation, truncated. */
    static long stddevNs(long[] ns) {
        if (ns.length <= 1) return 0;
        double mean = 0;
        for (long v : ns) mean += v;
        mean /= ns.length;
        double var = 0;
        for (long v : ns) var += (v - mean) * (v - mean);
        return (long) Math.sqrt(var / (ns.length - 1));
    }

    static String describe(Model m) {
        return m.config().architecture() + " " + sizeLabel(m) + " " + dominantType(m);
    }

    /**
     * llama-bench's model_type: architecture, size, and the file type as llama.cpp names it ("Q4_K - Medium"); without
     * general.file_type, llama.cpp's guess from the dominant tensor type, marked "(guessed)" as it marks it.
     */
    static String modelType(Model m) {
        String ftype = fileTypeName(m.file().getInt("general.file_type", -1));
        if (ftype == null) {
            String dominant = dominantType(m);
            String guessed = fileTypeName(guessedFileType(dominant));
            ftype = (guessed != null ? guessed : dominant) + " (guessed)";
        }
        return m.config().architecture() + " " + sizeLabel(m) + " " + ftype;
    }

    /** The llama file type llama.cpp guesses for a file whose tensors are mostly {@code ggmlType}; -1 for none. */
    static int guessedFileType(String ggmlType) {
        return switch (ggmlType) {
            case "F32" -> 0;
            case "F16" -> 1;
            case "Q4_0" -> 2;
            case "Q4_1" -> 3;
            case "Q8_0" -> 7;
            case "Q5_0" -> 8;
            case "Q5_1" -> 9;
            case "Q2_K" -> 10;
            case "Q3_K" -> 12;
            case "Q4_K" -> 15;
            case "Q5_K" -> 17;
            case "Q6_K" -> 18;
            case "IQ4_NL" -> 25;
            case "IQ4_XS" -> 30;
            case "BF16" -> 32;
            default -> -1;
        };
    }

    private static String sizeLabel(Model m) {
        long params = m.file().tensorInfos().stream().mapToLong(ti -> ti.elementCount()).sum();
        return params >= 1e9 ? String.format(Locale.ROOT, "%.1fB", params / 1e9) : params >= 1e6 ? String.format(Locale.ROOT, "%.0fM", params / 1e6)
                : String.format(Locale.ROOT, "%.0fK", params / 1e3);
    }

    /** llama.cpp's llama_model_ftype_name for general.file_type; null for one it does not name. */
    static String fileTypeName(int ftype) {
        return switch (ftype) {
            case 0 -> "all F32";
            case 1 -> "F16";
            case 2 -> "Q4_0";
            case 3 -> "Q4_1";
            case 7 -> "Q8_0";
            case 8 -> "Q5_0";
            case 9 -> "Q5_1";
            case 10 -> "Q2_K - Medium";
            case 11 -> "Q3_K - Small";
            case 12 -> "Q3_K - Medium";
            case 13 -> "Q3_K - Large";
            case 14 -> "Q4_K - Small";
            case 15 -> "Q4_K - Medium";
            case 16 -> "Q5_K - Small";
            case 17 -> "Q5_K - Medium";
            case 18 -> "Q6_K";
            case 21 -> "Q2_K - Small";
            case 25 -> "IQ4_NL - 4.5 bpw";
            case 30 -> "IQ4_XS - 4.25 bpw";
            case 32 -> "BF16";
            default -> null;
        };
    }

    private static String dominantType(Model m) {
        Map<String, Long> byType = new LinkedHashMap<>();
        m.file().tensorInfos().forEach(ti -> byType.merge(ti.type().name(), ti.byteSize(), Long::sum));
        return byType.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse("?");
    }

    private void print(List<Row> rows) throws Exception {
        switch (output) {
            case "json" -> System.out.println(json(rows.stream().map(Row::fields).toList()));
            case "csv" -> System.out.print(csv(rows.stream().map(Row::fields).toList()));
            case "md" -> {
                System.out.println("| model | size | params | backend | threads | sparse | ffn computed | gpu budget | test | t/s |");
                System.out.println("| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |");
                for (Row r : rows)
                    System.out.printf(Locale.ROOT, "| %s | %.2f MiB | %.2f M | %s | %d | %s | %s | %s | %s | %.2f ± %.2f |%n", r.model(),
                            r.sizeBytes() / 1048576.0, r.params() / 1e6, r.backend(), r.threads(), r.sparse(),
                            r.ffnComputed() == null ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * r.ffnComputed()),
                            r.gpuBudgetBytes() == null ? "-" : String.format(Locale.ROOT, "%.2f GiB", r.gpuBudgetBytes() / 1073741824.0),
                            r.test(), r.tpsMean(), r.tpsStd());
            }
            default -> throw new IllegalArgumentException("-o must be md, csv or json, not '" + output + "'");
        }
    }

    /** llama-bench's -o json: an array of objects, one per test. */
    static String json(List<Map<String, Object>> rows) throws IOException {
        return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(rows);
    }

    /**
     * llama-bench's -o csv: the header unquoted, then every value in double quotes (a quote doubled), booleans as 0/1
     * and floats with six decimals, as its {@code std::to_string} writes them; null is an empty value.
     */
    static String csv(List<Map<String, Object>> rows) {
        StringBuilder sb = new StringBuilder(String.join(",", CSV_FIELDS)).append('\n');
        for (Map<String, Object> r : rows)
            sb.append(CSV_FIELDS.stream().map(f -> '"' + csvValue(r.get(f)).replace("\"", "\"\"") + '"').collect(Collectors.joining(","))).append('\n');
        return sb.toString();
    }

    private static String csvValue(Object v) {
        if (v == null) return "";
        if (v instanceof Boolean b) return b ? "1" : "0";
        if (v instanceof Double d) return String.format(Locale.ROOT, "%f", d);
        return v.toString();
    }
}
