package org.powerinfer4j.engine.offline;

import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/** Calibration token sequences for profiling and predictor training; every sequence starts with BOS. */
public final class CalibrationCorpus {
    private CalibrationCorpus() {}

    /** The model's BOS id: from its tokenizer, else {@code tokenizer.ggml.bos_token_id}, else 1. */
    public static int bos(Model model) {
        Tokenizer t = model.tokenizer();
        if (t != null) return t.bosId();
        return model.file().getInt("tokenizer.ggml.bos_token_id", 1);
    }

    /**
     * Tokenizes {@code text} (no special-token parsing) and cuts it into chunks of at most {@code chunkLength}
     * tokens, each BOS followed by the next {@code chunkLength − 1} text tokens, stopping after {@code maxTokens}
     * tokens in all (≤ 0: no limit).
     */
    public static List<int[]> fromText(Model model, String text, int chunkLength, long maxTokens) {
        Tokenizer t = model.tokenizer();
        if (t == null) throw new ModelException("this model has no usable tokenizer, so text cannot be tokenized");
        return chunk(t.encode(text, false, false), t.bosId(), chunkLength, maxTokens);
    }

    /** Cuts {@code ids} (without BOS) into BOS-led chunks of at most {@code chunkLength} tokens. */
    public static List<int[]> chunk(int[] ids, int bos, int chunkLength, long maxTokens) {
        if (chunkLength < 2) throw new IllegalArgumentException("chunk length must be >= 2, is " + chunkLength);
        List<int[]> out = new ArrayList<>();
        long budget = maxTokens > 0 ? maxTokens : Long.MAX_VALUE;
        for (int i = 0; i < ids.length && budget > 1; ) {
            int n = (int) Math.min(Math.min(chunkLength - 1, ids.length - i), budget - 1);
            int[] c = new int[n + 1];
            c[0] = bos;
            System.arraycopy(ids, i, c, 1, n);
            out.add(c);
            i += n;
            budget -= n + 1;
        }
        return out;
    }

    /**
     * The model's own continuations from BOS: {@code sequences} sequences of {@code length} tokens (BOS included),
     * sampled at {@code temperature} (0 = greedy) with seeds derived from {@code seed}. A model samples text like
     * the text it was trained on, which makes this a reasonable calibration corpus when none is given.
     */
    public static List<int[]> sample(Model model, int sequences, int length, float temperature, long seed) {
        if (length < 2) throw new IllegalArgumentException("length must be >= 2");
        int bos = bos(model);
        List<int[]> out = new ArrayList<>();
        for (int s = 0; s < sequences; s++) {
            SamplingParams sp = SamplingParams.DEFAULT.withTemperature(temperature).withTopK(0).withTopP(1f).withMinP(0f)
                    .withRepeatPenalty(1f).withSeed(seed * 1_000_003L + s);
            try (Session session = model.newSession()) {
                int[] gen = session.generate(new int[]{bos}, GenerationParams.defaults().withMaxTokens(length - 1).withSampling(sp)
                        .withStopAtEndOfGeneration(false), null).generatedTokens();
                int[] seq = new int[gen.length + 1];
                seq[0] = bos;
                System.arraycopy(gen, 0, seq, 1, gen.length);
                out.add(seq);
            }
        }
        return out;
    }

    public static long tokenCount(List<int[]> chunks) {
        long n = 0;
        for (int[] c : chunks) n += c.length;
        return n;
    }
}
