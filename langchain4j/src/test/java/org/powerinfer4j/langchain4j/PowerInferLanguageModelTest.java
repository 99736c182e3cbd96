package org.powerinfer4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.model.StreamingResponseHandler;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.Response;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;

class PowerInferLanguageModelTest {
    private static final String PROMPT = "Once upon a time";

    private static Model model;

    @BeforeAll
    static void open() {
        model = TestModels.openStories();
    }

    @AfterAll
    static void close() {
        model.close();
    }

    @Test
    void greedyCompletionIsTheEnginesGeneration() {
        try (PowerInferLanguageModel lm = PowerInferLanguageModel.builder().model(model).temperature(0.0).maxTokens(40).build()) {
            GenerationResult expected = TestModels.engineGreedy(model, PROMPT, 40);
            Response<String> r = lm.generate(PROMPT);
            assertThat(r.content()).startsWith(", there was a little girl named Lily.").isEqualTo(expected.text());
            assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(expected.promptTokens().length);
            assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(TestModels.outputTokens(model, expected));
            assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
        }
    }

    @Test
    void aStopSequenceEndsTheCompletion() {
        try (PowerInferLanguageModel lm = PowerInferLanguageModel.builder().model(model).temperature(0.0).maxTokens(40)
                .stopSequences(List.of("Lily")).build()) {
            Response<String> r = lm.generate(PROMPT);
            assertThat(r.content()).isEqualTo(", there was a little girl named ");
            assertThat(r.finishReason()).isEqualTo(FinishReason.STOP);
        }
    }

    @Test
    void streamingPiecesConcatenateToTheCompletion() {
        try (PowerInferStreamingLanguageModel lm = PowerInferStreamingLanguageModel.builder().model(model).temperature(0.0).maxTokens(40).build()) {
            List<String> pieces = new ArrayList<>();
            List<Response<String>> done = new ArrayList<>();
            List<Throwable> errors = new ArrayList<>();
            lm.generate(PROMPT, new StreamingResponseHandler<>() {
                @Override
                public void onNext(String token) {
                    pieces.add(token);
                }

                @Override
                public void onComplete(Response<String> response) {
                    done.add(response);
                }

                @Override
                public void onError(Throwable error) {
                    errors.add(error);
                }
            });
            assertThat(errors).isEmpty();
            assertThat(pieces).hasSizeGreaterThan(10);
            assertThat(done).singleElement().satisfies(r -> {
                assertThat(r.content()).isEqualTo(String.join("", pieces)).isEqualTo(TestModels.engineGreedy(model, PROMPT, 40).text());
                assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(40);
            });
        }
    }
}
