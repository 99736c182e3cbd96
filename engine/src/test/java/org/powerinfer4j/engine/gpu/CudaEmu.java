package org.powerinfer4j.engine.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import org.powerinfer4j.bindings.cuda.Cuda;

/**
 * The test-only controls of cuda-emu (cuda-kernels/src/emulator/driver.cpp, the {@code cuemu*} functions), for tests
 * that provoke or observe what only the emulator can: an old driver, a small device, allocation and load counts.
 */
public final class CudaEmu {
    private CudaEmu() {}

    /** Whether the CUDA driver loaded is cuda-emu. */
    public static boolean loaded() {
        return CudaBackend.isAvailable() && Cuda.device(0).name().startsWith("cuda-emu");
    }

    private static MethodHandle function(String name, FunctionDescriptor d) {
        String lib = System.getProperty("powerinfer4j.cuda", System.getenv("POWERINFER4J_CUDA"));
        return Linker.nativeLinker().downcallHandle(SymbolLookup.libraryLookup(Path.of(lib), Arena.global()).find(name).orElseThrow(), d);
    }

    /** Device bytes allocated now. */
    public static long deviceBytesInUse() throws Throwable {
        return (long) function("cuemuDeviceBytesInUse", FunctionDescriptor.of(ValueLayout.JAVA_LONG)).invokeExact();
    }

    /** Bytes the kernels have read through {@code __ldg} so far (per thread, not DRAM sectors). */
    public static long loadedBytes() throws Throwable {
        return (long) function("cuemuLoadedBytes", FunctionDescriptor.of(ValueLayout.JAVA_LONG)).invokeExact();
    }

    /** Sets the newest PTX ISA version (times ten) the "driver" accepts; returns the previous one. */
    public static int setMaxPtxVersion(int version) throws Throwable {
        return (int) function("cuemuSetMaxPtxVersion", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)).invokeExact(version);
    }

    /** Sets the device's memory size in bytes; returns the previous one. */
    public static long setDeviceMemory(long bytes) throws Throwable {
        return (long) function("cuemuSetDeviceMemory", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG)).invokeExact(bytes);
    }
}
