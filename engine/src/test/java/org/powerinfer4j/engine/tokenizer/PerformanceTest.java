package org.powerinfer4j.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Tokenizing is O(n log n) and never hangs. These are guards with generous timeouts (an O(n²) merge loop would
 * blow them by orders of magnitude), not benchmarks: the printed times are informational, machines here are
 * shared and noisy. Measured: 100 KB in 10–130 ms, 10 MB in 0.5–2.5 s.
 */
class PerformanceTest {
    /** The .inp vectors (all scripts, emoji, digits, whitespace runs) repeated to {@code chars}. */
    static String corpus(int chars) {
        StringBuilder sb = new StringBuilder(chars + 2048);
        List<VocabTestVectors.Case> cases = VocabTestVectors.cases("vocab/ggml-vocab-llama-spm.gguf");
        for (int i = 0; sb.length() < chars; i++) sb.append(cases.get(i % cases.size()).text()).append(i % 7 == 0 ? "\n" : " ");
        return sb.substring(0, chars);
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama-spm", "gpt-2", "deepseek-coder", "deepseek-llm", "starcoder"})
    @Timeout(20)
    void hundredKilobytesTokenizeWithoutQuadraticBlowUp(String name) {
        Tokenizer t = VocabTestVectors.tokenizer("vocab/ggml-vocab-" + name + ".gguf");
        String text = corpus(100_000);
        int[] ids = null;
        long ms = Long.MAX_VALUE;
        for (int run = 0; run < 3; run++) { // best of three: the first run includes JIT warm-up
            long t0 = System.nanoTime();
            ids = t.encode(text, false, false);
            ms = Math.min(ms, (System.nanoTime() - t0) / 1_000_000);
        }
        System.out.printf("%s: 100 KB -> %d tokens in %d ms%n", name, ids.length, ms);
        assertThat(t.decode(ids, false)).hasSizeGreaterThan(90_000);
    }

    @Test
    @Timeout(60)
    void tenMegabytePromptFinishes() {
        String text = corpus(10_000_000);
        for (String name : new String[] {"llama-spm", "gpt-2"}) {
            Tokenizer t = VocabTestVectors.tokenizer("vocab/ggml-vocab-" + name + ".gguf");
            long t0 = System.nanoTime();
            int[] ids = t.encode(text, true, true);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("%s: 10 MB -> %d tokens in %d ms%n", name, ids.length, ms);
            assertThat(ids.length).isGreaterThan(5_000_000);
        }
    }

    @Test
    @Timeout(30)
    void pathologicalRunsStayLinear() {
        // long runs of one character class: the regex paths must neither backtrack quadratically (200 K squared
        // steps would not finish) nor overflow the stack
        String[] runs = {" ".repeat(200_000) + "x", "   7".repeat(50_000), "7".repeat(200_000), "a".repeat(200_000),
                "!?".repeat(100_000), "\n \n".repeat(60_000), "\u00a0".repeat(100_000) + "1"};
        for (String name : new String[] {"gpt-2", "deepseek-coder", "deepseek-llm", "starcoder", "llama-spm"}) {
            Tokenizer t = VocabTestVectors.tokenizer("vocab/ggml-vocab-" + name + ".gguf");
            for (String r : runs) assertThat(t.decode(t.encode(r, false, false), false)).as(name).isEqualTo(r);
        }
    }
}
