package org.powerinfer4j.langchain4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;

/**
 * The test model, read from {@code ../shared/testdata} through the {@code powerinfer4j.testdata} property that the
 * build sets for every module's tests (nothing is copied into the project), and the engine's own greedy output that
 * the LangChain4j models must reproduce.
 */
final class TestModels {
    private TestModels() {}

    /** stories260K: a real trained F32 model; it has no chat template, so the engine uses its built-in "plain" format. */
    static Path stories() {
        String dir = System.getProperty("powerinfer4j.testdata");
        if (dir == null) throw new IllegalStateException("set -Dpowerinfer4j.testdata=DIR (the build sets it to ../shared/testdata)");
        Path p = Path.of(dir).resolve("models/stories260K.gguf");
        if (!Files.exists(p)) throw new IllegalStateException("missing test data file " + p);
        return p;
    }

    static Model openStories() {
        try {
            return Model.open(stories(), ModelOptions.defaults().withThreads(2));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The engine's greedy answer to a conversation, rendered with the model's chat template, in a fresh session. */
    static GenerationResult engineGreedyChat(Model model, List<ChatMessage> messages, int maxTokens) {
        int[] prompt = ChatPrompt.tokenize(model.chatTemplate(), model.tokenizer(), messages, true);
        try (Session s = model.newSession()) {
            return s.generate(prompt, greedy(maxTokens), (id, text) -> true);
        }
    }

    /** The engine's greedy continuation of a plain prompt in a fresh session. */
    static GenerationResult engineGreedy(Model model, String prompt, int maxTokens) {
        try (Session s = model.newSession()) {
            return s.generate(prompt, greedy(maxTokens), (id, text) -> true);
        }
    }

    private static GenerationParams greedy(int maxTokens) {
        return GenerationParams.defaults().withMaxTokens(maxTokens).withSampling(SamplingParams.GREEDY);
    }

    /** Tokens generated, not counting a final end-of-generation token (what the models report as output tokens). */
    static int outputTokens(Model model, GenerationResult r) {
        int[] g = r.generatedTokens();
        boolean eos = r.stopReason().equals("eos");
        return eos && g.length > 0 && model.tokenizer().isEndOfGeneration(g[g.length - 1]) ? g.length - 1 : g.length;
    }
}
