package org.powerinfer4j.engine.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Acceptance: predictors trained on ~8k tokens of the dense ReLU student's own samples reach held-out recall ≥ 0.95,
 * and the PWRI file written from the dense GGUF runs in predict mode with the dense greedy output.
 */
class PredictorTrainerTest {
    @TempDir
    Path dir;

    @Test
    void trainsPredictorsAndWritesAWorkingPowerInferFile() throws Exception {
        Path src = TestData.file("sparse/stories260K-relu.gguf");
        PredictorDataset data;
        try (Model dense = SampledCorpus.openDense()) {
            List<int[]> corpus = SampledCorpus.get(dense);
            data = PredictorDataset.collect(dense, corpus, null);
        }
        long t0 = System.nanoTime();
        PredictorTrainer.Config cfg = PredictorTrainer.Config.defaults(64).withThreads(2).withSeed(1);
        PredictorTrainer.Result r = PredictorTrainer.train(data, cfg, null);
        System.out.printf("training %.1f s%n%s", (System.nanoTime() - t0) / 1e9, r.table());
        for (PredictorTrainer.LayerPredictor p : r.layers()) {
            assertThat(p.recall()).as("layer %d held-out recall", p.layer()).isGreaterThanOrEqualTo(0.95);
            assertThat(p.predictedActive()).as("layer %d stays sparse", p.layer()).isLessThan(0.5);
        }
        assertThat(r.fileThreshold()).isEqualTo(0f);
        // deterministic from the seed
        int[] some = java.util.stream.IntStream.range(0, 512).toArray();
        float[][] w1 = PredictorTrainer.fit(data, data.units.get(2), some, 8, cfg.withEpochs(1)),
                w2 = PredictorTrainer.fit(data, data.units.get(2), some, 8, cfg.withEpochs(1));
        assertThat(w1[0]).containsExactly(w2[0]);
        assertThat(w1[1]).containsExactly(w2[1]);

        Path out = dir.resolve("student.powerinfer.gguf");
        try (GGUFFile f = GGUFFile.open(src)) {
            PowerInferWriter.write(f, r, out);
            try (GGUFFile g = GGUFFile.open(out)) {
                assertThat(g.isPowerInfer()).isTrue();
                assertThat(g.getFloat(PowerInferWriter.KEY_THRESHOLD, Float.NaN)).isEqualTo(0f);
                assertThat(g.metadata().keySet()).containsAll(f.metadata().keySet());
                assertThat(g.getLong("general.file_type", -1)).isEqualTo(f.getLong("general.file_type", -1));
                assertThat(g.tensorInfos()).hasSize(f.tensorInfos().size() + 10);
                for (int l = 0; l < 5; l++) {
                    assertThat(g.hasTensor("blk." + l + ".ffn_down.weight")).isFalse();
                    TensorInfo dt = g.tensorInfo("blk." + l + ".ffn_down_t.weight");
                    assertThat(dt.ne()).containsExactly(64L, 172L);
                    assertThat(dt.type()).isEqualTo(GGMLType.F32);
                    assertThat(g.tensorInfo("blk." + l + ".fc1.weight").ne()).containsExactly(64L, (long) r.layers().get(l).hidden());
                    assertThat(g.tensorInfo("blk." + l + ".fc2.weight").type()).isEqualTo(GGMLType.F16);
                    // exact transpose
                    var le = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
                    var a = f.tensorOrNull("blk." + l + ".ffn_down.weight").data();
                    var b = g.tensorOrNull("blk." + l + ".ffn_down_t.weight").data();
                    for (int e = 0; e < 64; e += 7)
                        for (int n = 0; n < 172; n += 5)
                            assertThat(b.get(le, 4L * (n * 64 + e))).isEqualTo(a.get(le, 4L * (e * 172 + n)));
                }
                for (TensorInfo ti : f.tensorInfos())
                    if (!ti.name().endsWith("ffn_down.weight")) assertThat(g.tensorInfo(ti.name()).type()).isEqualTo(ti.type());
            }
        }

        JsonNode ref = new ObjectMapper().readTree(Files.readString(TestData.file("sparse/reference.json")));
        try (Model sparse = Model.open(out, ModelOptions.defaults().withThreads(1).withContextLength(128).withSparseMode(SparseMode.PREDICT))) {
            assertThat(sparse.sparseMode()).isEqualTo(SparseMode.PREDICT);
            for (JsonNode p : ref.get("prompts")) {
                if (!p.get("name").asText().equals("once_upon_a_time")) continue;
                int[] prompt = ints(p.get("prompt_ids"));
                int[] expected = ints(p.get("dense_relu").get("ids"));
                try (Session s = sparse.newSession()) {
                    int[] got = s.generate(prompt, GenerationParams.defaults().withMaxTokens(32).withSampling(SamplingParams.GREEDY)
                            .withStopAtEndOfGeneration(false), null).generatedTokens();
                    assertThat(got).containsExactly(java.util.Arrays.copyOf(expected, 32));
                }
            }
        }
    }

    private static int[] ints(JsonNode a) {
        int[] v = new int[a.size()];
        for (int i = 0; i < v.length; i++) v[i] = a.get(i).asInt();
        return v;
    }
}
