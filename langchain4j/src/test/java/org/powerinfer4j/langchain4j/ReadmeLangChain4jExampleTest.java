package org.powerinfer4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.SystemMessage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.ReturnBehavior;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.service.Result;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.api.ModelOptions;

/**
 * The README's LangChain4j examples, compiled and run as written: the regions between the {@code README} markers
 * below must be the code blocks of the README's "LangChain4j" section, except that the README reads
 * {@code Path.of("model.gguf")} where this reads {@code modelPath} and prints to {@code System.out} where this prints to
 * {@code out}.
 */
class ReadmeLangChain4jExampleTest {
    // --- README: LangChain4j ---
    interface Storyteller {
        @SystemMessage("You tell short stories.")
        String chat(String userMessage);
    }
    // --- end ---

    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @Test
    void chatExampleRuns() {
        Path modelPath = TestModels.stories();
        // --- README: LangChain4j ---
        try (PowerInferChatModel model = PowerInferChatModel.builder()
                .modelPath(modelPath) // opened here, closed with the chat model
                .modelOptions(ModelOptions.defaults().withThreads(2))
                .temperature(0.0).maxTokens(64) // defaults; a request may override them
                .build()) {
            String story = AiServices.create(Storyteller.class, model).chat("Tell me about Lily.");
            out.println(story);

            ChatResponse r = model.chat(ChatRequest.builder()
                    .messages(UserMessage.from("Tell me about Lily."))
                    .parameters(ChatRequestParameters.builder().maxOutputTokens(32).stopSequences(".").build())
                    .build());
            out.println(r.aiMessage().text() + " " + r.tokenUsage() + " " + r.finishReason());   // STOP at the ".", or LENGTH
        }
        // --- end ---
        String[] lines = printed.toString(StandardCharsets.UTF_8).split("\n");
        String last = lines[lines.length - 1];
        assertThat(lines[0]).isNotBlank();
        assertThat(last).contains("outputTokenCount").endsWith(" STOP");
        assertThat(last.substring(0, last.indexOf(" TokenUsage"))).isNotEmpty().doesNotContain(".");
    }

    @Test
    void streamingExampleRuns() {
        Path modelPath = TestModels.stories();
        // --- README: LangChain4j ---
        try (PowerInferStreamingChatModel model = PowerInferStreamingChatModel.builder().modelPath(modelPath).maxTokens(64).build()) {
            model.chat("Tell me about Lily.", new StreamingChatResponseHandler() {   // returns after the last callback
                @Override public void onPartialResponse(String text) { out.print(text); }
                @Override public void onCompleteResponse(ChatResponse r) { out.println("\n" + r.tokenUsage()); }
                @Override public void onError(Throwable error) { out.println("error: " + error.getMessage()); }
            });
        }
        // --- end ---
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("outputTokenCount").doesNotContain("error:");
    }

    // --- README: LangChain4j ---
    static class Weather {
        @Tool(value = "The weather in a city", returnBehavior = ReturnBehavior.IMMEDIATE)   // its result is the answer
        String weather(@P("the city") String city) { return "sunny in " + city; }
    }

    interface Assistant {
        @SystemMessage("You can look up the weather.")
        Result<String> ask(String question);
    }

    record Person(String name, int age) {}

    interface Extractor {
        Person extract(String text);   // the record's JSON schema is the response format: the answer parses
    }
    // --- end ---

    @Test
    void toolsAndStructuredOutputExampleRuns() {
        Path modelPath = TestModels.stories();
        // --- README: LangChain4j ---
        try (PowerInferChatModel model = PowerInferChatModel.builder().modelPath(modelPath).temperature(0.0).maxTokens(96).build()) {
            Assistant assistant = AiServices.builder(Assistant.class).chatModel(model).tools(new Weather()).build();
            Result<String> answer = assistant.ask("Weather in Paris?");   // @Tool methods run on the model's calls
            out.println(answer.toolExecutions().size() + " tool call(s): " + answer.toolExecutions());

            Person p = AiServices.create(Extractor.class, model).extract("Lily is five.");
            out.println(p);
        }
        // --- end ---
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("tool call(s)").contains("Person[");
    }

    @Test
    void theReadmeShowsExactlyTheseExamples() throws IOException {
        Path here = Path.of("").toAbsolutePath();
        Path readme = here.resolveSibling("README.md");
        Path source = here.resolve("src/test/java/org/powerinfer4j/langchain4j/ReadmeLangChain4jExampleTest.java");
        List<String> regions = new ArrayList<>();
        Matcher m = Pattern.compile("// --- README: LangChain4j ---\\n(.*?)\\n\\s*// --- end ---", Pattern.DOTALL)
                .matcher(Files.readString(source));
        while (m.find()) regions.add(m.group(1).stripIndent().replace("modelPath(modelPath)", "modelPath(Path.of(\"model.gguf\"))")
                .replace("out.print", "System.out.print"));
        String text = Files.readString(readme);
        int section = text.indexOf("\n## LangChain4j\n");
        assertThat(section).as("README section '## LangChain4j'").isPositive();
        String body = text.substring(section + 1, text.indexOf("\n## ", section + 1));
        List<String> blocks = new ArrayList<>();
        Matcher b = Pattern.compile("```java\\n(.*?)\\n```", Pattern.DOTALL).matcher(body);
        while (b.find()) blocks.add(b.group(1));
        assertThat(blocks).containsExactly(String.join("\n\n", regions.subList(0, 2)), regions.get(2), String.join("\n\n", regions.subList(3, 5)));
    }
}
