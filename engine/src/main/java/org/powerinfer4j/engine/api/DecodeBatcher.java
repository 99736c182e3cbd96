package org.powerinfer4j.engine.api;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.Transformer;

/**
 * Continuous batching of decode steps: every session that asks for one token's forward pass while another pass is
 * running joins the next pass, so N decoding streams cost one pass over the weights instead of N.
 *
 * <p>Group commit under the model's fair forward lock: a caller queues its step, takes the lock, and if no earlier
 * pass has served its step meanwhile it becomes the leader: it drains every queued step (up to
 * {@link #MAX_SEQUENCES}) into one {@link Transformer#forwardSequences} pass and marks each served. Callers whose
 * step was served find it done when their turn at the lock comes and return at once. Prompt chunks take the same
 * lock one chunk at a time, so decode passes run between them. Each sequence's logits are bit-identical to its
 * step run alone: batching changes the speed of a stream, never its tokens.
 */
final class DecodeBatcher {
    /** Most sequences one pass takes; more wait for the next pass. */
    static final int MAX_SEQUENCES = 64;

    private final Transformer transformer;
    private final ModelConfig config;
    private final WorkerPool pool;
    private final int contextLength;
    private final ConcurrentLinkedQueue<Step> queue = new ConcurrentLinkedQueue<>();
    private InferenceState scratch;   // guarded by the forward lock; grows with the widest pass so far
    private final AtomicLong passes = new AtomicLong(), steps = new AtomicLong();

    /** One session's queued decode step; {@code done} and {@code failure} are written by the leader under the lock. */
    private static final class Step {
        final InferenceState state;
        final int token, pos;
        boolean done;
        RuntimeException failure;

        Step(InferenceState state, int token, int pos) {
            this.state = state;
            this.token = token;
            this.pos = pos;
        }
    }

    DecodeBatcher(Transformer transformer, ModelConfig config, WorkerPool pool, int contextLength) {
        this.transformer = transformer;
        this.config = config;
        this.pool = pool;
        this.contextLength = contextLength;
    }

    /**
     * Runs one token at {@code pos} of {@code state}'s cache, batched with whatever other steps are queued. The
     * caller must not hold {@code lock}; {@code checkOpen} runs under it before any pass.
     */
    void decode(ReentrantLock lock, Runnable checkOpen, InferenceState state, int token, int pos) {
        Step mine = new Step(state, token, pos);
        queue.add(mine);
        lock.lock();
        try {
            if (!mine.done) {
                try {
                    checkOpen.run();
                } catch (RuntimeException e) {
                    queue.remove(mine);
                    throw e;
                }
                runPass();
            }
        } finally {
            lock.unlock();
        }
        if (mine.failure != null) throw mine.failure;
    }

    /** Steps batched so far and the passes they took (their ratio is the mean batch width). */
    long steps() { return steps.get(); }

    long passes() { return passes.get(); }

    private void runPass() {
        List<Step> batch = new ArrayList<>();
        for (Step s; batch.size() < MAX_SEQUENCES && (s = queue.poll()) != null; ) batch.add(s);
        int n = batch.size();
        if (n == 0) return;
        InferenceState[] states = new InferenceState[n];
        int[] tokens = new int[n], positions = new int[n];
        for (int i = 0; i < n; i++) {
            Step s = batch.get(i);
            states[i] = s.state;
            tokens[i] = s.token;
            positions[i] = s.pos;
        }
        try {
            if (scratch == null || scratch.maxBatch() < n)
                scratch = InferenceState.forSequenceBatch(config, contextLength, Math.min(MAX_SEQUENCES, Math.max(n, scratch == null ? 4 : 2 * scratch.maxBatch())),
                        pool.threads());
            // a bad step (token outside the vocabulary, full context) fails alone, not the streams it rode with
            int ok = 0;
            for (int i = 0; i < n; i++) {
                RuntimeException bad = validate(states[i], tokens[i], positions[i]);
                if (bad != null) {
                    batch.get(i).failure = bad;
                    continue;
                }
                states[ok] = states[i];
                tokens[ok] = tokens[i];
                positions[ok] = positions[i];
                ok++;
            }
            if (ok > 0) transformer.forwardSequences(pool, scratch, states, tokens, positions, ok);
            passes.incrementAndGet();
            steps.addAndGet(ok);
        } catch (RuntimeException e) {
            for (Step s : batch) if (s.failure == null) s.failure = e;
        } catch (Error e) {
            for (Step s : batch) if (s.failure == null) s.failure = new IllegalStateException("decode pass failed: " + e, e);
            throw e;
        } finally {
            for (Step s : batch) s.done = true;
        }
    }

    private RuntimeException validate(InferenceState s, int token, int pos) {
        if (token < 0 || token >= config.vocabSize())
            return new org.powerinfer4j.engine.model.ModelException("token id " + token + " is outside the vocabulary (0.." + (config.vocabSize() - 1) + ")");
        if (pos < 0 || pos >= s.kv().contextLength())
            return new org.powerinfer4j.engine.model.ModelException("context is full: " + (pos + 1L) + " tokens do not fit in the context of " + s.kv().contextLength());
        return null;
    }
}
