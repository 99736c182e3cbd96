package org.powerinfer4j.engine.backend;

import org.powerinfer4j.engine.gpu.GpuActivation;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuStream;

/**
 * What one hybrid FFN call queues on the device for a unit: the predictor's mask and the hot rows' partial output.
 * Below {@link GpuBackend#hybridDenseFrom()} tokens every token runs on its own (row-sparse mat-vecs that read only
 * the predicted-active hot rows, a sparse axpy). From there on, the batch runs as GEMMs, as PowerInfer's does for
 * large batches: the predictor as two products over all tokens (in split precision, so its decisions stay the
 * mat-vec's), the hot rows densely, and then the mask zeroes the
 * activations of rows the predictor left out, so the partial output is the row-sparse one's (an inactive row's
 * activation is 0 there too) at one pass over the hot rows instead of one per token.
 */
final class HybridDevicePass {
    private HybridDevicePass() {}

    /** mask[b·ff + r] for the batch's tokens (residual rows in {@code ws.residual}) from the unit's device predictor. */
    static void predictor(GpuBackend gpu, GpuStream stream, HybridWorkspace ws, HybridLayer g, int dim, int ff, float threshold, int batch,
                          boolean dense) {
        int hidden = g.fc1.rows();
        if (!dense) {
            for (int b = 0; b < batch; b++)
                gpu.predictor(stream, g.fc1, g.fc2, ws.residual.floats((long) b * dim, dim), ws.hidden.floats(0, hidden), ws.logits.floats(0, ff),
                        threshold, ws.mask.slice((long) b * ff, ff), null);
            return;
        }
        GpuBuffer h = ws.hidden.floats(0, (long) batch * hidden), logits = ws.logits.floats(0, (long) batch * ff);
        // split precision: F16 operands would move threshold decisions off the mat-vec's (and the CPU's)
        gpu.matMulPrecise(stream, g.fc1, ws.residual.floats(0, (long) batch * dim), h, batch);
        gpu.activation(stream, GpuActivation.RELU, h, null, h, batch * hidden);
        gpu.matMulPrecise(stream, g.fc2, h, logits, batch);
        gpu.thresholdMask(stream, logits, batch * ff, threshold, ws.mask.slice(0, (long) batch * ff), null);
    }

    /** The hot rows' partial output of the batch into {@code ws.y} (n_embd floats per token), given the mask. */
    static void hotRows(GpuBackend gpu, GpuStream stream, HybridWorkspace ws, HybridLayer g, GpuActivation act, int dim, int ff, int batch,
                        boolean dense) {
        int k = g.hot.length;
        if (dense) {
            long n = (long) batch * k;
            GpuBuffer x = ws.x.floats(0, (long) batch * dim), gate = ws.gate.floats(0, n), up = ws.up.floats(0, n), h = ws.h.floats(0, n);
            if (g.gate != null) {
                gpu.matMul(stream, g.gate, x, gate, batch);
                gpu.matMul(stream, g.up, x, up, batch);
                if (g.gateBias != null) gpu.addRows(stream, gate, g.gateBias, k, batch);
                if (g.upBias != null) gpu.addRows(stream, up, g.upBias, k, batch);
                gpu.activation(stream, act, gate, up, h, (int) n);
            } else {
                gpu.matMul(stream, g.up, x, gate, batch);
                if (g.upBias != null) gpu.addRows(stream, gate, g.upBias, k, batch);
                gpu.activation(stream, GpuActivation.RELU, gate, null, h, (int) n);
            }
            gpu.maskRows(stream, h, ws.mask.slice(0, (long) batch * ff), g.rowMap, k, batch, ff);
            gpu.axpyMatMul(stream, g.down, h, ws.y.floats(0, (long) batch * dim), batch);
            return;
        }
        GpuBuffer gateOut = ws.gate.floats(0, k), upOut = ws.up.floats(0, k), h = ws.h.floats(0, k);
        for (int b = 0; b < batch; b++) {
            GpuBuffer xb = ws.x.floats((long) b * dim, dim), mb = ws.mask.slice((long) b * ff, ff);
            if (g.gate != null) {
                gpu.rowSparseMatVec(stream, g.gate, xb, mb, g.rowMap, gateOut);
                gpu.rowSparseMatVec(stream, g.up, xb, mb, g.rowMap, upOut);
                if (g.gateBias != null) gpu.maskedAdd(stream, gateOut, g.gateBias, mb, g.rowMap, k);
                if (g.upBias != null) gpu.maskedAdd(stream, upOut, g.upBias, mb, g.rowMap, k);
                gpu.activation(stream, act, gateOut, upOut, h, k);
            } else {
                gpu.rowSparseMatVec(stream, g.up, xb, mb, g.rowMap, gateOut);
                if (g.upBias != null) gpu.maskedAdd(stream, gateOut, g.upBias, mb, g.rowMap, k);
                gpu.activation(stream, GpuActivation.RELU, gateOut, null, h, k);
            }
            gpu.sparseAxpy(stream, g.down, h, ws.y.floats((long) b * dim, dim), false);
        }
    }
}
