package org.powerinfer4j.engine.api;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
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
 * {@link #MAX_SEQUENCES}) into one {@link Transformer#forwardSequences} pass, marks each served and unparks its
 * caller. Before a pass the leader waits briefly for the streams of the previous pass to queue their next steps
 * ({@link #gather}), so N streams keep riding one pass instead of splitting into narrower ones. Prompt chunks take the same
 * lock one chunk at a time, so decode passes run between them.
 *
 * <p>{@link DecodeBatching#FAST} runs the pass's products as matrix–matrix products (one dequantization of each
 * weight panel for every stream): a stream's logits then depend, by rounding only, on how many streams rode along
 * and where it sat in the pass. {@link DecodeBatching#EXACT} runs them per token, so each sequence's logits are
 * bit-identical to its step run alone (batching changes the speed of a stream, never its tokens), at about the
 * cost of the steps run one by one.
 */
final class DecodeBatcher {
    /** Most steps (and token rows) one pass takes; more wait for the next pass. */
    static final int MAX_SEQUENCES = 64;
    /**
     * Most tokens of a prompt chunk that rides a pass: half a pass, so a chunk of a long prompt leaves room for the
     * decode steps of the other streams (which keep streaming while it is prefilled, chunk by chunk).
     */
    static final int PROMPT_CHUNK = MAX_SEQUENCES / 2;

    private final Transformer transformer;
    private final ModelConfig config;
    private final WorkerPool pool;
    private final int contextLength;
    private final boolean exact;
    private final ConcurrentLinkedQueue<Step> queue = new ConcurrentLinkedQueue<>();
    private InferenceState scratch;   // guarded by the forward lock; grows with the widest pass so far
    private final AtomicLong passes = new AtomicLong(), steps = new AtomicLong(), rescues = new AtomicLong(), promptChunks = new AtomicLong();
    /**
     * How long a waiting caller parks at most before looking again. It is normally unparked: by the leader that
     * serves its step, or by whoever releases the lock while steps are queued ({@link #wakeNext}). The timeout is
     * only a safety net: waking 7 waiting streams every 200 µs (as this once did) took about a quarter of a
     * 2-core machine from the pass they were waiting for (8 streams on 110m Q4_0: 229 → 292 t/s at 5 ms).
     */
    private static final long POLL_NANOS = 20_000_000;
    /** Bounds of {@link #gather}'s wait for the previous pass's streams. */
    private static final long MIN_GATHER_NANOS = 100_000, MAX_GATHER_NANOS = 5_000_000;
    private volatile Thread gathering;   // the leader while it waits in gather(): new steps unpark it
    private int lastWidth;               // steps of the previous pass (guarded by the lock)
    private int lateSteps;               // steps queued during it, left for the next one
    private long lastPassNanos;          // and its duration

    /**
     * One session's queued step — a decode token, or (FAST only) a prompt chunk of consecutive tokens —; {@code
     * failure} then {@code done} are written by the leader (done last, a volatile write, so a caller that sees it
     * done without the lock also sees the failure and its logits).
     */
    private static final class Step {
        final InferenceState state;
        final int[] tokens;
        final int pos;
        final boolean logits;   // the logits after the last token are wanted (always for a decode step)
        final boolean prompt;   // a prompt chunk (even of one token), not a decode step
        final Thread caller = Thread.currentThread();
        volatile boolean done;
        RuntimeException failure;

        Step(InferenceState state, int[] tokens, int pos, boolean logits, boolean prompt) {
            this.state = state;
            this.tokens = tokens;
            this.pos = pos;
            this.logits = logits;
            this.prompt = prompt;
        }
    }

    /** {@code exact}: per-token products (bit-identical to each step alone, {@link DecodeBatching#EXACT}); else one matMul. */
    DecodeBatcher(Transformer transformer, ModelConfig config, WorkerPool pool, int contextLength, boolean exact) {
        this.exact = exact;
        this.transformer = transformer;
        this.config = config;
        this.pool = pool;
        this.contextLength = contextLength;
    }

    /**
     * Runs one token at {@code pos} of {@code state}'s cache, batched with whatever other steps are queued. The
     * caller must not hold {@code lock}; {@code checkOpen} runs under it before any pass.
     *
     * <p>A caller whose step another leader's pass serves does not need the lock to learn it: it parks until the
     * leader marks the step done and unparks it, so the streams of one pass are back with their next steps while
     * the next leader gathers ({@link #gather}). {@code tryLock(0, ns)} keeps the fair lock's order, so prompt
     * chunks waiting at the lock still get their turns between passes.
     */
    void decode(ReentrantLock lock, Runnable checkOpen, InferenceState state, int token, int pos) {
        submit(lock, checkOpen, new Step(state, new int[] {token}, pos, true, false));
    }

    /** Prompt chunks ride the passes too under FAST (their rows share the weight pass); EXACT keeps them apart, as a chunk alone. */
    boolean takesPrompts() {
        return !exact;
    }

    /** Whether a step is waiting for a pass: then a prompt chunk that joins it saves one pass over the weights. */
    boolean hasQueued() {
        return !queue.isEmpty();
    }

    /**
     * Runs the prompt chunk {@code tokens} (at most {@link #PROMPT_CHUNK}) at positions {@code pos...} of {@code
     * state}'s cache in a pass, with the decode steps and other prompts' chunks queued with it; {@code logits}: the
     * logits after its last token are wanted. FAST only ({@link #takesPrompts}).
     */
    void prompt(ReentrantLock lock, Runnable checkOpen, InferenceState state, int[] tokens, int pos, boolean logits) {
        if (exact) throw new IllegalStateException("prompt chunks do not ride EXACT passes");
        if (tokens.length < 1 || tokens.length > PROMPT_CHUNK) throw new IllegalArgumentException("a batched prompt chunk holds 1.." + PROMPT_CHUNK + " tokens, not " + tokens.length);
        submit(lock, checkOpen, new Step(state, tokens, pos, logits, true));
    }

    private void submit(ReentrantLock lock, Runnable checkOpen, Step mine) {
        queue.add(mine);
        Thread leader = gathering;
        if (leader != null) LockSupport.unpark(leader);
        boolean interrupted = false;   // the step is queued and must be served: an interrupt is kept for the end
        boolean timedOut = false;      // the last park ran to its timeout
        while (!mine.done) {
            boolean locked;
            try {
                locked = lock.tryLock(0, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                locked = false;
                interrupted = true;
            }
            if (!locked) {
                if (!mine.done) {   // unparked by the leader that serves it, or by wakeNext
                    long t0 = System.nanoTime();
                    LockSupport.parkNanos(this, POLL_NANOS);
                    timedOut = System.nanoTime() - t0 >= POLL_NANOS;
                }
                if (Thread.interrupted()) interrupted = true;
                continue;
            }
            try {
                if (!mine.done) {
                    if (timedOut) rescues.incrementAndGet();   // nobody woke this step, the lock was free: a lost wake-up
                    try {
                        checkOpen.run();
                    } catch (RuntimeException e) {
                        queue.remove(mine);
                        throw e;
                    }
                    gather();
                    runPass();
                }
            } finally {
                lock.unlock();
                wakeNext();
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        if (mine.failure != null) throw mine.failure;
    }

    /**
     * Before a pass, waits (briefly, holding the lock) until as many steps are queued as rode the previous pass,
     * plus those that queued while it ran: the streams of that pass are sampling their next tokens, and a pass that
     * set off without them would leave them for a second, narrower pass (measured: 4 streams, mean width 2.5
     * without this wait). The late steps count too, or a stream that once missed a pass stays one pass behind the
     * others for good, every pass one short (measured: width 3 of 4 for a whole run when a stream's prompt ended
     * just after the first pass set off). Bounded by a
     * quarter of the previous pass's time (at least {@link #MIN_GATHER_NANOS}), so a stream that stopped decoding
     * costs one short wait, after which the expected width is the smaller one.
     */
    private void gather() {
        int expected = Math.min(lastWidth + lateSteps, MAX_SEQUENCES);
        if (expected <= 1 || queue.size() >= expected) return;
        long deadline = System.nanoTime() + Math.min(MAX_GATHER_NANOS, Math.max(MIN_GATHER_NANOS, lastPassNanos / 4));
        gathering = Thread.currentThread();
        try {
            for (long left; queue.size() < expected && (left = deadline - System.nanoTime()) > 0; ) LockSupport.parkNanos(this, left);
        } finally {
            gathering = null;
        }
    }

    /**
     * To be called after releasing the forward lock (here, and by every other holder of it): if steps are still
     * queued, their oldest caller is unparked to take the lock and lead the next pass. Called after the unlock, so
     * no wake-up is lost: a step queued after this look finds the lock free at its own {@code tryLock} (or the
     * lock held by another thread, which calls this in turn when it releases it).
     */
    void wakeNext() {
        Step head = queue.peek();
        if (head != null) LockSupport.unpark(head.caller);
    }

    /** Decode steps batched so far and the passes that carried them (their ratio is the mean batch width; prompt chunks not counted). */
    long steps() { return steps.get(); }

    long passes() { return passes.get(); }

    /** Prompt chunks that rode a pass. */
    long promptChunks() { return promptChunks.get(); }

    /** Steps that found the lock free only after a park ran to its timeout: wake-ups lost (tests expect none). */
    long rescues() { return rescues.get(); }

    private void runPass() {
        // steps in queue order while their rows fit: only the leader polls (under the lock), so the head it peeks is the one it polls
        List<Step> batch = new ArrayList<>();
        int rows = 0;
        for (Step s; (s = queue.peek()) != null && batch.size() < MAX_SEQUENCES && rows + s.tokens.length <= MAX_SEQUENCES; ) {
            batch.add(queue.poll());
            rows += s.tokens.length;
        }
        int n = batch.size();
        if (n == 0) return;
        long t0 = System.nanoTime();
        int decodes = 0;
        try {
            if (scratch == null || scratch.maxBatch() < rows)
                scratch = InferenceState.forSequenceBatch(config, contextLength, Math.min(MAX_SEQUENCES, Math.max(rows, scratch == null ? 4 : 2 * scratch.maxBatch())),
                        pool.threads(), exact);
            // a bad step (token outside the vocabulary, full context) fails alone, not the streams it rode with
            InferenceState[] states = new InferenceState[rows];
            int[] tokens = new int[rows], positions = new int[rows], logitRows = new int[n];
            int r = 0, wanted = 0;
            boolean prompts = false;
            for (Step s : batch) {
                RuntimeException bad = validate(s);
                if (bad != null) {
                    s.failure = bad;
                    continue;
                }
                for (int j = 0; j < s.tokens.length; j++, r++) {
                    states[r] = s.state;
                    tokens[r] = s.tokens[j];
                    positions[r] = s.pos + j;
                }
                if (s.logits) logitRows[wanted++] = r - 1;
                if (s.prompt) prompts = true;
                else decodes++;
            }
            // without prompt chunks every row wants its logits (null), and the products stay decode's per-token ones
            if (r > 0) transformer.forwardSequences(pool, scratch, states, tokens, positions, r, prompts ? java.util.Arrays.copyOf(logitRows, wanted) : null);
            if (decodes > 0) passes.incrementAndGet();
            steps.addAndGet(decodes);
            promptChunks.addAndGet(n - decodes);
        } catch (RuntimeException e) {
            for (Step s : batch) if (s.failure == null) s.failure = e;
        } catch (Error e) {
            for (Step s : batch) if (s.failure == null) s.failure = new IllegalStateException("decode pass failed: " + e, e);
            throw e;
        } finally {
            lastWidth = n;
            lateSteps = queue.size();   // before any served caller can queue its next step
            lastPassNanos = System.nanoTime() - t0;
            for (Step s : batch) {
                s.done = true;
                LockSupport.unpark(s.caller);
            }
        }
    }

    private RuntimeException validate(Step step) {
        for (int token : step.tokens)
            if (token < 0 || token >= config.vocabSize())
                return new org.powerinfer4j.engine.model.ModelException("token id " + token + " is outside the vocabulary (0.." + (config.vocabSize() - 1) + ")");
        long end = (long) step.pos + step.tokens.length;
        if (step.pos < 0 || end > step.state.kv().contextLength())
            return new org.powerinfer4j.engine.model.ModelException("context is full: " + end + " tokens do not fit in the context of " + step.state.kv().contextLength());
        return null;
    }
}
