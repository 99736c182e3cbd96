package org.powerinfer4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.output.FinishReason;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.api.Model;

class PowerInferStreamingChatModelTest {
    private static final String USER = "Tell me about Lily.";

    private static Model model;
    private static PowerInferStreamingChatModel streaming;
    private static PowerInferChatModel blocking;

    @BeforeAll
    static void open() {
        model = TestModels.openStories();
        streaming = PowerInferStreamingChatModel.builder().model(model).temperature(0.0).maxTokens(48).build();
        blocking = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(48).build();
    }

    @AfterAll
    static void close() {
        streaming.close();
        blocking.close();
        model.close();
    }

    /** Records every callback, in order. */
    private static class Recorder implements StreamingChatResponseHandler {
        final List<String> partials = new ArrayList<>();
        final List<ChatResponse> completes = new ArrayList<>();
        final List<Throwable> errors = new ArrayList<>();

        @Override
        public void onPartialResponse(String partialResponse) {
            partials.add(partialResponse);
        }

        @Override
        public void onCompleteResponse(ChatResponse completeResponse) {
            completes.add(completeResponse);
        }

        @Override
        public void onError(Throwable error) {
            errors.add(error);
        }
    }

    private static ChatRequest request(ChatRequestParameters parameters) {
        return ChatRequest.builder().messages(UserMessage.from(USER)).parameters(parameters).build();
    }

    @Test
    void partialsConcatenateToTheCompleteResponse() {
        Recorder rec = new Recorder();
        streaming.chat(USER, rec);
        assertThat(rec.errors).isEmpty();
        assertThat(rec.completes).hasSize(1);
        ChatResponse done = rec.completes.getFirst();
        assertThat(rec.partials).hasSizeGreaterThan(10).allSatisfy(p -> assertThat(p).isNotEmpty());
        assertThat(String.join("", rec.partials)).isEqualTo(done.aiMessage().text());
        ChatResponse same = blocking.chat(ChatRequest.builder().messages(UserMessage.from(USER)).build());
        assertThat(done.aiMessage().text()).isEqualTo(same.aiMessage().text());
        assertThat(done.tokenUsage()).isEqualTo(same.tokenUsage());
        assertThat(done.finishReason()).isEqualTo(same.finishReason());
    }

    @Test
    void maxOutputTokensEndsWithLength() {
        Recorder rec = new Recorder();
        streaming.chat(request(ChatRequestParameters.builder().maxOutputTokens(4).build()), rec);
        ChatResponse done = rec.completes.getFirst();
        assertThat(done.finishReason()).isEqualTo(FinishReason.LENGTH);
        assertThat(done.tokenUsage().outputTokenCount()).isEqualTo(4);
        assertThat(String.join("", rec.partials)).isEqualTo(done.aiMessage().text());
    }

    @Test
    void noPartialCarriesTextOfAStopSequence() {
        String full = blocking.chat(USER);
        String stop = full.substring(full.length() / 2, full.length() / 2 + 3);
        Recorder rec = new Recorder();
        streaming.chat(request(ChatRequestParameters.builder().stopSequences(stop).build()), rec);
        ChatResponse done = rec.completes.getFirst();
        assertThat(done.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(done.aiMessage().text()).isEqualTo(full.substring(0, full.indexOf(stop)));
        assertThat(String.join("", rec.partials)).isEqualTo(done.aiMessage().text());
    }

    @Test
    void aRefusedParameterGoesToOnError() {
        Recorder rec = new Recorder();
        streaming.chat(request(ChatRequestParameters.builder().frequencyPenalty(1.0).build()), rec);
        assertThat(rec.partials).isEmpty();
        assertThat(rec.completes).isEmpty();
        assertThat(rec.errors).singleElement().isInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void aPromptLongerThanTheContextGoesToOnError() {
        Recorder rec = new Recorder();
        streaming.chat("Lily ".repeat(model.contextLength()), rec);
        assertThat(rec.completes).isEmpty();
        assertThat(rec.errors).singleElement().satisfies(e -> assertThat(e).hasMessageContaining("prompt too long"));
    }

    @Test
    void anExceptionFromTheHandlerEndsTheStreamWithOnError() {
        Recorder rec = new Recorder() {
            @Override
            public void onPartialResponse(String partialResponse) {
                super.onPartialResponse(partialResponse);
                throw new IllegalStateException("handler failed");
            }
        };
        streaming.chat(USER, rec);
        assertThat(rec.partials).hasSize(1);
        assertThat(rec.completes).isEmpty();
        assertThat(rec.errors).singleElement().satisfies(e -> assertThat(e).hasMessage("handler failed"));
        assertThat(streaming.model().newSession()).isNotNull();   // the model is still usable
        assertThat(blocking.chat(USER)).isNotEmpty();
    }

    @Test
    void cancellingThroughTheStreamingHandleStopsWithoutFurtherCallbacks() {
        Recorder rec = new Recorder() {
            @Override
            public void onPartialResponse(PartialResponse partial, PartialResponseContext context) {
                partials.add(partial.text());
                if (partials.size() == 3) context.streamingHandle().cancel();
            }
        };
        streaming.chat(USER, rec);
        assertThat(rec.partials).hasSize(3);
        assertThat(rec.completes).isEmpty();
        assertThat(rec.errors).isEmpty();
    }
}
