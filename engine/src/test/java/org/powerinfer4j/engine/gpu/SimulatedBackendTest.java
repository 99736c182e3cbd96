package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The contract on the simulated device (runs everywhere), plus behaviour specific to the simulation. */
class SimulatedBackendTest extends GpuBackendContract {
    @Override
    protected GpuBackend open() {
        return new SimulatedBackend();
    }

    @Test
    void deviceSideFailuresSurfaceAtSynchronizeAndAreSticky() {
        try (GpuStream st = gpu.createStream(); GpuBuffer src = gpu.uploadFloats(st, new float[] {1, 2, 3});
             GpuBuffer idx = gpu.uploadInts(st, new int[] {0, 7}); GpuBuffer dst = gpu.allocate(8)) {
            gpu.gather(st, src, idx, dst, 2); // index 7 is outside src: fails on the stream, not when issued
            assertThatThrownBy(() -> gpu.synchronize(st)).isInstanceOf(IllegalStateException.class).hasMessageContaining("failed");
            gpu.zero(st, dst);
            assertThatThrownBy(() -> gpu.synchronize(st)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void freshMemoryIsPoisonedAndStreamsRunConcurrently() throws Exception {
        try (GpuBuffer b = gpu.allocate(16)) {
            for (float f : gpu.downloadFloats(s, b, 0, 4)) assertThat(f).isNaN();
        }
        // a stream blocked on an event that is recorded later on another stream does not block the host
        try (GpuStream a = gpu.createStream(); GpuStream c = gpu.createStream(); GpuBuffer x = gpu.uploadFloats(s, new float[] {1})) {
            GpuStream gate = gpu.createStream();
            GpuEvent never = gpu.record(gate);
            gpu.synchronize(never);
            gpu.wait(a, never);
            gpu.add(a, x, x, 1);
            gpu.synchronize(a);
            assertThat(gpu.downloadFloats(c, x, 0, 1)).containsExactly(2f);
            gate.close();
        }
    }

    @Test
    void synchronousModeRunsOnTheCallingThread() {
        try (GpuBackend sync = new SimulatedBackend(false); GpuStream st = sync.createStream(); GpuBuffer x = sync.uploadFloats(st, new float[] {1, 2})) {
            sync.add(st, x, x, 2);
            assertThat(sync.downloadFloats(st, x, 0, 2)).containsExactly(2f, 4f);
            assertThat(sync.name()).contains("synchronous");
        }
    }

    @Test
    void foreignHandlesAreRejected() {
        try (GpuBackend other = new SimulatedBackend(); GpuStream st = other.createStream()) {
            GpuBuffer mine = gpu.allocate(4);
            assertThatThrownBy(() -> gpu.add(st, mine, mine, 1)).isInstanceOf(IllegalArgumentException.class);
            mine.close();
        }
        assertThat(GpuBackend.open()).satisfies(b -> {
            assertThat(b.name()).isNotBlank();
            b.close();
        });
    }
}
