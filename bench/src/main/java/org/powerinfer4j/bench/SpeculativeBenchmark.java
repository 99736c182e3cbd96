package org.powerinfer4j.bench;

import java.nio.file.Path;
import java.util.Arrays;
import org.powerinfer4j.engine.api.*;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * Plain vs speculative greedy decoding, interleaved in one JVM after a warm-up, best of R rounds (the machine is
 * shared, so the best round is the least disturbed); fails if any speculative output differs from plain. Usage:
 *   java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar org.powerinfer4j.bench.SpeculativeBenchmark TARGET [DRAFT|-] [N] [ROUNDS]
 * Without a draft: plain vs prompt lookup (8 drafts) on a repetitive prompt; with one: plain vs the draft at 4 and 8.
 */
public final class SpeculativeBenchmark {
    public static void main(String[] a) throws Exception {
        String prompt = "The quick brown fox jumps over the lazy dog. ".repeat(4).strip();
        int n = a.length > 2 ? Integer.parseInt(a[2]) : 64, rounds = a.length > 3 ? Integer.parseInt(a[3]) : 3;
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(512);
        try (Model m = Model.open(Path.of(a[0]), o); Model d = a.length > 1 && !a[1].equals("-") ? Model.open(Path.of(a[1]), o) : null) {
            GenerationParams plain = new GenerationParams(n, SamplingParams.GREEDY, false);
            GenerationParams[] modes = d == null ? new GenerationParams[]{plain, plain.withSpeculation(Speculation.promptLookup(8))}
                    : new GenerationParams[]{plain, plain.withSpeculation(Speculation.draft(d, 4)), plain.withSpeculation(Speculation.draft(d, 8))};
            String[] names = d == null ? new String[]{"plain", "lookup8"} : new String[]{"plain", "draft4", "draft8"};
            double[] best = new double[modes.length];
            int[] ref = null;
            for (int r = -1; r < rounds; r++)   // round -1: warm-up
                for (int i = 0; i < modes.length; i++) {
                    try (Session s = m.newSession()) {
                        GenerationResult g = s.generate(prompt, modes[i], null);
                        if (ref == null) ref = g.generatedTokens();
                        if (!Arrays.equals(ref, g.generatedTokens())) throw new AssertionError(names[i] + " output differs from plain");
                        if (r >= 0) best[i] = Math.max(best[i], g.generationTokensPerSecond());
                        if (r == rounds - 1)
                            System.out.printf("%-8s %6.2f tok/s (best of %d)  x%.2f  accepted %d/%d%n", names[i], best[i], rounds, best[i] / best[0],
                                    g.acceptedTokens(), g.draftedTokens());
                    }
                }
        }
    }
}
