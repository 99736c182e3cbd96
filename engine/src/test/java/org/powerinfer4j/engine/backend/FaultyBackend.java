package org.powerinfer4j.engine.backend;

import java.lang.foreign.MemorySegment;
import org.powerinfer4j.engine.gpu.GpuActivation;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuEvent;
import org.powerinfer4j.engine.gpu.GpuMatrix;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.model.RopeType;
import org.powerinfer4j.engine.placement.GpuFootprint;

/**
 * A device that runs out: allocations fail once {@code limit} bytes (each padded to 256, as the device pads) have
 * been handed out in total, and optionally the n-th row-sparse product fails — either when issued (as a CUDA launch
 * that cannot get its scratch) or asynchronously on the stream (a device fault, seen at the next synchronisation).
 */
final class FaultyBackend implements GpuBackend {
    private final GpuBackend d;
    private final long limit;
    private final int failMatVecAt;
    private final boolean failAsync;
    private long allocated, refused;
    private int matVecs;

    FaultyBackend(GpuBackend delegate, long limit) {
        this(delegate, limit, -1, false);
    }

    FaultyBackend(GpuBackend delegate, long limit, int failMatVecAt, boolean failAsync) {
        this.d = delegate;
        this.limit = limit;
        this.failMatVecAt = failMatVecAt;
        this.failAsync = failAsync;
    }

    private final java.util.List<Long> requests = new java.util.ArrayList<>();

    synchronized long allocated() { return allocated; }
    /** The bytes of every allocation handed out, in order (unpadded, as requested). */
    synchronized java.util.List<Long> requests() { return java.util.List.copyOf(requests); }
    synchronized long refused() { return refused; }

    @Override public String name() { return "faulty " + d.name(); }

    @Override
    public synchronized GpuBuffer allocate(long bytes) {
        long padded = GpuFootprint.pad(Math.max(1, bytes));
        if (allocated + padded > limit) {
            refused++;
            throw new IllegalStateException("out of device memory: " + bytes + " bytes requested, " + (limit - allocated) + " left");
        }
        allocated += padded;
        requests.add(bytes);
        return d.allocate(bytes);
    }

    @Override public void upload(GpuStream s, MemorySegment src, GpuBuffer dst, long dstOffset) { d.upload(s, src, dst, dstOffset); }
    @Override public void download(GpuStream s, GpuBuffer src, long srcOffset, MemorySegment dst) { d.download(s, src, srcOffset, dst); }
    @Override public void copy(GpuStream s, GpuBuffer src, long so, GpuBuffer dst, long dO, long bytes) { d.copy(s, src, so, dst, dO, bytes); }
    @Override public void zero(GpuStream s, GpuBuffer dst) { d.zero(s, dst); }
    @Override public GpuStream createStream() { return d.createStream(); }
    @Override public GpuEvent createEvent(boolean timed) { return d.createEvent(timed); }
    @Override public void record(GpuEvent e, GpuStream s) { d.record(e, s); }
    @Override public long elapsedNanos(GpuEvent a, GpuEvent b) { return d.elapsedNanos(a, b); }
    @Override public void wait(GpuStream s, GpuEvent e) { d.wait(s, e); }
    @Override public void synchronize(GpuStream s) { d.synchronize(s); }
    @Override public void synchronize(GpuEvent e) { d.synchronize(e); }
    private int denseMatVecs, failDenseMatVecAt = -1;

    /** Makes the n-th dense mat-vec (1-based, counted from now) fail when issued, as a launch error. */
    synchronized FaultyBackend failDenseMatVecAt(int n) {
        denseMatVecs = 0;
        failDenseMatVecAt = n;
        return this;
    }

    @Override
    public void matVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, boolean relu) {
        synchronized (this) {
            if (++denseMatVecs == failDenseMatVecAt) throw new IllegalStateException("launch failed: unspecified launch failure");
        }
        d.matVec(s, w, x, out, relu);
    }

    @Override
    public void rowSparseMatVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, GpuBuffer out) {
        boolean fail;
        synchronized (this) {
            fail = ++matVecs == failMatVecAt;
        }
        if (fail && !failAsync) throw new IllegalStateException("launch failed: out of memory for kernel scratch");
        // a one-byte mask passes the issue-time checks; the row map then indexes past it on the stream
        d.rowSparseMatVec(s, w, x, fail ? mask.slice(0, 1) : mask, rowMap, out);
    }

    @Override public void sparseAxpy(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, boolean acc) { d.sparseAxpy(s, w, h, y, acc); }
    @Override public void thresholdMask(GpuStream s, GpuBuffer l, int n, float t, GpuBuffer m, GpuBuffer c) { d.thresholdMask(s, l, n, t, m, c); }
    @Override public void activation(GpuStream s, GpuActivation a, GpuBuffer g, GpuBuffer u, GpuBuffer o, int n) { d.activation(s, a, g, u, o, n); }
    @Override public void gather(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n) { d.gather(s, src, idx, dst, n); }
    @Override public void scatterAdd(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n) { d.scatterAdd(s, src, idx, dst, n); }
    @Override public void rmsNorm(GpuStream s, GpuBuffer x, GpuBuffer w, GpuBuffer o, int n, int rows, float eps) { d.rmsNorm(s, x, w, o, n, rows, eps); }
    @Override public void layerNorm(GpuStream s, GpuBuffer x, GpuBuffer w, GpuBuffer b, GpuBuffer o, int n, int rows, float eps) { d.layerNorm(s, x, w, b, o, n, rows, eps); }
    @Override public void rope(GpuStream s, GpuBuffer v, int t, int ts, int h, int hd, int nr, int p0, GpuBuffer f, float ms, RopeType ty) { d.rope(s, v, t, ts, h, hd, nr, p0, f, ms, ty); }
    @Override public void attention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer o, int h, int kvh, int hd, int kvs, int n, float sc,
                                    float cap, GpuBuffer sinks, org.powerinfer4j.engine.tensor.GGMLType kvType) {
        d.attention(s, q, k, v, o, h, kvh, hd, kvs, n, sc, cap, sinks, kvType);
    }
    @Override public void toHalf(GpuStream s, GpuBuffer src, GpuBuffer dst, int n) { d.toHalf(s, src, dst, n); }
    @Override public void add(GpuStream s, GpuBuffer y, GpuBuffer x, int n) { d.add(s, y, x, n); }
    @Override public void maskedAdd(GpuStream s, GpuBuffer y, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, int n) { d.maskedAdd(s, y, x, mask, rowMap, n); }
    @Override public void maskRows(GpuStream s, GpuBuffer h, GpuBuffer mask, GpuBuffer rowMap, int k, int tokens, int ff) { d.maskRows(s, h, mask, rowMap, k, tokens, ff); }
    @Override public void scaleAdd(GpuStream s, GpuBuffer y, GpuBuffer x, float alpha, int n) { d.scaleAdd(s, y, x, alpha, n); }
    @Override public void close() { d.close(); }
}
