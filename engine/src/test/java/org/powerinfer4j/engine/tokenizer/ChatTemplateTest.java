package org.powerinfer4j.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;

/** Real Hugging Face templates rendered to the exact strings transformers' apply_chat_template produces. */
class ChatTemplateTest {
    /** meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json chat_template. */
    static final String LLAMA3 = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

    /** Qwen/Qwen2-7B-Instruct tokenizer_config.json chat_template (ChatML with a default system turn). */
    static final String QWEN2 = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    /** mistralai/Mistral-7B-Instruct-v0.1 tokenizer_config.json chat_template. */
    static final String MISTRAL = "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

    /**
     * meta-llama/Llama-3.1-8B-Instruct's template with its tool-calling branches removed: it relies on {{- -}}
     * and {%- -%} whitespace control, "is defined" tests, reassigning messages and "'key' in message".
     */
    static final String LLAMA31_ABRIDGED = "{{- bos_token }}\n{%- if custom_tools is defined %}\n    {%- set tools = custom_tools %}\n{%- endif %}\n{%- if not tools_in_user_message is defined %}\n    {%- set tools_in_user_message = true %}\n{%- endif %}\n{%- if not date_string is defined %}\n    {%- set date_string = \"26 Jul 2024\" %}\n{%- endif %}\n{%- if not tools is defined %}\n    {%- set tools = none %}\n{%- endif %}\n\n{#- This block extracts the system message, so we can slot it into the right place. #}\n{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content']|trim %}\n    {%- set messages = messages[1:] %}\n{%- else %}\n    {%- set system_message = \"\" %}\n{%- endif %}\n\n{#- System message + builtin tools #}\n{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n{%- if builtin_tools is defined or tools is not none %}\n    {{- \"Environment: ipython\\n\" }}\n{%- endif %}\n{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n{{- system_message }}\n{{- \"<|eot_id|>\" }}\n{%- for message in messages %}\n    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n{%- endif %}\n";

    private static final List<ChatMessage> CONVERSATION = List.of(
            ChatMessage.system("You are a helpful assistant."),
            ChatMessage.user("Hello!"),
            ChatMessage.assistant("  Hi, how can I help?  "),
            ChatMessage.user("Tell me a joke."));

    @Test
    void llama3() {
        ChatTemplate t = ChatTemplates.jinja(LLAMA3, "<|begin_of_text|>", "<|end_of_text|>");
        assertThat(t.render(CONVERSATION, true)).isEqualTo(
                "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
                        + "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                        + "<|start_header_id|>assistant<|end_header_id|>\n\nHi, how can I help?<|eot_id|>"
                        + "<|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|>"
                        + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        assertThat(t.render(List.of(ChatMessage.user("Hi")), false))
                .isEqualTo("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
    }

    @Test
    void llama31WhitespaceControl() {
        ChatTemplate t = ChatTemplates.jinja(LLAMA31_ABRIDGED, "<|begin_of_text|>", "<|eot_id|>");
        assertThat(t.render(List.of(ChatMessage.system(" Sys. "), ChatMessage.user("Hi")), true)).isEqualTo(
                "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                        + "Today Date: 26 Jul 2024\n\nSys.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                        + "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }

    @Test
    void qwen2ChatMl() {
        ChatTemplate t = ChatTemplates.jinja(QWEN2, "", "<|im_end|>");
        assertThat(t.render(List.of(ChatMessage.user("Hello!")), true)).isEqualTo(
                "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
        assertThat(t.render(CONVERSATION, false)).isEqualTo(
                "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
                        + "<|im_start|>assistant\n  Hi, how can I help?  <|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n");
    }

    @Test
    void mistralAndRaiseException() {
        ChatTemplate t = ChatTemplates.jinja(MISTRAL, "<s>", "</s>");
        List<ChatMessage> chat = List.of(ChatMessage.user("Hi"), ChatMessage.assistant("Hello!"), ChatMessage.user("How are you?"));
        assertThat(t.render(chat, true)).isEqualTo("<s>[INST] Hi [/INST]Hello!</s>[INST] How are you? [/INST]");
        assertThatThrownBy(() -> t.render(List.of(ChatMessage.assistant("first")), true))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("Conversation roles must alternate user/assistant/user/assistant/...");
        assertThatThrownBy(() -> t.render(CONVERSATION, true))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("Conversation roles must alternate");
    }

    @Test
    void phi3TemplateFromGguf() throws Exception {
        try (GGUFFile gguf = GGUFFile.open(TestData.file("vocab/ggml-vocab-phi-3.gguf"))) {
            ChatTemplate t = ChatTemplates.forGGUF(gguf);
            assertThat(t.name()).isEqualTo("gguf");
            // the template writes bos_token ("<s>"), and each user turn opens the assistant turn itself;
            // trim_blocks drops the newline after the final {% endfor %}
            assertThat(t.render(List.of(ChatMessage.user("Hello"), ChatMessage.assistant("Hi!"), ChatMessage.user("Bye")), true))
                    .isEqualTo("<s><|user|>\nHello<|end|>\n<|assistant|>\nHi!<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n");
            // rendered text tokenizes into the chat control tokens with special-token parsing
            Tokenizer tok = VocabTestVectors.tokenizer("vocab/ggml-vocab-phi-3.gguf");
            assertThat(tok.encode(t.render(List.of(ChatMessage.user("Hello")), true), false, true))
                    .containsExactly(1, 32010, 15043, 32007, 32001);
        }
    }

    @Test
    void builtinsAndDetection() throws Exception {
        List<ChatMessage> chat = List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi"));
        assertThat(ChatTemplates.builtin("chatml", "", "").render(chat, true))
                .isEqualTo("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        assertThat(ChatTemplates.builtin("llama2", "<s>", "</s>").render(List.of(ChatMessage.system("Be brief."), ChatMessage.user(" Hi "),
                ChatMessage.assistant("Hello"), ChatMessage.user("Bye")), true))
                // strip() applies to the whole "<<SYS>>...\n\n Hi " string, so the space inside stays (as in Python)
                .isEqualTo("<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello </s><s>[INST] Bye [/INST]");
        assertThat(ChatTemplates.builtin("llama3", "<|begin_of_text|>", "").render(chat, true))
                .isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                        + "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
        assertThat(ChatTemplates.builtin("mistral", "<s>", "</s>").render(List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi"),
                ChatMessage.assistant("Hello"), ChatMessage.user("Bye")), true))
                .isEqualTo("<s>[INST] Be brief.\n\nHi [/INST]Hello</s>[INST] Bye [/INST]");
        assertThat(ChatTemplates.builtin("phi3", "<s>", "").render(chat, true))
                .isEqualTo("<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
        assertThat(ChatTemplates.builtin("plain", "", "").render(chat, true)).isEqualTo("Be brief.\n\nUser: Hi\nAssistant:");
        assertThatThrownBy(() -> ChatTemplates.builtin("nope", "", "")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("chatml");

        assertThat(ChatTemplates.detect(new String[] {"a", "<|im_start|>"}, "")).isEqualTo("chatml");
        assertThat(ChatTemplates.detect(new String[] {"<|start_header_id|>"}, "")).isEqualTo("llama3");
        assertThat(ChatTemplates.detect(new String[] {"<|user|>", "<|assistant|>"}, "")).isEqualTo("phi3");
        assertThat(ChatTemplates.detect(new String[] {"[INST]"}, "")).isEqualTo("mistral");
        assertThat(ChatTemplates.detect(new String[] {"x"}, "LLaMA v2")).isEqualTo("llama2");
        assertThat(ChatTemplates.detect(new String[] {"x"}, "llama")).isEqualTo("plain");
        // files without a template: stories260K (name "llama") gets the plain format with its BOS text
        try (GGUFFile gguf = GGUFFile.open(TestData.file("models/stories260K.gguf"))) {
            ChatTemplate t = ChatTemplates.forGGUF(gguf);
            assertThat(t.name()).isEqualTo("plain");
        }
        try (GGUFFile gguf = GGUFFile.open(TestData.file("models/llama-2-tiny-random.gguf"))) {
            ChatTemplate t = ChatTemplates.forGGUF(gguf);
            assertThat(t.name()).isEqualTo("llama2");
            assertThat(t.render(List.of(ChatMessage.user("Hi")), true)).isEqualTo("<s>[INST] Hi [/INST]");
        }
    }

    @Test
    void pythonStringMethodsAndHelpers() {
        String src = "{% for m in messages %}{% if m['content'].startswith('/') %}cmd:{{ m['content'][1:].upper() }}"
                + "{% elif m['content'].endswith(('?', '!')) %}q:{{ m['content'].rstrip('?!').lower() }}"
                + "{% else %}{{ '|'.join(m['content'].split()) }}:{{ m['content'].strip().title() }}{% endif %};{% endfor %}";
        ChatTemplate t = ChatTemplates.jinja(src, "", "");
        assertThat(t.render(List.of(ChatMessage.user("/help"), ChatMessage.user("Why Not?!"), ChatMessage.user("  one two\u00a0 three ")), false))
                .isEqualTo("cmd:HELP;q:why not;one|two|three:One Two\u00a0 Three;"); // Python splits and strips on NBSP too
        assertThat(JinjaChatTemplate.strftime(ZonedDateTime.of(2024, 7, 26, 9, 5, 0, 0, ZoneOffset.UTC), "%d %b %Y %H:%M %A %%"))
                .isEqualTo("26 Jul 2024 09:05 Friday %");
        assertThat(ChatTemplates.jinja("{{ strftime_now('%Y') }}", "", "").render(List.of(), false))
                .isEqualTo(String.valueOf(java.time.Year.now().getValue()));
        assertThatThrownBy(() -> ChatTemplates.jinja("{% for %}", "", "").render(List.of(), false)).isInstanceOf(ChatTemplateException.class);
    }
}
