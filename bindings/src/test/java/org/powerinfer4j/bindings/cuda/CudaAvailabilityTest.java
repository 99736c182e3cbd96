package org.powerinfer4j.bindings.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import org.junit.jupiter.api.Test;

/** Behaviour without a usable driver (this is what CPU-only CI machines see). */
class CudaAvailabilityTest {
    @Test
    void availabilityNeverThrowsAndExplainsItselfInOneLine() {
        boolean available = Cuda.available();
        String reason = Cuda.unavailableReason();
        assertThat(reason).doesNotContain("\n");
        if (available) {
            assertThat(reason).isEmpty();
            assertThat(Cuda.deviceCount()).isPositive();
        } else {
            assertThat(reason).isNotBlank();
            assertThat(Cuda.deviceCount()).isZero();
        }
    }

    @Test
    void withoutDriverDeviceAccessFailsWithTheReason() {
        assumeFalse(Cuda.available(), "CUDA is available here");
        assertThatThrownBy(() -> Cuda.device(0)).isInstanceOf(IllegalStateException.class).hasMessageContaining(Cuda.unavailableReason());
        assertThatThrownBy(Cuda::requireAvailable).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void withoutLibraryCallsThrowUnsatisfiedLinkErrorNotInitializerErrors() {
        assumeFalse(cuda_h.LIBRARY.isLoaded(), "libcuda is present here");
        assertThat(Cuda.unavailableReason()).startsWith("libcuda.so.1 not found");
        try (Arena a = Arena.ofConfined()) {
            assertThatThrownBy(() -> cuda_h.cuInit(0)).isInstanceOf(UnsatisfiedLinkError.class).hasMessageStartingWith("libcuda.so.1 not found");
            assertThatThrownBy(() -> cuda_h.cuMemAlloc(a.allocate(8), 16)).isInstanceOf(UnsatisfiedLinkError.class);
            // a second call of the same function fails the same way (no NoClassDefFoundError from a failed holder)
            assertThatThrownBy(() -> cuda_h.cuInit(0)).isInstanceOf(UnsatisfiedLinkError.class);
        }
        assertThat(cuda_h.cuInit$address()).isEqualTo(java.lang.foreign.MemorySegment.NULL);
    }
}
