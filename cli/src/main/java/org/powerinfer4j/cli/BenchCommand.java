package org.powerinfer4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.Benchmark;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.sparse.SparsityStats;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code bench}: llama-bench's tests and row shape (model, size, params, backend, threads, test, t/s). */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmark prefill (ppN) and decode (tgN) like llama-bench.")
public final class BenchCommand implements Callable<Integer> {
    @Mixin ModelOptionsMixin model;

    @Option(names = {"-p", "--n-prompt"}, split = ",", defaultValue = "512", description = "Prompt sizes for pp tests (default: ${DEFAULT-VALUE}; 0 = none).")
    List<Integer> prompts;

    @Option(names = {"-n", "--n-gen"}, split = ",", defaultValue = "128", description = "Generation lengths for tg tests (default: ${DEFAULT-VALUE}; 0 = none).")
    List<Integer> gens;

    @Option(names = {"-np", "--parallel"}, split = ",", defaultValue = "1",
            description = "Concurrent decode streams for the tg tests (default: ${DEFAULT-VALUE}); N > 1 reports the total t/s of N sessions decoding at once (batched passes, like llama-batched-bench's S_TG).")
    List<Integer> parallel;

    @Option(names = {"-r", "--repetitions"}, defaultValue = "5", description = "Timed repetitions per test (default: ${DEFAULT-VALUE}); one warm-up run is excluded.")
    int reps;

    @Option(names = {"-o", "--output"}, defaultValue = "md", description = "md, csv or json (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        if (reps < 1) throw new IllegalArgumentException("-r must be >= 1");
        for (int np : parallel) if (np < 1) throw new IllegalArgumentException("-np must be >= 1, is " + np);
        model.allowThreadList = true;
        List<Integer> threads = !model.threadCounts().isEmpty() ? model.threadCounts() : List.of(model.toOptions().threads());
        List<Map<String, Object>> rows = new ArrayList<>();
        int maxTokens = 0;
        for (int p : prompts) maxTokens = Math.max(maxTokens, p);
        for (int g : gens) maxTokens = Math.max(maxTokens, g);
        for (int t : threads) {
            ModelOptions o = model.toOptions().withThreads(t);
            if (o.contextLength() == 0 || o.contextLength() < maxTokens) o = o.withContextLength(Math.max(maxTokens, 16));
            try (Model m = Model.open(model.checkedPath(), o)) {
                if (!m.placementSummary().isEmpty()) System.err.println(m.placementSummary().strip());
                for (int p : prompts) if (p > 0) rows.add(row(m, t, Benchmark.prefill(m, p, reps)));
                for (int g : gens)
                    if (g > 0) for (int np : parallel) rows.add(row(m, t, Benchmark.decodeParallel(m, g, np, reps)));
                // the overlap over everything just measured (the summary above was printed before any token)
                if (m.hybridFeedForward() != null) System.err.println(m.hybridFeedForward().overlapStats().snapshot().format());
            }
        }
        print(rows);
        return 0;
    }

    private Map<String, Object> row(Model m, int threads, Benchmark.Result r) {
        ModelConfig c = m.config();
        Map<String, Object> row = new LinkedHashMap<>();
        long bytes = m.file().tensorInfos().stream().mapToLong(ti -> ti.byteSize()).sum();
        long params = m.file().tensorInfos().stream().mapToLong(ti -> ti.elementCount()).sum();
        row.put("model", describe(m));
        row.put("size_bytes", bytes);
        row.put("params", params);
        row.put("threads", threads);
        row.put("sparse", m.sparseMode().name().toLowerCase());
        SparsityStats st = m.sparsityStats();
        row.put("ffn_computed", st == null ? null : st.meanPredictedFraction());
        if (st != null) st.reset();
        var hybrid = m.hybridFeedForward();
        var layers = m.gpuLayers();
        row.put("backend", hybrid != null ? "CPU+" + m.options().gpu().mode().name().toLowerCase()
                : layers != null && !layers.failed() ? "CPU+" + m.options().gpu().mode().name().toLowerCase() + " ngl=" + layers.deviceLayers() + (layers.outputHeadOnDevice() ? "+head" : "")
                : "CPU");
        row.put("gpu_overlap", hybrid == null ? null : hybrid.overlapStats().snapshot().overlap());
        // the budget given, or the one planned with when it was defaulted from the device's free memory
        Long budget = hybrid == null ? null : m.options().gpu().hasBudget() ? Long.valueOf(m.options().gpu().vramBudget())
                : hybrid.placement().plan() != null ? Long.valueOf(hybrid.placement().plan().budget()) : null;
        row.put("gpu_budget_bytes", budget);
        row.put("test", r.test());
        row.put("tps_mean", r.meanTokensPerSecond());
        row.put("tps_std", r.stdTokensPerSecond());
        row.put("samples", r.samples());
        return row;
    }

    static String describe(Model m) {
        long params = m.file().tensorInfos().stream().mapToLong(ti -> ti.elementCount()).sum();
        String size = params >= 1e9 ? String.format(Locale.ROOT, "%.1fB", params / 1e9) : params >= 1e6 ? String.format(Locale.ROOT, "%.0fM", params / 1e6)
                : String.format(Locale.ROOT, "%.0fK", params / 1e3);
        return m.config().architecture() + " " + size + " " + dominantType(m);
    }

    private static String dominantType(Model m) {
        Map<String, Long> byType = new LinkedHashMap<>();
        m.file().tensorInfos().forEach(ti -> byType.merge(ti.type().name(), ti.byteSize(), Long::sum));
        return byType.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse("?");
    }

    private void print(List<Map<String, Object>> rows) throws Exception {
        switch (output) {
            case "json" -> System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(rows));
            case "csv" -> {
                System.out.println("model,size_bytes,params,backend,threads,sparse,ffn_computed,gpu_budget_bytes,test,tps_mean,tps_std");
                for (Map<String, Object> r : rows)
                    System.out.printf(Locale.ROOT, "\"%s\",%d,%d,%s,%d,%s,%s,%s,%s,%.3f,%.3f%n", r.get("model"), r.get("size_bytes"), r.get("params"),
                            r.get("backend"), r.get("threads"), r.get("sparse"), r.get("ffn_computed") == null ? "" : String.format(Locale.ROOT, "%.4f", (Double) r.get("ffn_computed")),
                            r.get("gpu_budget_bytes") == null ? "" : r.get("gpu_budget_bytes"), r.get("test"), r.get("tps_mean"), r.get("tps_std"));
            }
            case "md" -> {
                System.out.println("| model | size | params | backend | threads | sparse | ffn computed | gpu budget | test | t/s |");
                System.out.println("| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |");
                for (Map<String, Object> r : rows)
                    System.out.printf(Locale.ROOT, "| %s | %.2f MiB | %.2f M | %s | %d | %s | %s | %s | %s | %.2f ± %.2f |%n", r.get("model"),
                            ((Long) r.get("size_bytes")) / 1048576.0, ((Long) r.get("params")) / 1e6, r.get("backend"), r.get("threads"), r.get("sparse"),
                            r.get("ffn_computed") == null ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * (Double) r.get("ffn_computed")),
                            r.get("gpu_budget_bytes") == null ? "-" : String.format(Locale.ROOT, "%.2f GiB", (Long) r.get("gpu_budget_bytes") / 1073741824.0),
                            r.get("test"), r.get("tps_mean"), r.get("tps_std"));
            }
            default -> throw new IllegalArgumentException("unknown output format '" + output + "' (md, csv, json)");
        }
    }
}
