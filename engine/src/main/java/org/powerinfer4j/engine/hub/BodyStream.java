package org.powerinfer4j.engine.hub;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Pulls a response body chunk by chunk with a stall timeout. The JDK's {@code InputStream} body has no read
 * timeout, so a connection that goes silent mid-file would hang a pull forever; here every wait is bounded
 * and a stall cancels the exchange (closing the connection) and reports a retryable failure.
 */
final class BodyStream implements Flow.Subscriber<List<ByteBuffer>>, AutoCloseable {
    private static final Object END = new Object();

    private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final long stallNanos;
    private Flow.Subscription subscription;
    private boolean closed;

    BodyStream(long stallNanos) {
        this.stallNanos = stallNanos;
    }

    @Override
    public synchronized void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (closed) s.cancel();
        else s.request(1);
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
        queue.add(item);
    }

    @Override
    public void onError(Throwable t) {
        queue.add(t);
    }

    @Override
    public void onComplete() {
        queue.add(END);
    }

    /** The next chunk of the body, or null at its end. */
    @SuppressWarnings("unchecked")
    List<ByteBuffer> next() throws IOException {
        Object o;
        try {
            o = queue.poll(stallNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close();
            throw new InterruptedIOException("download interrupted");
        }
        if (o == null) {
            close();
            throw new HubException("no data received for " + TimeUnit.NANOSECONDS.toSeconds(stallNanos) + " s", true, null);
        }
        if (o == END) return null;
        if (o instanceof IOException e) throw e;
        if (o instanceof Throwable t) throw new IOException(t.getMessage(), t);
        synchronized (this) {
            subscription.request(1); // one chunk in flight while the caller writes this one
        }
        return (List<ByteBuffer>) o;
    }

    /** Subscribes to a body only to cancel it, which closes the connection instead of reading the rest. */
    static void discard(Flow.Publisher<List<ByteBuffer>> body) {
        BodyStream s = new BodyStream(0);
        s.close();
        body.subscribe(s);
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        if (subscription != null) subscription.cancel();
    }
}
