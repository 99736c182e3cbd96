package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * Builds the {@code void** kernelParams} array of {@code cuLaunchKernel}: element i points at the value of parameter i.
 * Values are stored in 8-byte slots of one block (slot i at offset 8·i, each value little-endian at the slot's start),
 * followed by the pointer array, so one allocation serves a launch.
 *
 * <p>Accepted values: {@code Integer}, {@code Float}, {@code Long}, {@code Double}, {@code Short}, {@code Byte},
 * {@code Boolean} (as a 32-bit 0/1, how the kernels here take flags), {@link DeviceBuffer} (its device address),
 * {@link MemorySegment} (its address: only for memory the device can address, e.g. pinned host memory under unified
 * addressing) and {@code null} (a NULL pointer).
 */
public final class KernelArgs {
    private KernelArgs() {}

    static final long SLOT = 8;

    /** The {@code void*[args.length]} array, allocated with its value slots from {@code allocator}. */
    public static MemorySegment build(SegmentAllocator allocator, Object... args) {
        int n = args.length;
        MemorySegment block = allocator.allocate(SLOT * n + ValueLayout.ADDRESS.byteSize() * Math.max(1, n), SLOT);
        MemorySegment values = block.asSlice(0, SLOT * n);
        MemorySegment array = block.asSlice(SLOT * n);
        for (int i = 0; i < n; i++) {
            long o = SLOT * i;
            switch (args[i]) {
                case null -> values.set(ValueLayout.JAVA_LONG, o, 0L);
                case Integer v -> values.set(ValueLayout.JAVA_INT, o, v);
                case Float v -> values.set(ValueLayout.JAVA_FLOAT, o, v);
                case Long v -> values.set(ValueLayout.JAVA_LONG, o, v);
                case Double v -> values.set(ValueLayout.JAVA_DOUBLE, o, v);
                case Short v -> values.set(ValueLayout.JAVA_SHORT, o, v);
                case Byte v -> values.set(ValueLayout.JAVA_BYTE, o, v);
                case Boolean v -> values.set(ValueLayout.JAVA_INT, o, v ? 1 : 0);
                case DeviceBuffer b -> values.set(ValueLayout.JAVA_LONG, o, b.address());
                case MemorySegment s -> values.set(ValueLayout.JAVA_LONG, o, s.address());
                default -> throw new IllegalArgumentException("kernel argument " + i + " has unsupported type " + args[i].getClass().getName());
            }
            array.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(o, SLOT));
        }
        return array;
    }
}
