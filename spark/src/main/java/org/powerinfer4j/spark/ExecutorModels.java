package org.powerinfer4j.spark;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkFiles;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.hub.ModelCache;

/**
 * The models open in this JVM (one executor, or the driver in local mode), one per {@link ModelSpec}: opened lazily by
 * the first task that needs it and shared by every later task — the file is mapped once, and concurrent tasks' decode
 * steps share passes over the weights. Closed by {@link PowerInferPlugin} when the executor stops (and, failing that,
 * at JVM exit). Idle sessions are kept per model so that a row does not allocate a KV cache.
 */
public final class ExecutorModels {
    /** Idle sessions kept per model beyond those in use. */
    private static final int MAX_IDLE_SESSIONS = 16;
    private static final Map<ModelSpec, Shared> MODELS = new ConcurrentHashMap<>();
    private static final AtomicInteger OPENED = new AtomicInteger();
    private static volatile boolean hookInstalled;
    /** What every JVM that runs the engine needs on its command line. */
    public static final String JVM_FLAGS = "--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED";

    private ExecutorModels() {}

    /** An open model and its idle sessions. */
    static final class Shared {
        final Model model;
        private final ArrayDeque<Session> idle = new ArrayDeque<>();   // guarded by this
        private boolean closed;                                         // guarded by this

        Shared(Model model) {
            this.model = model;
        }

        Session take() {
            synchronized (this) {
                if (closed) throw new IllegalStateException("the model was closed (the executor is stopping)");
                if (!idle.isEmpty()) return idle.pop();
            }
            return model.newSession();
        }

        /** Keeps a session that finished normally while there is room, else closes it (a failed one may be half-fed). */
        void give(Session s, boolean healthy) {
            synchronized (this) {
                if (healthy && !closed && idle.size() < MAX_IDLE_SESSIONS) {
                    idle.push(s);
                    return;
                }
            }
            s.close();
        }

        void close() {
            synchronized (this) {
                if (closed) return;
                closed = true;
                idle.forEach(Session::close);
                idle.clear();
            }
            model.close();
        }
    }

    /** The model of {@code spec} in this JVM, opened now if no task opened it before. */
    static Shared get(ModelSpec spec) {
        Shared s = MODELS.get(spec);
        if (s != null) return s;
        synchronized (ExecutorModels.class) {   // one open at a time: a second task waits for the first's instead of mapping it again
            s = MODELS.get(spec);
            if (s != null) return s;
            if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty())
                throw new IllegalStateException("this JVM lacks the Vector API the engine computes with: add '" + JVM_FLAGS
                        + "' to spark.executor.extraJavaOptions and spark.driver.extraJavaOptions");
            installShutdownHook();
            try {
                s = new Shared(Model.open(locate(spec.model()), spec.toOptions()));
            } catch (IOException e) {
                throw new IllegalStateException("cannot open model " + spec.model() + ": " + RowGenerator.oneLine(e), e);
            }
            OPENED.incrementAndGet();
            MODELS.put(spec, s);
            return s;
        }
    }

    /**
     * Where the model is on this machine: an existing path; else a file of that name shipped with
     * {@code spark-submit --files} / {@code SparkContext.addFile} ({@link SparkFiles}); else a model in this machine's
     * model cache ({@code powerinfer4j pull}), by the names {@code powerinfer4j list} shows.
     */
    static Path locate(String model) throws IOException {
        Path p = Path.of(model);
        if (Files.isRegularFile(p)) return p;
        if (Files.isDirectory(p)) throw new IOException(p + " is a directory, not a GGUF file");
        String shipped = shippedFile(p.getFileName() == null ? model : p.getFileName().toString());
        if (shipped != null) return Path.of(shipped);
        return ModelCache.resolve(model);
    }

    private static String shippedFile(String name) {
        try {
            File f = new File(SparkFiles.get(name));
            return f.isFile() ? f.getPath() : null;
        } catch (RuntimeException noSparkEnv) {
            return null;   // outside a running Spark application nothing is shipped
        }
    }

    /** How many models this JVM has opened so far (each spec once, however many tasks used it). */
    public static int openedCount() {
        return OPENED.get();
    }

    /** The specs whose models are open now. */
    public static List<ModelSpec> openSpecs() {
        return new ArrayList<>(MODELS.keySet());
    }

    /** Closes every model open in this JVM; the next task opens its model again. Rows still generating fail. */
    public static void closeAll() {
        synchronized (ExecutorModels.class) {
            for (ModelSpec spec : new ArrayList<>(MODELS.keySet())) {
                Shared s = MODELS.remove(spec);
                if (s != null) s.close();
            }
        }
    }

    private static void installShutdownHook() {
        if (hookInstalled) return;
        hookInstalled = true;
        Runtime.getRuntime().addShutdownHook(new Thread(ExecutorModels::closeAll, "powerinfer4j-close-models"));
    }
}
