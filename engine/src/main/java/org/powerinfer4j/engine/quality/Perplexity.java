package org.powerinfer4j.engine.quality;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.ModelException;

/**
 * Perplexity of a model over a text, and its KL divergence from a base model's saved logits — what
 * {@code llama-perplexity} measures, the same way, so a figure here and one from llama.cpp compare: the text is
 * tokenized once (with BOS where the vocabulary adds one), cut into chunks of {@code ctx} tokens whose first token
 * is replaced by BOS, each chunk evaluated from an empty cache, and only the second half of each chunk scored
 * (positions {@code ctx/2 .. ctx−2} predicting the token after them), so every scored token has at least
 * {@code ctx/2} tokens of context.
 *
 * <p>It is how a user sees what a quantization, a sparse mode ({@code --sparse predict}) or a threshold costs:
 * save the logits of the reference configuration once ({@link #measure} with a {@link BaseLogitsFile.Writer}),
 * then run the others against it ({@link #klDivergence}).
 */
public final class Perplexity {
    private Perplexity() {}

    /** Called after each chunk with the chunk count so far and the running perplexity. */
    public interface Progress {
        void chunkDone(int done, int chunks, double perplexitySoFar);

        Progress NONE = (d, n, p) -> {};
    }

    /** A perplexity run: the scored positions, the perplexity with its uncertainty, and after each chunk the running value. */
    public record Result(int ctx, int chunks, long scored, KlDivergence.Estimate perplexity, double[] perplexityAfterChunk,
                         KlDivergence.Summary klDivergence) {}

    /** Positions scored in a chunk of {@code ctx} tokens. */
    public static int scoredPerChunk(int ctx) {
        return ctx - 1 - ctx / 2;
    }

    /** The text's tokens as llama-perplexity takes them: special tokens added (BOS), special pieces not parsed. */
    public static int[] tokenize(Model model, String text) {
        return model.tokenizer().encode(text, true, false);
    }

    /**
     * Perplexity of {@code model} over {@code tokens} in chunks of {@code ctx} (at most {@code maxChunks}, or all
     * when ≤ 0). With {@code base} non-null, the scored positions' log-probabilities are saved into it as well
     * ({@link #baseHeader} gives its header).
     */
    public static Result measure(Model model, int[] tokens, int ctx, int maxChunks, BaseLogitsFile.Writer base, Progress progress) throws IOException {
        int chunks = chunkCount(model, tokens.length, ctx, maxChunks);
        int vocab = model.config().vocabSize();
        double nll = 0, nll2 = 0;
        long count = 0;
        double[] after = new double[chunks];
        try (Session session = model.newSession()) {
            for (int c = 0; c < chunks; c++) {
                int start = c * ctx;
                ChunkLogits chunk = new ChunkLogits(session, tokens, start, ctx, model);
                for (int j = ctx / 2; j < ctx - 1; j++) {
                    float[] logits = chunk.logitsAt(j);
                    int off = chunk.offset(j);
                    if (base != null) base.write(logits, off);
                    float max = LogSoftmax.max(logits, off, vocab);
                    double v = max + Math.log(LogSoftmax.sumExp(logits, off, vocab, max)) - logits[off + tokens[start + j + 1]];
                    nll += v;
                    nll2 += v * v;
                    count++;
                }
                after[c] = Math.exp(nll / count);
                progress.chunkDone(c + 1, chunks, after[c]);
            }
        }
        double mean = nll / count, var = nll2 / count - mean * mean;
        double ppl = Math.exp(mean);
        return new Result(ctx, chunks, count, new KlDivergence.Estimate(ppl, var > 0 ? Math.sqrt(var / (count - 1)) * ppl : 0), after, null);
    }

    /** The header of a base file that {@link #measure} with these arguments fills. */
    public static BaseLogitsFile.Header baseHeader(Model model, int[] tokens, int ctx, int maxChunks, BaseLogitsFile.Format format) {
        int chunks = chunkCount(model, tokens.length, ctx, maxChunks);
        return new BaseLogitsFile.Header(format, ctx, model.config().vocabSize(), chunks, Arrays.copyOf(tokens, chunks * ctx));
    }

    /**
     * Perplexity and KL divergence of {@code model} against the base logits in {@code base}, over the base file's
     * own tokens and chunk length (the model's context must hold a chunk; its vocabulary must match).
     */
    public static Result klDivergence(Model model, BaseLogitsFile.Reader base, Progress progress) throws IOException {
        BaseLogitsFile.Header h = base.header();
        int vocab = model.config().vocabSize(), ctx = h.ctx();
        if (h.vocab() != vocab)
            throw new ModelException("the base logits have a vocabulary of " + h.vocab() + " tokens, this model " + vocab + ": not the same tokenizer");
        if (ctx > model.contextLength())
            throw new ModelException("the base logits were computed with chunks of " + ctx + " tokens, more than this model's context of "
                    + model.contextLength() + " (raise -c)");
        for (int t : h.tokens())
            if (t < 0 || t >= vocab) throw new ModelException("the base logits file holds token id " + t + ", outside the vocabulary (0.." + (vocab - 1) + ")");
        KlDivergence kld = new KlDivergence();
        float[] baseLogProbs = new float[vocab];
        double[] after = new double[h.chunks()];
        try (Session session = model.newSession()) {
            for (int c = 0; c < h.chunks(); c++) {
                int start = c * ctx;
                ChunkLogits chunk = new ChunkLogits(session, h.tokens(), start, ctx, model);
                for (int j = ctx / 2; j < ctx - 1; j++) {
                    base.next(baseLogProbs);
                    kld.add(chunk.logitsAt(j), chunk.offset(j), baseLogProbs, vocab, h.tokens()[start + j + 1]);
                }
                after[c] = kld.summary().ppl().value();
                progress.chunkDone(c + 1, h.chunks(), after[c]);
            }
        }
        KlDivergence.Summary s = kld.summary();
        return new Result(ctx, h.chunks(), s.positions(), s.ppl(), after, s);
    }

    private static int chunkCount(Model model, int tokens, int ctx, int maxChunks) {
        if (ctx < 4) throw new IllegalArgumentException("the chunk length must be at least 4 tokens, is " + ctx);
        if (ctx > model.contextLength())
            throw new ModelException("chunks of " + ctx + " tokens do not fit in the context of " + model.contextLength() + " (raise -c)");
        if (tokens < 2L * ctx)
            throw new ModelException("the text tokenizes to " + tokens + " tokens; perplexity with chunks of " + ctx + " needs at least " + 2L * ctx
                    + " (a longer text, or a smaller -c)");
        int max = tokens / ctx;
        return maxChunks > 0 ? Math.min(maxChunks, max) : max;
    }

    /**
     * One chunk evaluated from an empty cache, BOS first: the unscored first half in one prompt pass, then the
     * scored positions in passes of at most the model's batch size, whose logits are kept one pass at a time (a
     * 152k-token vocabulary at ctx 512 would otherwise hold 300 MB).
     */
    private static final class ChunkLogits {
        private final Session session;
        private final int[] ids;
        private final int batch, vocab;
        private float[] logits;
        private int from = -1, to = -1;   // positions whose logits `logits` holds

        ChunkLogits(Session session, int[] tokens, int start, int ctx, Model model) {
            this.session = session;
            this.ids = Arrays.copyOfRange(tokens, start, start + ctx);
            if (model.tokenizer().addBos()) ids[0] = model.tokenizer().bosId();
            this.batch = Math.max(1, model.options().batchSize());
            this.vocab = model.config().vocabSize();
            session.reset();
            session.evaluate(Arrays.copyOfRange(ids, 0, ctx / 2));
        }

        /** The logits array holding position {@code j}'s (positions must be asked for in increasing order). */
        float[] logitsAt(int j) {
            if (j >= to) {
                from = j;
                to = Math.min(ids.length - 1, j + batch);
                logits = session.evaluateAll(Arrays.copyOfRange(ids, from, to), false);
            }
            return logits;
        }

        int offset(int j) {
            return (j - from) * vocab;
        }
    }
}
