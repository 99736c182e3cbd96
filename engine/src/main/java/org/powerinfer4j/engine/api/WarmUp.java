package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * A throwaway pass over the model so that the JIT compiles its kernels before the first real request. In a fresh JVM
 * the Vector API kernels run as plain Java (boxed vectors) until C2 has compiled them, seconds into a run on two
 * cores; JDK 25's AOT cache keeps class loading and profiles but no compiled code. Short generations — a prompt (the
 * matrix–matrix kernels) and decode steps (the mat-vec kernels), repeated for about 3 s — through this model's own
 * weights, types and FFN mode reach the compile thresholds on the same code paths that requests take, like llama.cpp's start-up warm-up.
 * The results are thrown away: compiled and interpreted kernels give the same bits, so nothing later changes.
 */
final class WarmUp {
    static final int MAX_ROUNDS = 8, PROMPT_TOKENS = 8, DECODE_TOKENS = 8;
    /**
     * Rounds start until this much time has passed: on a 110m model C2 needs about 3 s of one core of two for the
     * kernels, and rounds run fast once it has them; on a 7B model the first round alone takes that long, and C2's
     * thresholds are passed within its first token.
     */
    static final long BUDGET_NANOS = 3_000_000_000L;

    private WarmUp() {}

    /** Runs the warm-up; returns its wall time in milliseconds. */
    static long run(Model model) {
        long t0 = System.nanoTime();
        int vocab = model.config().vocabSize();
        int ctx = Math.min(model.contextLength(), PROMPT_TOKENS + DECODE_TOKENS + 1);
        int promptLength = Math.min(PROMPT_TOKENS, ctx - DECODE_TOKENS - 1);
        if (promptLength < 1) return 0;   // a context this small has nothing to warm
        int[] prompt = new int[promptLength];
        for (int i = 0; i < prompt.length; i++) prompt[i] = (int) ((1L + i * 7919L) % vocab);   // spread over the vocabulary
        GenerationParams p = GenerationParams.defaults().withMaxTokens(DECODE_TOKENS).withSampling(SamplingParams.GREEDY)
                .withStopAtEndOfGeneration(false);
        for (int r = 0; r < MAX_ROUNDS && (r == 0 || System.nanoTime() - t0 < BUDGET_NANOS); r++) {
            // a session with a context of its own size: a big model's full-context KV cache is not allocated for this
            try (Session s = new Session(model, ctx)) {
                s.generate(prompt, p, (id, text) -> true);
            }
        }
        return (System.nanoTime() - t0) / 1_000_000;
    }
}
