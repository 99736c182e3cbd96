package org.powerinfer4j.engine.kernels;

/** Lets tests in other packages check that their products are big enough to run on the worker pool. */
public final class KernelTestAccess {
    private KernelTestAccess() {}

    /** Multiply-adds below which {@link MatrixOps} runs a product on the calling thread. */
    public static long parallelThreshold() {
        return MatrixOps.parallelThreshold;
    }
}
