package org.powerinfer4j.langchain4j;

import dev.langchain4j.model.StreamingResponseHandler;
import dev.langchain4j.model.language.StreamingLanguageModel;
import dev.langchain4j.model.output.Response;
import org.powerinfer4j.engine.api.Model;

/**
 * A LangChain4j {@link StreamingLanguageModel} (plain text completion, no chat template) on a PowerInfer4j
 * {@link Model} in this JVM: {@link PowerInferLanguageModel}'s generation with {@code onNext} per piece of decoded
 * text, then {@code onComplete}. It runs on the calling thread; every failure ends the stream with one
 * {@code onError} and no {@code onComplete}.
 */
public final class PowerInferStreamingLanguageModel extends InProcessModel implements StreamingLanguageModel {
    private PowerInferStreamingLanguageModel(InProcessGenerator generator) {
        super(generator);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public void generate(String prompt, StreamingResponseHandler<String> handler) {
        InProcessGenerator.Generation g;
        try {
            g = complete(prompt, handler::onNext);
        } catch (RuntimeException | Error e) {
            handler.onError(e);
            return;
        }
        try {
            handler.onComplete(Response.from(g.text(), g.tokenUsage(), g.finishReason()));
        } catch (RuntimeException e) {
            handler.onError(e);
        }
    }

    /** Builds a {@link PowerInferStreamingLanguageModel} from {@link PowerInferBuilder}'s settings. */
    public static final class Builder extends PowerInferBuilder<Builder> {
        private Builder() {}

        public PowerInferStreamingLanguageModel build() {
            return new PowerInferStreamingLanguageModel(generator());
        }
    }
}
