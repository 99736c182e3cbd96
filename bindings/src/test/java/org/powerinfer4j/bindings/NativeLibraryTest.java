package org.powerinfer4j.bindings;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import org.junit.jupiter.api.Test;

class NativeLibraryTest {
    @Test
    void missingLibraryFailsInOneLineAndBindsThrowingHandles() throws Throwable {
        NativeLibrary lib = new NativeLibrary("libdoesnotexist.so.7", () -> List.of("libdoesnotexist.so.7", "/nonexistent/dir/libdoesnotexist.so.7"));
        assertThat(lib.isLoaded()).isFalse();
        assertThat(lib.failure()).startsWith("libdoesnotexist.so.7 not found").doesNotContain("\n");
        assertThat(lib.find("anything")).isEqualTo(MemorySegment.NULL);
        MethodHandle h = lib.downcall(MemorySegment.NULL, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), "fn");
        assertThat(h.type().toString()).isEqualTo("(int)int");
        assertThatThrownBy(() -> { int r = (int) h.invokeExact(1); }).isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageStartingWith("libdoesnotexist.so.7 not found");
    }

    @Test
    void loadsTheCLibraryAndFindsSymbols() throws Throwable {
        NativeLibrary libc = new NativeLibrary("libc.so.6", () -> List.of("libnope.so", "libc.so.6"));
        assertThat(libc.isLoaded()).isTrue();
        assertThat(libc.path()).contains("libc.so.6");
        MemorySegment abs = libc.find("no_such_symbol_xyz", "abs");
        assertThat(abs).isNotEqualTo(MemorySegment.NULL);
        MethodHandle h = libc.downcall(abs, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), "abs");
        assertThat((int) h.invokeExact(-5)).isEqualTo(5);
        MethodHandle missing = libc.downcall(libc.find("no_such_symbol_xyz"), FunctionDescriptor.ofVoid(), "no_such_symbol_xyz");
        assertThatThrownBy(() -> { missing.invokeExact(); }).isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessage("symbol no_such_symbol_xyz not found in libc.so.6");
    }

    @Test
    void pathListDropsEmptyEntries() {
        assertThat(NativeLibrary.pathList("/a::/b:")).containsExactly("/a", "/b");
        assertThat(NativeLibrary.pathList(null)).isEmpty();
    }
}
