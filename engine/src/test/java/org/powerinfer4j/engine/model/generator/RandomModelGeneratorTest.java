package org.powerinfer4j.engine.model.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;

class RandomModelGeneratorTest {

    @TempDir
    Path dir;

    private static Path stories() {
        return TestData.file("models/stories260K.gguf");
    }

    @ParameterizedTest
    @CsvSource({"64, Q8_0, Q8_0", "64, Q4_K, Q8_0", "256, Q4_K, Q4_K", "256, Q6_K, Q6_K", "64, F16, F16"})
    void smallModelHasLlamaLayoutAndIsDeterministic(int dim, GGMLType type, GGMLType storedAs) throws Exception {
        ModelShape shape = ModelShape.of(dim, 2, 2 * dim, 4, 2, false);
        Path a = dir.resolve("a.gguf"), b = dir.resolve("b.gguf"), c = dir.resolve("c.gguf");
        var result = new RandomModelGenerator(shape, type, stories()).seed(7).threads(2).write(a);
        new RandomModelGenerator(shape, type, stories()).seed(7).threads(1).write(b);
        new RandomModelGenerator(shape, type, stories()).seed(8).threads(2).write(c);
        assertThat(Files.mismatch(a, b)).as("same seed, different thread counts").isEqualTo(-1L);
        assertThat(Files.mismatch(a, c)).as("different seed").isNotEqualTo(-1L);
        assertThat(result.bytes()).isEqualTo(Files.size(a));
        assertThat(result.vocabSize()).isEqualTo(512);

        try (GGUFFile f = GGUFFile.open(a); GGUFFile voc = GGUFFile.open(stories())) {
            assertThat(f.getString("general.architecture", null)).isEqualTo("llama");
            assertThat(f.getInt("llama.embedding_length", 0)).isEqualTo(dim);
            assertThat(f.getInt("llama.block_count", 0)).isEqualTo(2);
            assertThat(f.getInt("llama.feed_forward_length", 0)).isEqualTo(2 * dim);
            assertThat(f.getInt("llama.attention.head_count", 0)).isEqualTo(4);
            assertThat(f.getInt("llama.attention.head_count_kv", 0)).isEqualTo(2);
            assertThat(f.getInt("llama.rope.dimension_count", 0)).isEqualTo(dim / 4);
            assertThat(f.getFloat("llama.attention.layer_norm_rms_epsilon", 0)).isEqualTo(1e-5f);
            assertThat(f.getFloat("llama.rope.freq_base", 0)).isEqualTo(10000f);
            assertThat(f.getInt("llama.context_length", 0)).isEqualTo(2048);
            assertThat(f.getInt("general.file_type", -1)).isEqualTo(RandomModelGenerator.fileType(type));
            assertThat(f.getArray("tokenizer.ggml.tokens", String[].class))
                    .containsExactly(voc.getArray("tokenizer.ggml.tokens", String[].class));
            assertThat(f.getArray("tokenizer.ggml.scores", float[].class))
                    .containsExactly(voc.getArray("tokenizer.ggml.scores", float[].class));
            assertThat(f.getString("tokenizer.ggml.model", null)).isEqualTo("llama");

            int kv = dim / 4 * 2;
            assertThat(f.tensorInfos()).hasSize(1 + 2 * 9 + 2);
            assertTensor(f, "token_embd.weight", storedAs, dim, 512);
            assertTensor(f, "output.weight", storedAs, dim, 512);
            assertTensor(f, "output_norm.weight", GGMLType.F32, dim);
            for (int l = 0; l < 2; l++) {
                String p = "blk." + l + ".";
                assertTensor(f, p + "attn_norm.weight", GGMLType.F32, dim);
                assertTensor(f, p + "ffn_norm.weight", GGMLType.F32, dim);
                assertTensor(f, p + "attn_q.weight", storedAs, dim, dim);
                assertTensor(f, p + "attn_k.weight", storedAs, dim, kv);
                assertTensor(f, p + "attn_v.weight", storedAs, dim, kv);
                assertTensor(f, p + "attn_output.weight", storedAs, dim, dim);
                assertTensor(f, p + "ffn_gate.weight", storedAs, dim, 2 * dim);
                assertTensor(f, p + "ffn_up.weight", storedAs, dim, 2 * dim);
            }
            float[] norm = f.tensor("blk.1.ffn_norm.weight").data()
                    .toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            for (float v : norm) assertThat(v).isEqualTo(1.0f);
        }
    }

    private static void assertTensor(GGUFFile f, String name, GGMLType type, long... ne) {
        TensorInfo ti = f.tensorInfo(name);
        assertThat(ti).as(name).isNotNull();
        assertThat(ti.ne()).as(name).containsExactly(ne);
        assertThat(ti.type()).as(name).isEqualTo(type);
    }

    @Test
    void weightsAreGaussianWithTheRequestedSpread() throws Exception {
        Path p = dir.resolve("f32.gguf");
        new RandomModelGenerator(ModelShape.of(128, 1, 256, 4, 4, true), GGMLType.F32, stories()).seed(1).write(p);
        try (GGUFFile f = GGUFFile.open(p)) {
            assertThat(f.hasTensor("output.weight")).as("tied embeddings").isFalse();
            float[] w = f.tensor("blk.0.ffn_up.weight").data()
                    .toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            double sum = 0, sq = 0;
            for (float v : w) {
                sum += v;
                sq += v * v;
            }
            double mean = sum / w.length, sd = Math.sqrt(sq / w.length - mean * mean);
            assertThat(mean).isBetween(-0.001, 0.001);
            assertThat(sd).isBetween(0.0195, 0.0205);
        }
    }

    @Test
    void largeVocabularyFollowsTheVocabFile() throws Exception {
        Path p = dir.resolve("spm.gguf");
        var r = new RandomModelGenerator(ModelShape.of(64, 1, 128, 2, 2, true), GGMLType.Q4_0,
                TestData.file("vocab/ggml-vocab-llama-spm.gguf")).write(p);
        assertThat(r.vocabSize()).isEqualTo(32000);
        try (GGUFFile f = GGUFFile.open(p)) {
            assertThat(f.tensorInfo("token_embd.weight").ne()).containsExactly(64, 32000);
            assertThat(f.getInt("llama.vocab_size", 0)).isEqualTo(32000);
            assertThat(f.getInt("tokenizer.ggml.bos_token_id", -1)).isEqualTo(1);
        }
    }

    @Test
    void presetsAndValidation() {
        ModelShape m = ModelShape.preset("110m");
        assertThat(m.dim()).isEqualTo(768);
        assertThat(m.tiedEmbeddings()).isTrue();
        assertThat(m.parameters(32000)).isBetween(109_000_000L, 111_000_000L);
        ModelShape t = ModelShape.preset("tinyllama-1.1b");
        assertThat(t.kvDim()).isEqualTo(256);
        assertThat(t.parameters(32000)).isBetween(1_090_000_000L, 1_110_000_000L);
        assertThat(ModelShape.preset("llama-7b").parameters(32000)).isBetween(6_700_000_000L, 6_800_000_000L);
        assertThatThrownBy(() -> ModelShape.preset("13b")).hasMessageContaining("110m");
        assertThatThrownBy(() -> ModelShape.of(100, 1, 10, 3, 1, true)).hasMessageContaining("multiple");
        assertThatThrownBy(() -> ModelShape.of(64, 1, 10, 4, 3, true)).hasMessageContaining("kv-heads");
        assertThatThrownBy(() -> new RandomModelGenerator(ModelShape.of(64, 1, 64, 4, 4, true), GGMLType.Q2_K, stories()))
                .hasMessageContaining("Q2_K");
    }
}
