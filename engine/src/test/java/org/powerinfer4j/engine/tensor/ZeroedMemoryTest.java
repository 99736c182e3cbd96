package org.powerinfer4j.engine.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The repacked copies' blocks: zeroed, aligned, writable, and gone with their arena — mapped or from the arena alike. */
class ZeroedMemoryTest {

    @Test
    void largeBlocksAreZeroedAlignedAndReleasedWithTheirArena() {
        // the test JVM runs with --enable-native-access, as the launcher does: on Linux the mapped path is the one tested
        if (System.getProperty("os.name", "").startsWith("Linux")) assertThat(ZeroedMemory.mapped()).isTrue();
        MemorySegment kept;
        try (Arena arena = Arena.ofShared()) {
            for (long size : new long[] {100, (3L << 20) + 17}) {
                MemorySegment m = ZeroedMemory.allocate(arena, size, 64);
                assertThat(m.byteSize()).isEqualTo(size);
                assertThat(m.address() % 64).isZero();
                for (long i = 0; i < size; i += 4093) assertThat(m.get(ValueLayout.JAVA_BYTE, i)).as("byte %d", i).isZero();
                assertThat(m.get(ValueLayout.JAVA_BYTE, size - 1)).isZero();
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, size - 8, -1L);
                assertThat(m.get(ValueLayout.JAVA_LONG_UNALIGNED, size - 8)).isEqualTo(-1L);
            }
            kept = ZeroedMemory.allocate(arena, 2L << 20, 64);
        }
        MemorySegment gone = kept;
        assertThatThrownBy(() -> gone.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }
}
