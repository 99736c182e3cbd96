package org.powerinfer4j.engine.grammar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatTemplate;
import org.powerinfer4j.engine.tokenizer.ChatTemplates;
import org.powerinfer4j.engine.tokenizer.Tokenizer;
import org.powerinfer4j.engine.tokenizer.Tokenizers;
import org.powerinfer4j.engine.tools.ToolCalling;
import org.powerinfer4j.engine.tools.ToolChoice;
import org.powerinfer4j.engine.tools.ToolDefinition;

/** The generic tool-call format: prompts for templates with and without tool support, the answer grammar, parsing back. */
class ToolCallingTest {
    static final JsonNode WEATHER_PARAMS = JsonSamples.parse("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
            + "\"unit\":{\"$ref\":\"#/$defs/unit\"}},\"required\":[\"city\",\"unit\"],\"additionalProperties\":false,"
            + "\"$defs\":{\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\"]}}}");
    static final List<ToolDefinition> TOOLS = List.of(
            new ToolDefinition("get_weather", "Weather in a city", WEATHER_PARAMS),
            new ToolDefinition("get_time", "The time", null));

    /** A ChatML template that renders tools, tool calls and tool results (Hermes/Qwen style, abridged). */
    static final String TOOL_TEMPLATE = "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
            + "{{- '# Tools\\n<tools>' }}{%- for tool in tools %}{{- '\\n' + tool['function']['name'] }}{%- endfor %}{{- '\\n</tools><|im_end|>\\n' }}"
            + "{%- elif messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- endif %}"
            + "{%- for message in messages %}{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}"
            + "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
            + "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant' }}{%- for tc in message.tool_calls %}"
            + "{{- '\\n<tool_call>' + tc.function.name + '</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
            + "{%- elif message.role == 'tool' %}{{- '<|im_start|>user\\n<tool_response>' + message.content + '</tool_response><|im_end|>\\n' }}{%- endif %}{%- endfor %}"
            + "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

    static Tokenizer phi3Tokenizer;
    static ChatTemplate phi3Template;

    static {
        try (GGUFFile f = GGUFFile.open(TestData.file("vocab/ggml-vocab-phi-3.gguf"))) {
            phi3Tokenizer = Tokenizers.fromGGUF(f);
            phi3Template = ChatTemplates.forGGUF(f);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static final List<ChatMessage> HISTORY = List.of(
            ChatMessage.system("Be brief."),
            ChatMessage.user("Weather in Paris?"),
            ChatMessage.assistant("", List.of(new ChatMessage.ToolCall("call_1", "get_weather", "{\"city\":\"Paris\",\"unit\":\"celsius\"}"))),
            ChatMessage.tool("call_1", "get_weather", "21 degrees"),
            ChatMessage.user("And the time?"));

    @Test
    void probesFindWhatATemplateRenders() {
        assertThat(phi3Template.capabilities()).isEqualTo(new ChatTemplate.Capabilities(false, false, false, false));
        assertThat(ChatTemplates.jinja(TOOL_TEMPLATE, "", "<|im_end|>").capabilities()).isEqualTo(new ChatTemplate.Capabilities(true, true, true, true));
        assertThat(ChatTemplates.builtin("chatml", "", "").capabilities().systemRole()).isTrue();
    }

    @Test
    void aTemplateWithoutToolsGetsThemInTheFirstUserTurn() {
        ToolCalling.Prepared p = ToolCalling.prepare(phi3Template, phi3Tokenizer, HISTORY, TOOLS, ToolChoice.AUTO, true, null);
        String text = phi3Tokenizer.decode(p.prompt(), true);
        // Phi-3's template has no system role: the system prompt, the tools and the format open the first user turn
        assertThat(text).contains("<|user|> Be brief.\n\nYou can call these tools:\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"");
        assertThat(text).contains("Answer with one JSON object only. To call tools, answer {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}, ...]}.");
        assertThat(text).contains("To answer directly, answer {\"response\": <your answer>}.");
        // the earlier call and its result, as text
        assertThat(text).contains("{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"unit\":\"celsius\"}}]}<|end|>");
        assertThat(text).contains("<|user|> {\"tool_response\":{\"name\":\"get_weather\",\"tool_call_id\":\"call_1\",\"content\":\"21 degrees\"}}<|end|>");
        assertThat(text).endsWith("And the time?<|end|><|assistant|>");   // this vocabulary eats the newline after its markers
    }

    @Test
    void aTemplateWithToolsRendersThemItself() {
        ChatTemplate t = ChatTemplates.jinja(TOOL_TEMPLATE, "", "<|im_end|>");
        ToolCalling.Prepared p = ToolCalling.prepare(t, phi3Tokenizer, HISTORY, TOOLS, ToolChoice.REQUIRED, false, null);
        String text = phi3Tokenizer.decode(p.prompt(), true);
        assertThat(text).contains("# Tools\n<tools>\nget_weather\nget_time\n</tools>").doesNotContain("You can call these tools");
        assertThat(text).contains("Be brief.\n\nAnswer with one JSON object only. To call a tool, answer {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}]}.");
        assertThat(text).doesNotContain("To answer directly");
        assertThat(text).contains("<tool_call>get_weather</tool_call>").contains("<tool_response>21 degrees</tool_response>");
    }

    @Test
    void theAnswerGrammar() {
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.AUTO, true),
                "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\",\"unit\":\"fahrenheit\"}},{\"name\":\"get_time\",\"arguments\":{}}]}")).isTrue();
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.AUTO, true), "{\"response\":\"hello\"}")).isTrue();
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.REQUIRED, true), "{\"response\":\"hello\"}")).isFalse();
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.AUTO, true), "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}]}"))
                .as("unit is required").isFalse();
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.AUTO, false),
                "{\"tool_calls\":[{\"name\":\"get_time\",\"arguments\":{}},{\"name\":\"get_time\",\"arguments\":{}}]}")).as("one call only").isFalse();
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.function("get_time"), true),
                "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\",\"unit\":\"celsius\"}}]}")).isFalse();
        assertThat(JsonSchemaCompilerTest.matches(schema(ToolChoice.function("get_time"), true), "{\"tool_calls\":[{\"name\":\"get_time\",\"arguments\":{}}]}")).isTrue();
        assertThatThrownBy(() -> ToolCalling.outputSchema(TOOLS, ToolChoice.function("nope"), true, null)).hasMessageContaining("'nope', which is not among the tools");
        String withResponse = ToolCalling.outputSchema(TOOLS, ToolChoice.AUTO, true, JsonSamples.parse("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}")).toString();
        assertThat(JsonSchemaCompilerTest.matches(withResponse, "{\"response\":{\"n\":3}}")).isTrue();
        assertThat(JsonSchemaCompilerTest.matches(withResponse, "{\"response\":\"x\"}")).isFalse();
    }

    static String schema(ToolChoice choice, boolean parallel) {
        return ToolCalling.outputSchema(TOOLS, choice, parallel, null).toString();
    }

    @Test
    void parsingAnswersBack() {
        ToolCalling.Reply calls = ToolCalling.parse(" {\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"unit\": \"celsius\"}}]}");
        assertThat(calls.hasToolCalls()).isTrue();
        assertThat(calls.toolCalls().getFirst().name()).isEqualTo("get_weather");
        assertThat(calls.toolCalls().getFirst().arguments()).isEqualTo("{\"city\":\"Rome\",\"unit\":\"celsius\"}");
        assertThat(calls.toolCalls().getFirst().id()).matches("call_[A-Za-z0-9]{24}");
        assertThat(ToolCalling.parse("{\"response\": \"Hi there\"}")).isEqualTo(new ToolCalling.Reply("Hi there", List.of()));
        assertThat(ToolCalling.parse("{\"response\": {\"n\": 1}}").content()).isEqualTo("{\"n\":1}");
        assertThat(ToolCalling.parse("plain text").content()).isEqualTo("plain text");
    }

    @Test
    void aRealModelCallsATool() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(1)); Session s = m.newSession()) {
            for (ToolChoice choice : List.of(ToolChoice.REQUIRED, ToolChoice.function("get_weather"))) {
                ToolCalling.Prepared p = ToolCalling.prepare(m.chatTemplate(), m.tokenizer(), List.of(ChatMessage.user("Weather in Paris?")), TOOLS, choice, false, null);
                GenerationResult r = s.complete(p.prompt(), GenerationParams.defaults().withMaxTokens(120).withSampling(SamplingParams.GREEDY).withGrammar(p.grammar()), null);
                ToolCalling.Reply reply = ToolCalling.parse(r.text());
                assertThat(reply.toolCalls()).as(r.text()).hasSize(1);
                ChatMessage.ToolCall call = reply.toolCalls().getFirst();
                assertThat(call.name()).isIn("get_weather", "get_time");
                if (call.name().equals("get_weather")) assertThat(JsonSamples.conforms(WEATHER_PARAMS, WEATHER_PARAMS, JsonSamples.parse(call.arguments()))).isTrue();
            }
        }
    }
}
