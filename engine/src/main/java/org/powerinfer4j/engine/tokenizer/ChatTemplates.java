package org.powerinfer4j.engine.tokenizer;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFValueType;
import org.powerinfer4j.engine.gguf.MetadataValue;

/**
 * Chat templates for GGUF models: the file's own {@code tokenizer.chat_template}, or a built-in format when the
 * file has none. The built-ins are Jinja sources rendered by the same {@link JinjaChatTemplate} engine.
 */
public final class ChatTemplates {
    private ChatTemplates() {}

    /** Names of the built-in formats, for {@link #builtin}. */
    public static final List<String> BUILTIN_NAMES = List.of("chatml", "llama2", "llama3", "mistral", "phi3", "plain");

    private static final Map<String, String> BUILTIN = Map.of(
            // ChatML (Qwen, Yi, many fine-tunes)
            "chatml", "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
                    + "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
            // meta-llama/Llama-2-*-chat-hf
            "llama2", "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
                    + "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
                    + "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
                    + "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
                    + "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
                    + "{% else %}{% set content = message['content'] %}{% endif %}"
                    + "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
                    + "{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
            // meta-llama/Meta-Llama-3-8B-Instruct
            "llama3", "{% set loop_messages = messages %}{% for message in loop_messages %}"
                    + "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' %}"
                    + "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
                    + "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
            // Mistral [INST] format; a system message is prefixed to the next user turn
            "mistral", "{% set ns = namespace(system='') %}{{ bos_token }}{% for message in messages %}"
                    + "{% if message['role'] == 'system' %}{% set ns.system = message['content'] + '\\n\\n' %}"
                    + "{% elif message['role'] == 'user' %}{{ '[INST] ' + ns.system + message['content'] + ' [/INST]' }}{% set ns.system = '' %}"
                    + "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}",
            // microsoft/Phi-3.5-mini-instruct
            "phi3", "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}"
                    + "{{ '<|system|>\\n' + message['content'] + '<|end|>\\n' }}{% elif message['role'] == 'user' %}"
                    + "{{ '<|user|>\\n' + message['content'] + '<|end|>\\n' }}{% elif message['role'] == 'assistant' %}"
                    + "{{ '<|assistant|>\\n' + message['content'] + '<|end|>\\n' }}{% endif %}{% endfor %}"
                    + "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}",
            // base models: plain "User:/Assistant:" turns
            "plain", "{% for message in messages %}{% if message['role'] == 'system' %}{{ message['content'] + '\\n\\n' }}"
                    + "{% elif message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\\n' }}"
                    + "{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + '\\n' }}{% endif %}{% endfor %}"
                    + "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}");

    /** A built-in format by name ({@link #BUILTIN_NAMES}). */
    public static ChatTemplate builtin(String name, String bosToken, String eosToken) {
        String src = BUILTIN.get(name);
        if (src == null) throw new IllegalArgumentException("unknown chat template '" + name + "' (built-in: " + String.join(", ", BUILTIN_NAMES) + ")");
        return new JinjaChatTemplate(name, src, bosToken, eosToken);
    }

    /** A template from Jinja source. */
    public static ChatTemplate jinja(String source, String bosToken, String eosToken) {
        return new JinjaChatTemplate(source, bosToken, eosToken);
    }

    /**
     * The file's {@code tokenizer.chat_template} when present; otherwise a built-in chosen from the vocabulary and
     * name: {@code <|im_start|>} → chatml, {@code <|start_header_id|>} → llama3, {@code <|user|>}+{@code <|assistant|>}
     * → phi3, {@code [INST]} or a "mistral" name → mistral, a Llama-2 name → llama2, else plain.
     */
    public static ChatTemplate forGGUF(GGUFFile gguf) {
        String[] tokens = gguf.getArray("tokenizer.ggml.tokens", String[].class);
        String bos = tokenText(gguf, tokens, "tokenizer.ggml.bos_token_id");
        String eos = tokenText(gguf, tokens, "tokenizer.ggml.eos_token_id");
        String source = gguf.getString("tokenizer.chat_template", null);
        if (source != null && !source.isBlank()) return new JinjaChatTemplate("gguf", source, bos, eos);
        return builtin(detect(tokens, gguf.getString("general.name", "")), bos, eos);
    }

    static String detect(String[] tokens, String generalName) {
        Set<String> vocab = tokens == null ? Set.of() : new HashSet<>(Arrays.asList(tokens));
        String name = generalName.toLowerCase(Locale.ROOT);
        if (vocab.contains("<|im_start|>")) return "chatml";
        if (vocab.contains("<|start_header_id|>")) return "llama3";
        if (vocab.contains("<|user|>") && vocab.contains("<|assistant|>")) return "phi3";
        if (vocab.contains("[INST]") || name.contains("mistral")) return "mistral";
        if (name.contains("llama-2") || name.contains("llama2") || name.contains("llama v2") || name.contains("llama 2")) return "llama2";
        return "plain";
    }

    private static String tokenText(GGUFFile gguf, String[] tokens, String key) {
        MetadataValue v = gguf.get(key);
        if (tokens == null || v == null || v.isArray() || v.type() == GGUFValueType.STRING) return "";
        long id = v.asLong();
        return id >= 0 && id < tokens.length ? tokens[(int) id] : "";
    }
}
