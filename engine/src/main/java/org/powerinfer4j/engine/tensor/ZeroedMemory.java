package org.powerinfer4j.engine.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Large zeroed native blocks for the repacked copies. On Linux they are anonymous mappings made with
 * {@code MAP_POPULATE}: the kernel zeroes and maps every page in one call, where {@link Arena#allocate} zeroes
 * byte by byte on the calling thread and takes a page fault per 4 KiB. Measured on a 2-core VM (1.1B Q4_K_M,
 * 630 MB repacked, `generate`): the arena's allocation took 1.8 of a 2.9–3.1 s load; with these blocks the load is
 * 2.2–2.3 s. Pages stay 4 KiB (no {@code MADV_HUGEPAGE}: huge pages made decode slower on that machine, 19–23
 * against 23–24 t/s). Elsewhere, for small blocks, or where native access is not enabled for this module (a library
 * caller without {@code --enable-native-access}), the arena allocates. Unmapped when the arena closes.
 */
final class ZeroedMemory {
    private ZeroedMemory() {}

    private static final int PROT_READ_WRITE = 0x1 | 0x2, MAP_PRIVATE = 0x02, MAP_ANONYMOUS = 0x20, MAP_POPULATE = 0x8000;
    private static final MethodHandle MMAP, MUNMAP;

    static {
        MethodHandle mmap = null, munmap = null;
        if (System.getProperty("os.name", "").startsWith("Linux") && ZeroedMemory.class.getModule().isNativeAccessEnabled()) {
            try {
                Linker linker = Linker.nativeLinker();
                var libc = linker.defaultLookup();
                var m = libc.find("mmap");
                var u = libc.find("munmap");
                if (m.isPresent() && u.isPresent()) {
                    mmap = linker.downcallHandle(m.get(), FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
                    munmap = linker.downcallHandle(u.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
                }
            } catch (RuntimeException e) {
                mmap = munmap = null;   // no native linker here: the arena's zeroing
            }
        }
        MMAP = mmap;
        MUNMAP = munmap;
    }

    /** Whether large blocks are populated mappings here (else the arena's). */
    static boolean mapped() {
        return MMAP != null;
    }

    /** A zeroed block of {@code size} bytes aligned to {@code align} (a power of two up to a page), owned by {@code arena}. */
    static MemorySegment allocate(Arena arena, long size, long align) {
        if (MMAP == null || size < (1 << 20) || align > 4096) return arena.allocate(size, align);
        long address;
        try {
            address = (long) MMAP.invokeExact(0L, size, PROT_READ_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("mmap failed", t);
        }
        if (address == -1L) throw new OutOfMemoryError("cannot map " + size + " bytes of memory for a repacked copy");
        long length = size;
        return MemorySegment.ofAddress(address).reinterpret(size, arena, s -> unmap(address, length));   // page-aligned
    }

    private static void unmap(long address, long length) {
        int rc;
        try {
            rc = (int) MUNMAP.invokeExact(address, length);
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
        if (rc != 0) throw new IllegalStateException("munmap of a repacked copy failed");
    }
}
