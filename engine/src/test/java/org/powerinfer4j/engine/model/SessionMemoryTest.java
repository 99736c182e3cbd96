package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;

/** A session that cannot fit is refused before allocation, saying what it needs and what there is (#17). */
class SessionMemoryTest {
    // stories260K's shape: 5 layers, 4 KV heads of 8 → 640 bytes of F16 keys and values per token
    private static final ModelConfig STORIES = new ModelConfig("llama", 64, 5, 8, 4, 8, 172, 512, 512, 1e-5f, 10000f, 8,
            RopeType.NORMAL, FfnActivation.SWIGLU);

    @Test
    void kvCacheBeyondPhysicalMemoryIsRefused() {
        assertThatThrownBy(() -> SessionMemory.requireFits(STORIES, 1 << 30, 64, 2, GGMLType.F16)).isInstanceOf(ModelException.class)
                .hasMessageStartingWith("a context of 1073741824 tokens needs 640.0 GiB for its KV cache (5 layers × 32 F16")
                .hasMessageContaining("of memory is available: lower -c");
        // F32 doubles it
        assertThatThrownBy(() -> SessionMemory.requireFits(STORIES, 1 << 30, 64, 2, GGMLType.F32)).hasMessageContaining("1280.0 GiB");
    }

    @Test
    void scoresBeyondTheHeapAreRefused() {
        // 10,000 threads × 200,000 positions of float scores: 7.5 GiB of heap, over this JVM's -Xmx; the KV cache (128 MB) fits
        assertThatThrownBy(() -> SessionMemory.requireFits(STORIES, 200_000, 64, 10_000, GGMLType.F16)).isInstanceOf(ModelException.class)
                .hasMessageContaining("needs 7.5 GiB of Java heap").hasMessageContaining("raise -Xmx");
    }

    @Test
    void ordinarySessionsFit() {
        assertThatCode(() -> SessionMemory.requireFits(STORIES, 4096, 64, 16, GGMLType.F16)).doesNotThrowAnyException();
    }
}
