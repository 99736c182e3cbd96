package org.powerinfer4j.engine.model;

/**
 * Per-session scratch buffers for the forward pass, sized for up to {@code maxBatch} tokens at once, plus
 * the session's KV cache. Activations live on the heap (they are small and hot); weights never do.
 */
public final class InferenceState implements AutoCloseable {
    final int maxBatch;
    final float[] x, xb, xb2, xb3, q, k, v, att, hb, hb2;
    final float[][] scores;       // per worker thread: attention scores over the context, for 4 query tokens
    // per rotary table, per token of the chunk: the rotation of each dimension pair (shared by heads and layers)
    final float[][] ropeCos = new float[2][], ropeSin = new float[2][];
    final float[] logits;         // logits of the last token of the last forward call
    final KVCache kv;

    // a sequence batch's scratch only (see forSequenceBatch): each token's own cache and position; null otherwise
    final KVCache[] tokenKv;
    final int[] tokenPos;
    final InferenceState[] tokenStates;   // the sessions' states (their device state for -ngl layers)
    // a sequence batch's products: per token through the fused mat-vec kernels (bit-identical to each alone), else matMul
    final boolean perToken;

    /** A session's state with a contiguous KV cache of its own for {@code contextLength} positions. */
    public InferenceState(ModelConfig c, int contextLength, int maxBatch, int threads, org.powerinfer4j.engine.tensor.GGMLType kvType) {
        this(c, contextLength, maxBatch, threads, false, false, checkedCache(c, contextLength, maxBatch, threads, kvType));
    }

    /**
     * A session's state whose KV cache is {@link KVCache#paged} from {@code kvPool} (shared with other sessions): up
     * to {@code contextLength} positions, taken block by block as the session grows.
     */
    public InferenceState(ModelConfig c, int contextLength, int maxBatch, int threads, KvBlockPool kvPool) {
        this(c, contextLength, maxBatch, threads, false, false, pagedCache(c, contextLength, maxBatch, threads, kvPool));
    }

    private static KVCache checkedCache(ModelConfig c, int contextLength, int maxBatch, int threads, org.powerinfer4j.engine.tensor.GGMLType kvType) {
        SessionMemory.requireFits(c, contextLength, maxBatch, threads, kvType);   // before any buffer
        return new KVCache(c.layers(), contextLength, c.kvDim(), kvType);
    }

    private static KVCache pagedCache(ModelConfig c, int contextLength, int maxBatch, int threads, KvBlockPool kvPool) {
        SessionMemory.requireHeapFits(c, contextLength, maxBatch, threads);
        return KVCache.paged(kvPool, contextLength);
    }

    /** {@link #forSequenceBatch(ModelConfig, int, int, int, boolean)} with per-token (bit-exact) products. */
    public static InferenceState forSequenceBatch(ModelConfig c, int contextLength, int maxTokens, int threads) {
        return forSequenceBatch(c, contextLength, maxTokens, threads, true);
    }

    /**
     * Scratch for {@link Transformer#forwardSequences}: activations for up to {@code maxTokens} tokens of different
     * sequences, no KV cache of its own (each token reads and writes its sequence's), logits per token. With
     * {@code perToken} every product runs per token ({@code MatrixOps.matVecBatch}: each sequence's logits
     * bit-identical to its step alone); without, one matrix–matrix product for all ({@code MatrixOps.matMul}:
     * several times faster, logits within rounding).
     */
    public static InferenceState forSequenceBatch(ModelConfig c, int contextLength, int maxTokens, int threads, boolean perToken) {
        return new InferenceState(c, contextLength, maxTokens, threads, true, perToken, null);
    }

    private InferenceState(ModelConfig c, int contextLength, int maxBatch, int threads, boolean sequenceBatch, boolean perToken, KVCache kv) {
        this.maxBatch = maxBatch;
        this.perToken = sequenceBatch && perToken;
        this.tokenKv = sequenceBatch ? new KVCache[maxBatch] : null;
        this.tokenPos = sequenceBatch ? new int[maxBatch] : null;
        this.tokenStates = sequenceBatch ? new InferenceState[maxBatch] : null;
        x = new float[maxBatch * c.dim()];
        xb = new float[maxBatch * Math.max(c.dim(), c.qDim())];
        xb2 = new float[maxBatch * c.dim()];
        xb3 = new float[maxBatch * c.dim()];
        q = new float[maxBatch * c.qDim()];
        k = new float[maxBatch * c.kvDim()];
        v = new float[maxBatch * c.kvDim()];
        att = new float[maxBatch * c.qDim()];
        hb = new float[maxBatch * c.ffDim()];
        hb2 = new float[maxBatch * c.ffDim()];
        scores = new float[threads][4 * contextLength];   // Transformer.QUERY_BLOCK rows per thread
        logits = new float[(sequenceBatch ? maxBatch : 1) * c.vocabSize()];
        this.kv = kv;
    }

    private Object ffnScratch;

    /** True for a sequence batch's scratch: every token is a different sequence's (its own cache and position). */
    public boolean sequenceBatch() {
        return tokenPos != null;
    }

    /** Set while {@link Transformer#forwardAllLogits} runs a chunk with decode's per-token kernels (exact verification). */
    boolean perTokenChunk;

    /**
     * True when the products run per token ({@link org.powerinfer4j.engine.kernels.MatrixOps#matVecBatch}), not as one
     * matMul: a bit-exact sequence batch, or an exact verification chunk — each row bit-identical to a decode step of
     * that token alone.
     */
    public boolean perTokenProducts() {
        return perToken || perTokenChunk;
    }

    /**
     * Whether a product with {@code w} runs per token here: always when {@link #perTokenProducts}; in a matMul one
     * (FAST) still for repacked Q4_0 and Q4_K below {@link #REPACKED_MATMUL_FROM} sequences, whose batched kernel
     * (four vectors share each converted nibble, {@code RepackedQ4Kernels.dot2x4}) is bit-identical to the step alone
     * and faster than matMul's dequantized panel at 4–8 sequences; repacked Q5_K and Q6_K below
     * {@link #K_QUANT_MATMUL_FROM}; for other types (Q8_0: 1.3× at 4, 2× at 8) matMul wins; never in a prompt, nor
     * in a sequence batch that carries prompt chunks.
     */
    public boolean perTokenFor(org.powerinfer4j.engine.tensor.Tensor w) {
        if (perTokenProducts()) return true;
        if (!sequenceBatch() || promptRows || !org.powerinfer4j.engine.kernels.RepackedQ4Kernels.SUPPORTED) return false;
        return switch (w.repacked()) {
            case org.powerinfer4j.engine.tensor.RepackedQ4 q -> sequenceRows < REPACKED_MATMUL_FROM;
            case org.powerinfer4j.engine.tensor.RepackedQ5K q -> sequenceRows < K_QUANT_MATMUL_FROM;
            case org.powerinfer4j.engine.tensor.RepackedQ6K q -> sequenceRows < K_QUANT_MATMUL_FROM;
            case null, default -> false;
        };
    }

    /**
     * Repacked Q5_K and Q6_K take the per-token kernels below this many sequences: matMul's small panels are
     * dequantized from the file's layout each pass, which costs more than the product below 16 columns
     * ({@code MatMulBench}, 4096×768, 1 thread, matMul against matVecBatch, GFLOPS: Q6_K 25 / 67 at 4 sequences,
     * 30 / 64 at 8, 72 / 67 at 16; Q5_K 23 / 49 at 4, 72 / 48 at 16). Q8_0's repacked kernel serves one vector at
     * a time and stays behind matMul at every width (53 against 36 at 4), so it keeps matMul.
     */
    static final int K_QUANT_MATMUL_FROM = 16;

    /**
     * From this many sequences in a pass, repacked matrices too take matMul in FAST mode: its broadcast tiles then
     * beat the shared-nibble kernel ({@code MatMulBench}, 768×2048 Q4_0, 1 thread: 92 against 57 GFLOPS at 32
     * sequences; 65 against 60 at 16, where the bit-identical kernel is kept).
     */
    static final int REPACKED_MATMUL_FROM = 32;

    /** Rows of the sequence batch's pass running now (set by {@link Transformer#forwardSequences}). */
    int sequenceRows;

    /** Set while a sequence batch's pass holds prompt chunks (see {@link Transformer#forwardSequences}): then matMul for every product. */
    boolean promptRows;

    /** Position of token {@code b} of the chunk: its own in a sequence batch, else {@code startPos + b}. */
    int pos(int b, int startPos) {
        return tokenPos != null ? tokenPos[b] : startPos + b;
    }

    /** The KV cache token {@code b} of the chunk belongs to. */
    public KVCache kvOf(int b) {
        return tokenKv != null ? tokenKv[b] : kv;
    }

    /** Position of row {@code b} of the sequence batch's pass running now. */
    public int sequencePosition(int b) {
        return tokenPos[b];
    }

    /** The state (session) row {@code b} of the sequence batch's pass running now belongs to. */
    public InferenceState sequenceState(int b) {
        return tokenStates[b];
    }

    /** The buffer behind a graph buffer name. */
    float[] buffer(LayerGraph.Buf b) {
        return switch (b) {
            case X -> x;
            case XB -> xb;
            case Q -> q;
            case K -> k;
            case V -> v;
            case ATT -> att;
            case ATT_OUT -> xb3;
            case FFN_OUT -> xb2;
        };
    }

    /** Rotary table {@code i}'s cos (or sin) rows for the chunk, sized on first use. */
    float[] ropeTable(float[][] tables, int i, int size) {
        if (i >= tables.length) throw new IllegalStateException("rope table " + i + " out of range");
        if (tables[i] == null || tables[i].length < size) tables[i] = new float[size];
        return tables[i];
    }

    /** Normed FFN input, [batch][dim]. */
    public float[] ffnInput() { return xb; }
    /** Residual stream (after attention, before the FFN norm), [batch][dim]: the predictors' input. */
    public float[] residual() { return x; }
    /** Gate pre-activations, then activations h, [batch][n_ff]. */
    public float[] ffnGate() { return hb; }
    /** Up projections, [batch][n_ff]. */
    public float[] ffnUp() { return hb2; }
    /** FFN output, [batch][dim]. */
    public float[] ffnOutput() { return xb2; }

    /** Per-session scratch owned by the model's {@link FeedForward} implementation, created on first use. */
    @SuppressWarnings("unchecked")
    public <T> T ffnScratch(java.util.function.Supplier<T> create) {
        if (ffnScratch == null) ffnScratch = create.get();
        return (T) ffnScratch;
    }

    /** Per-session state of the model's {@link LayerOffload} (device buffers), created on first use, closed with this state. */
    @SuppressWarnings("unchecked")
    public <T extends AutoCloseable> T offloadState(java.util.function.Supplier<T> create) {
        if (offloadState == null) offloadState = create.get();
        return (T) offloadState;
    }

    private AutoCloseable offloadState;

    public int maxBatch() {
        return maxBatch;
    }

    public KVCache kv() {
        return kv;
    }

    public float[] logits() {
        return logits;
    }

    @Override
    public void close() {
        if (offloadState != null) {
            try {
                offloadState.close();
            } catch (Exception ignored) {
                // device memory of a failed device: nothing more to release
            }
        }
        if (kv != null) kv.close();
    }
}
