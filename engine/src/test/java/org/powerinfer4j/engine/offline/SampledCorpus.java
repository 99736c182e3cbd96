package org.powerinfer4j.engine.offline;

import java.util.List;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * The calibration corpus the offline tests share (sampled once per JVM): 32 sequences of 256 tokens that the dense
 * ReLU student samples from BOS at temperature 1, seed 7 — the same kind of text its reference statistics were
 * measured on (teacher samples at T = 1), and independent of the tokenizer.
 */
final class SampledCorpus {
    private SampledCorpus() {}

    private static List<int[]> corpus;

    /** The dense student: one thread (a tiny model spends more on thread hand-offs than on arithmetic). */
    static Model openDense() throws java.io.IOException {
        return Model.open(TestData.file("sparse/stories260K-relu.gguf"), ModelOptions.defaults().withThreads(1).withContextLength(256)
                .withActivation(FfnActivation.REGLU).withSparseMode(SparseMode.OFF).withBatchSize(64));
    }

    static synchronized List<int[]> get(Model dense) {
        if (corpus == null) corpus = CalibrationCorpus.sample(dense, 32, 256, 1.0f, 7);
        return corpus;
    }
}
