package org.powerinfer4j.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

class GGUFFileTest {

    @Test
    void readsStories260K() throws Exception {
        try (GGUFFile f = GGUFFile.open(TestData.file("models/stories260K.gguf"))) {
            assertThat(f.version()).isEqualTo(3);
            assertThat(f.isPowerInfer()).isFalse();
            assertThat(f.getString("general.architecture", null)).isEqualTo("llama");
            assertThat(f.getInt("llama.block_count", 0)).isEqualTo(5);
            assertThat(f.getInt("llama.embedding_length", 0)).isEqualTo(64);
            assertThat(f.getArray("tokenizer.ggml.tokens", String[].class)).hasSize(512);
            assertThat(f.getArray("tokenizer.ggml.scores", float[].class)).hasSize(512);
            assertThat(f.tensorInfos()).hasSize(48);
            Tensor emb = f.tensor("token_embd.weight");
            assertThat(emb.type()).isEqualTo(GGMLType.F32);
            assertThat(emb.ne()).containsExactly(64, 512);
            assertThat(emb.data().byteSize()).isEqualTo(64 * 512 * 4);
            assertThat(emb.data().isNative()).isTrue();
        }
    }

    @Test
    void readsPowerInferMagic() throws Exception {
        try (GGUFFile f = GGUFFile.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"))) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.getFloat("powerinfer.sparse_threshold", -1f)).isEqualTo(0f);
            assertThat(f.tensorInfo("blk.0.ffn_down_t.weight").ne()).containsExactly(64, 172);
            assertThat(f.tensorInfo("blk.0.fc1.weight").type()).isEqualTo(GGMLType.F16);
        }
    }

    @Test
    void readsVocabOnlyFile() throws Exception {
        try (GGUFFile f = GGUFFile.open(TestData.file("vocab/ggml-vocab-llama-spm.gguf"))) {
            assertThat(f.tensorInfos()).isEmpty();
            assertThat(f.getArray("tokenizer.ggml.tokens", String[].class)).hasSize(32000);
        }
    }

    @Test
    void closeUnmaps() throws Exception {
        GGUFFile f = GGUFFile.open(TestData.file("models/stories260K.gguf"));
        Tensor t = f.tensor("output_norm.weight");
        f.close();
        assertThatThrownBy(() -> t.data().get(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void rejectsNonGGUF(@TempDir Path dir) throws Exception {
        Path p = dir.resolve("x.gguf");
        Files.writeString(p, "hello world, not a model");
        assertThatThrownBy(() -> GGUFFile.open(p)).isInstanceOf(GGUFFormatException.class)
                .hasMessageContaining("x.gguf").hasMessageContaining("magic").hasMessageContaining("byte 0");
    }
}
