package org.powerinfer4j.engine.offline;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;

/** Conversion details independent of training: tensor types, order, and re-training a PWRI file. */
class PowerInferWriterTest {
    @TempDir
    Path dir;

    private static PredictorTrainer.Result predictors(int layers, int dim, int ff, int h, float thr) {
        List<PredictorTrainer.LayerPredictor> ps = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            float[] fc1 = new float[h * dim], fc2 = new float[ff * h];
            for (int i = 0; i < fc1.length; i++) fc1[i] = (i % 7) * 0.25f - l;
            for (int i = 0; i < fc2.length; i++) fc2[i] = (i % 5) * 0.5f;
            ps.add(new PredictorTrainer.LayerPredictor(l, h, fc1, fc2, thr, 1, 1, 0, 0, 1, ""));
        }
        return new PredictorTrainer.Result(ps, thr, 0, 0);
    }

    @Test
    void keepsTypesAndOrderOfAQuantizedFileAndTransposesItsF16Down() throws Exception {
        // llama.cpp's Q8_0 stories260K: matrices Q8_0 except ffn_down, which stays F16 (rows of 172)
        Path src = TestData.file("models/quantized/stories260K-q8_0.gguf");
        Path out = dir.resolve("q8.powerinfer.gguf");
        try (GGUFFile f = GGUFFile.open(src)) {
            PowerInferWriter.write(f, predictors(5, 64, 172, 8, -0.5f), out);
            try (GGUFFile g = GGUFFile.open(out)) {
                assertThat(g.getFloat(PowerInferWriter.KEY_THRESHOLD, 0)).isEqualTo(-0.5f);
                assertThat(g.getLong("general.file_type", -1)).isEqualTo(f.getLong("general.file_type", -2));
                List<String> names = g.tensorNames();
                int down = names.indexOf("blk.2.ffn_down_t.weight");
                assertThat(names.subList(down, down + 3)).containsExactly("blk.2.ffn_down_t.weight", "blk.2.fc1.weight", "blk.2.fc2.weight");
                TensorInfo dt = g.tensorInfo("blk.2.ffn_down_t.weight");
                assertThat(dt.type()).isEqualTo(GGMLType.F16);
                assertThat(dt.ne()).containsExactly(64L, 172L);
                assertThat(g.tensorInfo("blk.2.ffn_up.weight").type()).isEqualTo(GGMLType.Q8_0);
                var le = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
                var a = f.tensorOrNull("blk.2.ffn_down.weight").data();
                var b = g.tensorOrNull("blk.2.ffn_down_t.weight").data();
                for (int e = 0; e < 64; e++)
                    for (int n = 0; n < 172; n += 3)
                        assertThat(b.get(le, 2L * (n * 64 + e))).isEqualTo(a.get(le, 2L * (e * 172 + n)));
                // predictor values are stored exactly when F16-representable
                var fc1 = g.tensorOrNull("blk.3.fc1.weight").data();
                assertThat(Float.float16ToFloat(fc1.get(le, 2L * 3))).isEqualTo(3 * 0.25f - 3);
            }
        }
        // re-training a PWRI file replaces its predictors and keeps its ffn_down_t
        Path again = dir.resolve("again.powerinfer.gguf");
        try (GGUFFile f = GGUFFile.open(out)) {
            PowerInferWriter.write(f, predictors(5, 64, 172, 4, 0f), again);
            try (GGUFFile g = GGUFFile.open(again)) {
                assertThat(g.tensorNames()).hasSize(f.tensorNames().size());
                assertThat(g.tensorInfo("blk.0.fc1.weight").ne()).containsExactly(64L, 4L);
                assertThat(g.tensorInfo("blk.0.ffn_down_t.weight").type()).isEqualTo(GGMLType.F16);
            }
        }
    }

    @Test
    void transposedDownTypeRule() {
        assertThat(PowerInferWriter.transposedType(GGMLType.F32, 100)).isEqualTo(GGMLType.F32);
        assertThat(PowerInferWriter.transposedType(GGMLType.BF16, 100)).isEqualTo(GGMLType.BF16);
        assertThat(PowerInferWriter.transposedType(GGMLType.Q8_0, 4096)).isEqualTo(GGMLType.Q8_0);
        assertThat(PowerInferWriter.transposedType(GGMLType.Q4_0, 100)).isEqualTo(GGMLType.F16);
        assertThat(PowerInferWriter.transposedType(GGMLType.Q4_K, 4096)).isEqualTo(GGMLType.Q4_K);
        assertThat(PowerInferWriter.transposedType(GGMLType.Q4_K, 64)).isEqualTo(GGMLType.F16);
        assertThat(PowerInferWriter.transposedType(GGMLType.Q5_0, 4096)).isEqualTo(GGMLType.F16); // no quantizer for Q5_0
    }
}
