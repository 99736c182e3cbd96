package org.powerinfer4j.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.tokenizer.Tokenizer;
import org.powerinfer4j.engine.tokenizer.Tokenizers;

/**
 * Mutates real GGUF files with a fixed seed — byte flips, truncations, hostile counts, lengths, dimensions and
 * offsets written into header fields, wrong type ids — and opens each one with {@link GGUFFile}, its tokenizer and,
 * where it parses, {@link Model#open} plus a one-token forward pass. Every failure must be a documented exception
 * ({@link IOException} from the parser, {@link ModelException} from the loader, {@link IllegalArgumentException}
 * from the tokenizer) with a one-line message, never another exception or an {@link Error}, and every file must
 * finish within {@link #PER_FILE_MILLIS} (hang detection).
 *
 * <p>The normal build runs {@code -Dpowerinfer4j.fuzz.count=500} files; the nightly run is 10,000:
 * {@code mvn -pl engine -am test -Dtest=GGUFFuzzTest -Dpowerinfer4j.fuzz.count=10000 -Dsurefire.failIfNoSpecifiedTests=false}.
 * Case {@code i} depends only on the seed and {@code i}, so {@code -Dpowerinfer4j.fuzz.first=i -Dpowerinfer4j.fuzz.count=1}
 * reruns one reported case; {@code -Dpowerinfer4j.fuzz.seed=S} explores other files.
 */
class GGUFFuzzTest {
    static final int COUNT = Integer.getInteger("powerinfer4j.fuzz.count", 500);
    static final int FIRST = Integer.getInteger("powerinfer4j.fuzz.first", 0);
    static final long SEED = Long.getLong("powerinfer4j.fuzz.seed", 0x6607_F022L);
    static final long PER_FILE_MILLIS = Long.getLong("powerinfer4j.fuzz.timeoutMillis", 10_000);
    /** Prints each distinct loader error once (what users would see for these files). */
    static final boolean VERBOSE = Boolean.getBoolean("powerinfer4j.fuzz.verbose");
    private static final java.util.Set<String> SEEN = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Dense SPM llama, Q4_0 (the repacked path), a PowerInfer PWRI file with predictors, MoE, GELU and BPE vocabularies. */
    static final String[] SEEDS = {
            "models/stories260K.gguf", "models/quantized/stories260K-q4_0.gguf", "sparse/stories260K-relu.powerinfer.gguf",
            "archs/qwen3moe-q8_0.gguf", "archs/gemma2-q8_0.gguf", "archs/falcon-7b-q8_0.gguf", "archs/gpt-oss-q8_0.gguf",
            "vocab/ggml-vocab-deepseek-coder.gguf"};

    static final ModelOptions OPTIONS = ModelOptions.defaults().withThreads(1).withContextLength(8).withBatchSize(4)
            .withListener(GGUFFuzzTest::noteIsOneLine);

    /** Notes and warnings may quote the file too (names, values): they must stay one line as well. */
    private static void noteIsOneLine(String line) {
        if (line == null || line.isBlank() || line.contains("\n") || line.contains("\r")) throw new AssertionError("not a one-line note: " + line);
    }

    record Seed(String name, byte[] bytes, GGUFLayout layout) {}

    enum Outcome { REJECTED_BY_PARSER, REJECTED_BY_LOADER, RAN }

    @Test
    void mutatedFilesFailWithOneLineErrorsAndNeverHang(@TempDir Path dir) throws Exception {
        List<Seed> seeds = new ArrayList<>();
        for (String s : SEEDS) {
            byte[] b = Files.readAllBytes(TestData.file(s));
            seeds.add(new Seed(s, b, new GGUFLayout(b)));
        }
        Map<Outcome, Integer> tally = new EnumMap<>(Outcome.class);
        List<String> failures = new ArrayList<>();
        ExecutorService worker = Executors.newSingleThreadExecutor(r -> daemon(r));
        long t0 = System.nanoTime();
        try {
            for (int i = FIRST; i < FIRST + COUNT && failures.size() < 20; i++) {
                SplittableRandom rnd = new SplittableRandom(SEED ^ (0x9E3779B97F4A7C15L * (i + 1)));
                Seed seed = seeds.get(rnd.nextInt(seeds.size()));
                StringBuilder what = new StringBuilder();
                byte[] mutated = Mutator.mutate(seed, rnd, what);
                Path p = dir.resolve("case-" + i + ".gguf");
                Files.write(p, mutated);
                String label = "case " + i + " (" + seed.name + ": " + what + ")";
                Future<Outcome> f = worker.submit(() -> exercise(p));
                try {
                    tally.merge(f.get(PER_FILE_MILLIS, TimeUnit.MILLISECONDS), 1, Integer::sum);
                } catch (TimeoutException e) {
                    failures.add(label + ": did not finish in " + PER_FILE_MILLIS + " ms (hang?)");
                    f.cancel(true);
                    worker.shutdownNow();   // its thread may stay stuck; the next case gets a fresh one
                    worker = Executors.newSingleThreadExecutor(r -> daemon(r));
                } catch (ExecutionException e) {
                    failures.add(label + ": " + describe(e.getCause()));
                }
                Files.deleteIfExists(p);
            }
        } finally {
            worker.shutdownNow();
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("GGUF fuzz: " + COUNT + " files from seed " + Long.toHexString(SEED) + " in " + ms + " ms: " + tally);
        assertThat(failures).as("fuzz failures").isEmpty();
    }

    private static Thread daemon(Runnable r) {
        Thread t = new Thread(r, "gguf-fuzz");
        t.setDaemon(true);
        return t;
    }

    private static String describe(Throwable t) {
        java.io.StringWriter w = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(w));
        String[] lines = w.toString().split("\n");
        return String.join("\n    ", Arrays.copyOf(lines, Math.min(lines.length, 8)));
    }

    /** Opens one file every way a user would; returns how far it got or throws what is not allowed. */
    static Outcome exercise(Path p) throws Exception {
        try (GGUFFile f = GGUFFile.open(p)) {
            for (TensorInfo ti : f.tensorInfos()) {   // every tensor lies inside the mapping
                MemorySegment d = f.tensor(ti.name()).data();
                if (d.byteSize() > 0) d.get(ValueLayout.JAVA_BYTE, d.byteSize() - 1);
            }
            try {
                Tokenizer tok = Tokenizers.fromGGUF(f);
                int[] ids = tok.encode("Hello, world! 123 héllo", true, false);
                tok.decode(ids, false);
            } catch (IllegalArgumentException e) {
                oneLine(e);
            }
        } catch (IOException e) {
            oneLine(e);
            return Outcome.REJECTED_BY_PARSER;
        }
        try (Model m = Model.open(p, OPTIONS); Session s = m.newSession()) {
            int[] prompt = m.tokenizer().encode("a", true, false);
            s.evaluate(prompt.length == 0 ? new int[] {0} : new int[] {prompt[0]});
            return Outcome.RAN;
        } catch (ModelException e) {
            oneLine(e);
            if (VERBOSE && SEEN.add(e.getMessage().replaceAll("case-\\d+\\.gguf", "F").replaceAll("\\d+", "N")))
                System.out.println("loader: " + e.getMessage() + (e.getCause() == null ? "" : " [" + e.getCause().getClass().getSimpleName() + "]"));
            for (Throwable c = e.getCause(); c != null; c = c.getCause())
                if (!(c instanceof IllegalArgumentException || c instanceof ModelException || c instanceof IOException)) throw e;
            return Outcome.REJECTED_BY_LOADER;
        }
    }

    private static void oneLine(Exception e) {
        String m = e.getMessage();
        if (m == null || m.isBlank() || m.contains("\n") || m.contains("\r"))
            throw new AssertionError("not a one-line message: " + e, e);
    }

    /** The mutations: each case applies one or two, chosen by the case's own random stream. */
    static final class Mutator {
        private Mutator() {}

        static byte[] mutate(Seed seed, SplittableRandom rnd, StringBuilder what) {
            byte[] b = seed.bytes.clone();
            int rounds = rnd.nextInt(4) == 0 ? 2 : 1;
            for (int r = 0; r < rounds; r++) {
                if (r > 0) what.append("; ");
                switch (rnd.nextInt(5)) {
                    case 0 -> flipBytes(b, seed.layout.headerEnd, rnd, what);
                    case 1 -> b = truncate(b, seed.layout.headerEnd, rnd, what);
                    case 2 -> hostileField(b, seed.layout, rnd, what, Target.STRUCTURE);
                    case 3 -> hostileField(b, seed.layout, rnd, what, Target.TYPE_IDS);
                    default -> hostileField(b, seed.layout, rnd, what, Target.METADATA);   // parses: reaches the loader
                }
            }
            return b;
        }

        private static void flipBytes(byte[] b, int headerEnd, SplittableRandom rnd, StringBuilder what) {
            int n = 1 + rnd.nextInt(8);
            int limit = rnd.nextInt(8) == 0 ? b.length : Math.min(headerEnd, b.length);   // mostly the header
            what.append("flip ").append(n).append(" bytes at");
            for (int i = 0; i < n && limit > 0; i++) {
                int at = rnd.nextInt(limit);
                b[at] = rnd.nextBoolean() ? (byte) rnd.nextInt(256) : (byte) (b[at] ^ (1 << rnd.nextInt(8)));
                what.append(' ').append(at);
            }
        }

        private static byte[] truncate(byte[] b, int headerEnd, SplittableRandom rnd, StringBuilder what) {
            int len = rnd.nextBoolean() ? rnd.nextInt(Math.min(headerEnd, b.length) + 1) : rnd.nextInt(b.length + 1);
            what.append("truncate to ").append(len);
            return Arrays.copyOf(b, len);
        }

        /** Writes an oversized (or zero, negative, off-by-one) value into a count, length, dimension or offset, or a wrong type id. */
        enum Target { STRUCTURE, TYPE_IDS, METADATA }

        private static Target target(GGUFLayout.Kind k) {
            return switch (k) {
                case VALUE_TYPE, TENSOR_TYPE -> Target.TYPE_IDS;
                case VALUE32, VALUE64 -> Target.METADATA;
                default -> Target.STRUCTURE;
            };
        }

        private static void hostileField(byte[] b, GGUFLayout layout, SplittableRandom rnd, StringBuilder what, Target target) {
            boolean typeIds = target == Target.TYPE_IDS;
            List<GGUFLayout.Field> pool = layout.fields.stream().filter(f -> target(f.kind()) == target).toList();
            GGUFLayout.Field f = pool.get(rnd.nextInt(pool.size()));
            if (f.offset() + f.width() > b.length) return;
            ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            long old = f.width() == 4 ? Integer.toUnsignedLong(bb.getInt(f.offset())) : bb.getLong(f.offset());
            long v = typeIds ? typeId(rnd) : hostile(old, f.width(), rnd);
            if (f.width() == 4) bb.putInt(f.offset(), (int) v);
            else bb.putLong(f.offset(), v);
            what.append(f.name()).append(" ").append(old).append(" -> ").append(f.width() == 4 ? Integer.toUnsignedString((int) v) : Long.toUnsignedString(v));
        }

        private static long typeId(SplittableRandom rnd) {
            return switch (rnd.nextInt(4)) {
                case 0 -> rnd.nextInt(16);        // another valid value or tensor type
                case 1 -> rnd.nextInt(48);        // around and past the last known ids
                case 2 -> -1;
                default -> rnd.nextInt();
            };
        }

        private static long hostile(long old, int width, SplittableRandom rnd) {
            long max = width == 4 ? 0xFFFF_FFFFL : -1L;
            return switch (rnd.nextInt(14)) {
                case 0 -> 0;
                case 1 -> 1;
                case 2 -> max;                            // -1
                case 3 -> width == 4 ? Integer.MAX_VALUE : Long.MAX_VALUE;
                case 4 -> width == 4 ? 0x8000_0000L : Long.MIN_VALUE;
                case 5 -> old + 1;
                case 6 -> old - 1;
                case 7 -> old * 2;
                case 8 -> old * 1000;
                case 9 -> old + 32;                       // one alignment step: still aligned, runs past the end
                case 10 -> 1L << (16 + rnd.nextInt(width == 4 ? 16 : 47));
                case 11 -> old ^ (1L << rnd.nextInt(width * 8));
                case 12 -> rnd.nextLong() & max;
                default -> 1 + rnd.nextInt(64);
            } & max;
        }
    }
}
