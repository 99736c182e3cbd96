package org.powerinfer4j.engine.backend;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.function.Consumer;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.model.LayerGraph.Buf;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * One session's state for {@link GpuLayers}: its token buffers for a chunk of {@code batch} rows, FFN scratch, a KV
 * cache of {@code kvType} per device layer, logits, its stream and the pinned host staging. {@code usable} is false
 * when they could not be allocated (the session then runs on the CPU).
 */
final class DeviceState implements AutoCloseable, DeviceLayer.BatchBuffers {
    private final GpuBackend gpu;
    private final ModelConfig c;
    private final DeviceLayer[] layers;
    private final DeviceLayer.DeviceRope[] ropes;
    private final int batch;
    final List<AutoCloseable> owned = new ArrayList<>();
    final EnumMap<Buf, GpuBuffer> bufs = new EnumMap<>(Buf.class);
    HostStaging host; // pinned where the driver allows: async copies, and no blocking on pageable memory
    boolean usable, lastOk;
    int lastRow;   // the chunk's last token, whose residual the head reads
    GpuStream stream;
    GpuBuffer h, h2, logits, routerLogits, expertOut;
    GpuBuffer[] kCache, vCache;
    MemorySegment hostX, hostKv, hostLogits;

    DeviceState(GpuBackend gpu, ModelConfig c, DeviceLayer[] layers, DeviceLayer.DeviceRope[] ropes, int batch, int maxFf, boolean attentionOnly,
                boolean head, int contextLength, GGMLType kvType, Consumer<RuntimeException> failed) {
        this.gpu = gpu;
        this.c = c;
        this.layers = layers;
        this.ropes = ropes;
        this.batch = batch;
        try {
            stream = own(gpu.createStream());
            for (Buf b : Buf.values()) {
                if (attentionOnly && b == Buf.FFN_OUT) continue;
                bufs.put(b, alloc((long) batch * stride(b)));
            }
            if (!attentionOnly) {
                h = alloc((long) batch * maxFf);
                h2 = alloc((long) batch * maxFf);
                if (c.params().moe()) {
                    routerLogits = alloc(c.params().experts());
                    expertOut = alloc(c.dim());
                }
            }
            kCache = new GpuBuffer[layers.length];
            vCache = new GpuBuffer[layers.length];
            int es = GpuBackend.kvElementBytes(kvType);
            for (int i = 0; i < layers.length; i++) {
                kCache[i] = own(gpu.allocate(es * Math.max(1, (long) contextLength * c.kvDim())));
                vCache[i] = own(gpu.allocate(es * Math.max(1, (long) contextLength * c.kvDim())));
            }
            if (head) logits = alloc(c.vocabSize());
            long xBytes = 4L * batch * c.dim(), kvBytes = 8L * batch * layers.length * c.kvDim(), logitBytes = head ? 4L * c.vocabSize() : 0;
            host = HostStaging.allocate(gpu, xBytes + kvBytes + logitBytes);
            MemorySegment m = host.segment();
            hostX = m.asSlice(0, xBytes);
            hostKv = m.asSlice(xBytes, kvBytes);
            if (head) hostLogits = m.asSlice(xBytes + kvBytes, logitBytes);
            usable = true;
        } catch (RuntimeException e) {
            close();
            failed.accept(e);
        }
    }

    private <T extends AutoCloseable> T own(T t) {
        owned.add(t);
        return t;
    }

    private GpuBuffer alloc(long floats) {
        return own(gpu.allocate(4 * Math.max(1, floats)));
    }

    @Override
    public GpuBuffer buf(Buf b) {
        return bufs.get(b);
    }

    @Override
    public int stride(Buf b) {
        return DeviceFootprint.bufFloats(b, c);
    }

    @Override
    public GpuBuffer h() {
        return h;
    }

    @Override
    public GpuBuffer h2() {
        return h2;
    }

    @Override
    public GpuBuffer routerLogits() {
        return routerLogits;
    }

    @Override
    public GpuBuffer expertOut() {
        return expertOut;
    }

    /** Staging offset of layer i's keys (its values follow after batch rows): rows [2i·batch, 2i·batch + 2·batch) of kv_dim floats. */
    long stagedKeys(int i) {
        return 8L * i * batch * c.kvDim();
    }

    /**
     * Runs device layer {@code i} for {@code n} tokens from {@code pos0} (one token through the decode path), their
     * K and V queued for download into the staging area.
     */
    void layer(int i, int pos0, int n) {
        long kv = 4L * c.kvDim(), k = stagedKeys(i), v = k + batch * kv;
        if (n == 1) layers[i].run(gpu, stream, this, ropes, c, pos0, kCache[i], vCache[i], hostKv.asSlice(k, kv), hostKv.asSlice(v, kv));
        else layers[i].runBatch(gpu, stream, this, ropes, c, pos0, n, kCache[i], vCache[i], hostKv.asSlice(k, n * kv), hostKv.asSlice(v, n * kv));
    }

    @Override
    public void close() {
        // drain the stream before freeing: work queued before a failure may still use these buffers
        if (stream != null) {
            try {
                gpu.synchronize(stream);
            } catch (RuntimeException ignored) {
                // a failed device: free what can be freed
            }
        }
        GpuLayers.closeAll(owned);
        if (host != null) {
            try {
                host.close();
            } catch (RuntimeException ignored) {
                // pinned memory of a failed context goes with the context
            }
            host = null;
        }
    }
}
