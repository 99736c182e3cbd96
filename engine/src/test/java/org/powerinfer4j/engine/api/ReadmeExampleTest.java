package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.grammar.Grammar;
import org.powerinfer4j.engine.tools.ToolCalling;
import org.powerinfer4j.engine.tools.ToolChoice;
import org.powerinfer4j.engine.tools.ToolDefinition;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/** The README's library example, compiled and run as written (only the model path differs). */
class ReadmeExampleTest {

    @Test
    void readmeExampleRuns() throws Exception {
        Path modelPath = TestData.file("models/stories260K.gguf");
        StringBuilder printed = new StringBuilder();
        // --- README: Library API ---
        try (Model model = Model.open(modelPath, ModelOptions.defaults().withThreads(2));
             Session session = model.newSession()) {
            GenerationResult r = session.generate("Once upon a time",
                    GenerationParams.defaults().withMaxTokens(64).withSampling(SamplingParams.GREEDY),
                    (tokenId, text) -> { printed.append(text); return true; });   // return false to stop

            List<ChatMessage> chat = new ArrayList<>(List.of(ChatMessage.user("Tell me about Lily.")));
            GenerationResult reply = session.chat(chat, GenerationParams.defaults().withMaxTokens(16), (id, text) -> true);
            chat.add(ChatMessage.assistant(reply.text()));
            // --- end ---
            assertThat(r.generatedTokens()).hasSize(64);
            assertThat(printed.toString()).startsWith(", there was a little girl named Lily.").isEqualTo(r.text());
            assertThat(reply.generatedTokens()).isNotEmpty();
            assertThat(session.position()).isGreaterThan(reply.promptTokens().length); // the reply is in the KV cache
        }
    }

    @Test
    void structuredOutputAndToolExampleRuns() throws Exception {
        Path modelPath = TestData.file("models/stories260K.gguf");
        // --- README: Library API (structured output) ---
        try (Model model = Model.open(modelPath, ModelOptions.defaults().withThreads(2));
             Session session = model.newSession()) {
            Grammar person = Grammar.jsonSchema("""
                    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                     "required": ["name", "age"], "additionalProperties": false}""");
            GenerationResult json = session.chat(List.of(ChatMessage.user("Who is Lily?")),
                    GenerationParams.defaults().withMaxTokens(64).withGrammar(person), (id, text) -> true);   // parses, conforms

            List<ToolDefinition> tools = List.of(new ToolDefinition("get_weather", "Weather in a city", new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}")));
            ToolCalling.Prepared call = ToolCalling.prepare(model.chatTemplate(), model.tokenizer(),
                    List.of(ChatMessage.user("Weather in Paris?")), tools, ToolChoice.AUTO, true, null);
            GenerationResult r = session.complete(call.prompt(), GenerationParams.defaults().withMaxTokens(96).withGrammar(call.grammar()), null);
            ToolCalling.Reply reply = ToolCalling.parse(r.text());   // reply.toolCalls() (name, arguments JSON) or reply.content()
            // --- end ---
            var node = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.text());
            assertThat(node.get("name").isTextual()).isTrue();
            assertThat(node.get("age").isIntegralNumber()).isTrue();
            assertThat(reply.hasToolCalls() || !reply.content().isEmpty()).isTrue();
        }
    }
}
