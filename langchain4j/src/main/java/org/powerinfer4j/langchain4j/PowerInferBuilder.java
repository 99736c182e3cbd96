package org.powerinfer4j.langchain4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;

/**
 * The settings every PowerInfer4j LangChain4j model shares: which engine {@link Model} it runs on and the default
 * generation parameters of its calls. Give either {@link #model(Model)} (shared: the caller keeps and closes it) or
 * {@link #modelPath(Path)} (opened by {@code build()} and owned: closing the LangChain4j model closes it).
 *
 * <p>Defaults not set here are the engine's ({@code SamplingParams.DEFAULT}: temperature 0.8, top-k 40, top-p 0.95,
 * min-p 0.05, no repetition penalty; no token limit: until end of generation or a full context; a fresh seed per
 * call). Chat requests override temperature, top-p, top-k, max output tokens and stop sequences per call.
 *
 * @param <B> the concrete builder, so that chained calls keep its type
 */
public abstract class PowerInferBuilder<B extends PowerInferBuilder<B>> {
    private Model model;
    private Path modelPath;
    private ModelOptions modelOptions;
    private String modelName;
    private Double temperature;
    private Double topP;
    private Integer topK;
    private Double minP;
    private Double repeatPenalty;
    private Integer maxTokens;
    private Long seed;
    private List<String> stopSequences;
    private boolean cachePrompt;
    private int maxIdleSessions = 1;

    PowerInferBuilder() {}

    @SuppressWarnings("unchecked")
    final B self() {
        return (B) this;
    }

    /** An open engine model, shared: it stays open when the LangChain4j model is closed. */
    public B model(Model model) {
        this.model = Objects.requireNonNull(model, "model");
        return self();
    }

    /** A GGUF file to open at {@code build()}; the LangChain4j model owns it and closes it on {@code close()}. */
    public B modelPath(Path modelPath) {
        this.modelPath = Objects.requireNonNull(modelPath, "modelPath");
        return self();
    }

    /** Options for opening {@link #modelPath(Path)} (threads, context length, ...); default {@link ModelOptions#defaults()}. */
    public B modelOptions(ModelOptions modelOptions) {
        this.modelOptions = Objects.requireNonNull(modelOptions, "modelOptions");
        return self();
    }

    /** The name reported in responses and accepted in requests; default the file name without {@code .gguf}. */
    public B modelName(String modelName) {
        this.modelName = modelName;
        return self();
    }

    /** Sampling temperature; 0 is greedy (deterministic). */
    public B temperature(Double temperature) {
        this.temperature = temperature;
        return self();
    }

    /** Nucleus sampling: keep the smallest set of tokens whose probability reaches {@code topP} (1 = off). */
    public B topP(Double topP) {
        this.topP = topP;
        return self();
    }

    /** Keep the {@code topK} most likely tokens (0 = off). */
    public B topK(Integer topK) {
        this.topK = topK;
        return self();
    }

    /** llama.cpp's min-p: drop tokens below {@code minP} × the top token's probability (0 = off). Engine-specific. */
    public B minP(Double minP) {
        this.minP = minP;
        return self();
    }

    /**
     * llama.cpp's repetition penalty over the last 64 tokens (1 = off). Engine-specific; it is not OpenAI's frequency or
     * presence penalty, which are refused.
     */
    public B repeatPenalty(Double repeatPenalty) {
        this.repeatPenalty = repeatPenalty;
        return self();
    }

    /** Tokens to generate at most per call (a chat request's {@code maxOutputTokens} overrides it). */
    public B maxTokens(Integer maxTokens) {
        this.maxTokens = maxTokens;
        return self();
    }

    /** Sampling seed for every call (the same request then gives the same answer); default a fresh seed per call. */
    public B seed(long seed) {
        this.seed = seed;
        return self();
    }

    /** Generation stops before any of these texts (which are not returned), also when split across tokens. */
    public B stopSequences(List<String> stopSequences) {
        this.stopSequences = stopSequences == null ? null : List.copyOf(stopSequences);
        return self();
    }

    /**
     * Keep idle sessions' KV caches and evaluate only what is new in a conversation (the longest cached prefix is
     * reused, as {@code serve --cache-prompt} does). Faster for multi-turn chats; off by default because a prompt
     * evaluated in other chunks may round differently, so greedy answers need not be bit-identical to an uncached call.
     */
    public B cachePrompt(boolean cachePrompt) {
        this.cachePrompt = cachePrompt;
        return self();
    }

    /** Sessions (each a KV cache for the whole context) kept for later calls; default 1. Concurrent calls open more. */
    public B maxIdleSessions(int maxIdleSessions) {
        if (maxIdleSessions < 0) throw new IllegalArgumentException("maxIdleSessions must be >= 0, is " + maxIdleSessions);
        this.maxIdleSessions = maxIdleSessions;
        return self();
    }

    /** Checks the settings, opens the model when a path was given, and returns the shared generation core. */
    InProcessGenerator generator() {
        if ((model == null) == (modelPath == null))
            throw new IllegalArgumentException("give exactly one of model(Model) or modelPath(Path)");
        if (model != null && modelOptions != null)
            throw new IllegalArgumentException("modelOptions apply to modelPath(Path); the given model is already open");
        GenerationDefaults defaults = GenerationDefaults.of(temperature, topP, topK, minP, repeatPenalty, maxTokens, seed, stopSequences);
        Model m = model;
        boolean owned = false;
        if (m == null) {
            try {
                m = Model.open(modelPath, modelOptions != null ? modelOptions : ModelOptions.defaults());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open " + modelPath + ": " + e.getMessage(), e);
            }
            owned = true;
        }
        String name = modelName != null ? modelName : m.file().path().getFileName().toString().replaceFirst("(?i)\\.gguf$", "");
        return new InProcessGenerator(m, owned, name, defaults, cachePrompt, maxIdleSessions);
    }
}
