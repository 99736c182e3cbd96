package org.powerinfer4j.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.powerinfer4j.bench.peer.LlamaCppPeer;
import org.powerinfer4j.engine.api.Benchmark;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Prefill and decode of one GGUF, ours and llama.cpp's (a native llama-bench from bench/llamacpp/build.sh, else node-llama-cpp's
 * prebuilt binaries, see bench/node) side by side in
 * one run, so every figure comes with a ratio measured under the same machine conditions. Also reports decode
 * against the memory-bandwidth bound: bytes of weights read per token × tokens/s ÷ measured read bandwidth.
 *
 * <pre>java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar \
 *     org.powerinfer4j.bench.EndToEndBenchmark MODEL.gguf [-t 1,2] [-p 128] [-n 64] [-r 3] [--rounds 3] [--sparse off|exact|predict]</pre>
 *
 * The two engines alternate, per thread count, for {@code --rounds} rounds (ours {@code -r} repetitions, then
 * llama.cpp's), and the ratio column is the median of the per-round ratios with their range: on a shared machine a
 * slow phase then hits one round of both engines instead of all of one engine's repetitions.
 */
public final class EndToEndBenchmark {
    private EndToEndBenchmark() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: EndToEndBenchmark MODEL.gguf [-t 1,2] [-p 128] [-n 64] [-r 3] [--rounds 3] [--sparse MODE] [--no-peer]");
            System.exit(2);
        }
        Path model = Path.of(args[0]);
        List<Integer> threads = List.of(1, 2);
        int pp = 128, tg = 64, reps = 3, rounds = 3;
        SparseMode sparse = null;
        boolean peer = true;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "-t" -> threads = parseList(args[++i]);
                case "-p" -> pp = Integer.parseInt(args[++i]);
                case "-n" -> tg = Integer.parseInt(args[++i]);
                case "-r" -> reps = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--sparse" -> sparse = SparseMode.parse(args[++i]);
                case "--no-peer" -> peer = false;
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        LlamaCppPeer llama = peer ? LlamaCppPeer.locate() : null;
        String unavailable = llama == null ? "disabled (--no-peer)" : llama.unavailableReason();
        if (unavailable != null) System.err.println("llama.cpp peer unavailable: " + unavailable + " — reporting our figures only (native peer: bench/llamacpp/build.sh)");

        int maxThreads = threads.stream().mapToInt(Integer::intValue).max().orElse(1);
        double[] bandwidth = measureBandwidth(maxThreads);
        System.out.printf(Locale.ROOT, "# %s%n# read bandwidth: %.1f GB/s (1 thread), %.1f GB/s (%d threads)%n", model.getFileName(),
                bandwidth[0], bandwidth[1], maxThreads);
        if (unavailable == null)
            System.out.println("# peer: " + (llama.isNative() ? "native llama-bench (bench/llamacpp/build.sh)" : "node-llama-cpp prebuilt (bench/node; slower than a native build)"));
        System.out.println("| threads | test | ours t/s | llama.cpp t/s | ratio (median of rounds, range) | ours: % of bandwidth bound |");
        System.out.println("| ---: | --- | ---: | ---: | ---: | ---: |");
        for (int t : threads) {
            ModelOptions o = ModelOptions.defaults().withThreads(t).withContextLength(Math.max(pp, tg) + 8);
            if (sparse != null) o = o.withSparseMode(sparse);
            List<Double> ourPp = new ArrayList<>(), ourTg = new ArrayList<>(), theirPp = new ArrayList<>(), theirTg = new ArrayList<>();
            long bytesPerToken;
            try (Model m = Model.open(model, o)) {
                bytesPerToken = m.weights().bytesPerToken();
                for (int round = 0; round < Math.max(1, rounds); round++) {
                    ourPp.add(Benchmark.prefill(m, pp, reps).meanTokensPerSecond());
                    ourTg.add(Benchmark.decode(m, tg, reps).meanTokensPerSecond());
                    if (unavailable != null) continue;
                    LlamaCppPeer.Result theirs = llama.run(model, t, pp, tg, reps, Duration.ofMinutes(10));
                    if (!theirs.available()) {
                        System.err.println("llama.cpp run failed: " + theirs.reason());
                        continue;
                    }
                    theirPp.add(theirs.ppTps());
                    theirTg.add(theirs.tgTps());
                }
            }
            double bw = (t == 1 ? bandwidth[0] : bandwidth[1]) * 1e9;
            double bound = bw / bytesPerToken;
            row(t, "pp" + pp, ourPp, theirPp, Double.NaN);
            row(t, "tg" + tg, ourTg, theirTg, mean(ourTg) / bound);
        }
    }

    private static double mean(List<Double> xs) {
        return xs.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN);
    }

    private static void row(int threads, String test, List<Double> ours, List<Double> theirs, double boundFraction) {
        String ratio = "-";
        if (theirs.size() == ours.size() && !theirs.isEmpty()) {
            double[] r = new double[ours.size()];
            for (int i = 0; i < r.length; i++) r[i] = ours.get(i) / theirs.get(i);
            java.util.Arrays.sort(r);
            double median = r.length % 2 == 1 ? r[r.length / 2] : (r[r.length / 2 - 1] + r[r.length / 2]) / 2;
            ratio = String.format(Locale.ROOT, "%.2f (%.2f–%.2f)", median, r[0], r[r.length - 1]);
        }
        System.out.printf(Locale.ROOT, "| %d | %s | %.2f | %s | %s | %s |%n", threads, test, mean(ours),
                theirs.isEmpty() ? "-" : String.format(Locale.ROOT, "%.2f", mean(theirs)), ratio,
                Double.isNaN(boundFraction) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * boundFraction));
    }

    /** Read bandwidth with 1 and {@code threads} threads over a 1 GiB buffer (far larger than the caches). */
    static double[] measureBandwidth(int threads) {
        try (Arena arena = Arena.ofShared()) {
            long bytes = 1L << 30;
            MemorySegment s = arena.allocate(bytes, 4096);
            for (long o = 0; o < bytes; o += 4096) s.set(ValueLayout.JAVA_LONG, o, o);
            double one = BandwidthProbe.measure(s, 1);
            return new double[]{one, threads > 1 ? BandwidthProbe.measure(s, threads) : one};
        }
    }

    private static List<Integer> parseList(String s) {
        List<Integer> r = new ArrayList<>();
        for (String p : s.split(",")) r.add(Integer.parseInt(p.trim()));
        return r;
    }
}
