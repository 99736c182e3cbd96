package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Logits are the same bits for any thread count and whether the kernels run interpreted or compiled: checked on a
 * 110m-shape SwiGLU model (every product on the pool) cold and after warm-up at 1, 2 and 3 threads, and on a small
 * model in a second JVM that only interprets ({@code -Xint}) and one that stops at C1.
 */
class DeterminismTest {
    private static final int PROMPT = 8, DECODE = 24;

    @Test
    void sameLogitsForAnyThreadCountColdOrWarm() {
        assertSameForAnyThreadCount(GeneratedModels.llama110m());
    }

    /** The sparse FFN (predictor, row-sparse products balanced from a shared counter, column-sliced axpy) too. */
    @Test
    void sparseModelGivesTheSameLogitsForAnyThreadCount() {
        assertSameForAnyThreadCount(GeneratedModels.sparseRelu());
    }

    private static void assertSameForAnyThreadCount(Path p) {
        int[] script = script(512, 9);
        List<float[]> cold = run(p, 2, script);        // the first pass of this JVM over these kernels at this shape
        // warm-up: enough passes that C2 compiles the kernels (a pass is ~100 kernel calls per layer)
        for (int i = 0; i < 6; i++) assertSame(run(p, 2, script), cold, "warm-up pass " + i + ", 2 threads");
        for (int threads : new int[] {1, 2, 3}) assertSame(run(p, threads, script), cold, threads + " threads, warm");
    }

    @Test
    void interpretedAndC1OnlyJvmsGiveTheCompiledBits() throws Exception {
        Path p = GeneratedModels.smallSwiglu();
        int[] script = script(512, 3);
        List<float[]> here = null;
        for (int i = 0; i < 20; i++) here = run(p, 2, script);   // compiled by now
        String want = LogitsProbe.digest(here);
        for (String mode : new String[] {"-Xint", "-XX:TieredStopAtLevel=1"}) {
            assertThat(probe(mode, p, script)).as("logit bits in a JVM with %s", mode).isEqualTo(want);
        }
    }

    private static String probe(String mode, Path model, int[] script) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                mode, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx512m",
                "-cp", System.getProperty("java.class.path")));
        // the kernel choices of this JVM (an execution's -D flags), so the probe runs the same kernels
        for (String key : new String[] {"powerinfer4j.vector.bits", "powerinfer4j.vector", "powerinfer4j.matmul.broadcast"}) {
            String v = System.getProperty(key);
            if (v != null) cmd.add(1, "-D" + key + "=" + v);
        }
        cmd.add(LogitsProbe.class.getName());
        cmd.add(model.toString());
        for (int t : script) cmd.add(Integer.toString(t));
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes()).strip();
        assertThat(proc.waitFor(5, TimeUnit.MINUTES)).isTrue();
        assertThat(proc.exitValue()).as(out).isZero();
        String[] lines = out.split("\n");
        return lines[lines.length - 1];
    }

    static int[] script(int vocab, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] s = new int[PROMPT + DECODE];
        for (int i = 0; i < s.length; i++) s[i] = 3 + r.nextInt(vocab - 3);
        return s;
    }

    /** A fresh model with {@code threads}; the script's first {@link #PROMPT} tokens as one chunk, then one at a time. */
    static List<float[]> run(Path model, int threads, int[] script) {
        try (Model m = Model.open(model, ModelOptions.defaults().withThreads(threads).withContextLength(64));
             Session s = m.newSession()) {
            List<float[]> out = new ArrayList<>();
            out.add(s.evaluate(java.util.Arrays.copyOf(script, PROMPT)));
            for (int j = PROMPT; j < script.length; j++) out.add(s.evaluate(script[j]));
            return out;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void assertSame(List<float[]> got, List<float[]> want, String what) {
        assertThat(got).hasSameSizeAs(want);
        for (int k = 0; k < got.size(); k++) {
            float maxDelta = 0;
            for (int v = 0; v < got.get(k).length; v++) maxDelta = Math.max(maxDelta, Math.abs(got.get(k)[v] - want.get(k)[v]));
            assertThat(got.get(k)).as("%s: logits after evaluation %d (max |Δ| %s)", what, k, maxDelta).isEqualTo(want.get(k));
        }
    }
}
