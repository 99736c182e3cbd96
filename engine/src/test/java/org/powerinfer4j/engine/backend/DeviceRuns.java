package org.powerinfer4j.engine.backend;

import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.DenseFeedForward;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.LayerOffload;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.Transformer;
import org.powerinfer4j.engine.tensor.GGMLType;

/** Greedy decoding of a dense model with the last layers through an offload, as the device tests compare it. */
final class DeviceRuns {
    private DeviceRuns() {}

    record Run(int[] tokens, float[] firstLogits) {}

    /** {@code steps} greedy tokens after {@code prompt}, which goes through in chunks of {@code chunk} tokens (the device's too). */
    static Run greedy(ModelConfig c, ModelWeights w, LayerOffload offload, int[] prompt, int steps, int chunk) {
        return greedy(c, w, offload, prompt, steps, chunk, GGMLType.F32);
    }

    /** The same with a CPU KV cache of {@code kvType} (the device's, when it holds layers). */
    static Run greedy(ModelConfig c, ModelWeights w, LayerOffload offload, int[] prompt, int steps, int chunk, GGMLType kvType) {
        Transformer t = new Transformer(c, w, new DenseFeedForward(c.activation()));
        t.setLayerOffload(offload);
        try (WorkerPool pool = new WorkerPool(2); InferenceState s = new InferenceState(c, 256, chunk, 2, kvType)) {
            t.forward(pool, s, prompt, 0, prompt.length, 0, true);
            float[] first = s.logits().clone();
            int[] out = new int[steps];
            int pos = prompt.length;
            for (int i = 0; i < steps; i++) {
                out[i] = argmax(s.logits());
                t.forward(pool, s, new int[] {out[i]}, 0, 1, pos++, true);
            }
            return new Run(out, first);
        }
    }

    static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }
}
