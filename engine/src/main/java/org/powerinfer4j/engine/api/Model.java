package org.powerinfer4j.engine.api;

import java.io.IOException;
import java.nio.file.Path;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.DenseFeedForward;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.Transformer;
import org.powerinfer4j.engine.tokenizer.Tokenizer;
import org.powerinfer4j.engine.tokenizer.Tokenizers;

/**
 * A loaded model: the mapped GGUF file, its configuration, weights (slices of the mapping), tokenizer and the
 * compute thread pool. Thread-safe to share; each {@link Session} owns its KV cache. Closing the model unmaps
 * the file and stops the pool.
 *
 * <pre>{@code
 * try (Model model = Model.open(Path.of("model.gguf"), ModelOptions.defaults().withThreads(2));
 *      Session session = model.newSession()) {
 *     session.generate("Once upon a time", GenerationParams.defaults(), piece -> { System.out.print(piece); return true; });
 * }
 * }</pre>
 */
public final class Model implements AutoCloseable {
    private final GGUFFile file;
    private final ModelConfig config;
    private final ModelWeights weights;
    private final Transformer transformer;
    private final Tokenizer tokenizer;
    private final WorkerPool pool;
    private final ModelOptions options;
    private final int contextLength;
    private final long loadMillis;

    private Model(GGUFFile file, ModelConfig config, ModelWeights weights, Tokenizer tokenizer, ModelOptions options, long loadMillis) {
        this.file = file;
        this.config = config;
        this.weights = weights;
        this.tokenizer = tokenizer;
        this.options = options;
        this.transformer = new Transformer(config, weights, new DenseFeedForward(config.activation()));
        this.pool = new WorkerPool(options.threads());
        int ctx = options.contextLength() > 0 ? options.contextLength() : Math.min(config.trainedContext(), ModelOptions.DEFAULT_CONTEXT_CAP);
        this.contextLength = Math.max(1, ctx);
        this.loadMillis = loadMillis;
    }

    /** Opens a GGUF model. Errors (missing file, malformed GGUF, unsupported model) are one-line messages. */
    public static Model open(Path path, ModelOptions options) throws IOException {
        long t0 = System.nanoTime();
        GGUFFile f = GGUFFile.open(path);
        try {
            ModelConfig c = ModelConfig.fromGGUF(f);
            if (options.activation() != null) c = c.withActivation(options.activation());
            ModelWeights w = ModelWeights.load(f, c);
            Tokenizer tok = Tokenizers.fromGGUF(f);
            return new Model(f, c, w, tok, options, (System.nanoTime() - t0) / 1_000_000);
        } catch (RuntimeException e) {
            f.close();
            throw e instanceof ModelException ? e : new ModelException(path.getFileName() + ": " + e.getMessage());
        }
    }

    public Session newSession() {
        return new Session(this, contextLength);
    }

    public ModelConfig config() { return config; }
    public ModelWeights weights() { return weights; }
    public Tokenizer tokenizer() { return tokenizer; }
    public GGUFFile file() { return file; }
    public ModelOptions options() { return options; }
    public int contextLength() { return contextLength; }
    public long loadMillis() { return loadMillis; }
    Transformer transformer() { return transformer; }
    WorkerPool pool() { return pool; }

    @Override
    public void close() {
        pool.close();
        file.close();
    }
}
