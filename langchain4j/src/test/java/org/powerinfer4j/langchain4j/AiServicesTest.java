package org.powerinfer4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.TokenStream;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/** LangChain4j's own high-level API, {@code AiServices}, over the in-process models. */
class AiServicesTest {
    private static final String SYSTEM = "You tell short stories.";

    interface Storyteller {
        @dev.langchain4j.service.SystemMessage(SYSTEM)
        String chat(String userMessage);
    }

    interface StreamingStoryteller {
        @dev.langchain4j.service.SystemMessage(SYSTEM)
        TokenStream chat(String userMessage);
    }

    private static Model model;
    private static PowerInferChatModel chatModel;

    @BeforeAll
    static void open() {
        model = TestModels.openStories();
        chatModel = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(32).build();
    }

    @AfterAll
    static void close() {
        chatModel.close();
        model.close();
    }

    @Test
    void anAiServiceWithASystemMessageAnswersAsTheEngineDoes() {
        Storyteller storyteller = AiServices.create(Storyteller.class, chatModel);
        GenerationResult expected = TestModels.engineGreedyChat(model, List.of(ChatMessage.system(SYSTEM), ChatMessage.user("Who is Lily?")), 32);
        assertThat(storyteller.chat("Who is Lily?")).isNotBlank().isEqualTo(expected.text());
    }

    @Test
    void anAiServiceWithChatMemorySendsTheWholeConversation() {
        Storyteller storyteller = AiServices.builder(Storyteller.class).chatModel(chatModel)
                .chatMemory(MessageWindowChatMemory.withMaxMessages(10)).build();
        String first = storyteller.chat("Who is Lily?");
        String second = storyteller.chat("What did she do?");
        ChatResponse direct = chatModel.chat(SystemMessage.from(SYSTEM), UserMessage.from("Who is Lily?"),
                dev.langchain4j.data.message.AiMessage.from(first), UserMessage.from("What did she do?"));
        assertThat(second).isEqualTo(direct.aiMessage().text());
    }

    @Test
    void aStreamingAiServiceStreamsTheSameAnswer() throws Exception {
        try (PowerInferStreamingChatModel streaming = PowerInferStreamingChatModel.builder().model(model).temperature(0.0).maxTokens(32).build()) {
            StreamingStoryteller storyteller = AiServices.create(StreamingStoryteller.class, streaming);
            StringBuilder partials = new StringBuilder();
            CompletableFuture<ChatResponse> done = new CompletableFuture<>();
            storyteller.chat("Who is Lily?")
                    .onPartialResponse(partials::append)
                    .onCompleteResponse(done::complete)
                    .onError(done::completeExceptionally)
                    .start();
            ChatResponse response = done.get(60, TimeUnit.SECONDS);
            assertThat(response.aiMessage().text()).isEqualTo(partials.toString())
                    .isEqualTo(AiServices.create(Storyteller.class, chatModel).chat("Who is Lily?"));
        }
    }
}
