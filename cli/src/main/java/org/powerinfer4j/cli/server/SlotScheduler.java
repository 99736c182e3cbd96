package org.powerinfer4j.cli.server;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.api.SharedKvCache;
import org.powerinfer4j.engine.api.TokenListener;
import org.powerinfer4j.engine.model.ModelException;

/**
 * N slots, each a platform thread with its own {@link Session}, sharing one {@link Model}, plus a bounded FIFO of
 * admitted requests waiting for a slot.
 *
 * <p>Where the model's KV caches are on the host the slots' sessions share one {@link SharedKvCache} of the model's
 * context ({@code -c}) in blocks: a slot holds what its conversation needs (at most {@code --ctx-per-slot}), gives it
 * back when its request ends, and with {@code cachePrompt} lends it while idle (a busy slot that needs blocks takes
 * the longest idle slot's) and shares a common prompt prefix with the other slots block by block. With device
 * layers each slot has a cache of the whole context of its own.
 *
 * <p>Slots run at the same time; the model schedules their forward passes ({@code Model}'s decode batching):
 * the decode steps of every slot that is generating go through one pass over the weights together, and a prompt
 * is evaluated one chunk ({@code -b} tokens) per turn at the model's fair lock, so a long prompt delays the other
 * streams by a chunk at a time, not by the whole prompt. With the default {@code --decode-batching exact} each
 * stream's tokens are the ones it gets alone ({@code fast} keeps them within rounding).
 *
 * <p>Each request starts from a reset session (positions are overwritten from 0, so nothing of an earlier request
 * is visible). With {@code cachePrompt} the slot instead keeps the longest common prefix of its previous
 * conversation ({@link Session#complete}) and jobs go to the idle slot that shares the most of their prompt;
 * that skips re-evaluating chat history, at the cost of bit-exact reproducibility, because a prefix evaluated
 * as part of a different batch can round differently.
 */
final class SlotScheduler implements AutoCloseable {
    private final Object lock = new Object();
    private final List<Slot> slots = new ArrayList<>();
    private final ArrayDeque<Slot> idle = new ArrayDeque<>();
    private final ArrayDeque<GenerationJob> pending = new ArrayDeque<>();
    private final int maxQueue;
    private final boolean cachePrompt;
    private final boolean hostKv;   // prefixes can be copied between slots (no device KV caches)
    private final AtomicLong completed = new AtomicLong(), cancelled = new AtomicLong();
    private final AtomicLong promptTokens = new AtomicLong(), generatedTokens = new AtomicLong();
    private final AtomicLong reusedPromptTokens = new AtomicLong(), sharedPromptTokens = new AtomicLong();
    private final AtomicLong draftedTokens = new AtomicLong(), acceptedTokens = new AtomicLong();
    private boolean closed;
    private final Model model;   // for the batching counters of /metrics
    private final SharedKvCache kvCache;   // the slots' shared cache; null with device layers
    private final int slotContext;

    SlotScheduler(Model model, int parallel, int maxQueue, boolean cachePrompt) {
        this(model, parallel, maxQueue, cachePrompt, 0);
    }

    /** {@code ctxPerSlot}: the most tokens one slot may hold, 0 = the model's whole context. */
    SlotScheduler(Model model, int parallel, int maxQueue, boolean cachePrompt, int ctxPerSlot) {
        if (parallel < 1) throw new IllegalArgumentException("--parallel must be >= 1, is " + parallel);
        if (maxQueue < 0) throw new IllegalArgumentException("--queue must be >= 0, is " + maxQueue);
        this.maxQueue = maxQueue;
        this.cachePrompt = cachePrompt;
        this.model = model;
        this.hostKv = model.hostKvCache();
        if (ctxPerSlot > model.contextLength())
            throw new IllegalArgumentException("--ctx-per-slot " + ctxPerSlot + " exceeds the context of " + model.contextLength() + " (-c)");
        this.slotContext = ctxPerSlot > 0 ? ctxPerSlot : model.contextLength();
        this.kvCache = hostKv ? model.newSharedKvCache(model.contextLength()) : null;
        try {
            for (int i = 0; i < parallel; i++) slots.add(new Slot(i, kvCache != null ? model.newSession(kvCache, slotContext) : model.newSession()));
        } catch (RuntimeException | OutOfMemoryError e) {
            slots.forEach(s -> s.session.close());
            if (kvCache != null) kvCache.close();
            throw e;
        }
        for (Slot s : slots) {
            idle.add(s);
            s.thread.start();
        }
    }

    /** Starts the job on an idle slot or queues it; false when the queue is full (the caller answers 429). */
    boolean submit(GenerationJob job) {
        synchronized (lock) {
            if (closed) return false;
            if (!idle.isEmpty()) {
                Slot s = pickIdle(job);
                idle.remove(s);
                s.handOff(job);
                return true;
            }
            if (pending.size() >= maxQueue) return false;
            pending.add(job);
            return true;
        }
    }

    /** Cancels a job; one still waiting leaves the queue at once, freeing its place. */
    void cancel(GenerationJob job) {
        job.cancel();
        synchronized (lock) {
            if (pending.remove(job)) cancelled.incrementAndGet();
        }
    }

    private Slot pickIdle(GenerationJob job) {
        if (!cachePrompt) return idle.peekFirst();
        Slot best = null;
        int bestLen = -1;
        for (Slot s : idle) {
            int len = s.commonPrefix(job.prompt);
            if (len > bestLen) {
                best = s;
                bestLen = len;
            }
        }
        return best;
    }

    /** The most tokens one slot's conversation may hold. */
    int slotContext() {
        return slotContext;
    }

    /**
     * The KV cache's use: tokens in the slots' caches (a shared prefix counts in each), positions of the blocks held
     * (a shared block once) and the positions it has in all; with device caches, each slot's whole context.
     */
    record KvUsage(long tokens, long usedPositions, long capacity) {}

    KvUsage kvUsage() {
        long tokens = 0, capacity = 0;
        for (Slot s : slots) {
            tokens += s.cached;
            capacity += s.session.contextLength();
        }
        if (kvCache != null) return new KvUsage(tokens, kvCache.usedTokens(), kvCache.capacityTokens());
        return new KvUsage(tokens, tokens, capacity);
    }

    /** Called by a slot thread when its job is over: take the next waiting job, or become idle. */
    private void finished(Slot slot) {
        synchronized (lock) {
            if (closed) return;
            for (Iterator<GenerationJob> it = pending.iterator(); it.hasNext(); ) {
                GenerationJob next = it.next();
                it.remove();
                if (next.cancelled()) {
                    cancelled.incrementAndGet();
                    continue;
                }
                slot.handOff(next);
                return;
            }
            // its cache stays (for cachePrompt, /slots), lent to busy slots that run out until its next job
            slot.session.parkCache();
            idle.addFirst(slot); // most recently used first: its memory is warm
        }
    }

    /**
     * @param promptTokens    prompt tokens of the requests that ran (as their {@code usage} reports them)
     * @param generatedTokens tokens generated for them
     * @param draftedTokens   draft tokens speculative decoding proposed for them ({@code serve --lookup} / {@code -md})
     * @param acceptedTokens  of those, the ones the model accepted
     */
    /** {@code reusedPromptTokens}: prompt tokens not evaluated (cached); {@code sharedPromptTokens}: of those, copied from another slot. */
    record Stats(int slots, int idle, int queued, long completed, long cancelled, long promptTokens, long generatedTokens, long draftedTokens,
                 long acceptedTokens, long reusedPromptTokens, long sharedPromptTokens, long decodeSteps, long decodePasses, long promptChunksBatched) {}

    Stats stats() {
        long[] batched = model.decodeBatchCounts();
        long chunks = model.batchedPromptChunks();
        synchronized (lock) {
            return new Stats(slots.size(), idle.size(), pending.size(), completed.get(), cancelled.get(), promptTokens.get(), generatedTokens.get(),
                    draftedTokens.get(), acceptedTokens.get(), reusedPromptTokens.get(), sharedPromptTokens.get(), batched[0], batched[1], chunks);
        }
    }

    /** One slot as {@code GET /slots} shows it: busy with a request or idle, its context and the tokens in its KV cache. */
    record SlotInfo(int id, boolean processing, int contextLength, int tokensCached) {}

    List<SlotInfo> slotInfo() {
        List<SlotInfo> out = new ArrayList<>(slots.size());
        for (Slot s : slots) out.add(new SlotInfo(s.index, s.busy, s.session.contextLength(), s.cached));
        return out;
    }

    /** Stops the slots (interrupting generations in progress) and frees their sessions. */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) return;
            closed = true;
            for (GenerationJob j : pending) j.fail(new ApiException(503, "server_error", "the server is shutting down", null, null));
            pending.clear();
        }
        for (Slot s : slots) s.thread.interrupt();
        for (Slot s : slots) {
            try {
                s.thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (!s.thread.isAlive()) s.session.close(); // a thread stuck in a forward pass still uses its cache
        }
        if (kvCache != null && slots.stream().noneMatch(s -> s.thread.isAlive())) kvCache.close();
    }

    /**
     * Shortest prefix worth copying from another slot ({@link #adoptFromOtherSlot}); below it the copy's bookkeeping
     * is about what evaluating the tokens costs.
     */
    static final int MIN_SHARED_PREFIX = 16;

    /**
     * With {@code cachePrompt}: before evaluating a prompt, take the longest prefix of it that another slot has
     * evaluated (a shared system prompt, an earlier turn served elsewhere) from that slot's cache instead of
     * evaluating it again. A slot advertises the tokens whose cache rows are final ({@link Slot#stable}) and
     * shrinks that only under its write lock, before it overwrites them; the copy holds the donor's read lock.
     * Returns the tokens taken.
     */
    private int adoptFromOtherSlot(Slot slot, int[] prompt, int own) {
        if (!hostKv) return 0;
        int limit = prompt.length - 1;   // the last prompt token is always evaluated: its logits start the generation
        Slot best = null;
        int bestLen = Math.max(own, 0) + MIN_SHARED_PREFIX - 1;
        for (Slot s : slots) {
            if (s == slot) continue;
            int len = Math.min(limit, commonPrefix(s.stable, prompt));
            if (len > bestLen) {
                best = s;
                bestLen = len;
            }
        }
        if (best == null) return 0;
        best.prefixLock.readLock().lock();
        try {
            int len = Math.min(limit, commonPrefix(best.stable, prompt));   // it may have shrunk meanwhile
            if (len < own + MIN_SHARED_PREFIX) return 0;
            // the slot is at `own` already; less than asked where the donor's parked blocks were taken
            return Math.max(0, slot.session.adoptPrefix(best.session, prompt, len) - own);
        } finally {
            best.prefixLock.readLock().unlock();
        }
    }

    private static int commonPrefix(int[] a, int[] b) {
        int n = 0, max = Math.min(a.length, b.length);
        while (n < max && a[n] == b[n]) n++;
        return n;
    }

    private final class Slot {
        final int index;
        final Session session;
        final Thread thread;
        /** Tokens whose rows in this slot's cache are final (cachePrompt), read by other slots without a lock. */
        volatile int[] stable = new int[0];
        /** Held to read {@link #stable}'s rows from another slot; held for writing to shrink it. */
        final java.util.concurrent.locks.ReentrantReadWriteLock prefixLock = new java.util.concurrent.locks.ReentrantReadWriteLock();
        // written by the slot thread, read by /slots and /metrics (the session itself is the slot thread's only)
        volatile boolean busy;
        volatile int cached;
        // one job at a time, handed over under the scheduler lock to a slot that is not running one
        private GenerationJob handed;

        Slot(int index, Session session) {
            this.index = index;
            this.session = session;
            this.thread = Thread.ofPlatform().name("serve-slot-" + index).daemon().unstarted(this::loop);
        }

        synchronized void handOff(GenerationJob job) {
            handed = job;
            notifyAll();
        }

        int commonPrefix(int[] prompt) {
            return SlotScheduler.commonPrefix(session.tokens(), prompt);
        }

        private GenerationJob take() throws InterruptedException {
            synchronized (this) {
                while (handed == null) wait();
                GenerationJob j = handed;
                handed = null;
                return j;
            }
        }

        private void loop() {
            try {
                while (!Thread.currentThread().isInterrupted()) {
                    GenerationJob job = take();
                    run(job);
                    finished(this);
                }
            } catch (InterruptedException e) {
                // closing
            }
        }

        private void run(GenerationJob job) {
            if (job.cancelled()) {
                cancelled.incrementAndGet();
                return;
            }
            GenerationResult result;
            busy = true;
            int adopted = 0;
            try {
                session.unparkCache();   // its blocks are its own again (or were taken: it starts over)
                if (!cachePrompt) {
                    session.reset();
                } else {
                    // rows past the kept prefix are about to be overwritten: stop advertising them first
                    int own = Math.min(commonPrefix(job.prompt), Math.max(0, job.prompt.length - 1));
                    prefixLock.writeLock().lock();
                    try {
                        stable = java.util.Arrays.copyOf(job.prompt, own);
                        session.rollback(own);
                    } finally {
                        prefixLock.writeLock().unlock();
                    }
                    adopted = adoptFromOtherSlot(this, job.prompt, own);
                }
                boolean[] published = {false};
                result = session.complete(job.prompt, job.params, new TokenListener() {
                    @Override
                    public boolean onToken(int id, String piece) {
                        return onToken(id, piece, null);
                    }

                    @Override
                    public boolean onToken(int id, String piece, float[] logits) {
                        cached = session.position();
                        if (cachePrompt && !published[0]) {   // the prompt's rows are written: others may copy them
                            stable = job.prompt.clone();
                            published[0] = true;
                        }
                        return job.onToken(id, piece, logits);   // the session's logits stay put until it resumes
                    }
                });
                if (cachePrompt) stable = session.tokens();   // every fed token's row is final now
            } catch (org.powerinfer4j.engine.model.KvCacheFullException e) {
                session.reset();
                job.fail(new ApiException(503, "server_error", e.getMessage(), null, "kv_cache_full"));
                return;
            } catch (ModelException | IllegalArgumentException e) {
                session.reset();
                job.fail(ApiException.invalid(e.getMessage(), null));
                return;
            } catch (RuntimeException | Error e) {
                session.reset();
                job.fail(new ApiException(500, "server_error", "generation failed: " + e.getClass().getSimpleName()
                        + (e.getMessage() == null ? "" : ": " + e.getMessage().replace('\n', ' ')), null, null));
                return;
            } finally {
                cached = session.position();
                busy = false;
            }
            promptTokens.addAndGet(job.prompt.length);
            reusedPromptTokens.addAndGet(job.prompt.length - result.promptTokens().length);
            sharedPromptTokens.addAndGet(adopted);
            job.cachedTokens(job.prompt.length - result.promptTokens().length);
            generatedTokens.addAndGet(job.completionTokens());
            draftedTokens.addAndGet(result.draftedTokens());
            acceptedTokens.addAndGet(result.acceptedTokens());
            (job.cancelled() ? cancelled : completed).incrementAndGet();
            job.finish(result);
        }
    }
}
