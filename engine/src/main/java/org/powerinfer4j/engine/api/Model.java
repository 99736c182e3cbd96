package org.powerinfer4j.engine.api;

import java.io.IOException;
import java.nio.file.Path;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.kernels.WorkerPool;
import java.lang.foreign.Arena;
import org.powerinfer4j.engine.backend.GpuLayers;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.backend.HybridFeedForward;
import org.powerinfer4j.engine.backend.HybridUnits;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.model.DenseFeedForward;
import org.powerinfer4j.engine.model.FeedForward;
import org.powerinfer4j.engine.model.GraphBuilder;
import org.powerinfer4j.engine.model.MoeFeedForward;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.sparse.SparseExpertFeedForward;
import org.powerinfer4j.engine.sparse.SparseFeedForward;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.sparse.TransposedDown;
import org.powerinfer4j.engine.tensor.Tensor;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.Transformer;
import org.powerinfer4j.engine.tokenizer.Tokenizer;
import org.powerinfer4j.engine.tokenizer.Tokenizers;

/**
 * A loaded model: the mapped GGUF file, its configuration, weights (slices of the mapping), tokenizer and the
 * compute thread pool. Closing the model unmaps the file and stops the pool.
 *
 * <p>Thread-safe to share: any number of {@link Session}s (each owns its KV cache and activations; one session is
 * used by one thread at a time) may run on one model from any threads, and each gets exactly the logits it gets
 * alone. The model owns forward execution: one forward pass at a time runs on the worker pool, the others wait
 * their turn behind a fair lock (first come, first served). A pass already uses every pool thread, so running two
 * at once would not be faster; it would share the pool's phase state and the workers' per-thread scratch (and,
 * with a GPU, the device workspace). Decode steps that arrive while a pass runs are batched into the next one
 * ({@link DecodeBatcher}, {@link ModelOptions#decodeBatching}): N streams share one pass over the weights, each
 * with the logits it gets alone under {@link DecodeBatching#EXACT}, within rounding of them under the default
 * {@link DecodeBatching#FAST}.
 *
 * <pre>{@code
 * try (Model model = Model.open(Path.of("model.gguf"), ModelOptions.defaults().withThreads(2));
 *      Session session = model.newSession()) {
 *     session.generate("Once upon a time", GenerationParams.defaults(), piece -> { System.out.print(piece); return true; });
 * }
 * }</pre>
 */
public final class Model implements AutoCloseable {
    private final GGUFFile file;
    private final ModelConfig config;
    private final ModelWeights weights;
    private final Transformer transformer;
    private final Tokenizer tokenizer;
    private final WorkerPool pool;
    /** One forward pass at a time (see the class comment); fair, so no session starves under load. */
    private final java.util.concurrent.locks.ReentrantLock forwardLock = new java.util.concurrent.locks.ReentrantLock(true);
    private boolean closed;   // guarded by forwardLock
    private final ModelOptions options;
    private final int contextLength;
    private final long loadMillis;
    private final DecodeBatcher batcher;   // null: each step runs alone (GPU layers, sparse or MoE FFN, or turned off)
    /** {@code -Dpowerinfer4j.batch.prompts=false}: prompt chunks never ride decode passes (for side-by-side runs). */
    private static final boolean PROMPTS_RIDE = !"false".equals(System.getProperty("powerinfer4j.batch.prompts"));
    /** Tests: prompt chunks always ride the decode passes (FAST), not only when other streams are running. */
    volatile boolean batchPrompts;
    private final SparseMode sparseMode;
    private final SparsityStats stats;
    private TransposedDown transposedDown;
    private GpuBackend sharedGpu;   // the hybrid FFN's and attention blocks' device, closed after both
    private org.powerinfer4j.engine.backend.HybridFeedForward hybrid;
    private GpuLayers gpuLayers;
    private float sparseThreshold = Float.NaN;
    private org.powerinfer4j.engine.tokenizer.ChatTemplate chatTemplate;
    /** Owns the repacked copies (RepackedMatrix); closed with the model. */
    private Arena repackArena = Arena.ofShared();

    private Model(GGUFFile file, ModelConfig config, ModelWeights weights, Tokenizer tokenizer, ModelOptions options, long startNanos) {
        this.file = file;
        this.config = config;
        this.tokenizer = tokenizer;
        // the graph is built (and every tensor checked) before anything is allocated; -ngl runs any layer the device
        // kernels take (GpuLayers says which)
        GraphBuilder.build(config, weights);
        this.options = options;
        int ctx = options.contextLength() > 0 ? options.contextLength() : Math.min(config.trainedContext(), ModelOptions.DEFAULT_CONTEXT_CAP);
        this.contextLength = Math.max(1, ctx);
        // a -c too large for memory fails here, before the pool, the repack or any session allocates
        org.powerinfer4j.engine.model.SessionMemory.requireFits(config, contextLength, options.batchSize(), options.threads(), options.kvCacheType());
        this.sparseMode = chooseSparseMode(config, weights, options);
        this.pool = new WorkerPool(options.threads());
        try {
            // dense products over Q4_0/Q4_K/Q5_K/Q6_K/Q8_0 run faster on a repacked copy (see RepackedMatrix); the sparse FFN reads the file
            this.weights = repacked(weights, options, switch (sparseMode) {   // exact computes the selector densely
                case OFF -> ModelWeights.FfnRepack.ALL;
                case EXACT -> ModelWeights.FfnRepack.SELECTOR;
                case PREDICT -> ModelWeights.FfnRepack.NONE;
            });
            this.stats = options.sparseStats() || sparseMode != SparseMode.OFF ? new SparsityStats(config.layers(), config.ffDim()) : null;
            this.transformer = new Transformer(config, this.weights, feedForward());
            GpuOptions g = options.gpu();
            if (g.enabled() && sparseMode == SparseMode.OFF && g.gpuLayers() == 0 && !g.hasBudget())
                options.listener().message("note: --gpu on a dense FFN moves whole layers: pass -ngl N or --vram-budget GiB; everything runs on the CPU");
            if (g.enabled() && (g.gpuLayers() > 0 || (g.hasBudget() && g.gpuIndex() == null && sparseMode == SparseMode.OFF))) {
                if (sparseMode != SparseMode.OFF)
                    options.listener().message("note: -ngl moves whole dense layers; this model's FFN runs sparse (--sparse " + sparseMode.name().toLowerCase()
                            + "), so it stays on the CPU" + (hybrid != null ? " apart from the hybrid FFN" : "") + " (pass --sparse off to offload layers)");
                else {
                    gpuLayers = GpuLayers.create(g, config, this.weights, contextLength, options.batchSize(), options.kvCacheType(),
                            options.listener()::message);
                }
            }
            if (gpuLayers != null) transformer.setLayerOffload(gpuLayers);
            // decode steps of concurrent sessions share passes where every product has a per-token form (dense CPU layers)
            this.batcher = options.batchSequences() && transformer.supportsSequenceBatches()
                    ? new DecodeBatcher(transformer, config, pool, contextLength, options.decodeBatching() == DecodeBatching.EXACT) : null;
        } catch (RuntimeException | Error e) {
            // a load that fails here (a GPU that cannot be used, a layer the device refuses) leaves no worker threads,
            // device memory or repacked copy behind; Model.open closes the file
            RuntimeException first = closing(pool::close, null);
            if (hybrid != null) first = closing(hybrid::close, first);
            if (gpuLayers != null) first = closing(gpuLayers::close, first);
            if (sharedGpu != null) first = closing(sharedGpu::close, first);
            if (transposedDown != null) first = closing(transposedDown::close, first);
            first = closing(repackArena::close, first);
            if (first != null) e.addSuppressed(first);
            throw e;
        }
        this.loadMillis = (System.nanoTime() - startNanos) / 1_000_000;   // includes the repack
    }

    /** The weights with repacked Q4_0, Q4_K, Q5_K, Q6_K and Q8_0 copies when asked for and possible (MatrixOps.readsRepacked); without them (one note) when memory runs out. */
    private ModelWeights repacked(ModelWeights w, ModelOptions o, ModelWeights.FfnRepack ffn) {
        if (!o.repack()) return w;
        long bytes = w.repackBytes(ffn);   // 0 where no type has kernels for its copy here
        if (bytes == 0) return w;
        ModelListener l = o.listener();
        // the copy is most of a large model's load time (it reads every Q4 matrix from the file): the listener shows it
        l.loadStarted("repacking Q4_0/Q4_K/Q5_K/Q6_K/Q8_0 matrices", bytes);
        try {
            return w.repackedForCpu(repackArena, pool, ffn, l::loadAdvanced);
        } catch (OutOfMemoryError e) {
            repackArena.close();
            repackArena = Arena.ofShared();
            l.message("note: no memory for the repacked Q4_0/Q4_K copy (" + e.getMessage() + "); computing from the file's layout (--no-repack)");
            return w;
        } finally {
            l.loadFinished();
        }
    }

    /** Opens a GGUF model. Errors (missing file, malformed GGUF, unsupported model) are one-line messages. */
    public static Model open(Path path, ModelOptions options) throws IOException {
        long t0 = System.nanoTime();
        GGUFFile f = GGUFFile.open(path);
        try {
            ModelConfig c = ModelConfig.fromGGUF(f);
            if (options.activation() != null) c = c.withActivation(options.activation());
            ModelWeights w = ModelWeights.load(f, c);
            Tokenizer tok = Tokenizers.fromGGUF(f);
            return new Model(f, c, w, tok, options, t0);
        } catch (RuntimeException e) {
            f.close();
            throw e instanceof ModelException ? e : new ModelException(path.getFileName() + ": " + e.getMessage(), e);
        } catch (Error e) {
            f.close();
            throw e;
        }
    }

    /** Picks the FFN mode: as asked, else predict with predictors, exact for ReLU models, off for dense ones. */
    static SparseMode chooseSparseMode(ModelConfig c, ModelWeights w, ModelOptions o) {
        boolean moe = c.params().moe();
        // MoE: a predictor per routed expert (blk.N.fc1.E/fc2.E) in every layer with a router; dense layers run dense
        boolean predictors = moe
                ? java.util.Arrays.stream(w.layers()).allMatch(l -> !l.has("ffn_gate_inp.weight") || l.hasExpertPredictors(c.params().experts()))
                : java.util.Arrays.stream(w.layers()).allMatch(l -> l.hasPredictor());
        SparseMode m = o.sparseMode();
        if (m == null) return predictors && c.activation().isRelu() ? SparseMode.PREDICT : c.activation().isRelu() ? SparseMode.EXACT : SparseMode.OFF;
        if (m != SparseMode.OFF && !c.activation().isRelu())
            throw new ModelException("--sparse " + m.name().toLowerCase() + " needs a ReLU-family model, but this one uses "
                    + c.activation() + " (pass --ffn-act relu if its FFN is ReLU)");
        if (m == SparseMode.PREDICT && !predictors)
            throw new ModelException(moe
                    ? "--sparse predict on a mixture-of-experts model needs a predictor per expert (blk.N.fc1.E/fc2.E), which this file lacks; "
                      + "run train-predictors or use --sparse exact"
                    : "--sparse predict needs activation predictors (blk.N.fc1/fc2), which this file lacks; use --sparse exact");
        return m;
    }

    private FeedForward feedForward() {
        if (options.gpu().enabled() && sparseMode == SparseMode.EXACT && options.gpu().gpuLayers() == 0)
            options.listener().message("note: --gpu offloads predictor-gated FFNs (--sparse predict on PowerInfer models); --sparse "
                    + sparseMode.name().toLowerCase() + " runs on the CPU");
        if (config.params().moe()) {
            if (sparseMode == SparseMode.OFF)
                return config.activation().isRelu() && stats != null ? new MoeFeedForward(config, SparseExpertFeedForward.denseWithStats(stats))
                        : new MoeFeedForward(config);
            if (sparseMode == SparseMode.PREDICT) sparseThreshold = thresholdInUse();
            Tensor[][] expertDownT = expertDownT();
            if (sparseMode == SparseMode.PREDICT && options.gpu().enabled()) {
                // the routed experts' hot neurons on the device, planned per (layer, expert)
                HybridFeedForward h = hybridOnDevice(HybridUnits.ofExperts(weights, config.params().experts(), expertDownT));
                if (h != null) return new MoeFeedForward(config, h.experts());
            }
            return new MoeFeedForward(config, new SparseExpertFeedForward(sparseMode, config.activation(), sparseThreshold, expertDownT,
                    maxExpertPredictorHidden(), stats, sparseMode == SparseMode.PREDICT && options.sparseStats()));
        }
        if (sparseMode == SparseMode.OFF)
            return config.activation().isRelu() && stats != null ? SparseFeedForward.denseWithStats(config.activation(), stats)
                    : new DenseFeedForward(config.activation());
        Tensor[] downT = new Tensor[config.layers()];
        int maxHidden = 1;
        java.util.List<Integer> toTranspose = new java.util.ArrayList<>();
        for (int i = 0; i < downT.length; i++) {
            LayerWeights l = weights.layers()[i];
            if (l.ffnDownT() != null) downT[i] = l.ffnDownT();
            else toTranspose.add(i);
            if (l.predictorFc1() != null) maxHidden = Math.max(maxHidden, l.predictorFc1().rows());
        }
        if (!toTranspose.isEmpty()) {   // a dense ReLU GGUF: neuron-major copies made once, on the model's threads
            transposedDown = new TransposedDown();
            Tensor[] t = transposedDown.transposeAll(toTranspose.stream().map(i -> weights.layers()[i].ffnDown()).toList(), options.threads());
            for (int j = 0; j < t.length; j++) downT[toTranspose.get(j)] = t[j];
        }
        sparseThreshold = thresholdInUse();
        if (sparseMode == SparseMode.PREDICT && options.gpu().enabled()) {
            HybridFeedForward h = hybridOnDevice(HybridUnits.ofLayers(weights, downT));
            if (h != null) return h;
        }
        return new SparseFeedForward(sparseMode, config.activation(), sparseThreshold, downT, maxHidden, stats,
                sparseMode == SparseMode.PREDICT && options.sparseStats());
    }

    /**
     * The hybrid FFN over {@code units} on the device the options name, or null (with a note) when --gpu auto finds
     * none. PowerInfer's order: attention blocks and their KV cache take the budget first, the hot FFN neurons the
     * rest; one backend (one context, the kernels loaded once) for both, which the model closes.
     */
    private HybridFeedForward hybridOnDevice(HybridUnits units) {
        GpuOptions g = org.powerinfer4j.engine.backend.HybridSetup.withDefaultBudget(options.gpu(), options.listener()::message);
        boolean[] noted = {false};
        GpuBackend gpu = g.mode().open(m -> {   // --gpu cuda without a usable device: a one-line error here
            noted[0] = true;
            options.listener().message(m);
        });
        if (gpu == null) {
            if (!noted[0]) options.listener().message("note: --gpu auto found no usable CUDA device; the FFN runs on the CPU");
            return null;
        }
        try {
            org.powerinfer4j.engine.backend.HybridSetup.requireBudgetOrIndex(g);
            gpuLayers = GpuLayers.attention(g, config, weights, contextLength, options.batchSize(), options.kvCacheType(),
                    g.hasBudget() ? g.vramBudget() : -1, options.listener()::message, gpu);
            if (gpuLayers != null && g.hasBudget() && g.gpuIndex() == null)
                g = g.withVramBudget(Math.max(0, g.vramBudget() - gpuLayers.deviceBytes()));
            hybrid = org.powerinfer4j.engine.backend.HybridSetup.create(g, file.path(), units, config.activation(), sparseThreshold,
                    options.batchSize(), stats, options.listener()::message, gpu, false);
            sharedGpu = gpu;
            return hybrid;
        } catch (RuntimeException e) {
            if (gpuLayers != null) gpuLayers.close();
            gpuLayers = null;
            gpu.close();
            throw e;
        }
    }

    /** {@code --sparse-threshold} when given, else the file's {@code powerinfer.sparse_threshold} (0 without one). */
    private float thresholdInUse() {
        return Float.isNaN(options.sparseThreshold()) ? file.getFloat("powerinfer.sparse_threshold", 0f) : options.sparseThreshold();
    }

    private int maxExpertPredictorHidden() {
        int h = 1;
        for (LayerWeights l : weights.layers())
            for (int e = 0; e < config.params().experts(); e++)
                if (l.expertPredictorFc1(e) != null) h = Math.max(h, l.expertPredictorFc1(e).rows());
        return h;
    }

    /** Neuron-major copies of every routed expert's down projection, [layer][expert] (null for layers without a router). */
    private Tensor[][] expertDownT() {
        Tensor[][] downT = new Tensor[config.layers()][];
        int experts = config.params().experts();
        java.util.List<Tensor> downs = new java.util.ArrayList<>();
        for (int i = 0; i < downT.length; i++) {
            LayerWeights l = weights.layers()[i];
            if (l.get("ffn_gate_inp.weight") == null) continue;   // a dense layer of a MoE model runs dense
            downT[i] = new Tensor[experts];
            for (int e = 0; e < experts; e++) downs.add(l.expert("down", e));
        }
        transposedDown = new TransposedDown();
        Tensor[] all = transposedDown.transposeAll(downs, options.threads());
        for (int i = 0, n = 0; i < downT.length; i++)
            if (downT[i] != null) for (int e = 0; e < experts; e++) downT[i][e] = all[n++];
        return downT;
    }

    /** Observes every layer's FFN inputs and activations (profiling, predictor training); null removes it. */
    public void setFfnObserver(org.powerinfer4j.engine.model.FfnObserver observer) {
        transformer.setFfnObserver(observer);
    }

    /** The FFN mode in use. */
    public SparseMode sparseMode() { return sparseMode; }
    /** The predictor threshold in use (NaN unless predict mode). */
    public float sparseThreshold() { return sparseThreshold; }
    /** The hybrid CPU/GPU FFN (placement summary, overlap), or null when the FFN runs on the CPU only. */
    public org.powerinfer4j.engine.backend.HybridFeedForward hybridFeedForward() { return hybrid; }
    /** The hybrid FFN's placement table and overlap line; empty when the FFN runs on the CPU only. */
    public String placementSummary() {
        String layers = gpuLayers == null ? "" : gpuLayers.summary();
        if (hybrid == null) return layers;
        return layers.isEmpty() ? hybrid.summary() : layers + "\n" + hybrid.summary();
    }
    /**
     * What this model allocates on the device (with one session open): the layers' and the hybrid FFN's
     * allocations, in their order — what {@code plan} prints for the same options.
     */
    public org.powerinfer4j.engine.placement.DeviceFootprint deviceFootprint() {
        var f = gpuLayers == null ? org.powerinfer4j.engine.placement.DeviceFootprint.EMPTY : gpuLayers.footprint();
        return hybrid == null ? f : f.plus(hybrid.footprint());
    }

    /** Device bytes allocated now (padded; -1 when the backend does not count, 0 without a device). */
    public long deviceBytesInUse() {
        GpuBackend b = sharedGpu != null ? sharedGpu : gpuLayers != null ? gpuLayers.backend() : null;
        return b == null ? 0 : b.bytesInUse();
    }

    /** Layers on the GPU: whole ({@code -ngl}, dense) or attention blocks (hybrid predict mode); null when none. */
    public GpuLayers gpuLayers() { return gpuLayers; }

    /** Whether every layer's KV cache lives in the sessions' host memory (no device layers), so prefixes can be shared ({@link Session#adoptPrefix}). */
    public boolean hostKvCache() { return gpuLayers == null; }
    /** Activation statistics (null for dense SwiGLU models without {@code sparseStats}). */
    public SparsityStats sparsityStats() { return stats; }

    /** The chat template: the file's {@code tokenizer.chat_template}, else a built-in format detected from the vocabulary. */
    public synchronized org.powerinfer4j.engine.tokenizer.ChatTemplate chatTemplate() {
        if (chatTemplate == null) chatTemplate = org.powerinfer4j.engine.tokenizer.ChatTemplates.forGGUF(file);
        return chatTemplate;
    }

    /**
     * Lets the JIT compile the kernels before the first request: short throwaway generations through this model for
     * about 3 s ({@link WarmUp}; longer on a model whose first 16 tokens take longer), after which a first prompt runs
     * near its warm speed. Safe while other sessions run; returns the milliseconds taken.
     */
    public long warmUp() {
        return WarmUp.run(this);
    }

    public Session newSession() {
        return new Session(this, contextLength);
    }

    /**
     * A KV cache of {@code totalTokens} positions that sessions of this model share ({@link #newSession(SharedKvCache, int)}):
     * each takes blocks of {@value org.powerinfer4j.engine.model.KvBlockPool#BLOCK_TOKENS} positions as it grows and
     * maps a prefix another session has evaluated instead of recomputing it ({@link Session#adoptPrefix}). Only for
     * models whose caches are on the host ({@link #hostKvCache()}). Close it after its sessions.
     */
    public SharedKvCache newSharedKvCache(int totalTokens) {
        if (!hostKvCache()) throw new IllegalStateException("this model keeps KV caches on the device (-ngl); they cannot be shared");
        org.powerinfer4j.engine.model.SessionMemory.requirePoolFits(config, totalTokens, options.kvCacheType());
        return new SharedKvCache(this, new org.powerinfer4j.engine.model.KvBlockPool(config.layers(), config.kvDim(), options.kvCacheType(), totalTokens));
    }

    /** A session of up to {@code contextLength} tokens (at most the model's context) whose KV cache grows in {@code cache}. */
    public Session newSession(SharedKvCache cache, int contextLength) {
        if (cache.model() != this) throw new IllegalArgumentException("the shared KV cache belongs to another model");
        if (contextLength < 1 || contextLength > this.contextLength)
            throw new IllegalArgumentException("a session context of " + contextLength + " tokens; this model's context is " + this.contextLength);
        return new Session(this, contextLength, cache.pool());
    }

    public ModelConfig config() { return config; }
    public ModelWeights weights() { return weights; }
    public Tokenizer tokenizer() { return tokenizer; }
    public GGUFFile file() { return file; }
    public ModelOptions options() { return options; }
    public int contextLength() { return contextLength; }
    public long loadMillis() { return loadMillis; }
    Transformer transformer() { return transformer; }
    WorkerPool pool() { return pool; }

    /**
     * Runs {@code ids} through the model at {@code startPos} into {@code s}, waiting for its turn (one pass at a
     * time). A single token joins the next batched decode pass (see {@link DecodeBatcher}); a prompt runs one
     * chunk ({@code -b} tokens) per turn, so other sessions' decode steps go between its chunks.
     */
    void forward(org.powerinfer4j.engine.model.InferenceState s, int[] ids, int startPos, boolean wantLogits) {
        try {
            forwardChunks(s, ids, startPos, wantLogits);
        } catch (InternalError e) {
            throw mappingFault(e);
        }
    }

    private void forwardChunks(org.powerinfer4j.engine.model.InferenceState s, int[] ids, int startPos, boolean wantLogits) {
        if (startPos < 0 || (long) startPos + ids.length > s.kv().contextLength())   // checked whole before any chunk runs
            throw new org.powerinfer4j.engine.model.ModelException("context is full: " + ((long) startPos + ids.length)
                    + " tokens do not fit in the context of " + s.kv().contextLength());
        // a shared cache's blocks, here on the caller's thread: a full pool fails this call, not a batched pass
        s.kv().reserve(startPos, startPos + ids.length);
        if (ids.length == 1 && wantLogits && batcher != null) {
            batcher.decode(forwardLock, this::checkOpen, s, ids[0], startPos);
            return;
        }
        if (batcher != null && batcher.takesPrompts() && PROMPTS_RIDE && (batchPrompts || forwardLock.isLocked() || batcher.hasQueued())) {
            // other streams are running: the chunks ride their passes (one pass over the weights for all), and
            // prompts that arrive together are prefilled together instead of one after another
            for (int done = 0; done < ids.length; ) {
                int n = Math.min(Math.min(s.maxBatch(), DecodeBatcher.PROMPT_CHUNK), ids.length - done);
                batcher.prompt(forwardLock, this::checkOpen, s, java.util.Arrays.copyOfRange(ids, done, done + n), startPos + done,
                        wantLogits && done + n == ids.length);
                done += n;
            }
            return;
        }
        int done = 0;
        do {
            int n = Math.min(s.maxBatch(), ids.length - done);
            forwardLock.lock();
            try {
                checkOpen();
                transformer.forward(pool, s, ids, done, n, startPos + done, wantLogits && done + n == ids.length);
            } finally {
                unlockForward();
            }
            done += n;
        } while (done < ids.length);
    }

    /**
     * Runs {@code ids} at {@code startPos} in one turn and fills {@code allLogits} with the logits after each
     * (see {@link Transformer#forwardAllLogits}; {@code exact}: per-token kernels where the model allows them).
     */
    void forwardAllLogits(org.powerinfer4j.engine.model.InferenceState s, int[] ids, int startPos, float[] allLogits, boolean exact) {
        if (startPos >= 0 && (long) startPos + ids.length <= s.kv().contextLength()) s.kv().reserve(startPos, startPos + ids.length);
        forwardLock.lock();
        try {
            checkOpen();
            transformer.forwardAllLogits(pool, s, ids, 0, ids.length, startPos, allLogits, exact);
        } catch (InternalError e) {
            throw mappingFault(e);
        } finally {
            unlockForward();
        }
    }

    /** Releases the forward lock and hands the turn to a queued decode step, if any ({@link DecodeBatcher#wakeNext}). */
    private void unlockForward() {
        forwardLock.unlock();
        if (batcher != null) batcher.wakeNext();
    }

    /** Before every pass: the model is open and its file is still whole (a truncated mapping would fault mid-pass). */
    private void checkOpen() {
        if (closed) throw new IllegalStateException("the model is closed");
        long now = file.shrunkTo();
        if (now >= 0) throw fileChanged(now);
    }

    private ModelException fileChanged(long now) {
        return new ModelException(file.path().getFileName() + " was truncated or rewritten on disk while loaded (" + file.fileSize()
                + " bytes mapped, " + (now >= 0 ? now + " now" : "its pages no longer readable")
                + "): reopen it; replace model files by renaming a new file over them, not by writing into them");
    }

    /** A fault reading the mapping (the file changed during a pass, on a scalar path) becomes that one-line error. */
    private RuntimeException mappingFault(InternalError e) {
        if (e.getMessage() == null || !e.getMessage().contains("unsafe memory access")) throw e;
        long now = file.shrunkTo();
        return fileChanged(now);
    }

    /** Decode steps run through batched passes and the passes they took, since the model was opened. */
    public long[] decodeBatchCounts() {
        return batcher == null ? new long[]{0, 0} : new long[]{batcher.steps(), batcher.passes()};
    }

    /** Prompt chunks that rode a decode pass (FAST, while other streams ran). */
    public long batchedPromptChunks() {
        return batcher == null ? 0 : batcher.promptChunks();
    }

    /** Decode steps that found the lock free only after their park timed out (see {@link DecodeBatcher#rescues}). */
    long decodeRescues() {
        return batcher == null ? 0 : batcher.rescues();
    }

    @Override
    public void close() {
        // every resource is released even when one fails (a device that failed fatally fails every later call);
        // the first failure is thrown afterwards
        RuntimeException first = null;
        forwardLock.lock();   // a pass in progress finishes first: the file is not unmapped under it
        try {
            closed = true;
            first = closing(pool::close, first);
            if (hybrid != null) first = closing(hybrid::close, first);
            if (gpuLayers != null) first = closing(gpuLayers::close, first);
            if (sharedGpu != null) first = closing(sharedGpu::close, first);
            if (transposedDown != null) first = closing(transposedDown::close, first);
            first = closing(repackArena::close, first);
            first = closing(file::close, first);
        } finally {
            unlockForward();   // queued steps then fail at checkOpen: the model is closed
        }
        if (first != null) throw first;
    }

    private static RuntimeException closing(Runnable r, RuntimeException first) {
        try {
            r.run();
            return first;
        } catch (RuntimeException e) {
            if (first == null) return e;
            first.addSuppressed(e);
            return first;
        }
    }
}
