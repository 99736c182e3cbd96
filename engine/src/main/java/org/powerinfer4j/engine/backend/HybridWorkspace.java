package org.powerinfer4j.engine.backend;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuEvent;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;

/** Device buffers for one layer call (reused by every layer) and the host staging they copy through. */
final class HybridWorkspace implements AutoCloseable {
    final List<GpuBuffer> owned = new ArrayList<>();
    final GpuBuffer x, residual, hidden, logits, mask, gate, up, h, y;
    final HostStaging host;
    final MemorySegment hX, hR, hY, hMask;
    final long deviceBytes;
    // recorded again every layer (creating and destroying three events per layer costs driver calls)
    final List<GpuEvent> events = new ArrayList<>();
    GpuEvent started, done, maskReady;

    /** Device workspace bytes for {@code batch} tokens, padded per allocation as the device pads them. */
    static long bytes(int dim, int ffMax, int kMax, int hMax, int batch, int denseFrom) {
        long b = 0;
        for (DeviceFootprint.Alloc a : DeviceFootprint.hybridWorkspace(dim, ffMax, Math.max(1, kMax), hMax, batch, denseFrom)) b += a.padded();
        return b;
    }

    /** For calls of up to {@code batch} tokens; from {@code denseFrom} tokens the per-neuron buffers hold every token's. */
    HybridWorkspace(GpuBackend gpu, int dim, int ffMax, int kMax, int hMax, int batch, int denseFrom) {
        long perToken = batch >= denseFrom ? batch : 1;   // a dense call's predictor and hot-row values, batch × n
        try {
            started = event(gpu, true);
            done = event(gpu, true);
            maskReady = event(gpu, false);
            x = alloc(gpu, 4L * batch * dim);
            residual = alloc(gpu, 4L * batch * dim);
            hidden = alloc(gpu, 4L * hMax * perToken);
            logits = alloc(gpu, 4L * ffMax * perToken);
            mask = alloc(gpu, (long) batch * ffMax);
            gate = alloc(gpu, 4L * kMax * perToken);
            up = alloc(gpu, 4L * kMax * perToken);
            h = alloc(gpu, 4L * kMax * perToken);
            y = alloc(gpu, 4L * batch * dim);
            long vec = 4L * batch * dim;
            host = HostStaging.allocate(gpu, 3 * vec + (long) batch * ffMax);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        long vec = 4L * batch * dim;
        MemorySegment m = host.segment();
        hX = m.asSlice(0, vec);
        hR = m.asSlice(vec, vec);
        hY = m.asSlice(2 * vec, vec);
        hMask = m.asSlice(3 * vec, (long) batch * ffMax);
        long b = 0;
        for (GpuBuffer o : owned) b += GpuFootprint.pad(Math.max(1, o.byteSize()));   // as the device pads
        deviceBytes = b;
    }

    private GpuBuffer alloc(GpuBackend gpu, long bytes) {
        GpuBuffer b = gpu.allocate(Math.max(1, bytes));
        owned.add(b);
        return b;
    }

    private GpuEvent event(GpuBackend gpu, boolean timed) {
        GpuEvent e = gpu.createEvent(timed);
        events.add(e);
        return e;
    }

    @Override
    public void close() {
        for (GpuEvent e : events) e.close();
        events.clear();
        for (GpuBuffer b : owned) b.close();
        owned.clear();
        if (host != null) host.close();
    }
}
