package org.powerinfer4j.bindings.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class KernelArgsTest {
    @Test
    void buildsPointerArrayToPackedValueSlots() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment pinned = a.allocate(64);
            MemorySegment params = KernelArgs.build(a, 7, -1.5f, 0x1122334455667788L, null, true, (short) -2, (byte) 5, 2.25, pinned);
            int n = 9;
            assertThat(params.byteSize()).isEqualTo(8L * n);
            MemorySegment[] p = new MemorySegment[n];
            for (int i = 0; i < n; i++) p[i] = params.getAtIndex(ValueLayout.ADDRESS, i);
            // slot i at base + 8i, the pointer array right after the slots
            long base = p[0].address();
            for (int i = 0; i < n; i++) assertThat(p[i].address()).isEqualTo(base + 8L * i);
            assertThat(params.address()).isEqualTo(base + 8L * n);
            MemorySegment slots = MemorySegment.ofAddress(base).reinterpret(8L * n);
            byte[] bytes = slots.toArray(ValueLayout.JAVA_BYTE);
            // little-endian values at the start of each slot
            assertThat(slice(bytes, 0, 4)).containsExactly(7, 0, 0, 0);
            int f = Float.floatToRawIntBits(-1.5f);
            assertThat(slice(bytes, 8, 4)).containsExactly(f & 0xff, (f >> 8) & 0xff, (f >> 16) & 0xff, (f >>> 24) & 0xff);
            assertThat(slice(bytes, 16, 8)).containsExactly(0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11);
            assertThat(slice(bytes, 24, 8)).containsExactly(0, 0, 0, 0, 0, 0, 0, 0);
            assertThat(slice(bytes, 32, 4)).containsExactly(1, 0, 0, 0);
            assertThat(slice(bytes, 40, 2)).containsExactly(0xfe, 0xff);
            assertThat(slice(bytes, 48, 1)).containsExactly(5);
            assertThat(slots.get(ValueLayout.JAVA_DOUBLE.withOrder(ByteOrder.LITTLE_ENDIAN), 56)).isEqualTo(2.25);
            assertThat(slots.get(ValueLayout.JAVA_LONG, 64)).isEqualTo(pinned.address());
        }
    }

    @Test
    void zeroArgumentsAndBadTypes() {
        try (Arena a = Arena.ofConfined()) {
            assertThat(KernelArgs.build(a).byteSize()).isEqualTo(8); // room for one (unused) pointer
            assertThatThrownBy(() -> KernelArgs.build(a, 1, "text")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("argument 1").hasMessageContaining("java.lang.String");
        }
    }

    private static int[] slice(byte[] b, int off, int n) {
        int[] r = new int[n];
        for (int i = 0; i < n; i++) r[i] = b[off + i] & 0xff;
        return r;
    }
}
