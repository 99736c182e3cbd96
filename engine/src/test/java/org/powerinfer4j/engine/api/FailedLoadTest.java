package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.backend.GpuMode;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.model.ModelException;

/** A load that fails after the worker pool started (here: {@code --gpu cuda} without a usable device) leaves no threads behind. */
class FailedLoadTest {
    private static long workers() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && t.getName().startsWith("powerinfer4j-worker-")).count();
    }

    @Test
    void failedLoadStopsItsWorkerThreads() throws Exception {
        long before = workers();
        ModelOptions o = ModelOptions.defaults().withThreads(3).withListener(ModelListener.SILENT).withGpu(GpuOptions.layers(GpuMode.CUDA, 99));
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), o)) {
            Assumptions.abort("a CUDA device is usable here: the load did not fail");
        } catch (ModelException expected) {
            assertThat(expected.getMessage()).contains("--gpu cuda");
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (workers() > before && System.nanoTime() < deadline) Thread.sleep(20);
        assertThat(workers()).isEqualTo(before);
    }
}
