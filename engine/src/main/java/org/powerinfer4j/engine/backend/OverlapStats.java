package org.powerinfer4j.engine.backend;

import java.util.Locale;

/**
 * CPU/GPU concurrency of the hybrid FFN, summed over layer calls. Per call: the layer interval runs from the first
 * GPU operation issued to the merged output; the GPU is busy from that start until the device passes the partial
 * output's copy-back; the CPU is busy from the end of issuing until its cold neurons are done, less any time it
 * waited for the predictor mask. Overlap = time both
 * are busy ÷ layer time. Calls that ran on the CPU alone count with no GPU time.
 */
public final class OverlapStats {
    private long calls, hybridCalls, layerNanos, bothNanos, cpuNanos, gpuNanos, maskWaitNanos, mergeWaitNanos;

    /** One summary of the counters. */
    public record Snapshot(long calls, long hybridCalls, long layerNanos, long bothNanos, long cpuNanos, long gpuNanos,
                           long maskWaitNanos, long mergeWaitNanos) {
        /** Time CPU and GPU were both busy ÷ FFN layer time, in [0, 1]; 0 when nothing ran. */
        public double overlap() {
            return layerNanos == 0 ? 0 : Math.min(1.0, (double) bothNanos / layerNanos);
        }

        public String format() {
            return String.format(Locale.ROOT, "overlap %.1f%% of FFN time with CPU and GPU both busy (%d of %d layer calls hybrid; layer %.2f ms, CPU busy %.2f ms, "
                            + "GPU busy %.2f ms, CPU waited %.2f ms for the mask and %.2f ms for the GPU partial)",
                    100 * overlap(), hybridCalls, calls, layerNanos / 1e6, cpuNanos / 1e6, gpuNanos / 1e6, maskWaitNanos / 1e6, mergeWaitNanos / 1e6);
        }
    }

    synchronized void recordCpuOnly(long nanos) {
        calls++;
        layerNanos += nanos;
        cpuNanos += nanos;
    }

    /**
     * @param start    first GPU operation issued
     * @param issued   all GPU work issued (the CPU's own work starts)
     * @param cpuDone  cold neurons done
     * @param gpuDone  device past the copy-back
     * @param end      output merged
     */
    synchronized void recordHybrid(long start, long issued, long cpuDone, long gpuDone, long end, long maskWait, long mergeWait) {
        calls++;
        hybridCalls++;
        layerNanos += end - start;
        cpuNanos += Math.max(0, cpuDone - issued - maskWait);          // waiting for the mask is not CPU work
        gpuNanos += Math.max(0, gpuDone - start);
        bothNanos += Math.max(0, Math.min(cpuDone, gpuDone) - issued - maskWait); // the mask wait lies inside the GPU's busy time
        maskWaitNanos += maskWait;
        mergeWaitNanos += mergeWait;
    }

    public synchronized Snapshot snapshot() {
        return new Snapshot(calls, hybridCalls, layerNanos, bothNanos, cpuNanos, gpuNanos, maskWaitNanos, mergeWaitNanos);
    }

    public synchronized void reset() {
        calls = hybridCalls = layerNanos = bothNanos = cpuNanos = gpuNanos = maskWaitNanos = mergeWaitNanos = 0;
    }
}
