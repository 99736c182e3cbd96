package org.powerinfer4j.engine.gpu;

import org.powerinfer4j.engine.tensor.GGMLType;

/** The prompt-batch contract on the simulated device, whose batch operators are its one-token ones per token. */
class SimulatedPrefillTest extends GpuPrefillContract {
    @Override
    protected GpuBackend open() {
        return new SimulatedBackend();
    }

    @Override
    protected double gemmTolerance(GGMLType t, int tokens) {
        return 1e-4;
    }
}
