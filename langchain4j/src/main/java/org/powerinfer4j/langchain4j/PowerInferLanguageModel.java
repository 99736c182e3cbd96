package org.powerinfer4j.langchain4j;

import dev.langchain4j.model.language.LanguageModel;
import dev.langchain4j.model.output.Response;
import org.powerinfer4j.engine.api.Model;

/**
 * A LangChain4j {@link LanguageModel} (plain text completion, no chat template) on a PowerInfer4j {@link Model} in
 * this JVM. The prompt is tokenized with BOS, as {@code powerinfer4j generate} does, and continued with the builder's
 * settings; the response carries the token usage and the finish reason (STOP at end of generation or a stop
 * sequence, LENGTH at the token limit or a full context). Thread-safe like {@link PowerInferChatModel}.
 */
public final class PowerInferLanguageModel extends InProcessModel implements LanguageModel {
    private PowerInferLanguageModel(InProcessGenerator generator) {
        super(generator);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public Response<String> generate(String prompt) {
        InProcessGenerator.Generation g = complete(prompt, text -> {});
        return Response.from(g.text(), g.tokenUsage(), g.finishReason());
    }

    /** Builds a {@link PowerInferLanguageModel} from {@link PowerInferBuilder}'s settings. */
    public static final class Builder extends PowerInferBuilder<Builder> {
        private Builder() {}

        public PowerInferLanguageModel build() {
            return new PowerInferLanguageModel(generator());
        }
    }
}
