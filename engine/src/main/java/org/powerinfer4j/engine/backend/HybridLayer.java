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

    void freePredictor() {
        if (fc1 != null) fc1.data().close();
        if (fc2 != null) fc2.data().close();
        fc1 = fc2 = null;
    }
}
