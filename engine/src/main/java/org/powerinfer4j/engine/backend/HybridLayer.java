package org.powerinfer4j.engine.backend;

import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuMatrix;

/** A layer's device-resident part. */
final class HybridLayer {
    final int[] hot, cold;
    GpuMatrix gate, up, down, fc1, fc2;   // fc1/fc2 null: predictor evaluated on the CPU, mask uploaded
    GpuBuffer rowMap;
    GpuBuffer gateBias, upBias;           // the hot rows' biases, compact (OPT, ...); null without
    long bytes;
    long predictorBytes;                  // of fc1/fc2 counted here (a shared matrix counts with its first unit)

    HybridLayer(int[] hot, int[] cold) {
        this.hot = hot;
        this.cold = cold;
    }

    void freeRows() {
        for (GpuMatrix m : new GpuMatrix[]{gate, up, down}) if (m != null) m.data().close();
        for (GpuBuffer b : new GpuBuffer[]{rowMap, gateBias, upBias}) if (b != null) b.close();
        gate = up = down = null;
        rowMap = gateBias = upBias = null;
    }

    /** Gives back this unit's predictor; a matrix shared with other units (a layer-wide fc1) is freed by its last user. */
    void freePredictor(SharedUploads shared) {
        if (fc1 != null) shared.release(fc1);
        if (fc2 != null) shared.release(fc2);
        fc1 = fc2 = null;
    }

    /**
     * Device copies of tensors several units use (a MoE layer-wide predictor's fc1, which every expert of the layer
     * runs): uploaded once, counted by user, freed when the last user releases it.
     */
    static final class SharedUploads {
        private final java.util.IdentityHashMap<org.powerinfer4j.engine.tensor.Tensor, GpuMatrix> byTensor = new java.util.IdentityHashMap<>();
        private final java.util.IdentityHashMap<GpuMatrix, int[]> users = new java.util.IdentityHashMap<>();

        /** The device copy of {@code t}, uploaded by {@code upload} on its first use. */
        GpuMatrix acquire(org.powerinfer4j.engine.tensor.Tensor t, java.util.function.Function<org.powerinfer4j.engine.tensor.Tensor, GpuMatrix> upload) {
            GpuMatrix m = byTensor.get(t);
            if (m == null) {
                m = upload.apply(t);
                byTensor.put(t, m);
                users.put(m, new int[1]);
            }
            users.get(m)[0]++;
            return m;
        }

        /** Whether {@code m} was uploaded for this unit first (its bytes are counted there). */
        boolean firstUse(GpuMatrix m) {
            return users.get(m)[0] == 1;
        }

        void release(GpuMatrix m) {
            int[] n = users.get(m);
            if (n == null || --n[0] > 0) return;
            users.remove(m);
            byTensor.values().remove(m);
            m.data().close();
        }
    }
}
