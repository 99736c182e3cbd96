package org.powerinfer4j.engine.api;

import java.util.Locale;

/**
 * How the decode steps of sessions decoding at the same time share passes over the weights ({@link DecodeBatcher},
 * {@code --decode-batching}).
 */
public enum DecodeBatching {
    /** Each step runs alone, one after another at the model's lock. */
    OFF,
    /**
     * Steps share a pass, every product per token through the fused mat-vec kernels
     * ({@code MatrixOps.matVecBatch}, each weight row read once for all streams while it is in L1): each stream's
     * logits are bit-identical to its step alone. The fused kernels are compute bound, so the shared weight
     * stream gains little per token (repacked Q4_0/Q4_K: four streams share each converted nibble, 1.2–1.5× per
     * product at 4–8 streams), but the streams' steps no longer queue one behind another.
     */
    EXACT,
    /**
     * The default. Steps share a pass through the matrix–matrix kernels ({@code MatrixOps.matMul}: each weight
     * panel dequantized once for all streams, then a register tile), except for repacked Q4_0 and Q4_K matrices, which
     * take {@code MatrixOps.matVecBatch}'s shared-nibble kernel (four streams per converted nibble, bit-identical to each
     * step alone; {@code InferenceState.perTokenFor}).
     * Measured against {@link #EXACT} on 110m Q8_0, 1 thread: 1.28× at 4 streams, 2.0× at 8. Logits differ from
     * the step alone by rounding only (the dequantize-then-tile order sums differently from the fused kernels);
     * greedy tokens are the same on the test models ({@code SequenceBatchTest} states the bound). Sparse FFNs take
     * their prompt path (union rows through matMul).
     */
    FAST;

    public static DecodeBatching parse(String s) {
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("decode batching must be off, exact or fast, not '" + s + "'");
        }
    }
}
