package org.powerinfer4j.engine.quality;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The base-logits file of a KL-divergence run ({@code perplexity --kl-divergence-base FILE}): the evaluated tokens
 * and, for every scored position, the base model's log-probabilities over the vocabulary.
 *
 * <p>Two encodings, told apart by their first 8 bytes:
 * <ul>
 *   <li>{@link Format#LLAMA} ({@code _logits_}): llama-perplexity's own format, so that either tool reads the other's
 *   base. Per position a float scale and minimum then one uint16 per token: log p ≈ scale·q + min, quantized over
 *   the top 16 nats (below that q = 0). All little-endian: {@code _logits_, int32 n_ctx, int32 n_vocab,
 *   int32 n_chunk, int32 tokens[n_chunk·n_ctx]}, then {@code n_chunk·(n_ctx − 1 − n_ctx/2)} records of
 *   {@code 2·⌈n_vocab/2⌉ + 4} uint16.</li>
 *   <li>{@link Format#F32} ({@code _logf32_}): our extension, the same header and one float32 log-probability per
 *   token: exact, so a model's KL divergence against its own base is exactly 0 (the uint16 format leaves ~1e-6).</li>
 * </ul>
 */
public final class BaseLogitsFile {
    private BaseLogitsFile() {}

    /** How the log-probabilities are stored. */
    public enum Format {
        LLAMA("_logits_"), F32("_logf32_");

        final String magic;

        Format(String magic) {
            this.magic = magic;
        }

        public static Format parse(String s) {
            return switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "llama" -> LLAMA;
                case "f32" -> F32;
                default -> throw new IllegalArgumentException("base logits format must be llama or f32, not '" + s + "'");
            };
        }
    }

    /** Header of a base file: chunk length, vocabulary, and the evaluated tokens ({@code chunks × ctx}). */
    public record Header(Format format, int ctx, int vocab, int chunks, int[] tokens) {
        /** Scored positions per chunk: the second half of the chunk, less its last token. */
        public int scoredPerChunk() {
            return Perplexity.scoredPerChunk(ctx);
        }

        int recordShorts() {
            return 2 * ((vocab + 1) / 2) + 4;
        }

        long recordBytes() {
            return format == Format.LLAMA ? 2L * recordShorts() : 4L * vocab;
        }

        long expectedSize() {
            return 8 + 12 + 4L * ctx * chunks + (long) chunks * scoredPerChunk() * recordBytes();
        }
    }

    /** Writes a base file: the header first, then {@link #write} once per scored position in order. */
    public static final class Writer implements Closeable {
        private final OutputStream out;
        private final Header header;
        private final ByteBuffer record;

        public Writer(Path path, Header header) throws IOException {
            this.header = header;
            this.out = new BufferedOutputStream(Files.newOutputStream(path), 1 << 16);
            ByteBuffer head = ByteBuffer.allocate(20 + 4 * header.tokens().length).order(ByteOrder.LITTLE_ENDIAN);
            head.put(header.format().magic.getBytes(StandardCharsets.US_ASCII)).putInt(header.ctx()).putInt(header.vocab()).putInt(header.chunks());
            for (int t : header.tokens()) head.putInt(t);
            out.write(head.array());
            record = ByteBuffer.allocate((int) header.recordBytes()).order(ByteOrder.LITTLE_ENDIAN);
        }

        /** One scored position's logits ({@code vocab} of them from {@code off}). */
        public void write(float[] logits, int off) throws IOException {
            record.clear();
            int n = header.vocab();
            if (header.format() == Format.F32) {
                float lse = LogSoftmax.maxPlusLogSumExp(logits, off, n);
                for (int i = 0; i < n; i++) record.putFloat(logits[off + i] - lse);
            } else {
                quantize(logits, off, n, record);
            }
            out.write(record.array(), 0, record.position());
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    /**
     * llama-perplexity's uint16 encoding of one position ({@code log_softmax} with a {@code log_prob} buffer): the
     * logits clipped 16 below their maximum, scaled to 0..65535, rounded to nearest (ties to even).
     */
    static void quantize(float[] logits, int off, int n, ByteBuffer dst) {
        float max = logits[off], min = logits[off];
        for (int i = 1; i < n; i++) {
            max = Math.max(max, logits[off + i]);
            min = Math.min(min, logits[off + i]);
        }
        min = Math.max(min, max - 16);
        float logSumExp = LogSoftmax.logSumExp(logits, off, n, max);
        float minLogProb = min - max - logSumExp;
        float scale = (max - min) / 65535f;
        dst.putFloat(scale).putFloat(minLogProb);
        if (scale != 0f) {
            float inv = 1 / scale;
            for (int i = 0; i < n; i++) dst.putShort((short) (logits[off + i] > min ? (int) Math.rint(inv * (logits[off + i] - min)) : 0));
        } else {
            for (int i = 0; i < n; i++) dst.putShort((short) 0);
        }
        if ((n & 1) != 0) dst.putShort((short) 0);
    }

    /** Reads a base file: {@link #header()}, then {@link #next} once per scored position in order. */
    public static final class Reader implements Closeable {
        private final DataInputStream in;
        private final Header header;
        private final byte[] raw;
        private final ByteBuffer record;
        private final Path path;

        public Reader(Path path) throws IOException {
            this.path = path;
            long size = Files.size(path);
            InputStream base = new BufferedInputStream(Files.newInputStream(path), 1 << 16);
            this.in = new DataInputStream(base);
            try {
                byte[] magic = new byte[8];
                readFully(magic);
                String m = new String(magic, StandardCharsets.ISO_8859_1);
                Format format = m.equals(Format.LLAMA.magic) ? Format.LLAMA : m.equals(Format.F32.magic) ? Format.F32 : null;
                if (format == null) throw new IOException(path + " is not a base logits file (it starts with neither _logits_ nor _logf32_)");
                byte[] dims = new byte[12];
                readFully(dims);
                ByteBuffer d = ByteBuffer.wrap(dims).order(ByteOrder.LITTLE_ENDIAN);
                int ctx = d.getInt(), vocab = d.getInt(), chunks = d.getInt();
                if (ctx < 4 || vocab < 2 || chunks < 1 || (long) ctx * chunks > Integer.MAX_VALUE / 4)
                    throw new IOException(path + ": implausible base logits header (n_ctx " + ctx + ", n_vocab " + vocab + ", n_chunk " + chunks + ")");
                Header probe = new Header(format, ctx, vocab, chunks, null);
                if (size != probe.expectedSize())
                    throw new IOException(path + " is " + size + " bytes, but its header (n_ctx " + ctx + ", n_vocab " + vocab + ", n_chunk " + chunks
                            + ") needs " + probe.expectedSize() + ": truncated or not a base logits file");
                byte[] tok = new byte[4 * ctx * chunks];
                readFully(tok);
                int[] tokens = new int[ctx * chunks];
                ByteBuffer.wrap(tok).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(tokens);
                this.header = new Header(format, ctx, vocab, chunks, tokens);
            } catch (IOException | RuntimeException e) {
                in.close();
                throw e;
            }
            raw = new byte[(int) header.recordBytes()];
            record = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        }

        public Header header() {
            return header;
        }

        /** The next scored position's base log-probabilities, decoded into {@code logProbs[0..vocab)}. */
        public void next(float[] logProbs) throws IOException {
            readFully(raw);
            record.clear();
            int n = header.vocab();
            if (header.format() == Format.F32) {
                for (int i = 0; i < n; i++) logProbs[i] = record.getFloat();
            } else {
                float scale = record.getFloat(), min = record.getFloat();
                for (int i = 0; i < n; i++) logProbs[i] = scale * Short.toUnsignedInt(record.getShort()) + min;
            }
        }

        private void readFully(byte[] b) throws IOException {
            try {
                in.readFully(b);
            } catch (EOFException e) {
                throw new IOException(path + " ends early: truncated base logits file");
            }
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
